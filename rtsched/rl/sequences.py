"""Sequences of an RL trace: where they start, how a policy scores on one, trajectory filtering.

A *sequence* is ``length`` consecutive jobs of an ``RLTrace`` from an idle machine, scheduled in
RLScheduler's compatibility mode (the core simulator in the ``"rlscheduler"`` event order, a
priority under the committed-head rule of ``heuristics.committed``): the papers' training and
test unit (seeds 000 and 003).
"""
from __future__ import annotations

import numpy as np

from heuristics.committed import CommittedHeadPolicy
from rtsched.machines import FlatCluster
from rtsched.metrics import sequence_metric


def start_bounds(n_jobs: int, seq_len: int, start_range=None) -> tuple[int, int]:
    """Inclusive bounds (lo, hi) of a sequence's first job so that [start, start + seq_len) lies in
    the allowed part of the trace.

    ``start_range``: None → the authors' default, starts uniform in [seq_len, n − seq_len − 1)
    (falling back to the whole trace when it is too short); a pair of ints (first job, end job) of
    the allowed part; or a pair of floats in [0, 1], fractions of the trace (e.g. (0, 0.2) = the
    first 20 %, seed 000's training split).
    """
    if seq_len < 1 or seq_len > n_jobs:
        raise ValueError(f"sequence length (--seq-len) {seq_len} does not fit a trace of {n_jobs} jobs")
    if start_range is None:
        lo, hi = seq_len, n_jobs - seq_len - 2
        if hi < lo:
            lo, hi = 0, n_jobs - seq_len
        return lo, hi
    a, b = start_range
    if isinstance(a, float) or isinstance(b, float):
        if not (0.0 <= float(a) < float(b) <= 1.0):
            raise ValueError(f"start_range (--start-range) fractions must satisfy 0 <= a < b <= 1, got {start_range}")
        a, b = int(round(float(a) * n_jobs)), int(round(float(b) * n_jobs))
    a, b = int(a), int(b)
    if a < 0 or b > n_jobs or b - a < seq_len:
        raise ValueError(f"start_range (--start-range) {start_range} cannot hold a {seq_len}-job sequence in a trace "
                         f"of {n_jobs} jobs")
    return a, b - seq_len


def requested_start(options: dict | None, n_jobs: int, seq_len: int) -> int | None:
    """The first job an environment's ``reset(options={"start": i})`` asks for (checked against the
    trace), or None when the options leave it to the environment's draw."""
    start = (options or {}).get("start")
    if start is None:
        return None
    start = int(start)
    if not 0 <= start <= n_jobs - seq_len:
        raise ValueError(f"start {start} outside [0, {n_jobs - seq_len}]")
    return start


def heuristic_score(trace, start: int, seq_len: int, priority, backfill: str, goal: str, machine,
                    util_window: str = "last_end") -> float:
    """Goal value of one window scheduled by a heuristic in compatibility mode (cached on the trace)."""
    key = ("score", start, seq_len, getattr(priority, "name", priority), backfill, goal, machine.name, util_window)
    cache = trace.cache
    v = cache.get(key)
    if v is None:
        v = run_sequence(trace, start, seq_len, priority, machine, backfill=backfill, goals=(goal,),
                         util_window=util_window)[goal]
        cache[key] = v
    return v


def filter_range(trace, seq_len: int, *, backfill: str = "none", goal: str = "bsld", machine=None,
                 n_samples: int = 200, start_range=None, seed: int = 0) -> tuple[float, float]:
    """Seed 003's trajectory-filtering range R = (median, 2 × mean) of the SJF metric over sampled
    windows (§IV-C).  Sequences whose SJF value lies strictly inside R are "useful"."""
    machine = machine or FlatCluster(trace.max_nodes)
    lo, hi = start_bounds(len(trace), seq_len, start_range)
    rng = np.random.default_rng(seed)
    starts = rng.integers(lo, hi + 1, size=n_samples)
    vals = np.array([heuristic_score(trace, int(s), seq_len, "sjf", backfill, goal, machine) for s in starts])
    return float(np.median(vals)), float(2.0 * vals.mean())


def run_sequence(trace, start: int, length: int, policy, machine=None, *, backfill="none",
                 goals=("bsld", "wait"), util_window: str = "last_end") -> dict:
    """Schedule jobs [start, start + length) of ``trace`` (an RLTrace) in compatibility mode.

    ``policy`` is a priority name or ``Priority`` (run as ``CommittedHeadPolicy`` with ``backfill``)
    or any core policy.  Returns ``{goal: value, "start": start, "first_start": [...], "policy"}``
    with the goals measured by ``rtsched.metrics.sequence_metric``.
    """
    machine = machine or FlatCluster(trace.max_nodes)
    if not hasattr(policy, "decide"):
        policy = CommittedHeadPolicy(policy, backfill)
    res = trace.simulator(start, length, machine).run(policy)
    outs = res.outcomes
    first = [o.first_start for o in outs]
    out = {"start": start, "first_start": first, "policy": getattr(policy, "name", type(policy).__name__)}
    jobs = [o.job for o in outs]
    columns = ([j.submit for j in jobs], [j.runtime for j in jobs], first, [j.nodes for j in jobs],
               machine.total_nodes, [j.user for j in jobs])
    for g in goals:
        out[g] = sequence_metric(g, *columns, util_window=util_window)
    return out
