"""RLSchert's scheduling logic (seed 001), shared by its environment and its trained policy.

``RLSchertCore`` turns a ``SimView`` into the agent's observation and masks, and the agent's
actions into core decisions.  The environment (``rtsched.rl.rlschert.env``) and the policy
(``RLSchertPolicy`` below) both drive it, so that a trained model schedules exactly as it was
trained.

Actions (``N_ACTIONS`` = 14 with the paper's sizes): ``0..n_wait−1`` select the i-th visible waiting
job, ``n_wait..n_wait+n_run−1`` kill the j-th visible running job, the last one is **None**.
Selects and kills are collected for the current time (a *pass*); None hands them to the simulator
(kills first, then starts) and lets time move on: to the next event (``mode="event"``), or by one
slot while jobs wait (``mode="slotted"``, the paper's time-slotted DeepRM-style simulator; with
nothing waiting, to the next arrival or completion).

* Waiting jobs: the queue in arrival order; a killed job goes to the front (seed 001 §1.8, [T]).
  The first ``n_wait`` (5) are visible and selectable.  (DeepRM keeps holes in its visible slots; here
  they close up.)
* Running jobs: in start order; the first ``n_run`` (8) are visible and can be killed.
* Estimates: a waiting job's length is its requested time (``info.walltime`` = ``len_param``, the
  pre-run prediction); a running job's is ``predictions.total(job, elapsed)`` when ``dynamic``
  (RLSchert) or its ``len_param`` (DeepRM), never below elapsed + 1 slot (overrun extends it).
  A kill re-queues the job with its latest running prediction as the new estimate (``Kill``).
* Slotted mode: a ``horizon`` × ``units`` canvas (time slots × resource units, one unit = one node
  of the simulated machine) holds the running jobs' predicted remaining lengths from row 0 and the
  reservations of selected jobs (the *ready* queue) at their earliest feasible offset; each job
  takes the first free columns of each of its rows (DeepRM).  The canvas is rebuilt at every
  decision from the running jobs' current predictions, the ready jobs re-placed in their order
  (seed 001 §1.7): a ready job whose offset reaches 0 starts.  A job can be selected only if it
  can be placed inside the horizon; time moves on only by None.
* Masks: a select needs an occupied slot and (event mode) room now / (slotted) a place inside the
  horizon; a kill needs an occupied running slot and ``kill=True``; None is masked only when
  nothing would run or is reserved while a selectable job waits (event mode: the core refuses a
  stuck run; slotted mode: a greedy policy could otherwise wait forever in an unchanging state).
* The rule-based kill (seed 001 §1.8, relative-error reading): kill a visible running job when
  elapsed < len_param, len_param < 10 slots, run_e > 10 slots and |run_e − len_param| / len_param > 1.
* The remaining-time kill (seed 001 §4.6.2's motivation made a rule: a mispredicted long job found
  soon after it started is killed so that short waiting jobs run): among the visible running jobs
  started at most 6 slots ago, never killed, predicted to run at least 35 more slots, and whose
  units let a visible waiting job of at most 20 requested slots (never killed) that does not fit
  now start, the one with the longest predicted remaining time.

Observations: event mode, a vector of ``n_wait`` × 5 waiting-job features, ``n_run`` × 6 running-job
features and 3 globals (``obs_size``); slotted mode, the paper's ``horizon`` × (units + n_wait ·
max_job_units + 2) image (120 × 72 with 20 units and 10-unit jobs): the canvas (job colours in
(0, 1]), the waiting jobs' blocks (rows = predicted slots, columns = units), one column stacking the
running jobs' S1..S5 (15 rows each: len_param/100, elapsed/100, relative error (≤ 1), run_e/100,
units/10, in slots), one column of min(slots since the last arrival, 10)/10.  Times in s, unless
a name says slots.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from heuristics.priorities import get_priority
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Kill, Start, WakeAt
from rtsched.sim.state import WAITING, JobState

MODES = ("event", "slotted")
N_WAIT, N_RUN = 5, 8
WAIT_FEATURES, RUN_FEATURES, GLOBAL_FEATURES = 5, 6, 3
RUN_COLUMN_ROWS = 15  # rows per running job in the slotted image's running column
KILL_SHORT_SLOTS = 10  # the rule kill's 10 units (50 min)
# The remaining-time kill (``RLSchertCore.remaining_kill``), in slots; chosen on training-distribution
# sequences (generator seeds 100-163) by a grid over 2-12 / 15-60 / 6-30 slots: SJF 10.39 -> 9.94.
REMAINING_KILL_MAX_ELAPSED = 6  # kill only a job started at most this long ago (little work lost)
REMAINING_KILL_MIN_REMAINING = 35  # ... that is predicted to run at least this much longer
REMAINING_KILL_SHORT = 20  # ... so that a waiting job requesting at most this much can start
KILL_RULES = ("rule", "remaining")  # the rule kills a teacher or heuristic may use
LOG_NORM = math.log1p(1000.0)


class Predictions(Protocol):
    """What RLSchert knows of a job's length beyond its requested time."""

    def total(self, js: JobState, elapsed: int) -> int:
        """Predicted total runtime (s) of running job ``js`` after ``elapsed`` s (> elapsed)."""


