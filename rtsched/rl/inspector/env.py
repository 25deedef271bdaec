"""SchedInspector's environment (seed 000) on the one core simulator.

A base priority policy (any ``heuristics.priorities`` name) picks its top job at each scheduling
decision of the committed-head loop (``heuristics.committed.CommittedHead``); the agent *inspects* that pick:

* action 0 = **accept**: the job is committed (it starts now, or the simulator waits for it,
  backfilling if on); the next top job is inspected at once;
* action 1 = **reject**: the job stays queued, nothing starts, and time moves to the next
  scheduling point: the next arrival or completion, or now + ``max_interval`` (600 s) at the
  latest (a ``WakeAt``); then the (possibly different) top job is inspected.  A job rejected
  ``max_rejections`` (72) times is accepted without asking the agent.

Observation: ``Box(0, 1, (F,))`` with the paper's features (``rtsched.rl.features``), F = 8
(``features="paper"``) or 7 (``"code"``, no backfilling contribution).  Episode: ``seq_len`` (128)
consecutive jobs from an idle machine; it ends when all have started.  Terminal reward, relative
to the base policy alone on the same sequence and backfilling (cached per sequence):
``percentage`` (m_base − m)/m_base (the paper), ``authors`` (m_base − m)/max(m_base, m, 1),
``native`` m_base − m, ``winloss`` 1 if m < m_base else 0; signs flip for utilization.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from heuristics.backfill import count_strict_backfillable, normalize_backfill, reserve_sorted
from heuristics.committed import COMMITTED_BACKFILLS, CommittedHead, CommittedHeadPolicy
from rtsched.machines import FlatCluster
from rtsched.metrics import sequence_metric
from rtsched.rl.features import HI, INSPECT_FEATURE_SETS, LO, MAX_WAIT
from rtsched.rl.inspector.options import REWARDS
from rtsched.rl.rewards import GOALS, lower_is_better
from rtsched.rl.sequences import heuristic_score, requested_start, start_bounds
from rtsched.rl.trace import default_rl_trace, load_trace
from rtsched.sim.core import Simulator
from rtsched.sim.decisions import WakeAt

ACCEPT, REJECT = 0, 1


def relative_reward(kind: str, base: float, value: float, goal: str) -> float:
    """The inspector's terminal reward for ``value`` against the base policy's ``base``."""
    gain = (base - value) if lower_is_better(goal) else (value - base)
    if kind == "percentage":
        return float(gain / base) if base != 0 else 0.0
    if kind == "authors":
        return float(gain / max(base, value, 1.0))
    if kind == "native":
        return float(gain)
    if kind == "winloss":
        return 1.0 if gain > 0 else 0.0
    raise ValueError(f"unknown reward {kind!r}; choose from {', '.join(REWARDS)}")


class InspectorFeatures:
    """The inspected job's feature vector (seed 000 §2.1)."""

    def __init__(self, norms: dict, machine_nodes: int, goal: str, backfill: str, features: str = "paper",
                 max_interval: int = 600, max_rejections: int = 72) -> None:
        if features not in INSPECT_FEATURE_SETS:
            raise ValueError(f"unknown feature set {features!r}; choose from {', '.join(INSPECT_FEATURE_SETS)}")
        self.n = INSPECT_FEATURE_SETS[features]
        self.norms = norms
        self.machine_nodes = machine_nodes
        self.goal = goal
        self.backfill = backfill
        self.dt = float(max_interval)
        self.max_rej = max_rejections

    def observe(self, view, cand, q: list, rejections: int, procs: int, state=None) -> np.ndarray:
        """The features of ``cand`` (the base policy's pick) at the view's time; ``procs`` is its
        processor count as requested (the trace's, or its nodes); ``state`` the machine state
        (default ``view.state``; mid-pass: ``CommittedHead.state_now``)."""
        state = view.state if state is None else state
        fits = state.find(cand.info.nodes) is not None
        return self.build(view, cand, q, rejections, fits, procs, state)

    def build(self, view, cand, q: list, rejections: int, fits: bool, procs: int, state=None) -> np.ndarray:
        info = cand.info
        now = view.now
        free = (view.state if state is None else state).free_nodes
        o = np.empty(self.n, dtype=np.float32)
        o[0] = min((now - info.submit) / MAX_WAIT, HI)
        o[1] = min(info.walltime / self.norms["max_runtime"], HI)
        o[2] = min(procs / self.norms["max_procs"], HI)
        o[3] = min(free / self.machine_nodes, HI)
        o[4] = HI if fits else LO
        o[5] = min(rejections / self.max_rej, 1.0)
        dt = self.dt
        if self.goal == "wait":
            qd = len(q) / 128.0
        else:
            qd = sum(dt / (w if w > 10 else 10) for w in [js.info.walltime for js in q]) / (dt / 10.0 * 128.0)
        o[6] = min(qd, HI)
        if self.n > 7:
            o[7] = min(self._backfillable(view, cand, q, fits, free) / 128.0, 1.0)
        return o

    def _backfillable(self, view, cand, q, fits: bool, free: int) -> int:
        if self.backfill == "none" or fits:
            return 0
        now = view.now
        shadow = reserve_sorted(view.machine, cand.info.nodes, free, view.busy, now).shadow
        return count_strict_backfillable(q, cand, free, now, shadow)


