"""ALCF ``DIM_JOB_COMPOSITE`` CSV (the public Mira job logs), one job a row.

Columns used: ``COBALT_JOBID``, ``START_TIMESTAMP``, ``ELIGIBLE_WAIT_SECONDS`` (or
``QUEUED_TIMESTAMP``), ``WALLTIME_SECONDS``, ``RUNTIME_SECONDS``, ``NODES_REQUESTED`` (or
``NODES_USED``); kept when present: ``QUEUE_NAME``, ``LOCATION``, ``END_TIMESTAMP``,
``NODES_USED``, ``EXIT_STATUS``, ``USERNAME_GENID``/``PROJECT_NAME_GENID`` (as user/group when
numeric).  Timestamps such as ``2018-01-01 00:08:17.000000`` (ISO 8601, naive = UTC).

submit = START_TIMESTAMP - ELIGIBLE_WAIT_SECONDS by default (what seed 002's authors did,
``make_cobalt_logs.py``), or QUEUED_TIMESTAMP with ``submit_from="queued"``; times are shifted so
the earliest submit is 0 and ``Workload.start_time`` is the Unix time of t = 0.  Full policy:
``docs/formats.md``.
"""
from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Literal

from rtsched.errors import InputError
from rtsched.io import (ReadOptions, TraceHeader, check_size, first_jobs, open_text, seconds,
                        settle_runtime, trace_name)
from rtsched.jobs import Job, Workload
from rtsched.machines.sizes import MIRA_NODES


@dataclass(frozen=True)
class AlcfOptions(ReadOptions):
    """ALCF CSV options (the shared ones are documented on ``ReadOptions``).

    Attributes:
        submit_from: "eligible" (START_TIMESTAMP - ELIGIBLE_WAIT_SECONDS, the default) or
            "queued" (QUEUED_TIMESTAMP).
        nodes_from: "requested" (NODES_REQUESTED, the default) or "used" (NODES_USED).
        max_nodes: the machine's size in nodes (default Mira, 49,152); None for unknown.
    """

    submit_from: Literal["eligible", "queued"] = "eligible"
    nodes_from: Literal["requested", "used"] = "requested"
    max_nodes: int | None = MIRA_NODES

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.submit_from not in ("eligible", "queued"):
            raise ValueError(f"submit_from must be 'eligible' or 'queued', got {self.submit_from!r}")
        if self.nodes_from not in ("requested", "used"):
            raise ValueError(f"nodes_from must be 'requested' or 'used', got {self.nodes_from!r}")


@dataclass(frozen=True, slots=True)
class AlcfExtra:
    """What an ALCF row says beyond the ``Job``: times in s on the workload's clock.

    Attributes:
        location: the block the job ran on (``LOCATION``, e.g. ``MIR-48840-7BB71-512``), "" if absent.
        start: START_TIMESTAMP.
        end: END_TIMESTAMP, None when the column is absent or empty.
        nodes_used: NODES_USED, None when absent or empty.
        exit_status: EXIT_STATUS as written, "" when absent.
        line: 1-based line of the row.
    """

    location: str
    start: int
    end: int | None
    nodes_used: int | None
    exit_status: str
    line: int


def parse_timestamp(text: str) -> float:
    """ISO 8601 date-time (``2018-01-01 00:08:17.000000``; naive means UTC) or Unix s -> Unix s."""
    t = text.strip()
    try:
        return float(t)
    except ValueError:
        pass
    stamp = datetime.fromisoformat(t)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp.timestamp()


class _Row:
    """Typed access to one CSV row, raising InputError that names the line and column."""

    def __init__(self, row: dict[str, str | None], path: str, line: int) -> None:
        self.row, self.path, self.line = row, path, line

    def text(self, col: str) -> str:
        return (self.row.get(col) or "").strip()

    def number(self, col: str) -> float:
        raw = self.text(col)
        try:
            value = float(raw)
        except ValueError:
            raise InputError(f"not a number: {raw!r}", path=self.path, line=self.line, field=col) from None
        if not math.isfinite(value):
            raise InputError(f"not a finite number: {raw!r}", path=self.path, line=self.line, field=col)
        return value

    def integer(self, col: str) -> int:
        value = self.number(col)
        if value != int(value):
            raise InputError(f"not an integer: {self.text(col)!r}", path=self.path, line=self.line, field=col)
        return int(value)

    def time(self, col: str) -> float:
        raw = self.text(col)
        try:
            return parse_timestamp(raw)
        except ValueError:
            raise InputError(f"not a timestamp: {raw!r}", path=self.path, line=self.line, field=col) from None

    def optional_int(self, col: str) -> int | None:
        raw = self.text(col)
        try:
            return int(float(raw)) if raw else None
        except ValueError:
            return None


