"""SchedInspector's trained network as a core policy: a base priority whose picks the inspector
network accepts or rejects; a reject asks for a scheduling point 600 s later (``WakeAt``) unless an
arrival or completion comes first; at most 72 rejections per job (docs/rl.md)."""
from __future__ import annotations

import numpy as np
import torch

from heuristics.backfill import normalize_backfill
from heuristics.committed import COMMITTED_BACKFILLS, CommittedHead, CommittedHeadPolicy
from rtsched.rl.inspector.env import ACCEPT, Inspection, InspectorFeatures
from rtsched.rl.modelfiles import LoadedModel, agent_model
from rtsched.rl.nets import NumpyActor
from rtsched.rl.policies import choose_action, model_norms
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision

_BOTH_ACTIONS = np.ones(2, dtype=bool)


class InspectedPolicy:
    """A base priority inspected by a trained SchedInspector network (a core policy)."""

    preemptive = False

    def __init__(self, model: LoadedModel | str, *, base=None, backfill=None, norms: dict | None = None,
                 extras: dict | None = None, greedy: bool = True, seed: int = 0) -> None:
        self.model = agent_model(model, "inspector", "an inspector one")
        env = self.model.env
        self.backfill = normalize_backfill(env.get("backfill", "none") if backfill is None else backfill,
                                           COMMITTED_BACKFILLS)
        self.base = CommittedHeadPolicy(base or env.get("base", "sjf"), self.backfill)
        self.norms = model_norms(self.model, norms)
        self.extras = extras or {}
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = self.model.scorer or NumpyActor(self.model.actor)
        self.inspection = Inspection(int(env.get("max_interval", 600)), int(env.get("max_rejections", 72)))
        self.goal = env.get("goal", "bsld")
        self.features = env.get("features", "paper")
        self.driver = CommittedHead(self.backfill)
        self.name = f"inspected:{self.base.priority.name}:{self.model.path}+{self.backfill}"
        self._rejected = None
        self._blocked = False

    @property
    def n_inspections(self) -> int:
        return self.inspection.n_inspections

    @property
    def n_rejections(self) -> int:
        return self.inspection.n_rejections

    @property
    def n_blocked_rejections(self) -> int:
        return self.inspection.n_blocked_rejections

    @property
    def n_blocked_inspections(self) -> int:
        return self.inspection.n_blocked_inspections

    @property
    def n_forced(self) -> int:
        return self.inspection.n_forced

    def decide(self, view: SimView) -> list[Decision]:
        d = self.driver
        insp = self.inspection
        if d.sync(view):
            self.base.prepare(view)
            self.base.cache_keys(view.queue)
            insp.new_run()
            self.feat = InspectorFeatures(self.norms, view.machine.total_nodes, self.goal, self.backfill,
                                          self.features, insp.max_interval, insp.max_rejections)
        else:
            self.base.cache_keys(view.entered)
            if not insp.pass_due(view):
                return []  # a stale wake-up of an earlier reject
        if d.head is None and not d.q:
            return []
        self._rejected = None
        out = d.run(view, self._pick)
        if self._rejected is not None:
            out.append(insp.reject(self._rejected, view.now, self._blocked))
        return out

    def _pick(self, q, view: SimView):
        top = self.base.pick(q, view)
        insp = self.inspection
        if insp.capped(top):
            insp.n_forced += 1
            return top
        e = self.extras.get(top.info.id)
        obs = self.feat.observe(view, top, q, insp.count(top), e[0] if e else top.info.nodes,
                                self.driver.state_now(view))
        a = choose_action(self.fast.logits(obs, _BOTH_ACTIONS), self.greedy, self.gen)
        blocked = bool(obs[4] < 0.5)  # "runnable" said no: the job could not start now anyway
        insp.n_inspections += 1
        insp.n_blocked_inspections += blocked
        if a == ACCEPT:
            return top
        self._rejected = top
        self._blocked = blocked
        return None


def from_model(model: LoadedModel, **kwargs) -> InspectedPolicy:
    """The policy of a loaded inspector model (``rtsched.rl.policies.policy_from_model``)."""
    return InspectedPolicy(model, **kwargs)
