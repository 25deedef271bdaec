"""RLScheduler's trained job-picking network as a core policy: the network chooses the head among
the FCFS-first window of the queue; the head is committed as in the environment
(``CommittedHead``), with the chosen backfilling (docs/rl.md; shared helpers: ``rtsched.rl.policies``)."""
from __future__ import annotations

import numpy as np
import torch

from heuristics.backfill import normalize_backfill
from heuristics.committed import COMMITTED_BACKFILLS, CommittedHead
from rtsched.rl.features import ArrivedRows, PickObservation
from rtsched.rl.modelfiles import LoadedModel, agent_model
from rtsched.rl.nets import NumpyActor
from rtsched.rl.policies import choose_action, model_norms
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision


class RLSchedulerPolicy:
    """RLScheduler's trained job-picking network as a core policy."""

    preemptive = False

    def __init__(self, model: LoadedModel | str, *, backfill=None, norms: dict | None = None,
                 extras: dict | None = None, greedy: bool = True, seed: int = 0) -> None:
        self.model = agent_model(model, "rlscheduler", "a job-picking (rlscheduler) one")
        env = self.model.env
        self.backfill = normalize_backfill(env.get("backfill", "none") if backfill is None else backfill,
                                           COMMITTED_BACKFILLS)
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = self.model.scorer or NumpyActor(self.model.actor)
        self.obsb = PickObservation(int(self.model.arch["window"]), env.get("features", "code"),
                                    env.get("pad", "zeros"))
        self.rows = ArrivedRows(self.obsb, model_norms(self.model, norms), extras)
        self.window = self.obsb.window
        self.driver = CommittedHead(self.backfill, fcfs_queue=True)
        self.name = f"rl:{self.model.path}+{self.backfill}"
        self.n_decisions = 0

    def decide(self, view: SimView) -> list[Decision]:
        d = self.driver
        d.sync(view)
        if d.head is None and not d.q:
            return []
        return d.run(view, self._pick)

    def _pick(self, q, view: SimView):
        self.rows.catch_up(view)
        vis = q[:self.window]
        k = len(vis)
        obs = self.obsb.observe(vis, view, self.driver.state_now(view))
        mask = np.zeros(self.window, dtype=bool)
        mask[:k] = True
        a = choose_action(self.fast.logits(obs, mask), self.greedy, self.gen)
        self.n_decisions += 1
        return vis[a % k]  # a padded slot: slot a mod k, as the environment reads it


def from_model(model: LoadedModel, **kwargs) -> RLSchedulerPolicy:
    """The policy of a loaded rlscheduler model (``rtsched.rl.policies.policy_from_model``)."""
    kwargs.pop("base", None)
    return RLSchedulerPolicy(model, **kwargs)