def read_alcf(path: str | os.PathLike[str], options: AlcfOptions | None = None, *, name: str | None = None,
              **opts: object) -> Workload:
    """Read an ALCF DIM_JOB_COMPOSITE CSV into a Workload (times in s, sizes in nodes).

    ``opts`` build an ``AlcfOptions`` when ``options`` is None.  ``header.extras`` maps each job
    id to an ``AlcfExtra``.  Raises InputError (file, 1-based line, column) on a missing column,
    an unparsable value, a duplicate COBALT_JOBID or a job bigger than ``max_nodes``.
    """
    o = options if options is not None else AlcfOptions(**opts)  # type: ignore[arg-type]
    p = os.fspath(path)
    nodes_col = "NODES_REQUESTED" if o.nodes_from == "requested" else "NODES_USED"
    required = ["COBALT_JOBID", "START_TIMESTAMP", "WALLTIME_SECONDS", "RUNTIME_SECONDS", nodes_col,
                "ELIGIBLE_WAIT_SECONDS" if o.submit_from == "eligible" else "QUEUED_TIMESTAMP"]
    counts: dict[str, int] = {"rows": 0}
    rows: list[tuple[Job, float, AlcfExtra]] = []  # (job with absolute submit 0, submit in Unix s, extra)
    seen: dict[int, int] = {}
    with open_text(p) as fh:
        reader = csv.DictReader(fh)
        columns = [c.strip() for c in (reader.fieldnames or [])]
        reader.fieldnames = columns
        for col in required:
            if col not in columns:
                raise InputError(f"missing column {col}", path=p, line=1, field=col)
        for raw in reader:
            r = _Row(raw, p, reader.line_num)
            if r.text("COBALT_JOBID") == "COBALT_JOBID":  # a repeated header (concatenated files)
                continue
            counts["rows"] += 1
            jid = r.integer("COBALT_JOBID")
            if jid in seen:
                raise InputError(f"duplicate job id {jid} (first on line {seen[jid]})", path=p, line=r.line,
                                 field="COBALT_JOBID")
            seen[jid] = r.line
            start = r.time("START_TIMESTAMP")
            if o.submit_from == "eligible":
                wait = r.number("ELIGIBLE_WAIT_SECONDS")
                if wait < 0:
                    raise InputError(f"negative wait {wait} s", path=p, line=r.line, field="ELIGIBLE_WAIT_SECONDS")
                submit = start - wait
            else:
                submit = r.time("QUEUED_TIMESTAMP")
            walltime = seconds(r.number("WALLTIME_SECONDS"))
            if walltime < 1:
                raise InputError(f"walltime {r.text('WALLTIME_SECONDS')} s is shorter than 1 s", path=p,
                                 line=r.line, field="WALLTIME_SECONDS")
            rt = settle_runtime(r.number("RUNTIME_SECONDS"), walltime, o, counts, path=p, line=r.line,
                                field="RUNTIME_SECONDS")
            if rt is None:
                continue
            nodes = r.integer(nodes_col)
            if nodes < 1:
                raise InputError(f"node count {nodes} is not positive", path=p, line=r.line, field=nodes_col)
            if not check_size(nodes, o.max_nodes, o, counts, path=p, line=r.line, field=nodes_col, job_id=jid):
                continue
            end = r.time("END_TIMESTAMP") if r.text("END_TIMESTAMP") else None
            job = Job(jid, 0, rt, walltime, nodes, user=_id(r.text("USERNAME_GENID")),
                      group=_id(r.text("PROJECT_NAME_GENID")), queue=r.text("QUEUE_NAME"))
            extra = AlcfExtra(r.text("LOCATION"), math.floor(start), None if end is None else math.floor(end),
                              r.optional_int("NODES_USED"), r.text("EXIT_STATUS"), r.line)
            rows.append((job, submit, extra))

    t0 = min((math.floor(submit) for _, submit, _ in rows), default=0)
    jobs: list[Job] = []
    extras: dict[int, AlcfExtra] = {}
    for job, submit, extra in rows:
        jobs.append(replace(job, submit=math.floor(submit) - t0))
        extras[job.id] = replace(extra, start=extra.start - t0, end=None if extra.end is None else extra.end - t0)
    jobs = first_jobs(jobs, o.first_n, counts)
    th = TraceHeader(fmt="alcf")
    th.extras = {j.id: extras[j.id] for j in jobs}
    th.as_read = {j.id: j for j in jobs}
    th.cleaning = counts
    return Workload(jobs, name=name or trace_name(p), max_nodes=o.max_nodes,
                    start_time=t0 if rows else None, header=th)


def _id(text: str) -> int:
    """A user/project id when numeric, else -1."""
    return int(text) if text.isdigit() else -1
