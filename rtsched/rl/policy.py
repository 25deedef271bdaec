"""Trained agents as ordinary rtsched policies (``decide(view) -> list[Decision]``).

* ``RLSchedulerPolicy``: the job-picking network chooses the head among the FCFS-first window of
  the queue; the head is committed as in the environment (``CommittedHead``), with the chosen
  backfilling.
* ``InspectedPolicy``: a base priority whose picks the inspector network accepts or rejects; a
  reject asks for a scheduling point 600 s later (``WakeAt``) unless an arrival or completion comes
  first; at most 72 rejections per job.

Both are meant for ``Simulator(..., event_order="rlscheduler")`` (the event order they were trained
in) but run in any event order.  Per-job features beyond the core ``Job`` (processors as requested,
memory, executable) come from ``extras`` {job id: (procs, memory, user, group, executable)}
(``RLTrace.extras``); without them processors = nodes and the others count as unknown.
Normalisation constants default to the model's training trace; pass ``norms`` (e.g.
``trace.norms()``) to normalise by the evaluated trace instead, as the authors' scripts do.
"""
from __future__ import annotations

import numpy as np
import torch

from heuristics.backfill import normalize_backfill
from heuristics.committed import COMMITTED_BACKFILLS, CommittedHead, CommittedHeadPolicy
from rtsched.errors import OptionError
from rtsched.rl.env_inspect import ACCEPT, Inspection, InspectorFeatures
from rtsched.rl.features import ArrivedRows, PickObservation
from rtsched.rl.nets import NumpyActor
from rtsched.rl.ppo import LoadedModel, load_model
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision


_BOTH_ACTIONS = np.ones(2, dtype=bool)


def _choose(logits: np.ndarray, greedy: bool, gen: torch.Generator) -> int:
    """Greedy: the first maximal logit (as torch.argmax); otherwise a sample from the softmax."""
    if greedy:
        return int(np.argmax(logits))
    probs = torch.softmax(torch.from_numpy(np.asarray(logits, dtype=np.float32)), -1)
    return int(torch.multinomial(probs, 1, generator=gen))


class RLSchedulerPolicy:
    """RLScheduler's trained job-picking network as a core policy."""

    def __init__(self, model: LoadedModel | str, *, backfill=None, norms: dict | None = None,
                 extras: dict | None = None, greedy: bool = True, seed: int = 0) -> None:
        self.model = load_model(model) if not isinstance(model, LoadedModel) else model
        if self.model.agent != "rlscheduler":
            raise ValueError(f"{self.model.path}: a {self.model.agent} model, not a job-picking (rlscheduler) one")
        env = self.model.env
        self.backfill = normalize_backfill(env.get("backfill", "none") if backfill is None else backfill,
                                           COMMITTED_BACKFILLS)
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = NumpyActor(self.model.actor)
        self.obsb = PickObservation(int(self.model.arch["window"]), env.get("features", "code"),
                                    env.get("pad", "zeros"))
        self.rows = ArrivedRows(self.obsb, dict(norms or self.model.norms), extras)
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
        obs = self.obsb.observe(vis, view)
        mask = np.zeros(self.window, dtype=bool)
        mask[:k] = True
        a = _choose(self.fast.logits(obs, mask), self.greedy, self.gen)
        self.n_decisions += 1
        return vis[a if a < k else 0]


class InspectedPolicy:
    """A base priority inspected by a trained SchedInspector network (a core policy)."""

    def __init__(self, model: LoadedModel | str, *, base=None, backfill=None, norms: dict | None = None,
                 extras: dict | None = None, greedy: bool = True, seed: int = 0) -> None:
        self.model = load_model(model) if not isinstance(model, LoadedModel) else model
        if self.model.agent != "inspector":
            raise ValueError(f"{self.model.path}: a {self.model.agent} model, not an inspector one")
        env = self.model.env
        self.backfill = normalize_backfill(env.get("backfill", "none") if backfill is None else backfill,
                                           COMMITTED_BACKFILLS)
        self.base = CommittedHeadPolicy(base or env.get("base", "sjf"), self.backfill)
        self.norms = dict(norms or self.model.norms)
        self.extras = extras or {}
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = NumpyActor(self.model.actor)
        self.inspection = Inspection(int(env.get("max_interval", 600)), int(env.get("max_rejections", 72)))
        self.goal = env.get("goal", "bsld")
        self.features = env.get("features", "paper")
        self.driver = CommittedHead(self.backfill)
        self.name = f"inspected:{self.base.priority.name}:{self.model.path}+{self.backfill}"
        self._rejected = None

    @property
    def n_inspections(self) -> int:
        return self.inspection.n_inspections

    @property
    def n_rejections(self) -> int:
        return self.inspection.n_rejections

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
            out.append(insp.reject(self._rejected, view.now))
        return out

    def _pick(self, q, view: SimView):
        top = self.base.pick(q, view)
        insp = self.inspection
        if insp.capped(top):
            return top
        e = self.extras.get(top.info.id)
        obs = self.feat.observe(view, top, q, insp.count(top), e[0] if e else top.info.nodes)
        a = _choose(self.fast.logits(obs, _BOTH_ACTIONS), self.greedy, self.gen)
        insp.n_inspections += 1
        if a == ACCEPT:
            return top
        self._rejected = top
        return None


def policy_from_model(path: str, **kwargs):
    """The right policy class for a model file (job picking or inspector)."""
    model = load_model(path)
    if model.agent == "rtmix":
        from rtsched.rl.policy_rtmix import RtMixPolicy

        kwargs.pop("base", None)
        if kwargs.pop("backfill", None) is not None:
            raise ModelPolicyError(f"{path}: an rtmix model does not backfill; it takes no backfill option")
        return RtMixPolicy(model, **kwargs)
    if model.agent == "rlscheduler":
        kwargs.pop("base", None)
        return RLSchedulerPolicy(model, **kwargs)
    return InspectedPolicy(model, **kwargs)


class ModelPolicyError(OptionError):
    """A trained model asked to schedule in a way it cannot (the message names the model)."""


def load_policy(path, backfill=None, **options):
    """A trained model (file or training folder) as a core policy: what the policy registry calls
    for a model path (``rtsched simulate --policy MODEL_PATH``, grids, ``compare``).

    ``backfill``: ``None`` keeps the backfilling the model was trained with; otherwise ``none``,
    ``rlscheduler`` or ``easy`` (the rules a committed-head policy implements).  Other options go to
    ``RLSchedulerPolicy`` / ``InspectedPolicy`` (``greedy``, ``norms``, ``extras``, ``base``, ``seed``).
    Raises ``ModelFileError`` naming the file for a missing, corrupt or mismatched model.
    """
    if backfill is not None:
        try:
            backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS)
        except ValueError:
            raise ModelPolicyError(f"{path}: a trained model schedules with backfilling "
                                   f"{', '.join(COMMITTED_BACKFILLS)} (or its training setting when none is given), "
                                   f"not {backfill!r}") from None
    return policy_from_model(path, backfill=backfill, **options)
