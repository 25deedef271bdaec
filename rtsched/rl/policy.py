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

from rtsched.errors import RtschedError
from rtsched.rl.compat import CommittedHead, CommittedHeadPolicy, normalize_backfill
from rtsched.rl.env_inspect import ACCEPT, InspectorFeatures
from rtsched.rl.features import PickObservation, partition_fits, static_pick_columns
from rtsched.rl.nets import NumpyActor
from rtsched.rl.ppo import LoadedModel, load_model
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, WakeAt


_BOTH_ACTIONS = np.ones(2, dtype=bool)


def _sample(logits: np.ndarray, gen: torch.Generator) -> int:
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
        self.backfill = normalize_backfill(env.get("backfill", "none") if backfill is None else backfill)
        self.norms = dict(norms or self.model.norms)
        self.extras = extras or {}
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = NumpyActor(self.model.actor)
        self.obsb = PickObservation(int(self.model.arch["window"]), env.get("features", "code"),
                                    env.get("pad", "zeros"))
        self.window = self.obsb.window
        self.driver = CommittedHead(self.backfill, fcfs_queue=True)
        self.name = f"rl:{self.model.path}+{self.backfill}"
        self.n_decisions = 0

    def _act(self, logits: np.ndarray) -> int:
        """Greedy: the first maximal logit (as torch.argmax); otherwise a sample from the softmax."""
        if self.greedy:
            return int(np.argmax(logits))
        return _sample(logits, self.gen)

    def _prepare(self, view: SimView) -> None:
        states = view.sim.states
        n = len(states)
        infos = [s.info for s in states]
        ex = self.extras
        procs, mem, user, group, exe = [], [], [], [], []
        for i in infos:
            e = ex.get(i.id)
            if e is None:
                procs.append(i.nodes), mem.append(-1), user.append(i.user), group.append(i.group), exe.append(-1)
            else:
                procs.append(e[0]), mem.append(e[1]), user.append(e[2]), group.append(e[3]), exe.append(e[4])
        norms = self.norms
        ob = self.obsb
        ob.allocate(n)
        ob.static = static_pick_columns([i.walltime for i in infos], procs, mem, user, group, exe, norms)
        ob.submit = np.array([i.submit for i in infos], dtype=np.float64)
        ob.nodes = np.array([i.nodes for i in infos], dtype=np.int64)

    def decide(self, view: SimView) -> list[Decision]:
        d = self.driver
        if d.sync(view):
            self._prepare(view)
        if d.head is None and not d.q:
            return []
        return d.run(view, self._pick)

    def _pick(self, q, view: SimView):
        vis = q[:self.window]
        k = len(vis)
        idx = np.fromiter((js.idx for js in vis), dtype=np.intp, count=k)
        fits = partition_fits(view.state, self.obsb.nodes[idx]) if view.machine.partitioned else None
        obs = self.obsb.build(idx, view.now, view.state.free_nodes, view.machine.total_nodes, fits)
        mask = np.zeros(self.window, dtype=bool)
        mask[:k] = True
        a = self._act(self.fast.logits(obs, mask))
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
        self.backfill = normalize_backfill(env.get("backfill", "none") if backfill is None else backfill)
        self.base = CommittedHeadPolicy(base or env.get("base", "sjf"), self.backfill)
        self.norms = dict(norms or self.model.norms)
        self.extras = extras or {}
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = NumpyActor(self.model.actor)
        self.max_interval = int(env.get("max_interval", 600))
        self.max_rejections = int(env.get("max_rejections", 72))
        self.goal = env.get("goal", "bsld")
        self.features = env.get("features", "paper")
        self.driver = CommittedHead(self.backfill)
        self.name = f"inspected:{self.base.priority.name}:{self.model.path}+{self.backfill}"
        self.n_inspections = 0
        self.n_rejections = 0

    def decide(self, view: SimView) -> list[Decision]:
        d = self.driver
        sim = view.sim
        if d.sync(view):
            n = len(sim.states)
            self.base.prepare(view)
            self.base.cache_keys(view.queue)
            self.rejections = np.zeros(n, dtype=np.int64)
            self.feat = InspectorFeatures(self.norms, view.machine.total_nodes, self.goal, self.backfill,
                                          self.features, self.max_interval, self.max_rejections)
            self._wake_at = None
            self._done_seen = sim.n_done
        elif view.entered:
            self.base.cache_keys(view.entered)
            self._wake_at = None
        elif sim.n_done == self._done_seen:  # a wake-up pass
            if self._wake_at != view.now:
                return []  # a stale wake-up of an earlier reject
            self._wake_at = None
        else:
            self._wake_at = None
        self._done_seen = sim.n_done
        if d.head is None and not d.q:
            return []
        self._rejected = False
        out = d.run(view, self._pick)
        if self._rejected:
            t = view.now + self.max_interval
            out.append(WakeAt(t))
            self._wake_at = t
        return out

    def _act(self, logits: np.ndarray) -> int:
        """Greedy: the first maximal logit (as torch.argmax); otherwise a sample from the softmax."""
        if self.greedy:
            return int(np.argmax(logits))
        return _sample(logits, self.gen)

    def _pick(self, q, view: SimView):
        top = self.base._pick(q, view)
        r = int(self.rejections[top.idx])
        if r >= self.max_rejections:
            return top
        fits = view.state.find(top.info.nodes) is not None
        e = self.extras.get(top.info.id)
        obs = self.feat.build(view, top, q, r, fits, e[0] if e else top.info.nodes)
        a = self._act(self.fast.logits(obs, _BOTH_ACTIONS))
        self.n_inspections += 1
        if a == ACCEPT:
            return top
        self.rejections[top.idx] += 1
        self.n_rejections += 1
        self._rejected = True
        return None


