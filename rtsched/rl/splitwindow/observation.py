"""Deep Back-Filling's split window (seed 004): the pieces the environment and the trained policy share.

NumPy only (no PyTorch, no Gymnasium).  Paper: Wang, Harwood, Rodriguez, HPCC 2022; digest
``../shared/docs/papers/seed-004-deepbackfill.md`` (the §/# references below are the digest's).

* **Window** (§1.3): M = M_h + M_t slots.  When the queue holds more than M jobs, slots 0..M_h−1 show
  the queue's head (oldest first) and the last M_t slots its tail, newest first; when it holds at
  most M jobs the whole queue is shown head first with no duplicate (digest default #6).
* **Cores** (§2.2, §2.5): every core of the N-core flat cluster has an identity; a started job takes
  the lowest-indexed free cores (default #12).  σ_i = time *remaining* until core i is free
  (expected end − now, from walltimes; ``sigma="elapsed"`` gives the paper's formula t − start), 0
  when free.
* **Observation** (§2.2): σ / r_max (N values, clipped to [0, 1]) then per slot (c / N, r / r_max,
  W / W_norm) with W = now − submit and W_norm the largest wait seen so far in the episode (floor
  1 s); empty slots are zeros.  Size N + 3M.  ``time_scale="log"`` (a deviation, docs/rl.md) maps the
  two time features σ and r through log(1 + x) / log(1 + r_max) instead of x / r_max: on Lublin-256
  (r_max 124,707 s) a 100 s and a 1,500 s job differ by 0.011 linearly and by 0.23 in log scale.
* **Reward** (Eq. 2): ℜ(t) = −w1·(1 − η) − w2·L/L_max − w3·W/W_max, η = busy cores / N, L the queue
  length, W = Σ_queue (now − submit), L_max and W_max running maxima over the episode's decision
  times (this one included); 0/0 = 0.  Given when a cycle ends (Fwd or an invalid pick).
"""
from __future__ import annotations

import math

import numpy as np

W1 = W2 = W3 = 1.0 / 3.0
SIGMA_MODES = ("remaining", "elapsed")
TIME_SCALES = ("linear", "log")


def window_slots(queue: list, head: int, tail: int) -> list:
    """The jobs shown, slot by slot (see module docstring); at most ``head + tail`` of them."""
    m = head + tail
    n = len(queue)
    if n <= m:
        return list(queue)
    out = list(queue[:head])
    if tail:
        out.extend(queue[n - 1:n - 1 - tail:-1])
    return out


TEACHERS = ("sjf", "fcfs")


def teacher_slot(vis: list, free_nodes: int, rule: str = "sjf") -> int:
    """The imitation teacher's pick (an imitation warm start, issue 24 §4): among the window's jobs
    that fit ``free_nodes`` now, the shortest requested time (``sjf``; ties: the earlier slot) or the
    first slot (``fcfs``); ``len(slots)`` = M is not known here, so -1 means Fwd (nothing fits)."""
    best, best_key = -1, None
    for i, js in enumerate(vis):
        if js.info.nodes > free_nodes:
            continue
        if rule == "fcfs":
            return i
        key = js.info.walltime
        if best_key is None or key < best_key:
            best, best_key = i, key
    return best


def valid_slots(vis: list, free_nodes: int, window: int) -> np.ndarray:
    """The action mask of ``mask_invalid`` (M + 1 entries): True for Fwd (the last) and for every slot
    whose job fits ``free_nodes`` now; empty slots and jobs too big for the free cores are False."""
    mask = np.zeros(window + 1, dtype=bool)
    mask[window] = True
    for i, js in enumerate(vis):
        mask[i] = js.info.nodes <= free_nodes
    return mask


class CoreMap:
    """Which job holds which core of an N-core flat cluster (lowest-indexed free cores first).

    The core simulator counts processors only; core identity matters to the observation alone, so
    it is kept here, synchronised from the simulator's running set."""

    def __init__(self, n_cores: int) -> None:
        self.n = int(n_cores)
        self.owner = np.full(self.n, -1, dtype=np.int64)
        self.end = np.zeros(self.n, dtype=np.float64)
        self.begin = np.zeros(self.n, dtype=np.float64)
        self.cores: dict[int, np.ndarray] = {}

    def reset(self) -> None:
        self.owner[:] = -1
        self.end[:] = 0
        self.begin[:] = 0
        self.cores.clear()

    def sync(self, running) -> None:
        """Free the cores of every job that no longer runs (``running``: job id → state)."""
        gone = [jid for jid in self.cores if jid not in running]
        for jid in gone:
            idx = self.cores.pop(jid)
            self.owner[idx] = -1
            self.end[idx] = 0
            self.begin[idx] = 0

    def take(self, job_id: int, n: int, begin: float, end: float) -> None:
        free = np.flatnonzero(self.owner < 0)
        if len(free) < n:
            raise RuntimeError(f"job {job_id} needs {n} cores, {len(free)} free in the core map")
        idx = free[:n]
        self.owner[idx] = job_id
        self.begin[idx] = begin
        self.end[idx] = end
        self.cores[job_id] = idx

    @property
    def busy(self) -> int:
        return int((self.owner >= 0).sum())

    def sigma(self, now: float, mode: str = "remaining") -> np.ndarray:
        busy = self.owner >= 0
        if mode == "elapsed":
            return np.where(busy, now - self.begin, 0.0)
        return np.where(busy, np.maximum(self.end - now, 0.0), 0.0)


