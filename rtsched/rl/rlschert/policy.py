"""RLSchert's trained network (seed 001) as a core policy (docs/rl.md)."""
from __future__ import annotations

import torch

from rtsched.rl.modelfiles import LoadedModel, agent_model
from rtsched.rl.nets import NumpyActor
from rtsched.rl.policies import ModelPolicyError, choose_action
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision


class RLSchertPolicy:
    """A trained RLSchert network as a core policy: at each scheduling point it selects and kills
    through ``rtsched.rl.rlschert.core.RLSchertCore`` (exactly as in its environment) until it chooses
    None.  ``predictions``: the running predictions (``rtsched.rl.rlschert.core`` classes; default the
    requested times, i.e. no running information).  In the slotted mode it asks to be woken every
    slot.  Greedy (argmax) unless ``greedy=False``."""

    preemptive = False  # it kills (Kill), it never preempts with a checkpoint

    def __init__(self, model: LoadedModel | str, *, predictions=None, greedy: bool = True, seed: int = 0,
                 units: int | None = None, rule_kill: bool = False) -> None:
        import dataclasses

        from rtsched.rl.rlschert.core import RLSchertConfig

        self.model = agent_model(model, "rlschert", "an RLSchert one")
        env = self.model.env
        self.cfg = RLSchertConfig(mode=env.get("mode", "event"), n_wait=int(env.get("n_wait", 5)),
                                  n_run=int(env.get("n_run", 8)), slot=int(env.get("slot", 300)),
                                  horizon=int(env.get("horizon", 120)), max_job_units=int(env.get("max_job_units", 10)),
                                  dynamic=bool(env.get("dynamic", True)), kill=bool(env.get("kill", True)))
        # rule_kill: the rule-based kill before the network's choice, the network choosing among the
        # other actions (the paper's "RLSchert with the rule-based kill" on a no-kill model).
        self.rule_kill = rule_kill
        self.model_kills = self.cfg.kill
        if rule_kill:
            self.cfg = dataclasses.replace(self.cfg, kill=True)
        self.units = units
        self.predictions = predictions
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = NumpyActor(self.model.actor)
        self.core = None
        self.name = f"rlschert:{self.model.path}{'+rule-kill' if rule_kill else ''}"
        self.n_decisions = 0

    def decide(self, view: SimView) -> list[Decision]:
        from rtsched.rl.rlschert.core import RLSchertCore, run_pass

        if self.core is None or self.core.run_id != view.run_id:
            units = self.units or view.machine.total_nodes
            expect = int(self.model.arch["n_features"])
            self.core = RLSchertCore(self.cfg, units, self.predictions)
            from rtsched.rl.rlschert.core import obs_shape

            got = obs_shape(units, self.cfg)[0]
            if got != expect:
                raise ModelPolicyError(f"{self.model.path}: the model observes {expect} values, this machine "
                                       f"({units} units, {self.cfg.mode} mode) gives {got}")
        core = self.core

        cfg = self.cfg

        def choose(v, mask):
            self.n_decisions += 1
            if self.rule_kill:
                j = core.rule_kill(v)
                if j is not None and mask[cfg.n_wait + j]:
                    return cfg.n_wait + j
                if not self.model_kills:
                    mask = mask.copy()
                    mask[cfg.n_wait:cfg.none_action] = False
                    if not mask.any():
                        mask[cfg.none_action] = True
            return choose_action(self.fast.logits(core.observe(v), mask), self.greedy, self.gen)

        return run_pass(core, view, choose)


def from_model(model: LoadedModel, **kwargs) -> RLSchertPolicy:
    """The policy of a loaded RLSchert model (``rtsched.rl.policies.policy_from_model``)."""
    extra = {k: kwargs[k] for k in ("predictions", "greedy", "seed", "units", "rule_kill") if k in kwargs}
    return RLSchertPolicy(model, **extra)