def policy_from_model(path: str, **kwargs):
    """The right policy class for a model file (job picking or inspector)."""
    model = load_model(path)
    if model.agent == "rlscheduler":
        kwargs.pop("base", None)
        return RLSchedulerPolicy(model, **kwargs)
    return InspectedPolicy(model, **kwargs)


MODEL_SUFFIXES = (".pt",)


class ModelPolicyError(RtschedError, ValueError):
    """A trained model asked to schedule in a way it cannot (the message names the model)."""

# Backfilling names other parts of rtsched use that mean "no backfilling" for a committed-head policy.
_NO_BACKFILL_NAMES = ("none", "off", "no")


def is_model_path(name) -> bool:
    """Whether a ``--policy`` value names a trained model: a ``.pt`` file, or an existing file or
    folder (a training output folder holds ``checkpoint.pt``).  Heuristic names are never paths."""
    import os

    if not isinstance(name, (str, os.PathLike)):
        return False
    p = os.fspath(name)
    return p.endswith(MODEL_SUFFIXES) or os.path.isfile(p) or os.path.isfile(os.path.join(p, "checkpoint.pt"))


def load_policy(path, backfill=None, **options):
    """A trained model (file or training folder) as a core policy, for the policy registry and
    ``rtsched simulate --policy MODEL_PATH``.

    ``backfill``: ``None`` keeps the backfilling the model was trained with; otherwise ``none``,
    ``rlscheduler`` or ``easy`` (the rules a committed-head policy implements).  Other options go to
    ``RLSchedulerPolicy`` / ``InspectedPolicy`` (``greedy``, ``norms``, ``extras``, ``base``, ``seed``).
    Raises ``ModelFileError`` naming the file for a missing, corrupt or mismatched model.
    """
    from rtsched.rl.compat import PICK_BACKFILLS

    if backfill is not None:
        b = str(backfill).lower()
        if b in _NO_BACKFILL_NAMES:
            b = "none"
        if b in ("rl", "strict"):
            b = "rlscheduler"
        if b not in PICK_BACKFILLS:
            raise ModelPolicyError(f"{path}: a trained model schedules with backfilling {', '.join(PICK_BACKFILLS)} "
                             f"(or its training setting when none is given), not {backfill!r}")
        backfill = b
    return policy_from_model(path, backfill=backfill, **options)
