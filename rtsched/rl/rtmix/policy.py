"""The trained ``rtmix`` agent as an ordinary core policy (``decide(view) -> list[Decision]``).

At each scheduling pass the policy takes the same actions the environment ``rtsched/RtMix-v0``
offers (``rtsched.rl.rtmix.core.RtMixPass``: start a visible job on the best-fit partition, free a
WCJS-eligible candidate partition for a waiting RTJ, or wait), one after the other, greedily
(argmax of the actor's masked logits; ``greedy=False`` samples), until it chooses to wait or no
start or preemption is legal; the pass's decisions are its answer.  The actor runs as a NumPy copy
(``nets.NumpyActor``).  The checkpoint model of eligibility and features is the simulation's.
"""
from __future__ import annotations

import os
import time

import numpy as np
import torch

from heuristics.realtime import require_partitioned
from rtsched.rl.nets import NumpyActor
from rtsched.rl.modelfiles import LoadedModel, agent_model
from rtsched.rl.policies import ModelPolicyError
from rtsched.rl.rtmix.core import RtMixPass, RtMixSpec
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision

PRETRAINED_RTMIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pretrained", "rtmix", "rtmix.pt")
"""The shipped model: the policy name ``rtmix`` loads it (``rtsched.rl.hook``)."""


class RtMixPolicy:
    """A trained ``rtmix`` model as a core policy (module docstring)."""

    preemptive = True

    def __init__(self, model: LoadedModel | str, *, greedy: bool = True, seed: int = 0, name: str | None = None,
                 wcjs=None) -> None:
        self.model = agent_model(model, "rtmix", "an rtmix one")
        env = self.model.env
        # The checkpoint model it was trained under: the run pipeline's default for it (``--checkpoint``
        # overrides); models written before the option was stored were trained under JIT.
        self.default_checkpoint = str(env.get("checkpoint", "jit"))
        # settings a model does not record are those of the agents before the option (RtMixSpec.from_settings)
        self.spec = RtMixSpec.from_settings(env, wcjs)
        if self.spec.n_actions != int(self.model.arch["window"]):
            raise ValueError(f"{self.model.path}: the network has {self.model.arch['window']} action slots, the "
                             f"environment settings give {self.spec.n_actions}")
        self.fast = NumpyActor(self.model.actor)
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.name = name or f"rtmix:{self.model.path}"
        self.n_decisions = 0
        self.decide_seconds = 0.0

    def decide(self, view: SimView) -> list[Decision]:
        if not view.queue:
            return []
        require_partitioned(self.name, view.machine)
        ps = RtMixPass(view, self.spec)
        wait = self.spec.wait_action
        while ps.has_choice():
            mask = ps.mask()
            legal = np.flatnonzero(mask)
            if len(legal) == 1:
                a = int(legal[0])
            else:
                t0 = time.perf_counter()
                logits = self.fast.logits(ps.observe(), mask)
                if self.greedy:
                    a = int(np.argmax(logits))
                else:
                    probs = torch.softmax(torch.from_numpy(np.asarray(logits, dtype=np.float32)), -1)
                    a = int(torch.multinomial(probs, 1, generator=self.gen))
                self.decide_seconds += time.perf_counter() - t0
                self.n_decisions += 1
            if a == wait:
                break
            ps.apply(a)
        return ps.final_decisions()


__all__ = ["RtMixPolicy", "PRETRAINED_RTMIX"]


def from_model(model: LoadedModel, **kwargs) -> RtMixPolicy:
    """The policy of a loaded rtmix model (``rtsched.rl.policies.policy_from_model``)."""
    kwargs.pop("base", None)
    if kwargs.pop("backfill", None) is not None:
        raise ModelPolicyError(f"{model.path}: an rtmix model schedules real-time/batch mixes on a partitioned Mira "
                               "machine and takes no backfill option (rl evaluate's flat-cluster sequences "
                               "always set one): run it with rtsched simulate --policy rtmix or rtsched compare")
    return RtMixPolicy(model, **kwargs)