class Inspection:
    """The bookkeeping of one inspected run, shared by the environment and the trained policy:
    rejections per job (by simulation index), the rejection cap, the counts, and which passes are
    scheduling points after a reject."""

    def __init__(self, max_interval: int, max_rejections: int) -> None:
        self.max_interval = max_interval
        self.max_rejections = max_rejections
        self.rejections: dict[int, int] = {}
        self.wake_at: int | None = None
        self.n_inspections = 0
        self.n_rejections = 0
        self.n_blocked_rejections = 0  # rejections of a job that could not start then anyway
        # inspections of a job that could not start then (counted by the trained policy, InspectedPolicy;
        # the environment leaves it 0: its steps do not look up whether the job fits)
        self.n_blocked_inspections = 0
        self.n_forced = 0  # jobs accepted without asking: rejected max_rejections times already

    def new_run(self) -> None:
        """Forget the previous run's rejections and wake-up (the counts add up across runs)."""
        self.rejections = {}
        self.wake_at = None

    def count(self, js) -> int:
        return self.rejections.get(js.idx, 0)

    def capped(self, js) -> bool:
        """A job rejected ``max_rejections`` times is accepted without asking the agent."""
        return self.count(js) >= self.max_rejections

    def reject(self, js, now: int, blocked: bool = False) -> WakeAt:
        """Count a reject of ``js`` at ``now`` (``blocked``: it did not fit the free resources, so
        without backfilling nothing would have started either); the wake-up to ask for (now +
        ``max_interval``)."""
        self.rejections[js.idx] = self.count(js) + 1
        self.n_rejections += 1
        if blocked:
            self.n_blocked_rejections += 1
        self.wake_at = now + self.max_interval
        return WakeAt(self.wake_at)

    def pass_due(self, view) -> bool:
        """Whether the current pass is a scheduling point: an arrival or a completion, or the
        wake-up of the latest reject.  Older wake-ups are stale (the core cannot cancel a
        ``WakeAt``) and always come earlier; the first scheduling point after a reject consumes
        its wake-up."""
        if view.entered or view.completed or self.wake_at == view.now:
            self.wake_at = None
            return True
        return False


