"""Seeded small RTJ/BJ mixes on aligned Mira blocks (seed 002's Table 2 and Table 3 settings).

The one copy of the generator: ``milp.instance.random_instance`` wraps these jobs in an offline
``Instance``, and the RL environment ``rtsched/RtMix-v0`` (``rtsched.rl.rtmix.env``) draws its
episodes here, so both see the same jobs for the same seed.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from rtsched.jobs import BATCH, RT, Job
from rtsched.machines.sizes import BLOCK_NODES, partition_blocks_for

TABLE3_SIZES: tuple[int, ...] = (512, 1024, 2048, 4096, 8192)


def _sizes(sizes: Sequence[int] | None, blocks: int) -> list[int]:
    """The job sizes drawn from: ``sizes``, by default Table 3's that fit a ``blocks``-block machine."""
    return list(sizes) if sizes is not None else [s for s in TABLE3_SIZES if s <= blocks * BLOCK_NODES]


def _walltime(runtime: int, u: float, walltime_factor: tuple[float, float]) -> int:
    """The generator's walltime for ``runtime`` and a uniform draw ``u``: ceil(runtime · U(f_lo, f_hi)), at least
    the runtime."""
    f_lo, f_hi = walltime_factor
    return max(runtime, int(math.ceil(runtime * (f_lo + u * (f_hi - f_lo)) - 1e-9)))


def random_jobs(seed: int, n_bj: int, n_rt: int, blocks: int, *, sizes: Sequence[int] | None = None,
                submit_window: int = 3600, runtime_min: int = 600, runtime_max: int = 7200,
                runtime_step: int = 60, walltime_factor: tuple[float, float] = (1.0, 2.0)) -> list[Job]:
    """The jobs of a seeded random instance (times in s, nodes).

    Draws (one ``Generator(PCG64(seed)).random((n, 5))`` matrix, row i for draw i, columns in this
    fixed order — only ``random()`` doubles are used, so the output is stable across NumPy versions):

    0. submit  = floor(u · (submit_window + 1))  — uniform over [0, submit_window] s;
    1. nodes   = sizes[floor(u · len(sizes))]    — uniform over ``sizes`` (default: Table 3's sizes
       that fit the machine);
    2. runtime = runtime_min + runtime_step · floor(u · (steps + 1)), steps = (max − min) // step —
       uniform over [runtime_min, runtime_max] on a grid of ``runtime_step`` s (default 60 s: whole
       minutes, which keeps the common denominator of the slowdowns small, docs/milp.md);
    3. walltime = ceil(runtime · (f_lo + u · (f_hi − f_lo)))  — runtime × U(1, 2);
    4. kind: the ``n_rt`` draws with the smallest u are RTJs (ties: lower draw index).

    Jobs get ids 1..n in (submit, draw index) order.
    """
    n = n_bj + n_rt
    if n_bj < 0 or n_rt < 0:
        raise ValueError("job counts must be >= 0")
    if runtime_step < 1 or runtime_min < 1 or runtime_max < runtime_min:
        raise ValueError("need 1 <= runtime_min <= runtime_max and runtime_step >= 1")
    sizes = _sizes(sizes, blocks)
    if not sizes:
        raise ValueError(f"no job size fits a {blocks}-block machine")
    for s in sizes:
        partition_blocks_for(s, blocks)
    rng = np.random.Generator(np.random.PCG64(seed))
    u = rng.random((n, 5)) if n else np.zeros((0, 5))
    steps = (runtime_max - runtime_min) // runtime_step
    rt_draws = set(sorted(range(n), key=lambda i: (float(u[i, 4]), i))[:n_rt])
    raw = []
    for i in range(n):
        submit = min(int(math.floor(float(u[i, 0]) * (submit_window + 1))), submit_window)
        nodes = sizes[min(int(math.floor(float(u[i, 1]) * len(sizes))), len(sizes) - 1)]
        runtime = runtime_min + runtime_step * min(int(math.floor(float(u[i, 2]) * (steps + 1))), steps)
        walltime = _walltime(runtime, float(u[i, 3]), walltime_factor)
        raw.append((submit, i, runtime, walltime, nodes, RT if i in rt_draws else BATCH))
    raw.sort(key=lambda r: (r[0], r[1]))
    return [Job(idx + 1, r[0], r[2], r[3], r[4], r[5]) for idx, r in enumerate(raw)]


