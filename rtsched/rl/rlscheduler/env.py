"""RLScheduler's job-picking environment (seed 003) on the one core simulator.

One step = the agent picks one of the (at most ``window``) waiting jobs; the pick is committed
(``heuristics.committed.CommittedHead``): it starts now if it fits, otherwise time moves event by event
(backfilling, if on, starting other jobs meanwhile) until it does.  The agent is asked again as
soon as jobs wait and none is committed.  The simulator is ``rtsched.sim.core.Simulator`` with
``event_order="rlscheduler"``, driven by ``advance()``/``apply()``.

* Observation: ``Box(0, 1, (window·F,), float32)`` — the FCFS-first ``window`` waiting jobs, F
  features each (``rtsched.rl.features``), padded.
* Action: ``Discrete(window)``; ``action_masks()`` marks the occupied slots.  An action on a padded
  slot is taken as slot ``a mod k`` (k occupied slots) so that unmasked random actions stay legal.
* Episode: ``seq_len`` consecutive jobs of the trace from an idle machine at the first job's
  submit time; it ends when the last of them has started.  Reward 0 until then, then the goal's
  terminal reward (``rtsched.rl.rewards``).
* ``reset(options={"start": i})`` fixes the first job; otherwise it is drawn (seeded) from the
  allowed part of the trace, optionally kept only if the SJF value of the window lies in the
  trajectory-filtering range ``sjf_filter=(lo, hi)`` (seed 003 §IV-C; ``"auto"`` = (median, 2·mean)).
"""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from heuristics.backfill import normalize_backfill
from heuristics.committed import COMMITTED_BACKFILLS, CommittedHead
from rtsched.errors import OptionError
from rtsched.machines import FlatCluster
from rtsched.metrics import sequence_metric
from rtsched.rl.features import PickObservation, static_pick_columns
from rtsched.rl.rewards import GOALS, reward_of
from rtsched.rl.sequences import filter_range, heuristic_score, requested_start, start_bounds
from rtsched.rl.trace import default_rl_trace, load_trace
from rtsched.sim.core import Simulator


