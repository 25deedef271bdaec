"""Deep Back-Filling's split-window network (seed 004) as a core policy: it places jobs of its window
one after another at each scheduling point until it picks Fwd or an invalid slot (docs/rl.md)."""
from __future__ import annotations

import numpy as np
import torch

from rtsched.errors import OptionError
from rtsched.rl.modelfiles import LoadedModel, agent_model
from rtsched.rl.nets import NumpyActor
from rtsched.rl.policies import choose_action
from rtsched.rl.splitwindow.observation import SplitObservation
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Start


class SplitWindowPolicy:
    """Deep Back-Filling's trained split-window network as a core policy (a flat cluster).

    At each scheduling point it places window jobs one after another (the environment's schedule
    cycling) until the network picks Fwd or an invalid slot.  One rule the environment does not
    have: on an idle machine (nothing running) a pass that would place nothing starts the first
    window job instead (all fit), because a policy cannot know whether another job will still
    arrive and the run must finish; ``n_forced`` counts these starts.  Backfilling options are
    not taken: the agent back-fills by itself."""

    preemptive = False

    def __init__(self, model: LoadedModel | str, *, greedy: bool = True, seed: int = 0, norms: dict | None = None,
                 **_ignored) -> None:
        self.model = agent_model(model, "splitwindow", "a split-window one")
        env = self.model.env
        self.head, self.tail = int(env["head"]), int(env["tail"])
        self.sigma = env.get("sigma", "remaining")
        self.norms = dict(norms or self.model.norms)
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = NumpyActor(self.model.actor)
        self.mask = np.ones(self.head + self.tail + 1, dtype=bool)
        self.name = f"splitwindow:{self.head}-{self.tail}:{self.model.path}"
        self.obsb: SplitObservation | None = None
        self._run = None
        self.n_decisions = 0
        self.n_forced = 0

    def decide(self, view: SimView) -> list[Decision]:
        if self._run != view.run_id:
            self._run = view.run_id
            n = view.machine.total_nodes
            if int(self.norms.get("n_cores", n)) != n:
                raise OptionError(f"{self.model.path}: trained for {int(self.norms['n_cores'])} cores, the machine "
                                  f"has {n}; run it on flat:{int(self.norms['n_cores'])}")
            self.obsb = SplitObservation(n, self.head, self.tail, self.norms["max_runtime"], sigma=self.sigma)
        obsb = self.obsb
        obsb.cores.sync(view.running)
        queue = list(view.queue)
        free = view.state.free_nodes
        now = view.now
        out: list[Decision] = []
        while queue:
            obs, vis = obsb.observe(queue, now)
            obsb.count_decision(len(queue))
            a = choose_action(self.fast.logits(obs, self.mask), self.greedy, self.gen)
            self.n_decisions += 1
            if a >= len(vis) or vis[a].info.nodes > free:
                if out or view.running:
                    break
                a = 0  # idle machine: see the class docstring
                self.n_forced += 1
            js = vis[a]
            out.append(Start(js.info.id, None))
            free -= js.info.nodes
            queue.remove(js)
            obsb.cores.take(js.info.id, js.info.nodes, now, now + js.info.walltime)
        return out


def from_model(model: LoadedModel, **kwargs) -> SplitWindowPolicy:
    """The policy of a loaded split-window model (``rtsched.rl.policies.policy_from_model``)."""
    return SplitWindowPolicy(model, greedy=kwargs.get("greedy", True), seed=kwargs.get("seed", 0), norms=None)
