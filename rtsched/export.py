"""Schedules and workloads in other tools' formats, so their users see rtsched's results in their
own viewers.

* ``write_evalys_jobs(record, path)`` — a run as the ``jobs.csv`` that evalys (and Batsim's
  output) uses: one row per job with ``job_id, workload_name, submission_time,
  requested_number_of_resources, requested_time, success, final_state, starting_time,
  execution_time, finish_time, waiting_time, turnaround_time, stretch, allocated_resources,
  consumed_energy, metadata``.  Times in s; ``allocated_resources`` in interval-set notation
  (``0-15 32-47``) over the machine's resource units (processors on a flat cluster, blocks or
  node cards on Mira; ``rtsched.resources``); ``stretch`` = turnaround / runtime (seed 002's
  slowdown).  A preempted job lists the resources of its last segment; its execution time is
  the whole span from first start to end.
* ``write_batsim_workload(workload, path, nb_res)`` — a workload as Batsim's JSON
  (``nb_res``, ``jobs`` with ``id``, ``subtime``, ``res``, ``walltime``, ``profile``, and one
  ``delay`` profile per distinct runtime).
"""
from __future__ import annotations

import csv
import io
import json
import os

from rtsched.errors import OptionError
from rtsched.files import atomic_write_text
from rtsched.jobs import Workload
from rtsched.resources import ranges_text, segment_ranges

EVALYS_COLUMNS = ("job_id", "workload_name", "submission_time", "requested_number_of_resources", "requested_time",
                  "success", "final_state", "starting_time", "execution_time", "finish_time", "waiting_time",
                  "turnaround_time", "stretch", "allocated_resources", "consumed_energy", "metadata")


def evalys_rows(result, machine, workload_name: str = "w0") -> list[dict]:
    """The ``jobs.csv`` rows of a simulation result (``SimResult``) on ``machine``."""
    rmap = segment_ranges(result.schedule, machine)
    last: dict[int, tuple[int, list]] = {}
    for seg, ranges in zip(result.schedule.segments, rmap.ranges):
        if seg.job_id not in last or seg.start >= last[seg.job_id][0]:
            last[seg.job_id] = (seg.start, ranges)
    rows = []
    for o in result.outcomes:
        j = o.job
        done = o.end >= 0
        turnaround = o.end - j.submit if done else None
        rows.append({
            "job_id": j.id, "workload_name": workload_name, "submission_time": j.submit,
            "requested_number_of_resources": j.nodes, "requested_time": j.walltime,
            "success": 1 if done else 0, "final_state": "COMPLETED_SUCCESSFULLY" if done else "NOT_SUBMITTED",
            "starting_time": o.first_start, "execution_time": o.end - o.first_start if done else None,
            "finish_time": o.end if done else None, "waiting_time": o.first_start - j.submit,
            "turnaround_time": turnaround, "stretch": turnaround / j.runtime if done else None,
            "allocated_resources": ranges_text(last[j.id][1]) if j.id in last else "",
            "consumed_energy": -1, "metadata": j.kind})
    return rows


def write_evalys_jobs(record, path: str | os.PathLike) -> str:
    """Write a run (a ``RunRecord`` of ``rtsched.pipeline``, or ``rtsched.api.Run``) as evalys'
    ``jobs.csv``, atomically; returns the path."""
    record = getattr(record, "record", record)
    rows = evalys_rows(record.result, record.machine, record.workload.name)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(EVALYS_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buf.getvalue())
    return os.fspath(path)


def batsim_workload(workload: Workload, nb_res: int) -> dict:
    """Batsim's workload JSON as a dict (``delay`` profiles: a job runs for its actual runtime).
    A job needing more than ``nb_res`` resources raises ``OptionError`` (Batsim would reject it)."""
    widest = max(workload.jobs, key=lambda j: j.nodes, default=None)
    if widest is not None and widest.nodes > nb_res:
        raise OptionError(f"nb_res (--nb-res) {nb_res}: job {widest.id} needs {widest.nodes} resources, more than "
                          "the machine has")
    profiles = {}
    jobs = []
    for j in workload.jobs:
        name = f"delay{j.runtime}"
        profiles.setdefault(name, {"type": "delay", "delay": j.runtime})
        jobs.append({"id": str(j.id), "subtime": j.submit, "res": j.nodes, "walltime": j.walltime, "profile": name})
    return {"nb_res": int(nb_res), "jobs": jobs, "profiles": profiles,
            "description": f"rtsched export of {workload.name}"}


def write_batsim_workload(workload: Workload, path: str | os.PathLike, nb_res: int) -> str:
    """Write ``batsim_workload`` as JSON, atomically; returns the path."""
    atomic_write_text(path, json.dumps(batsim_workload(workload, nb_res), indent=1) + "\n")
    return os.fspath(path)


__all__ = ["EVALYS_COLUMNS", "batsim_workload", "evalys_rows", "write_batsim_workload", "write_evalys_jobs"]