def runtime_posterior(walltime: int, *, runtime_min: int = 600, runtime_max: int = 7200, runtime_step: int = 60,
                      walltime_factor: tuple[float, float] = (1.0, 2.0), above: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The runtimes ``random_jobs`` may have drawn for a job whose walltime it set to ``walltime``, with their
    probabilities (the grid's uniform prior times the chance of that walltime, given that the runtime exceeds
    ``above`` s): returns (runtimes, probabilities), or two empty arrays when no runtime fits.

    walltime = max(r, ceil(r · f − 1e-9)) with f ~ U(f_lo, f_hi): for f_hi > f_lo that is w when f lies in
    ((w − 1) / r, w / r] (or f ≤ 1 for w = r), so P(w | r) = |that interval ∩ [f_lo, f_hi]| / (f_hi − f_lo);
    for f_hi = f_lo it is 1 for the one w the formula gives.
    """
    steps = (runtime_max - runtime_min) // runtime_step
    r = runtime_min + runtime_step * np.arange(steps + 1, dtype=np.int64)
    f_lo, f_hi = walltime_factor
    if f_hi - f_lo < 1e-12:
        w = np.maximum(r, np.ceil(r * f_lo - 1e-9).astype(np.int64))
        weight = (w == walltime).astype(float)
    else:
        lo = np.where(walltime == r, f_lo, np.maximum((walltime - 1) / r, f_lo))
        hi = np.minimum(np.where(walltime == r, 1.0, walltime / r), f_hi)
        weight = np.clip(hi - lo, 0.0, None) / (f_hi - f_lo)
        weight[r > walltime] = 0.0
    weight[r <= above] = 0.0
    total = weight.sum()
    if total <= 0:
        return r[:0], weight[:0]
    keep = weight > 0
    return r[keep], weight[keep] / total


def redraw_unseen(jobs: Sequence[Job], now: int, n_rt: int, rng: np.random.Generator, *,
                  finished: frozenset[int] | set[int] = frozenset(), above: dict[int, int] | None = None,
                  sizes: Sequence[int] | None = None, blocks: int = 16, submit_window: int = 3600,
                  runtime_min: int = 600, runtime_max: int = 7200, runtime_step: int = 60,
                  walltime_factor: tuple[float, float] = (1.0, 2.0)) -> list[Job] | None:
    """One draw of what an online scheduler cannot know at time ``now`` (s) about an instance of
    ``random_jobs`` (same generator settings): the jobs submitted by ``now`` keep their submit, size, kind and
    walltime, those in ``finished`` their runtime; every other seen job gets a runtime drawn from
    ``runtime_posterior`` (longer than ``above[id]`` s, the work it is known to have done); the
    ``len(jobs)`` − seen jobs still to come are drawn afresh, submitted uniformly in (now, submit_window] (the
    generator's submit times are i.i.d. uniform), their sizes, runtimes and walltimes as the generator draws
    them, ``n_rt`` − seen RTJs among them at random (the generator's RTJs are a uniform subset).  Ids: the seen
    jobs' own, then the rest in submit order.  None when a seen job's walltime admits no runtime.
    """
    above = above or {}
    sizes = _sizes(sizes, blocks)
    seen = sorted((j for j in jobs if j.submit <= now), key=lambda j: j.id)
    out = []
    for j in seen:
        if j.id in finished:
            out.append(j)
            continue
        runtimes, prob = runtime_posterior(j.walltime, runtime_min=runtime_min, runtime_max=runtime_max,
                                           runtime_step=runtime_step, walltime_factor=walltime_factor,
                                           above=above.get(j.id, 0))
        if not len(runtimes):
            return None
        out.append(Job(j.id, j.submit, int(rng.choice(runtimes, p=prob)), j.walltime, j.nodes, j.kind))
    n_new = len(jobs) - len(seen)
    if n_new <= 0:
        return out
    if now >= submit_window:
        return None
    rt_left = n_rt - sum(j.kind == RT for j in seen)
    if not 0 <= rt_left <= n_new:
        return None
    kinds = [RT] * rt_left + [BATCH] * (n_new - rt_left)
    rng.shuffle(kinds)
    steps = (runtime_max - runtime_min) // runtime_step
    new = []
    for kind in kinds:
        submit = int(rng.integers(now + 1, submit_window + 1))
        nodes = sizes[int(rng.integers(len(sizes)))]
        runtime = runtime_min + runtime_step * int(rng.integers(steps + 1))
        walltime = _walltime(runtime, float(rng.random()), walltime_factor)
        new.append((submit, runtime, walltime, nodes, kind))
    new.sort(key=lambda r: r[0])
    first = max((j.id for j in seen), default=0) + 1
    return out + [Job(first + i, *r) for i, r in enumerate(new)]


def table3_jobs(seed: int, *, n_bj: int = 5, n_rt: int = 2, blocks: int = 16, **kwargs) -> list[Job]:
    """Seed 002's Table 3 setting: 5 BJs + 2 RTJs on 16 blocks, sizes 512..8192 (``random_jobs``)."""
    kwargs.setdefault("sizes", TABLE3_SIZES)
    return random_jobs(seed, n_bj, n_rt, blocks, **kwargs)


__all__ = ["TABLE3_SIZES", "random_jobs", "redraw_unseen", "runtime_posterior", "table3_jobs"]