def _checked_filter(sjf_filter) -> tuple[float, float]:
    """A trajectory-filtering range as (lo, hi), two finite numbers with lo < hi, else ``OptionError``."""
    try:
        lo, hi = (float(v) for v in sjf_filter)
    except (TypeError, ValueError):
        raise OptionError(f"sjf_filter (--sjf-filter) must be 'auto' or two numbers LO,HI, "
                          f"got {sjf_filter!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise OptionError(f"sjf_filter (--sjf-filter) must be two finite numbers LO < HI, got {sjf_filter!r}")
    return lo, hi


def _no_pick(q, view):
    return None


class JobPickingEnv(gym.Env):
    """Gymnasium environment of RLScheduler's job-picking agent (see module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, trace=None, *, machine=None, seq_len: int = 256, window: int = 128, backfill="none",
                 goal: str = "bsld", start_range=None, sjf_filter=None, features: str = "code",
                 pad: str = "zeros", util_window: str = "last_end", norms: dict | None = None,
                 filter_samples: int = 200, max_filter_tries: int = 1000) -> None:
        super().__init__()
        # no trace: the shipped Lublin-256 sample (gymnasium.make with no arguments)
        self.trace = load_trace(default_rl_trace() if trace is None else trace)
        self.machine = machine or FlatCluster(self.trace.max_nodes)
        if goal not in GOALS:
            raise ValueError(f"unknown goal {goal!r}; choose from {', '.join(GOALS)}")
        self.goal = goal
        self.backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS)
        self.seq_len = int(seq_len)
        self.window = int(window)
        self.util_window = util_window
        self.bounds = start_bounds(len(self.trace), self.seq_len, start_range)
        self.norms = self.trace.feature_norms(self.machine, norms)
        self.obsb = PickObservation(self.window, features, pad)
        tr = self.trace
        self._static_all = static_pick_columns(tr.walltime, tr.procs, tr.memory, tr.user, tr.group, tr.executable,
                                               self.norms)
        self._ids = np.array([j.id for j in tr.jobs], dtype=np.int64)
        self.max_filter_tries = max_filter_tries
        if sjf_filter == "auto":
            sjf_filter = filter_range(tr, self.seq_len, backfill=self.backfill, goal=goal, machine=self.machine,
                                      n_samples=filter_samples, start_range=start_range)
        self.sjf_filter = _checked_filter(sjf_filter) if sjf_filter is not None else None
        self.observation_space = spaces.Box(0.0, 1.0, (self.window * self.obsb.n_features,), dtype=np.float32)
        self.action_space = spaces.Discrete(self.window)
        self.sim: Simulator | None = None
        self.driver = CommittedHead(self.backfill, fcfs_queue=True)
        self._vis: list = []
        self._done = True
        self.start = -1
        self.n_steps = 0
        self._pos: slice | np.ndarray = np.zeros(0, dtype=np.int64)  # the episode's jobs in the trace

    # ------------------------------------------------------------------------------ episode
    def _draw_start(self) -> int:
        lo, hi = self.bounds
        for _ in range(self.max_filter_tries):
            s = int(self.np_random.integers(lo, hi + 1))
            if self.sjf_filter is None:
                return s
            v = heuristic_score(self.trace, s, self.seq_len, "sjf", self.backfill, self.goal, self.machine,
                                self.util_window)
            if self.sjf_filter[0] < v < self.sjf_filter[1]:
                return s
        raise OptionError(f"sjf_filter (--sjf-filter) {self.sjf_filter}: no sequence with an SJF {self.goal} inside "
                          f"it after {self.max_filter_tries} draws; widen the filter range")

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        start = requested_start(options, len(self.trace), self.seq_len)
        if start is None:
            start = self._draw_start()
        self.start = start
        sim = self.trace.simulator(start, self.seq_len, self.machine)
        wl = sim.workload
        self.sim = sim
        if self.trace.in_order():  # windows are plain slices of the trace (a slice: views, no copies)
            pos = slice(start, start + self.seq_len)
        else:  # non-monotone submit times: the workload re-sorted them
            ids = np.fromiter((j.id for j in wl.jobs), dtype=np.int64, count=len(wl.jobs))
            where = {int(j): i for i, j in enumerate(self._ids[start:start + self.seq_len])}
            pos = np.array([start + where[int(j)] for j in ids], dtype=np.int64)
        self._pos = pos
        self.obsb.set_rows(self._static_all[pos], self.trace.submit[pos], self.trace.nodes[pos])
        self.driver = CommittedHead(self.backfill, fcfs_queue=True)
        self.n_steps = 0
        sim.advance()
        self.driver.sync(sim.view)
        self._done = self._advance()
        return self._obs(), {"start": start}

    def _advance(self) -> bool:
        """Run the simulation to the agent's next turn; True when every job has started."""
        d = self.driver
        sim = self.sim
        view = sim.view
        n = self.seq_len
        run, apply, advance, sync = d.run, sim.apply, sim.advance, d.sync  # bound once: a loop per event
        entered = view.entered
        while True:
            decisions = run(view, _no_pick)
            if decisions:  # (jobs start only through decisions)
                apply(decisions)
                if d.n_started >= n:
                    return True
            if d.head is None and d.q:
                return False
            if not advance():
                raise RuntimeError("simulation ended with unstarted jobs")  # cannot happen
            if entered:  # (same run: sync has nothing to take in after a completion)
                sync(view)

    def _obs(self) -> np.ndarray:
        if self._done:
            self._vis = []
            return self.obsb.build(np.zeros(0, dtype=np.intp), 0, 0, 1)
        vis = self.driver.q[:self.window]
        self._vis = vis
        return self.obsb.observe(vis, self.sim.view)

    def model_description(self) -> tuple[str, dict]:
        """(agent, settings) a model trained elsewhere on this environment records (``rtsched.rl.sb3``)."""
        return "rlscheduler", {"window": self.window, "features": self.obsb.features, "pad": self.obsb.pad,
                               "seq_len": self.seq_len}

    @property
    def network_shape(self) -> tuple[int, int]:
        """(n_features, window) of this agent's networks (``rtsched.rl.nets.build_networks``): the features per job slot and the window."""
        return self.obsb.n_features, self.window

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the occupied window slots (sb3-contrib's MaskablePPO protocol).  After the
        episode's end (nothing to pick) slot 0 is marked so that the mask is never empty."""
        m = np.zeros(self.window, dtype=bool)
        m[:max(len(self._vis), 1)] = True
        return m

    def step(self, action):
        if self._done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        a = int(action)
        k = len(self._vis)
        if not 0 <= a < self.window:
            raise ValueError(f"action {a} outside Discrete({self.window})")
        if a >= k:
            a %= k
        self.driver.commit(self._vis[a])
        self._done = self._advance()
        self.n_steps += 1
        if not self._done:
            return self._obs(), 0.0, False, False, {}
        value = self.metric()
        obs = self._obs()
        return obs, reward_of(self.goal, value), True, False, {"start": self.start, self.goal: value,
                                                               "decisions": self.n_steps}

    # ------------------------------------------------------------------------------ results
    def first_starts(self) -> np.ndarray:
        return self.sim.outcomes.column("first_start")

    def metric(self, goal: str | None = None) -> float:
        """The goal's value of the current (finished) episode."""
        pos = self._pos
        tr = self.trace
        return sequence_metric(goal or self.goal, tr.submit[pos], tr.runtime[pos], self.first_starts(),
                               tr.nodes[pos], self.machine.total_nodes, tr.user[pos], util_window=self.util_window)
