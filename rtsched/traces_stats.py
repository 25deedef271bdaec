"""Descriptive statistics of a workload (``rtsched traces stats``).  Times in s."""
from __future__ import annotations

import numpy as np

from rtsched.io import cleaning_counts
from rtsched.jobs import Workload


def trace_statistics(workload: Workload) -> dict:
    """Size, span, load and job-shape statistics; ``cleaning`` holds what the reader's cleaning
    rules did (lines read, jobs dropped or clipped: ``docs/formats.md``) when it is known."""
    cols = workload.columns()
    n = len(workload)
    if n == 0:
        return {"jobs": 0}
    submit, runtime, walltime, nodes = cols["submit"], cols["runtime"], cols["walltime"], cols["nodes"]
    span = int(submit.max() - submit.min())
    work = float((runtime * nodes).sum())
    machine = workload.max_nodes
    stats = {
        "jobs": n,
        "rt_jobs": int(cols["is_rt"].sum()),
        "span_days": round(span / 86400, 3),
        "max_nodes_header": machine,
        "nodes_min": int(nodes.min()),
        "nodes_median": float(np.median(nodes)),
        "nodes_max": int(nodes.max()),
        "runtime_mean_s": round(float(runtime.mean()), 1),
        "runtime_median_s": float(np.median(runtime)),
        "walltime_mean_s": round(float(walltime.mean()), 1),
        "runtime_over_walltime_mean": round(float((runtime / walltime).mean()), 4),
        "interarrival_mean_s": round(span / max(n - 1, 1), 1),
        "node_hours": round(work / 3600, 1),
    }
    if machine and span > 0:
        stats["offered_load"] = round(work / (machine * span), 4)  # work / capacity over the arrival span
    sizes, counts = np.unique(nodes, return_counts=True)
    top = np.argsort(-counts)[:10]
    stats["top_sizes"] = {int(sizes[i]): int(counts[i]) for i in top}
    cleaning = cleaning_counts(workload)
    if cleaning:
        stats["cleaning"] = cleaning
    return stats