class StaticPredictions:
    """No running prediction: the requested time, extended past elapsed (DeepRM's view)."""

    def __init__(self, slot: int = 300) -> None:
        self.slot = slot

    def total(self, js: JobState, elapsed: int) -> int:
        return max(js.info.walltime, elapsed + self.slot)


class ArrayPredictions:
    """Per-job running predictions given in slots, indexed by elapsed slots (seed 001 §2.3):
    ``arrays[job id][e]`` is the predicted total length after e slots (padded with the last value)."""

    def __init__(self, arrays: dict[int, np.ndarray], slot: int = 300) -> None:
        self.arrays = arrays
        self.slot = slot

    def total(self, js: JobState, elapsed: int) -> int:
        arr = self.arrays.get(js.info.id)
        wall = js.info.walltime // self.slot
        if arr is None:
            pred = wall
        else:
            pred = int(arr[min(elapsed // self.slot, len(arr) - 1)])
            if js.n_kills:  # re-run after a kill: never below the estimate it was re-queued with
                pred = max(pred, wall)
        return max(pred * self.slot, elapsed + self.slot)


class ModelPredictions:
    """Running predictions of ``rtsched.rl.rlschert.predict.PrerunModel``'s conditional model: the jobs'
    locations (s) by id, optional walltime caps by id."""

    def __init__(self, model, locations: dict[int, float], caps: dict[int, float] | None = None,
                 slot: int = 300) -> None:
        self.model = model
        self.locations = locations
        self.caps = caps or {}
        self.slot = slot

    def total(self, js: JobState, elapsed: int) -> int:
        loc = self.locations.get(js.info.id)
        if loc is None or elapsed <= 0:
            return max(js.info.walltime, elapsed + 1)
        est = self.model.running(loc, elapsed, self.caps.get(js.info.id))
        return max(int(math.ceil(est)), elapsed + 1)


@dataclass(frozen=True)
class RLSchertConfig:
    """Sizes and switches (seed 001 Table 2; ``units`` = resource units of the slotted canvas)."""

    mode: str = "event"
    n_wait: int = N_WAIT
    n_run: int = N_RUN
    slot: int = 300  # s
    horizon: int = 120  # slots (slotted mode)
    max_job_units: int = 10  # columns of a waiting-job block (slotted mode)
    dynamic: bool = True  # RLSchert's running predictions (False: DeepRM's pre-run length only)
    kill: bool = True  # kill actions allowed

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; use 'event' or 'slotted'")
        if self.n_wait < 1 or self.n_run < 1 or self.slot < 1 or self.horizon < 1:
            raise ValueError("n_wait, n_run, slot and horizon must be at least 1")

    @property
    def n_actions(self) -> int:
        return self.n_wait + self.n_run + 1

    @property
    def none_action(self) -> int:
        return self.n_wait + self.n_run


def image_width(units: int, cfg: RLSchertConfig) -> int:
    """Columns of the slotted image: canvas + waiting blocks + running column + extra column."""
    return units + cfg.n_wait * cfg.max_job_units + 2


def obs_shape(units: int, cfg: RLSchertConfig) -> tuple[int, ...]:
    if cfg.mode == "slotted":
        return (cfg.horizon * image_width(units, cfg),)
    return (cfg.n_wait * WAIT_FEATURES + cfg.n_run * RUN_FEATURES + GLOBAL_FEATURES,)


def _tnorm(seconds: float, slot: int) -> float:
    return min(1.0, math.log1p(max(seconds, 0.0) / slot) / LOG_NORM)


class RLSchertCore:
    """The agent's view of a simulation and its actions as decisions (module docstring)."""

    def __init__(self, cfg: RLSchertConfig, units: int, predictions: Predictions | None = None) -> None:
        self.cfg = cfg
        self.units = int(units)
        if cfg.mode == "slotted" and cfg.max_job_units < 1:
            raise ValueError("max_job_units must be at least 1")
        self.pred = predictions or StaticPredictions(cfg.slot)
        self.run_id = None
        self.reset()

    def reset(self) -> None:
        self.waiting: list[JobState] = []
        self.running: list[JobState] = []
        self.ready: list[JobState] = []  # slotted: reserved for a later slot, in reservation order
        self._offsets: dict[int, int] = {}
        self.pending_start: list[JobState] = []
        self.pending_kill: list[JobState] = []
        self.last_arrival = None
        self.n_kills = 0
        self._canvas: np.ndarray | None = None
        self._avbl: np.ndarray | None = None

    # ------------------------------------------------------------------------------ state
    def sync(self, view: SimView) -> None:
        """Take in what happened since the last pass (arrivals, requeues, completions)."""
        if view.run_id != self.run_id:
            self.run_id = view.run_id
            self.reset()
            self.waiting = list(view.queue)
            self.running = sorted(view.running.values(), key=lambda s: (s.run_start, s.info.id))
            if view.queue:
                self.last_arrival = view.now
        else:
            for js in view.entered:
                if js.n_kills and js in self.waiting:
                    continue  # put at the front when it was killed
                if js not in self.waiting:
                    self.waiting.append(js)
                if not js.n_kills:
                    self.last_arrival = view.now
            self.running = [js for js in self.running if js.info.id in view.running]
        self.pending_start = []
        self.pending_kill = []
        self._now = view.now
        if self.cfg.mode == "slotted":
            self._replan(view)

    def elapsed(self, js: JobState, now: int) -> int:
        return now - js.run_start if js.run_start >= 0 else 0

    def length(self, js: JobState, now: int) -> int:
        """Predicted total length (s) of running job ``js`` (≥ elapsed + 1 slot in slotted mode)."""
        e = self.elapsed(js, now)
        if self.cfg.dynamic:
            total = self.pred.total(js, e)
        else:
            total = js.info.walltime
        floor = e + (self.cfg.slot if self.cfg.mode == "slotted" else 1)
        return max(total, floor)

    def free_now(self, view: SimView) -> int:
        return (view.state.free_nodes - sum(js.info.nodes for js in self.pending_start)
                + sum(js.info.nodes for js in self.pending_kill))

    def visible_waiting(self) -> list[JobState]:
        return self.waiting[:self.cfg.n_wait]

    def visible_running(self) -> list[JobState]:
        return [js for js in self.running if js not in self.pending_kill][:self.cfg.n_run]

    # ------------------------------------------------------------------------------ canvas
    def _slots(self, seconds: int) -> int:
        return max(1, -(-int(seconds) // self.cfg.slot))

    def _paint(self, canvas, avbl, js: JobState, offset: int, length: int, colour: int) -> None:
        """Give ``js`` the first ``units`` free columns of each row in [offset, offset + length)."""
        units = js.info.nodes
        r0, r1 = offset, min(offset + length, self.cfg.horizon)
        if r1 <= r0:
            return
        block = canvas[r0:r1]
        free = block == 0
        take = free & (np.cumsum(free, axis=1) <= units)
        block[take] = colour
        avbl[r0:r1] -= units

    def _place(self, avbl, units: int, length: int) -> int | None:
        """Earliest offset t with avbl[t : t + length] ≥ units inside the horizon (DeepRM)."""
        length = min(length, self.cfg.horizon)
        ok = np.lib.stride_tricks.sliding_window_view(avbl >= units, length).all(axis=1)
        t = int(np.argmax(ok))
        return t if ok[t] else None

    def _replan(self, view: SimView) -> None:
        """Rebuild the canvas from the running jobs and re-place the ready jobs (slotted mode);
        ready jobs placed at offset 0 become this slot's starts."""
        h = self.cfg.horizon
        canvas = np.zeros((h, self.units), dtype=np.int64)
        avbl = np.full(h, self.units, dtype=np.int64)
        now = view.now
        for js in self.running:
            rem = self._slots(self.length(js, now) - self.elapsed(js, now))
            self._paint(canvas, avbl, js, 0, rem, js.info.id)
        ready, self.ready = self.ready, []
        self._offsets = {}
        for js in ready:
            if js.status != WAITING:  # no longer waiting (cannot happen unless started elsewhere)
                continue
            self._reserve(js, canvas, avbl)
        self._canvas, self._avbl = canvas, avbl

    def _reserve(self, js: JobState, canvas, avbl) -> bool:
        length = self._slots(js.info.walltime)
        t = self._place(avbl, js.info.nodes, length)
        if t is None:
            self.ready.append(js)  # stays reserved; re-tried at the next slot
            self._offsets[js.info.id] = -1
            return False
        self._paint(canvas, avbl, js, t, length, js.info.id)
        if t == 0:
            self.pending_start.append(js)
        else:
            self.ready.append(js)
            self._offsets[js.info.id] = t
        return True

    def canvas(self) -> np.ndarray:
        """The slotted canvas: ``horizon`` × units job ids (0 free)."""
        if self._canvas is None:
            raise RuntimeError("no canvas: slotted mode only, after sync()")
        return self._canvas.copy()

    # ------------------------------------------------------------------------------ masks
    def masks(self, view: SimView) -> np.ndarray:
        cfg = self.cfg
        m = np.zeros(cfg.n_actions, dtype=bool)
        vis = self.visible_waiting()
        if cfg.mode == "event":
            free = self.free_now(view)
            for i, js in enumerate(vis):
                m[i] = js.info.nodes <= free
        else:
            for i, js in enumerate(vis):
                m[i] = self._place(self._avbl, js.info.nodes, self._slots(js.info.walltime)) is not None
        if cfg.kill:
            for j in range(len(self.visible_running())):
                m[cfg.n_wait + j] = True
        m[cfg.none_action] = True
        if m[:cfg.n_wait].any() and not self.pending_start and not self.ready \
                and not [js for js in self.running if js not in self.pending_kill]:
            # nothing would run or is reserved: event mode, the core could not move on; slotted
            # mode, a greedy policy could wait forever in an unchanging state
            m[cfg.none_action] = False
        return m

    # ------------------------------------------------------------------------------ actions
    def act(self, a: int, view: SimView) -> bool:
        """Apply action ``a`` to the pass; True when it is None (the pass is over)."""
        cfg = self.cfg
        if a == cfg.none_action:
            return True
        if a < cfg.n_wait:
            js = self.visible_waiting()[a]
            self.waiting.remove(js)
            if cfg.mode == "event":
                self.pending_start.append(js)
            else:
                if not self._reserve(js, self._canvas, self._avbl):
                    raise ValueError(f"select of job {js.info.id}: no place inside the horizon (masked)")
            return False
        js = self.visible_running()[a - cfg.n_wait]
        self.pending_kill.append(js)
        self.waiting.insert(0, js)
        self.n_kills += 1
        if cfg.mode == "slotted":
            self._rebuild_after_kill(view)
        return False

    def _rebuild_after_kill(self, view: SimView) -> None:
        """A kill frees the job's cells now: redraw the canvas without it, keeping this pass's
        starts at offset 0 and re-placing the ready jobs."""
        h = self.cfg.horizon
        canvas = np.zeros((h, self.units), dtype=np.int64)
        avbl = np.full(h, self.units, dtype=np.int64)
        now = view.now
        for js in self.running:
            if js in self.pending_kill:
                continue
            rem = self._slots(self.length(js, now) - self.elapsed(js, now))
            self._paint(canvas, avbl, js, 0, rem, js.info.id)
        for js in self.pending_start:
            self._paint(canvas, avbl, js, 0, self._slots(js.info.walltime), js.info.id)
        ready, self.ready = self.ready, []
        for js in ready:
            self._reserve(js, canvas, avbl)
        self._canvas, self._avbl = canvas, avbl

    def flush(self, view: SimView) -> list[Decision]:
        """The pass's decisions (kills, then starts; slotted: and a wake-up one slot later)."""
        out: list[Decision] = []
        now = view.now
        for js in self.pending_kill:
            est = self.pred.total(js, self.elapsed(js, now)) if self.cfg.dynamic else js.info.walltime
            if self.cfg.mode == "slotted":
                est = self._slots(est) * self.cfg.slot
            out.append(Kill(js.info.id, estimate=int(max(est, 1))))
        for js in self.pending_start:
            out.append(Start(js.info.id))
        self.running = [js for js in self.running if js not in self.pending_kill] + self.pending_start
        self.pending_kill = []
        self.pending_start = []
        if self.cfg.mode == "slotted" and (self.waiting or self.ready):
            # jobs wait: the plan is revised at the next slot (nothing waiting: the core's next
            # arrival or completion is the next decision point, and a run with nothing left ends)
            out.append(WakeAt(now + self.cfg.slot))
        return out

    # ------------------------------------------------------------------------------ the rule kill
    def rule_kill(self, view: SimView) -> int | None:
        """The first visible running slot the rule-based kill fires on (module docstring), or None."""
        slot = self.cfg.slot
        short = KILL_SHORT_SLOTS * slot
        for j, js in enumerate(self.visible_running()):
            lp = js.info.walltime
            e = self.elapsed(js, view.now)
            run = self.pred.total(js, e) if self.cfg.dynamic else lp
            if e < lp and lp < short and run > short and abs(run - lp) / lp > 1.0:
                return j
        return None

    def remaining_kill(self, view: SimView) -> int | None:
        """The visible running slot the remaining-time kill fires on (module docstring), or None."""
        slot, now = self.cfg.slot, view.now
        free = self.free_now(view)
        blocked = [w.info.nodes for w in self.visible_waiting()
                   if w.info.walltime <= REMAINING_KILL_SHORT * slot and w.info.nodes > free and not w.n_kills]
        if not blocked:
            return None
        need = min(blocked)
        best, best_rem = None, -1
        for j, js in enumerate(self.visible_running()):
            e = self.elapsed(js, now)
            if js.n_kills or e > REMAINING_KILL_MAX_ELAPSED * slot or free + js.info.nodes < need:
                continue
            rem = (self.pred.total(js, e) if self.cfg.dynamic else js.info.walltime) - e
            if rem >= REMAINING_KILL_MIN_REMAINING * slot and rem > best_rem:
                best, best_rem = j, rem
        return best

    def kill_by(self, rule: str, view: SimView) -> int | None:
        """The visible running slot ``rule`` (``KILL_RULES``) kills now, or None."""
        if rule == "rule":
            return self.rule_kill(view)
        if rule == "remaining":
            return self.remaining_kill(view)
        raise ValueError(f"unknown kill rule {rule!r} (known: {', '.join(KILL_RULES)})")

    # ------------------------------------------------------------------------------ observations
    def observe(self, view: SimView) -> np.ndarray:
        if self.cfg.mode == "slotted":
            return self._image(view).ravel()
        return self._vector(view)

    def _running_features(self, js: JobState, now: int) -> tuple[float, float, float, float]:
        lp = js.info.walltime
        e = self.elapsed(js, now)
        run = self.length(js, now)
        return lp, e, min(1.0, abs(run - lp) / lp), run

    def _vector(self, view: SimView) -> np.ndarray:
        cfg = self.cfg
        slot = cfg.slot
        total = view.machine.total_nodes
        now = view.now
        free = self.free_now(view)
        out = np.zeros(obs_shape(self.units, cfg), dtype=np.float32)
        k = 0
        for i in range(cfg.n_wait):
            vis = self.visible_waiting()
            if i < len(vis):
                js = vis[i]
                out[k:k + WAIT_FEATURES] = (1.0, _tnorm(js.info.walltime, slot), js.info.nodes / total,
                                            _tnorm(now - js.info.submit, slot), float(js.info.nodes <= free))
            k += WAIT_FEATURES
        vis = self.visible_running()
        for j in range(cfg.n_run):
            if j < len(vis):
                lp, e, rel, run = self._running_features(vis[j], now)
                out[k:k + RUN_FEATURES] = (1.0, _tnorm(lp, slot), _tnorm(e, slot), rel, _tnorm(run, slot),
                                           vis[j].info.nodes / total)
            k += RUN_FEATURES
        since = (now - self.last_arrival) / slot if self.last_arrival is not None else 10.0
        out[k:k + GLOBAL_FEATURES] = (free / total, min(since, 10.0) / 10.0,
                                      min(1.0, max(0, len(self.waiting) - cfg.n_wait) / 100.0))
        return out

    def _image(self, view: SimView) -> np.ndarray:
        cfg = self.cfg
        h, units = cfg.horizon, self.units
        img = np.zeros((h, image_width(units, cfg)), dtype=np.float32)
        canvas = self._canvas
        if canvas is not None:
            ids = canvas[canvas > 0]
            if len(ids):
                img[:, :units] = np.where(canvas > 0, ((canvas % 40) + 1) / 40.0, 0.0)  # colours in (0, 1]
        col = units
        for i, js in enumerate(self.visible_waiting()):
            length = min(self._slots(js.info.walltime), h)
            w = min(js.info.nodes, cfg.max_job_units)
            img[:length, col + i * cfg.max_job_units: col + i * cfg.max_job_units + w] = 1.0
        col += cfg.n_wait * cfg.max_job_units
        slot = cfg.slot
        for j, js in enumerate(self.visible_running()):
            r0 = j * RUN_COLUMN_ROWS
            if r0 + 5 > h:
                break
            lp, e, rel, run = self._running_features(js, view.now)
            img[r0:r0 + 5, col] = (min(lp / slot / 100.0, 1.0), min(e / slot / 100.0, 1.0), rel,
                                   min(run / slot / 100.0, 1.0), min(js.info.nodes / 10.0, 1.0))
        since = (view.now - self.last_arrival) / slot if self.last_arrival is not None else 10.0
        img[:, col + 1] = min(since, 10.0) / 10.0
        return img


# ---------------------------------------------------------------------------------- heuristics
def heuristic_action(core: RLSchertCore, view: SimView, priority: str = "sjf", *, rule_kill: bool = False,
                     mask: np.ndarray | None = None, kill_rule: str = "rule") -> int:
    """A heuristic on RLSchert's action space (seed 001 §4.1): among the visible waiting jobs that
    fit *now* (event: free nodes; slotted: placeable at offset 0), the first by ``priority``
    (``heuristics.priorities``: ``sjf`` = shortest ``len_param``, ``saf`` = smallest
    ``len_param`` × units, ``fcfs``, ...); None when none fits.  With ``rule_kill`` the rule-based
    kill comes first (the paper's "with kill" heuristics and the imitation teacher's kill);
    ``kill_rule`` names it (``KILL_RULES``: ``"remaining"`` for the remaining-time kill)."""
    cfg = core.cfg
    if mask is None:
        mask = core.masks(view)
    if rule_kill and cfg.kill:
        j = core.kill_by(kill_rule, view)
        if j is not None and mask[cfg.n_wait + j]:
            return cfg.n_wait + j
    vis = core.visible_waiting()
    if cfg.mode == "event":
        ok = [i for i in range(len(vis)) if mask[i]]
    else:
        ok = [i for i in range(len(vis)) if mask[i]
              and core._place(core._avbl, vis[i].info.nodes, core._slots(vis[i].info.walltime)) == 0]
    if not ok:
        if mask[cfg.none_action]:
            return cfg.none_action
        ok = [i for i in range(cfg.n_wait) if mask[i]]
    prio = get_priority(priority)
    key = prio.textbook_key
    total = view.machine.total_nodes
    return min(ok, key=lambda i: key(vis[i], view.now, total))


def run_pass(core: RLSchertCore, view: SimView, choose, max_actions: int = 10_000) -> list[Decision]:
    """One scheduling pass: ``choose(obs, mask) -> action`` until None; the pass's decisions."""
    core.sync(view)
    for _ in range(max_actions):
        mask = core.masks(view)
        if mask[core.cfg.none_action] and not mask[:core.cfg.none_action].any():
            break
        a = choose(view, mask)
        if core.act(int(a), view):
            break
    return core.flush(view)


class RLSchertHeuristicPolicy:
    """A heuristic on RLSchert's action space as a core policy (``heuristic_action``)."""

    preemptive = False

    def __init__(self, priority: str = "sjf", cfg: RLSchertConfig | None = None, units: int | None = None, *,
                 rule_kill: bool = False, predictions: Predictions | None = None, kill_rule: str = "rule") -> None:
        self.cfg = cfg or RLSchertConfig()
        self.priority = priority
        self.rule_kill = rule_kill
        self.kill_rule = kill_rule
        self.units = units
        self.predictions = predictions
        self.core: RLSchertCore | None = None
        suffix = {"rule": "+kill", "remaining": "+rkill"}[kill_rule] if rule_kill else ""
        self.name = f"rlschert-{priority}{suffix}"

    def decide(self, view: SimView) -> list[Decision]:
        if self.core is None:
            self.core = RLSchertCore(self.cfg, self.units or view.machine.total_nodes, self.predictions)
        core = self.core
        return run_pass(core, view, lambda v, m: heuristic_action(core, v, self.priority, rule_kill=self.rule_kill,
                                                                  mask=m, kill_rule=self.kill_rule))


__all__ = ["KILL_RULES", "ArrayPredictions", "ModelPredictions", "N_RUN", "N_WAIT", "Predictions", "RLSchertConfig", "RLSchertCore",
           "RLSchertHeuristicPolicy", "StaticPredictions", "heuristic_action", "image_width", "obs_shape", "run_pass"]