class SplitObservation:
    """Builds observations and Eq. 2 rewards for one episode (or one evaluation run)."""

    def __init__(self, n_cores: int, head: int, tail: int, max_runtime: float, *, sigma: str = "remaining",
                 weights: tuple[float, float, float] = (W1, W2, W3), time_scale: str = "linear") -> None:
        if head < 0 or tail < 0 or head + tail < 1:
            raise ValueError(f"split window {head}-{tail}: head and tail must be >= 0 with head + tail >= 1")
        if sigma not in SIGMA_MODES:
            raise ValueError(f"unknown sigma {sigma!r}; choose from {', '.join(SIGMA_MODES)}")
        if time_scale not in TIME_SCALES:
            raise ValueError(f"unknown time scale {time_scale!r}; choose from {', '.join(TIME_SCALES)}")
        self.time_scale = time_scale
        self.n = int(n_cores)
        self.head, self.tail = int(head), int(tail)
        self.m = self.head + self.tail
        self.r_max = float(max(max_runtime, 1))
        self.sigma_mode = sigma
        self.weights = tuple(float(w) for w in weights)
        self.dim = self.n + 3 * self.m
        self.cores = CoreMap(self.n)
        self.new_episode()

    def new_episode(self) -> None:
        self.cores.reset()
        self.l_max = 0.0
        self.w_max = 0.0
        self.wait_norm = 1.0
        # Fig. 6 diagnostics: decisions, invisible jobs summed, decisions with L > M
        self.n_decisions = 0
        self.invisible = 0
        self.partial = 0

    def observe(self, queue: list, now: float) -> tuple[np.ndarray, list]:
        """(observation, the jobs in the slots) at a decision."""
        vis = window_slots(queue, self.head, self.tail)
        for js in queue:
            w = now - js.info.submit
            if w > self.wait_norm:
                self.wait_norm = float(w)
        obs = np.zeros(self.dim, dtype=np.float32)
        n, r_max, wn = self.n, self.r_max, self.wait_norm
        log = self.time_scale == "log"
        sigma = self.cores.sigma(now, self.sigma_mode)
        if log:  # log(1 + x) / log(1 + r_max), clipped like the linear form
            norm = float(np.log1p(r_max))
            obs[:self.n] = np.minimum(np.log1p(sigma) / norm, 1.0)
        else:
            obs[:self.n] = np.minimum(sigma / r_max, 1.0)
        k = self.n
        for js in vis:
            info = js.info
            obs[k] = min(info.nodes / n, 1.0)
            obs[k + 1] = min(math.log1p(info.walltime) / norm if log else info.walltime / r_max, 1.0)
            obs[k + 2] = min((now - info.submit) / wn, 1.0)
            k += 3
        return obs, vis

    def count_decision(self, queue_len: int) -> None:
        self.n_decisions += 1
        if queue_len > self.m:
            self.invisible += queue_len - self.m
            self.partial += 1

    def reward(self, queue: list, now: float, busy_cores: int) -> float:
        """Eq. 2 at ``now`` (updates the running maxima)."""
        length = float(len(queue))
        total_wait = float(sum(now - js.info.submit for js in queue))
        self.l_max = max(self.l_max, length)
        self.w_max = max(self.w_max, total_wait)
        w1, w2, w3 = self.weights
        eta = busy_cores / self.n
        lq = length / self.l_max if self.l_max > 0 else 0.0
        wq = total_wait / self.w_max if self.w_max > 0 else 0.0
        return -(w1 * (1.0 - eta) + w2 * lq + w3 * wq)

    def diagnostics(self) -> dict:
        d = max(self.n_decisions, 1)
        return {"decisions": self.n_decisions, "avg_invisible": self.invisible / d,
                "partial_fraction": self.partial / d}


PRETRAINED_SPLITWINDOW = __import__("pathlib").Path(__file__).resolve().parent.parent / "pretrained" / "splitwindow"


def pretrained_splitwindow_models(folder=None) -> dict[tuple[int, int], str]:
    """The split-window models shipped with rtsched (``rtsched/rl/pretrained/splitwindow``, see its
    ``manifest.json``): {(M_h, M_t): model path}; empty when none is there."""
    import json
    from pathlib import Path

    folder = Path(folder) if folder else PRETRAINED_SPLITWINDOW
    manifest = folder / "manifest.json"
    if not manifest.exists():
        return {}
    doc = json.loads(manifest.read_text())
    return {(int(m["head"]), int(m["tail"])): str(folder / m["file"]) for m in doc.get("models", [])
            if (folder / m["file"]).exists()}
