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
    if sizes is None:
        sizes = [s for s in TABLE3_SIZES if s <= blocks * BLOCK_NODES]
    sizes = list(sizes)
    if not sizes:
        raise ValueError(f"no job size fits a {blocks}-block machine")
    for s in sizes:
        partition_blocks_for(s, blocks)
    rng = np.random.Generator(np.random.PCG64(seed))
    u = rng.random((n, 5)) if n else np.zeros((0, 5))
    steps = (runtime_max - runtime_min) // runtime_step
    f_lo, f_hi = walltime_factor
    rt_draws = set(sorted(range(n), key=lambda i: (float(u[i, 4]), i))[:n_rt])
    raw = []
    for i in range(n):
        submit = min(int(math.floor(float(u[i, 0]) * (submit_window + 1))), submit_window)
        nodes = sizes[min(int(math.floor(float(u[i, 1]) * len(sizes))), len(sizes) - 1)]
        runtime = runtime_min + runtime_step * min(int(math.floor(float(u[i, 2]) * (steps + 1))), steps)
        walltime = max(runtime, int(math.ceil(runtime * (f_lo + float(u[i, 3]) * (f_hi - f_lo)) - 1e-9)))
        raw.append((submit, i, runtime, walltime, nodes, RT if i in rt_draws else BATCH))
    raw.sort(key=lambda r: (r[0], r[1]))
    return [Job(idx + 1, r[0], r[2], r[3], r[4], r[5]) for idx, r in enumerate(raw)]


def table3_jobs(seed: int, *, n_bj: int = 5, n_rt: int = 2, blocks: int = 16, **kwargs) -> list[Job]:
    """Seed 002's Table 3 setting: 5 BJs + 2 RTJs on 16 blocks, sizes 512..8192 (``random_jobs``)."""
    kwargs.setdefault("sizes", TABLE3_SIZES)
    return random_jobs(seed, n_bj, n_rt, blocks, **kwargs)


__all__ = ["TABLE3_SIZES", "random_jobs", "table3_jobs"]
