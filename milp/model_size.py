"""The size of a MILP before it is built, and the refusal of one that cannot be built in time or
memory (issue 26, "A time limit is a promise").

Building the MILPs is pure Python over every pair of jobs (disjunctive) or every job, slot and
block (the paper's sequence model), so a 3,000-job instance took minutes and gigabytes
(disjunctive 2.4 GB, sequence 7-8 GB, both still building after 120 s with ``--time-limit 10``).
:func:`check_buildable` estimates the model from the instance's dimensions alone (no model code
runs) and refuses, with one line, a model whose build would outlast the time limit or the memory
available.  The constants are measured (docs/benchmarks.md, "Time limits (issue 26)").
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from rtsched.errors import InputError

from milp.instance import Instance

# Non-zeros per pair of job parts (disjunctive: two big-M rows of about 3 terms per order binary,
# plus the conflict rows) and per (part, slot, block) triple (sequence model: slot-use binaries
# and their big-M links), fitted to built models: disjunctive 60 / 120 jobs (96,631 / 352,193
# non-zeros), sequence 60 jobs (18,385,191) on 16 blocks.
NZ_PER_PART_PAIR = 15.0
NZ_PER_PART_SLOT_BLOCK = 90.0
# Memory per non-zero of the Python model while it is built (bytes; tracemalloc's peak: 70 for the
# 18M-non-zero sequence model, 156 for the disjunctive 120-job one, more where fixed costs weigh),
# and the build rate (non-zeros per second; disjunctive 60 / 120 jobs built at 35,089 / 70,597 on
# the shared 2-core machine at load 14: the slower one, so that a refused build would not have fit).
BYTES_PER_NONZERO = 120
BUILD_NONZEROS_PER_SECOND = 35_000.0
# A build may outlast the limit by this much (s) before it is refused: the promise is "the limit
# plus a few seconds", and a small model's estimate (a Table-3 sequence MILP: about 6 s) is rough.
BUILD_GRACE_SECONDS = 10.0
# Share of the available memory a model may take (the solver needs its own copy and workspace).
MEMORY_SHARE = 0.5


@dataclass(frozen=True)
class ModelEstimate:
    formulation: str
    nonzeros: int
    bytes: int
    build_seconds: float


def estimate(instance: Instance, formulation: str, preempt: bool = True, sequences: int | None = None) -> ModelEstimate:
    """The estimated size, memory and build time of ``formulation`` ("disjunctive" or "sequence")
    on ``instance``, from its dimensions (jobs, splittable jobs, blocks, the cap T)."""
    parts = len(instance.jobs) + (sum(1 for j in instance.jobs if instance.preemptible(j)) if preempt else 0)
    if formulation == "disjunctive":
        nz = NZ_PER_PART_PAIR * parts * (parts - 1) / 2
    else:
        T = parts if sequences is None else min(sequences, parts)
        nz = NZ_PER_PART_SLOT_BLOCK * parts * T * instance.blocks
    return ModelEstimate(formulation, int(nz), int(nz * BYTES_PER_NONZERO), nz / BUILD_NONZEROS_PER_SECOND)


def available_memory() -> int | None:
    """Bytes of memory available now (Linux ``MemAvailable``), None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_buildable(instance: Instance, formulation: str, preempt: bool = True, sequences: int | None = None,
                    time_limit: float | None = None, memory: int | None = None) -> ModelEstimate:
    """Refuse (``InputError``, one line) a model whose estimated build outlasts ``time_limit`` (plus
    :data:`BUILD_GRACE_SECONDS`) or
    takes more than :data:`MEMORY_SHARE` of ``memory`` (default: the memory available now)."""
    est = estimate(instance, formulation, preempt, sequences)
    memory = available_memory() if memory is None else memory
    what = (f"the {formulation} MILP of {len(instance.jobs):,} jobs on {instance.blocks} blocks would have about "
            f"{est.nonzeros:,} non-zeros")
    if memory is not None and est.bytes > MEMORY_SHARE * memory:
        raise InputError(f"{what}, about {est.bytes / 2**30:.1f} GiB to build, more than half the "
                         f"{memory / 2**30:.1f} GiB available; use --method cpsat or fewer jobs", path=instance.name)
    if time_limit is not None and est.build_seconds > time_limit + BUILD_GRACE_SECONDS:
        raise InputError(f"{what}, about {est.build_seconds:,.0f} s to build, longer than the time limit "
                         f"{time_limit:g} s; use --method cpsat, a longer --time-limit or fewer jobs", path=instance.name)
    return est


__all__ = ["ModelEstimate", "estimate", "check_buildable", "available_memory"]
