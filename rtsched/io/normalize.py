"""Job-size normalisation of traces from other machines onto Mira (seed 002, §7.1.2, eq. 59).

    jobSize_normalized = jobSize_original × Mira.node_count / Source.node_count        (59)

The authors applied it to CEA-Curie (``make_cobalt_logs-CEA_Curie.py``): Source.node_count is
Curie's 93,312 processors (the trace's sizes are processors), Mira.node_count is 49,152, and the
scaled size goes to the *nearest* Mira partition size (ties to the smaller; below 512 -> 512).
They also dropped jobs of fewer than 257 Curie processors for the published
``cea_curie_cobalt_ready_no_rtj.log`` (``min_source_nodes=257`` here).
"""
from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Literal, Sequence

from rtsched.jobs import Workload
from rtsched.machines.sizes import MIRA_NODES, MIRA_PARTITION_NODES

CEA_CURIE_PROCS = 93_312  # the authors' Source.node_count for CEA-Curie (processors)
Rounding = Literal["nearest", "up", "none"]


def scale_size(nodes: int, source_nodes: int, target_nodes: int = MIRA_NODES) -> Fraction:
    """Eq. 59, exactly: ``nodes × target_nodes / source_nodes`` (a Fraction, in target nodes)."""
    if source_nodes < 1 or target_nodes < 1:
        raise ValueError(f"machine sizes must be >= 1, got source {source_nodes}, target {target_nodes}")
    return Fraction(nodes * target_nodes, source_nodes)


def nearest_size(size: Fraction | float, sizes: Sequence[int] = MIRA_PARTITION_NODES) -> int:
    """The partition size nearest to ``size`` (ties to the smaller; below the smallest -> smallest;
    above the largest -> largest), as the authors' script rounds."""
    ordered = sorted(sizes)
    if size <= ordered[0]:
        return ordered[0]
    for low, high in zip(ordered, ordered[1:]):
        if low <= size <= high:
            return low if size - low <= high - size else high
    return ordered[-1]


def up_size(size: Fraction | float, sizes: Sequence[int] = MIRA_PARTITION_NODES) -> int:
    """The smallest partition size >= ``size``; ValueError when none is."""
    for s in sorted(sizes):
        if s >= size:
            return s
    raise ValueError(f"{float(size):g} nodes exceed the largest partition {max(sizes)}")


def normalize_sizes(workload: Workload, *, source_nodes: int | None = None, target_nodes: int = MIRA_NODES,
                    rounding: Rounding = "nearest", sizes: Sequence[int] = MIRA_PARTITION_NODES,
                    min_source_nodes: int = 1, name: str | None = None) -> Workload:
    """A new Workload whose job sizes are mapped by eq. 59 onto a ``target_nodes``-node machine.

    ``source_nodes`` defaults to ``workload.max_nodes`` (the source machine in the jobs' unit,
    e.g. SWF MaxProcs).  ``rounding``: "nearest" partition size in ``sizes`` (the authors'),
    "up" (smallest size holding the scaled job) or "none" (ceil of the scaled size, >= 1).
    Jobs of fewer than ``min_source_nodes`` original nodes are dropped.  The result has
    ``max_nodes = target_nodes`` and a plain header with a ``Normalization`` note; times are
    unchanged.  Raises ValueError when the source size is unknown or a job is bigger than it.
    """
    source = source_nodes if source_nodes is not None else workload.max_nodes
    if source is None:
        raise ValueError(f"{workload.name}: the source machine size is unknown; pass source_nodes=")
    usable = [s for s in sizes if s <= target_nodes] or [target_nodes]
    jobs = []
    for job in workload.jobs:
        if job.nodes < min_source_nodes:
            continue
        if job.nodes > source:
            raise ValueError(f"{workload.name}: job {job.id} has {job.nodes} nodes, more than the source "
                             f"machine's {source}")
        scaled = scale_size(job.nodes, source, target_nodes)
        if rounding == "nearest":
            nodes = nearest_size(scaled, usable)
        elif rounding == "up":
            nodes = up_size(scaled, usable)
        elif rounding == "none":
            nodes = max(1, math.ceil(scaled))
        else:
            raise ValueError(f"rounding must be 'nearest', 'up' or 'none', got {rounding!r}")
        jobs.append(replace(job, nodes=nodes))
    header = dict(workload.header)
    header["Normalization"] = (f"seed 002 eq. 59: nodes x {target_nodes}/{source}, rounding {rounding}"
                               + (f", jobs under {min_source_nodes} source nodes dropped" if min_source_nodes > 1 else ""))
    return Workload(jobs, name=name or workload.name, max_nodes=target_nodes, start_time=workload.start_time,
                    header=header)


def normalize_to_mira(workload: Workload, source_nodes: int | None = None, *, rounding: Rounding = "nearest",
                      min_source_nodes: int = 1) -> Workload:
    """Eq. 59 onto the 49,152-node Mira with its partition sizes (see ``normalize_sizes``)."""
    return normalize_sizes(workload, source_nodes=source_nodes, target_nodes=MIRA_NODES, rounding=rounding,
                           sizes=MIRA_PARTITION_NODES, min_source_nodes=min_source_nodes)
