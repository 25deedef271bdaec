"""The size of a model before it is built, and the refusal of one that cannot be built in time or
memory (issue 26, "A time limit is a promise"): the two MILPs and the CP-SAT model.

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

# CP-SAT (milp.cpsat; the BJ stage's per-block layout): per job part its variables, and one optional
# interval per block of each candidate partition (a part of k blocks has blocks/k candidates of k
# blocks each: ``blocks`` intervals), so the build is linear in parts and in parts × blocks.
# Measured (random_instance(0, 0.9 n, 0.1 n, blocks), idle machine, 2 shared cores): 3,000 jobs
# (5,700 parts) built in 0.67 / 1.02 / 1.40 s on 8 / 16 / 32 blocks -> about 57 µs a part plus
# 7.6 µs a part and block; 500 and 1,500 jobs on 16 blocks at 8.2 and 9.3 µs a part and block.
CPSAT_SECONDS_PER_PART = 60e-6
CPSAT_SECONDS_PER_PART_BLOCK = 8e-6
# CP-SAT's own time to load a model before its time limit counts, and which it does not cut short:
# a solve with a 0.01 s limit took 0.65-0.77 times the model's build (0.66 s for the 3,000-job model
# built in 1.02 s; 0.57 times at load 10, docs/benchmarks.md).  The larger ratio.
CPSAT_LOAD_PER_BUILD = 0.8
# The process's resident memory grew by 98 MB (16 blocks) and 190 MB (32 blocks) for the 3,000-job
# model built and loaded once: about 1,100 bytes a part and block.
CPSAT_BYTES_PER_PART_BLOCK = 1100


@dataclass(frozen=True)
class ModelEstimate:
    formulation: str
    nonzeros: int  # CP-SAT: the per-block intervals (parts × blocks)
    bytes: int
    build_seconds: float
    load_seconds: float = 0.0  # the solver's own load before its limit counts (CP-SAT)


def _parts(jobs, instance: Instance, preempt: bool) -> int:
    """Job parts a model of ``jobs`` has: one per job, two per job that may be split."""
    return len(jobs) + (sum(1 for j in jobs if instance.preemptible(j)) if preempt else 0)


def _cpsat(parts: int, blocks: int) -> ModelEstimate:
    cells = parts * blocks
    build = CPSAT_SECONDS_PER_PART * parts + CPSAT_SECONDS_PER_PART_BLOCK * cells
    return ModelEstimate("cpsat", cells, cells * CPSAT_BYTES_PER_PART_BLOCK, build, CPSAT_LOAD_PER_BUILD * build)


def estimate(instance: Instance, formulation: str, preempt: bool = True, sequences: int | None = None) -> ModelEstimate:
    """The estimated size, memory and build time of ``formulation`` ("disjunctive", "sequence" or
    "cpsat": one CP-SAT model of every job) on ``instance``, from its dimensions (jobs, splittable
    jobs, blocks, the cap T)."""
    parts = _parts(instance.jobs, instance, preempt)
    if formulation == "cpsat":
        return _cpsat(parts, instance.blocks)
    if formulation == "disjunctive":
        nz = NZ_PER_PART_PAIR * parts * (parts - 1) / 2
    else:
        T = parts if sequences is None else min(sequences, parts)
        nz = NZ_PER_PART_SLOT_BLOCK * parts * T * instance.blocks
    return ModelEstimate(formulation, int(nz), int(nz * BYTES_PER_NONZERO), nz / BUILD_NONZEROS_PER_SECOND)


def cpsat_stages_estimate(instance: Instance, preempt: bool = True) -> ModelEstimate:
    """The CP-SAT models a solve builds one after the other: the θ* stage's (the RTJs alone) and the
    BJ stage's (every job); their build and load times add up, the memory is the larger's."""
    bj = estimate(instance, "cpsat", preempt)
    if not instance.rt_jobs:
        return bj
    rt = _cpsat(_parts(instance.rt_jobs, instance, preempt), instance.blocks)
    return ModelEstimate("cpsat", bj.nonzeros, max(bj.bytes, rt.bytes), bj.build_seconds + rt.build_seconds,
                         bj.load_seconds + rt.load_seconds)


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
    """Refuse (``InputError``, one line) a model whose estimated build (for CP-SAT: every stage's
    model, built and loaded by the solver) outlasts ``time_limit`` (plus :data:`BUILD_GRACE_SECONDS`)
    or takes more than :data:`MEMORY_SHARE` of ``memory`` (default: the memory available now)."""
    size = f"{len(instance.jobs):,} jobs on {instance.blocks} blocks"
    if formulation == "cpsat":
        est = cpsat_stages_estimate(instance, preempt)
        what = f"the CP-SAT models of {size} would have about {est.nonzeros:,} per-block intervals"
        build, smaller = "to build and load", "fewer jobs or fewer blocks"
    else:
        est = estimate(instance, formulation, preempt, sequences)
        what = f"the {formulation} MILP of {size} would have about {est.nonzeros:,} non-zeros"
        build, smaller = "to build", "--method cpsat or fewer jobs"
    memory = available_memory() if memory is None else memory
    if memory is not None and est.bytes > MEMORY_SHARE * memory:
        raise InputError(f"{what}, about {est.bytes / 2**30:.1f} GiB to build, more than half the "
                         f"{memory / 2**30:.1f} GiB available; use {smaller}", path=instance.name)
    seconds = est.build_seconds + est.load_seconds
    if time_limit is not None and seconds > time_limit + BUILD_GRACE_SECONDS:
        raise InputError(f"{what}, about {seconds:,.0f} s {build}, longer than the time limit {time_limit:g} s; "
                         f"use a longer --time-limit, {smaller}", path=instance.name)
    return est


__all__ = ["ModelEstimate", "estimate", "cpsat_stages_estimate", "parts_of_instance", "check_buildable",
           "available_memory"]
