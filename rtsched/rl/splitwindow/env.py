"""Deep Back-Filling's split-window environment (seed 004) on the one core simulator.

``rtsched/SplitWindow-v0``.  The simulator is ``rtsched.sim.core.Simulator`` in the
``"rlscheduler"`` event order (one event per scheduling point, so each arrival starts its own
decision cycle, as the paper serialises arrivals), driven by ``advance()`` / ``apply()``; no event
loop of its own.  Observation, window and reward: ``rtsched.rl.splitwindow.observation``.

* **Schedule cycling** (§2.1): at a scheduling point (an arrival, or a completion while jobs wait)
  the agent picks a window slot or Fwd (action M).  A *valid* pick (an occupied slot whose job
  fits the free cores) starts that job now, reward 0, and the agent decides again at the same time.
  Fwd or an *invalid* pick (empty slot, or too few free cores) ends the cycle: reward ℜ(t) (Eq. 2)
  at the decision time, then time moves to the next scheduling point.  No action masking by default
  (``action_masks()`` is all True, the paper's setting).  ``mask_invalid=True`` (a documented
  deviation, docs/rl.md) masks the empty slots and the jobs that do not fit the free cores now, Fwd
  always allowed: the agent then chooses among the moves that change something, as RLScheduler's
  does, and no longer ends a cycle by an invalid pick (the imitation learner's most frequent error).
* **Episode** (§2.4): jobs [start, start + horizon) of the trace on an empty cluster from the first
  job's submit time; it *terminates* at the ``placements``-th start (1,000 in the paper) and is
  *truncated* when the trace part runs out (every job placed, or nothing runs, no job is left to
  arrive and the agent still waits).  ``start`` is drawn uniformly from ``start_range`` (default the
  whole trace) or given by ``reset(options={"start": i})``.
* Ties: the core's ``"rlscheduler"`` order takes an arrival before a completion at the same time
  (the digest's default #11 is the reverse); both start a cycle, so the agent sees both.
* ``info`` at the end: placements, the Fig. 6 diagnostics (average invisible jobs max(0, L − M) per
  decision, fraction of decisions with L > M), the episode's mean Eq. 2 reward.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rtsched.machines import FlatCluster
from rtsched.rl.sequences import start_bounds
from rtsched.rl.splitwindow.observation import TEACHERS, SplitObservation, teacher_slot, valid_slots, window_slots
from rtsched.rl.trace import default_rl_trace, load_trace
from rtsched.sim.decisions import Start


class SplitWindowEnv(gym.Env):
    """Gymnasium environment of Deep Back-Filling's split-window agent (module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, trace=None, *, head: int = 10, tail: int = 10, placements: int = 1000, horizon: int | None = None,
                 start_range=None, sigma: str = "remaining", machine=None, norms: dict | None = None,
                 teacher: str = "sjf", mask_invalid: bool = False, time_scale: str = "linear") -> None:
        super().__init__()
        # no trace: the shipped Lublin-256 sample (gymnasium.make with no arguments)
        self.trace = load_trace(default_rl_trace() if trace is None else trace)
        self.machine = machine or FlatCluster(self.trace.max_nodes)
        if self.machine.partitioned:
            raise ValueError("the split-window agent schedules cores of a flat cluster, not partitions")
        self.placements = int(placements)
        if self.placements < 1:
            raise ValueError("placements must be >= 1")
        n = len(self.trace)
        self.horizon = min(n, int(horizon) if horizon else max(self.placements * 3 // 2, self.placements + 64))
        self.bounds = start_bounds(n, self.horizon, (0, n) if start_range is None else start_range)
        self.norms = dict(norms) if norms else {"max_runtime": float(max(self.trace.max_runtime, 1)),
                                                 "n_cores": float(self.machine.total_nodes)}
        self.head, self.tail = int(head), int(tail)
        if teacher not in TEACHERS:
            raise ValueError(f"unknown split-window teacher {teacher!r}; choose from {', '.join(TEACHERS)}")
        self.teacher = teacher
        self.mask_invalid = bool(mask_invalid)
        self.obsb = SplitObservation(self.machine.total_nodes, self.head, self.tail, self.norms["max_runtime"],
                                     sigma=sigma, time_scale=time_scale)
        self.window = self.obsb.m
        self.observation_space = spaces.Box(0.0, 1.0, (self.obsb.dim,), dtype=np.float32)
        self.action_space = spaces.Discrete(self.window + 1)
        self.fwd = self.window
        self.sim = None
        self._vis: list = []
        self._done = True
        self.start = -1
        self.placed = 0
        self.seen: set[int] = set()  # job ids shown in a window slot this episode (tests, diagnostics)
        self.rewards_sum = 0.0
        self.n_cycles = 0

    # ------------------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        n = len(self.trace)
        if options and options.get("start") is not None:
            start = int(options["start"])
            if not 0 <= start <= n - self.horizon:
                raise ValueError(f"start {start} outside [0, {n - self.horizon}] for a {self.horizon}-job horizon")
        else:
            lo, hi = self.bounds
            start = int(self.np_random.integers(lo, hi + 1))
        self.start = start
        self.sim = self.trace.simulator(start, self.horizon, self.machine)
        self.obsb.new_episode()
        self.placed = 0
        self.seen = set()
        self.rewards_sum = 0.0
        self.n_cycles = 0
        self._done = not self.sim.advance()
        return self._obs(), {"start": start}

    def _obs(self) -> np.ndarray:
        if self._done:
            self._vis = []
            return np.zeros(self.obsb.dim, dtype=np.float32)
        sim = self.sim
        self.obsb.cores.sync(sim.running)
        obs, vis = self.obsb.observe(sim.queue, sim.now)
        self._vis = vis
        self.seen.update(js.info.id for js in vis)
        return obs

    def visible_ids(self) -> list[int]:
        """Job ids of the current observation's slots, slot order."""
        return [js.info.id for js in self._vis]

    @property
    def network_shape(self) -> tuple[int, int]:
        """(n_features, window) of this agent's networks (``rtsched.rl.nets.build_networks``): the observation's size and the window M (M + 1 actions)."""
        return int(np.prod(self.observation_space.shape)), self.window

    def action_masks(self) -> np.ndarray:
        """All True (the paper), or with ``mask_invalid`` only Fwd and the slots whose job fits now."""
        if not self.mask_invalid or self._done:
            return np.ones(self.window + 1, dtype=bool)
        return valid_slots(self._vis, self.sim.machine_state.free_nodes, self.window)

    def teacher_action(self) -> int:
        """The imitation teacher's action in the current state (``teacher_slot``): the window job it
        would start now, or Fwd when none fits."""
        if self._done:
            return self.fwd
        a = teacher_slot(self._vis, self.sim.machine_state.free_nodes, self.teacher)
        return self.fwd if a < 0 else a

    def teacher_good(self) -> np.ndarray:
        """Every action as good as the teacher's now (``behaviour_clone``'s set labels): when it would
        move on, Fwd and every slot that is empty or does not fit (each ends the cycle alike); when it
        starts a job, every fitting slot whose job ties with that one on the teacher's key (``sjf``:
        the requested time; ``fcfs``: only its own slot)."""
        good = np.zeros(self.window + 1, dtype=bool)
        a = self.teacher_action()
        if a == self.fwd:
            free = self.sim.machine_state.free_nodes if not self._done else 0
            good[:] = True
            for i, js in enumerate(self._vis):
                good[i] = js.info.nodes > free
            return good
        good[a] = True
        if self.teacher == "sjf":
            free, key = self.sim.machine_state.free_nodes, self._vis[a].info.walltime
            for i, js in enumerate(self._vis):
                good[i] |= js.info.nodes <= free and js.info.walltime == key
        return good

    def _valid(self, a: int):
        if a < len(self._vis):
            js = self._vis[a]
            if js.info.nodes <= self.sim.machine_state.free_nodes:
                return js
        return None

    def _next_point(self) -> bool:
        """Move to the next scheduling point; False when the episode's trace part is exhausted."""
        sim = self.sim
        if sim.queue and not sim.running and sim.next_arrival >= len(sim.jobs):
            return False  # the agent waits on an idle machine with nothing left to arrive
        return sim.advance()

    def step(self, action):
        if self._done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        a = int(action)
        if not 0 <= a <= self.window:
            raise ValueError(f"action {a} outside Discrete({self.window + 1})")
        sim = self.sim
        self.obsb.count_decision(len(sim.queue))
        js = self._valid(a)
        if js is not None:
            sim.apply([Start(js.info.id, None)])
            self.obsb.cores.take(js.info.id, js.alloc_nodes, sim.now, js.expected_end)
            self.placed += 1
            if self.placed >= self.placements:
                self._done = True
                return self._obs(), 0.0, True, False, self._info()
            if not sim.queue:  # nothing left to decide on at this time
                if not self._next_point():
                    self._done = True
                    return self._obs(), 0.0, False, True, self._info()
            return self._obs(), 0.0, False, False, {}
        # Fwd or an invalid pick: the cycle ends
        r = self.obsb.reward(sim.queue, sim.now, self.machine.total_nodes - sim.machine_state.free_nodes)
        self.rewards_sum += r
        self.n_cycles += 1
        if not self._next_point():
            self._done = True
            return self._obs(), r, False, True, self._info()
        return self._obs(), r, False, False, {}

    def _info(self) -> dict:
        return {"start": self.start, "placements": self.placed, "cycles": self.n_cycles,
                "mean_cycle_reward": self.rewards_sum / self.n_cycles if self.n_cycles else 0.0,
                **self.obsb.diagnostics()}

    # ------------------------------------------------------------------------------ helpers
    def window_of(self, queue: list) -> list:
        return window_slots(queue, self.head, self.tail)
