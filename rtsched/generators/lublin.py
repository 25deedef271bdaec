"""The Lublin–Feitelson model of rigid parallel jobs (Lublin & Feitelson, JPDC 63(11), 2003).

A port of the authors' reference generator ``lublin99.c`` (Parallel Workloads Archive, "models"),
typeless variant (``INCLUDE_JOBS_TYPE 0``: the whole-sample parameters), with NumPy's seeded
``Generator`` in place of ``drand48``.  Every constant and rule is the C program's; see
``docs/generators.md`` for the table and the checks against the archive's ``lublin_256.swf``.

* Size: with probability ``serial_prob`` a job is serial (1 processor).  Otherwise
  ``x ~ two-stage-uniform(ulow, umed, uhi, uprob)`` (uniform on [ulow, umed] with probability
  ``uprob``, else on [umed, uhi]) is a log2 size; with probability ``pow2_prob`` (of all jobs: one
  uniform u decides serial if u <= serial_prob, power of two if u <= serial_prob + pow2_prob) x is
  rounded to an integer; the size is round(2^x).  ``uhi = log2(processors)``, ``umed = uhi - 2.5``.
* Runtime: ln(runtime) is hyper-gamma: Gamma(a1, b1) with probability p, else Gamma(a2, b2)
  (shape, scale), where p = pa * size + pb clipped to [0, 1] (linear in the size itself, as in the
  C code); draws with ln(runtime) > 12 are redrawn; runtime = floor(exp(draw)) s.
* Arrivals: a day of 48 half-hour buckets with weights w_b = G(b + 1.5) - G(b + 0.5) (b + 48 for the
  buckets before ``cyclic_day_start``) where G is the Gamma(anum, bnum) CDF, normalised to mean 1.
  Each inter-arrival draws g ~ Gamma(aarr * arar, barr) (redrawn while g > 13) and gains
  exp(g) / 1800 "points"; the clock walks through buckets paying each bucket's weight, so the same
  points take longer in the quiet hours.  Times are whole seconds (truncated as in C).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import gammainc

from rtsched.jobs import Job, Workload

SECONDS_IN_BUCKET = 1800
BUCKETS = 48


@dataclass(frozen=True)
class LublinParams:
    """The model's parameters (defaults: ``lublin99.c``, typeless "whole sample" values).

    Sizes: ``serial_prob``, ``pow2_prob``, ``ulow``, ``umed``, ``uhi``, ``uprob`` (log2 sizes);
    ``uhi=None`` means log2(processors) and ``umed=None`` means ``uhi - 2.5``.
    Runtime (ln s): ``a1, b1, a2, b2`` (Gamma shape, scale), ``pa, pb`` (p = pa * size + pb),
    ``too_much_time`` (cap on ln runtime).  Arrivals: ``aarr * arar, barr`` (Gamma of the ln
    inter-arrival at rush hour, s), ``anum, bnum`` (Gamma of the daily cycle, in buckets),
    ``too_much_arrive_time`` (cap on the ln gap), ``cyclic_day_start`` (bucket), ``start_hour``.
    """

    serial_prob: float = 0.244
    pow2_prob: float = 0.576
    ulow: float = 0.8
    umed: float | None = None
    uhi: float | None = None
    uprob: float = 0.86
    a1: float = 4.2
    b1: float = 0.94
    a2: float = 312.0
    b2: float = 0.03
    pa: float = -0.0054
    pb: float = 0.78
    aarr: float = 10.2303
    barr: float = 0.4871
    arar: float = 1.0225
    anum: float = 8.1737
    bnum: float = 3.9631
    too_much_time: float = 12.0
    too_much_arrive_time: float = 13.0
    cyclic_day_start: int = 11
    start_hour: int = 0

    def size_bounds(self, processors: int) -> tuple[float, float, float]:
        """(ulow, umed, uhi) for a machine of ``processors`` processors, kept in order."""
        uhi = self.uhi if self.uhi is not None else math.log2(processors)
        ulow = min(self.ulow, uhi)
        umed = self.umed if self.umed is not None else uhi - 2.5
        return ulow, min(max(umed, ulow), uhi), uhi


def _streams(seed: int, n: int) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]


def bucket_weights(p: LublinParams) -> np.ndarray:
    """The 48 half-hour weights of the daily cycle (mean 1), bucket 0 = 00:00-00:30."""
    w = np.zeros(BUCKETS)
    for i in range(p.cyclic_day_start, BUCKETS + p.cyclic_day_start):
        idx = (i - 1) % BUCKETS
        w[idx] = gammainc(p.anum, (i + 0.5) / p.bnum) - gammainc(p.anum, (i - 0.5) / p.bnum)
    return w / w.mean()


def _capped_gammas(rng: np.random.Generator, shape: float, scale: float, cap: float, n: int) -> np.ndarray:
    """``n`` Gamma(shape, scale) draws, those above ``cap`` dropped (a prefix-stable redraw)."""
    out = np.empty(0)
    while len(out) < n:
        g = rng.gamma(shape, scale, size=max(n - len(out), 16))
        out = np.concatenate([out, g[g <= cap]])
    return out[:n]


def lublin_arrivals(n_jobs: int, p: LublinParams, rng: np.random.Generator) -> np.ndarray:
    """Arrival times (s, int64, non-decreasing) of ``n_jobs`` jobs; the first job arrives after one gap."""
    weights = bucket_weights(p).tolist()
    gams = _capped_gammas(rng, p.aarr * p.arar, p.barr, p.too_much_arrive_time, n_jobs)
    pts_gain = (np.exp(gams) / SECONDS_IN_BUCKET).tolist()
    out = np.empty(n_jobs, dtype=np.int64)
    bucket = p.start_hour * BUCKETS // 24
    points = reminder = 0.0
    t = 0
    for i in range(n_jobs):
        points += pts_gain[i]
        next_arrive = 0.0
        while points > weights[bucket]:
            points -= weights[bucket]
            bucket = (bucket + 1) % BUCKETS
            next_arrive += SECONDS_IN_BUCKET
        new_reminder = points / weights[bucket]
        next_arrive += SECONDS_IN_BUCKET * (new_reminder - reminder)
        reminder = new_reminder
        t = int(t + next_arrive)
        out[i] = t
    return out


def lublin_sizes(u: np.ndarray, processors: int, p: LublinParams) -> np.ndarray:
    """Sizes from an (n, 3) array of uniforms: (serial/pow2 choice, stage choice, position)."""
    ulow, umed, uhi = p.size_bounds(processors)
    first = u[:, 1] <= p.uprob
    a = np.where(first, ulow, umed)
    b = np.where(first, umed, uhi)
    par = u[:, 2] * (b - a) + a
    pow2 = u[:, 0] <= p.serial_prob + p.pow2_prob
    par = np.where(pow2, np.floor(par + 0.5), par)
    sizes = np.floor(np.power(2.0, par) + 0.5).astype(np.int64)
    sizes = np.where(u[:, 0] <= p.serial_prob, 1, sizes)
    return np.clip(sizes, 1, processors)


def lublin_runtimes(sizes: np.ndarray, p: LublinParams, rngs: list[np.random.Generator]) -> np.ndarray:
    """Runtimes (s, >= 1) of jobs of these sizes: exp of a hyper-Gamma, p linear in the size."""
    n = len(sizes)
    mix = np.clip(p.pa * sizes + p.pb, 0.0, 1.0)
    u = rngs[0].random(n)
    g1 = rngs[1].gamma(p.a1, p.b1, size=n)
    g2 = rngs[2].gamma(p.a2, p.b2, size=n)
    hg = np.where(u <= mix, g1, g2)
    for i in np.flatnonzero(hg > p.too_much_time):  # the C code redraws the whole mixture
        while True:
            r = rngs[3]
            v = r.gamma(p.a1, p.b1) if r.random() <= mix[i] else r.gamma(p.a2, p.b2)
            if v <= p.too_much_time:
                hg[i] = v
                break
    return np.maximum(np.floor(np.exp(hg)).astype(np.int64), 1)


def walltimes_from(runtimes: np.ndarray, walltime_factor: float | tuple[float, float],
                   rng: np.random.Generator) -> np.ndarray:
    """ceil(runtime * f): f a constant, or U(lo, hi) per job for a (lo, hi) pair."""
    if isinstance(walltime_factor, tuple):
        lo, hi = walltime_factor
        if not 1.0 <= lo <= hi:
            raise ValueError(f"walltime_factor range must satisfy 1 <= lo <= hi, got {walltime_factor}")
        f = rng.uniform(lo, hi, size=len(runtimes))
    else:
        if walltime_factor < 1.0:
            raise ValueError(f"walltime_factor must be >= 1, got {walltime_factor}")
        f = np.full(len(runtimes), float(walltime_factor))
    w = np.ceil(np.round(runtimes * f, 9)).astype(np.int64)
    return np.maximum(w, runtimes)


def generate_lublin(n_jobs: int = 10_000, nodes: int = 256, seed: int = 0, *,
                    walltime_factor: float | tuple[float, float] = 1.0,
                    params: LublinParams | None = None, name: str | None = None) -> Workload:
    """A seeded Lublin–Feitelson workload of ``n_jobs`` rigid jobs on ``nodes`` processors.

    Args:
        n_jobs: number of jobs (ids 1..n_jobs in arrival order).
        nodes: processors of the machine (``uhi = log2(nodes)``); the default 256 is the setting
            of the archive's ``lublin_256.swf``.
        seed: seed of NumPy's ``SeedSequence``; same seed, same workload.  Independent streams
            drive arrivals, sizes, runtimes and walltimes, so the first k jobs of a longer trace
            are the k jobs of a shorter one with the same seed.
        walltime_factor: the model has no user estimates: walltime = ceil(runtime * factor) s
            (1.0: perfect estimates, walltime = runtime); a (lo, hi) pair draws the factor from
            U(lo, hi) per job.
        params: model constants (default: ``LublinParams()``, the lublin99.c values).
    Returns:
        A ``Workload`` (times in s, sizes in processors) with ``max_nodes = nodes``.
    """
    if n_jobs < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    if nodes < 1:
        raise ValueError(f"nodes must be >= 1, got {nodes}")
    p = params or LublinParams()
    arr_rng, size_rng, rt_mix, rt_g1, rt_g2, rt_redraw, wall_rng = _streams(seed, 7)
    submit = lublin_arrivals(n_jobs, p, arr_rng)
    sizes = lublin_sizes(size_rng.random((n_jobs, 3)), nodes, p)
    runtimes = lublin_runtimes(sizes, p, [rt_mix, rt_g1, rt_g2, rt_redraw])
    walltimes = walltimes_from(runtimes, walltime_factor, wall_rng)
    jobs = [Job(i + 1, int(s), int(r), int(w), int(z))
            for i, (s, r, w, z) in enumerate(zip(submit.tolist(), runtimes.tolist(), walltimes.tolist(),
                                                   sizes.tolist()))]
    constants = "lublin99.c typeless constants" if p == LublinParams() else "custom constants"
    header = {
        "Generator": f"rtsched.generators.lublin: Lublin & Feitelson (2003) model, {constants}",
        "Parameters": f"n_jobs={n_jobs} nodes={nodes} walltime_factor={walltime_factor}",
        "ModelConstants": " ".join(f"{k}={v}" for k, v in asdict(p).items()),
        "Seed": str(seed),
    }
    return Workload(jobs, name=name or f"lublin_{nodes}", max_nodes=nodes, header=header)