class InspectorEnv(gym.Env):
    """Gymnasium environment of the SchedInspector agent (see module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, trace=None, *, base="sjf", machine=None, seq_len: int = 128, backfill="none",
                 goal: str = "bsld", features: str = "paper", reward: str = "percentage",
                 max_interval: int = 600, max_rejections: int = 72, start_range=None,
                 norms: dict | None = None, util_window: str = "last_end") -> None:
        super().__init__()
        # no trace: the shipped Lublin-256 sample (gymnasium.make with no arguments)
        self.trace = load_trace(default_rl_trace() if trace is None else trace)
        self.machine = machine or FlatCluster(self.trace.max_nodes)
        if goal not in GOALS:
            raise ValueError(f"unknown goal {goal!r}; choose from {', '.join(GOALS)}")
        if reward not in REWARDS:
            raise ValueError(f"unknown reward {reward!r}; choose from {', '.join(REWARDS)}")
        self.goal = goal
        self.reward_kind = reward
        self.backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS)
        self.seq_len = int(seq_len)
        self.max_interval = int(max_interval)
        self.max_rejections = int(max_rejections)
        self.util_window = util_window
        self.bounds = start_bounds(len(self.trace), self.seq_len, start_range)
        self.norms = self.trace.feature_norms(self.machine, norms)
        self.base = CommittedHeadPolicy(base, self.backfill)
        self.base_name = self.base.priority.name
        self.feat = InspectorFeatures(self.norms, self.machine.total_nodes, goal, self.backfill, features,
                                      self.max_interval, self.max_rejections)
        self.observation_space = spaces.Box(0.0, 1.0, (self.feat.n,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._ids = np.array([j.id for j in self.trace.jobs], dtype=np.int64)
        self._procs_by_id: dict[int, int] = {}
        self.sim: Simulator | None = None
        self._done = True
        self._cand = None
        self.start = -1

    # ------------------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        start = requested_start(options, len(self.trace), self.seq_len)
        if start is None:
            lo, hi = self.bounds
            start = int(self.np_random.integers(lo, hi + 1))
        self.start = start
        self._procs_by_id = {int(j): int(p) for j, p in zip(self._ids[start:start + self.seq_len],
                                                             self.trace.procs[start:start + self.seq_len])}
        self.sim = self.trace.simulator(start, self.seq_len, self.machine)
        self.driver = CommittedHead(self.backfill)
        self.inspection = Inspection(self.max_interval, self.max_rejections)
        self._cand = None
        self.base.prepare(self.sim.view)
        self.sim.advance()
        self.driver.sync(self.sim.view)
        self.base.cache_keys(self.sim.view.queue)
        self._done = self._advance(pass_due=True)
        return self._obs(), {"start": start}

    def _pick(self, q, view):
        top = self.base.pick(q, view)
        if self.inspection.capped(top):
            self.inspection.n_forced += 1
            return top
        self._cand = top
        return None

    def _advance(self, pass_due: bool) -> bool:
        d = self.driver
        sim = self.sim
        view = sim.view
        n = self.seq_len
        while True:
            if pass_due:
                decisions = d.run(view, self._pick)
                if decisions:
                    sim.apply(decisions)
                if d.n_started >= n:
                    return True
                if self._cand is not None:
                    return False
            if not sim.advance():
                raise RuntimeError("simulation ended with unstarted jobs")  # cannot happen
            d.sync(view)
            if view.entered:
                self.base.cache_keys(view.entered)
            pass_due = self.inspection.pass_due(view)

    def _obs(self) -> np.ndarray:
        if self._done or self._cand is None:
            return np.zeros(self.feat.n, dtype=np.float32)
        c = self._cand
        return self.feat.observe(self.sim.view, c, self.driver.q, self.inspection.count(c),
                                 self._procs_by_id.get(c.info.id, c.info.nodes))

    def model_description(self) -> tuple[str, dict]:
        """(agent, settings) a model trained elsewhere on this environment records (``rtsched.rl.sb3``)."""
        features = next(k for k, n in INSPECT_FEATURE_SETS.items() if n == self.feat.n)
        return "inspector", {"base": self.base_name, "features": features, "max_interval": self.max_interval,
                             "max_rejections": self.max_rejections, "seq_len": self.seq_len,
                             "reward": self.reward_kind}

    @property
    def network_shape(self) -> tuple[int, int]:
        """(n_features, window) of this agent's networks (``rtsched.rl.nets.build_networks``): the features of the inspected pick, one slot."""
        return self.feat.n, 1

    def action_masks(self) -> np.ndarray:
        """[accept, reject] legality: reject is illegal once the job hit the rejection cap."""
        capped = self._cand is not None and self.inspection.capped(self._cand)
        return np.array([True, not capped])

    def step(self, action):
        if self._done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        a = int(action)
        if a not in (ACCEPT, REJECT):
            raise ValueError(f"action {a} outside Discrete(2)")
        c = self._cand
        self._cand = None
        insp = self.inspection
        insp.n_inspections += 1
        if a == ACCEPT or insp.capped(c):
            self.driver.commit(c)
            self._done = self._advance(pass_due=True)
        else:
            blocked = self.sim.machine_state.find(c.info.nodes) is None
            self.sim.apply([insp.reject(c, self.sim.view.now, blocked)])
            self._done = self._advance(pass_due=False)
        if not self._done:
            return self._obs(), 0.0, False, False, {}
        value = self.metric()
        base = self.base_metric()
        info = {"start": self.start, self.goal: value, "base": base, "inspections": insp.n_inspections,
                "rejections": insp.n_rejections, "blocked_rejections": insp.n_blocked_rejections,
                "forced": insp.n_forced}
        return self._obs(), relative_reward(self.reward_kind, base, value, self.goal), True, False, info

    # ------------------------------------------------------------------------------ results
    def metric(self, goal: str | None = None) -> float:
        outs = self.sim.outcomes
        jobs = outs.jobs
        return sequence_metric(goal or self.goal, [j.submit for j in jobs], [j.runtime for j in jobs],
                               outs.column("first_start"), [j.nodes for j in jobs], self.machine.total_nodes,
                               [j.user for j in jobs], util_window=self.util_window)

    def base_metric(self) -> float:
        """The base policy's value on the current sequence (cached on the trace)."""
        return heuristic_score(self.trace, self.start, self.seq_len, self.base.priority, self.backfill, self.goal,
                               self.machine, self.util_window)
