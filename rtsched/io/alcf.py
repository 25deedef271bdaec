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
import itertools
import math
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal

import numpy as np

from rtsched.errors import InputError
from rtsched.io import log_workload, trace_name
from rtsched.io.cleaning import (MAX_ID, MAX_SIZE, MAX_TIME_S, ReadOptions, RowErrors, check_sizes,
                                 gc_paused, no_jobs_left, round_seconds, settle_runtimes,
                                 too_large)
from rtsched.io.numbers import NUMBER
from rtsched.io.source import TraceInput, display_name
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
    """ISO 8601 date-time (``2018-01-01 00:08:17.000000``; naive means UTC) or Unix s -> Unix s.

    ValueError when it is neither (impossible dates such as ``2018-13-45`` included).
    """
    t = text.strip()
    if NUMBER.fullmatch(t.encode("utf-8")):
        return float(t)
    try:
        stamp = datetime.fromisoformat(t)
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        return stamp.timestamp()
    except OverflowError as exc:  # a date near year 1 or 9999 shifted out of range by its zone
        raise ValueError(str(exc)) from None


class _Row:
    """Typed access to one CSV row, raising InputError that names the line and column."""

    def __init__(self, row: dict[str, str | None], path: str, line: int) -> None:
        self.row, self.path, self.line = row, path, line

    def text(self, col: str) -> str:
        return (self.row.get(col) or "").strip()

    def fail(self, col: str, message: str) -> InputError:
        return InputError(message, path=self.path, line=self.line, field=col)

    def number(self, col: str, high: float = MAX_TIME_S) -> float:
        """A finite number <= ``high`` (by default a duration, s)."""
        raw = self.text(col)
        if NUMBER.fullmatch(raw.encode("utf-8")) is None:
            raise self.fail(col, f"not a number: {raw!r}")
        value = float(raw)
        if not math.isfinite(value):
            raise self.fail(col, f"not a finite number: {raw!r}")
        if value > high:
            raise self.fail(col, too_large(raw, high))
        return value

    def integer(self, col: str, high: float) -> int:
        value = self.number(col, high)
        if value != int(value):
            raise self.fail(col, f"not an integer: {self.text(col)!r}")
        return int(value)

    def time(self, col: str) -> float:
        """A timestamp, Unix s in [0, MAX_TIME_S]."""
        raw = self.text(col)
        try:
            value = parse_timestamp(raw)
        except ValueError as exc:
            raise self.fail(col, f"not a timestamp: {raw!r} ({exc})") from None
        if not 0 <= value <= MAX_TIME_S:
            raise self.fail(col, f"timestamp {raw!r} is outside 1970 .. 2286 (Unix s 0 .. MAX_TIME_S)")
        return value

    def optional_int(self, col: str) -> int | None:
        """A whole number in [0, MAX_ID] when present, None when empty or anything else."""
        raw = self.text(col)
        if not NUMBER.fullmatch(raw.encode("utf-8")):
            return None
        value = float(raw)
        return int(value) if 0 <= value <= MAX_ID and value == int(value) else None


def read_alcf(path: str | os.PathLike[str], options: AlcfOptions | None = None, *, name: str | None = None,
              **opts: object) -> Workload:
    """Read an ALCF DIM_JOB_COMPOSITE CSV into a Workload (times in s, sizes in nodes; "-" is stdin).

    ``opts`` build an ``AlcfOptions`` when ``options`` is None.  ``header.extras`` maps each job
    id to an ``AlcfExtra``.  Raises InputError (file, 1-based line, column) on a missing column,
    an unparsable or out-of-range value, a duplicate COBALT_JOBID, a job bigger than
    ``max_nodes``, and when no job is left.
    """
    o = options if options is not None else AlcfOptions(**opts)  # type: ignore[arg-type]
    with gc_paused():
        return _read_alcf(path, o, name)


def _read_alcf(path: str | os.PathLike[str], o: AlcfOptions, name: str | None) -> Workload:
    p = display_name(path)
    nodes_col = "NODES_REQUESTED" if o.nodes_from == "requested" else "NODES_USED"
    required = ["COBALT_JOBID", "START_TIMESTAMP", "WALLTIME_SECONDS", "RUNTIME_SECONDS", nodes_col,
                "ELIGIBLE_WAIT_SECONDS" if o.submit_from == "eligible" else "QUEUED_TIMESTAMP"]
    counts: dict[str, int] = {"rows": 0}
    rows: list[tuple[int, int, float, int, float, int, int, int, str, AlcfExtra]] = []
    seen: dict[int, int] = {}
    with TraceInput(path) as src:
        lines = src.lines()
        skipped = 0  # blank lines before the header row
        for first in lines:
            if first.strip():
                break
            skipped += 1
        else:
            raise no_jobs_left(p, counts, 0, "header row (the file is empty)")
        reader = csv.DictReader(itertools.chain([first], lines), strict=True)
        try:
            columns = [c.strip() for c in (reader.fieldnames or [])]
            reader.fieldnames = columns
            for col in required:
                if col not in columns:
                    raise InputError(f"missing column {col}", path=p, line=1 + skipped, field=col)
            for raw in reader:
                r = _Row(raw, p, reader.line_num + skipped)
                if r.text("COBALT_JOBID") == "COBALT_JOBID":  # a repeated header (concatenated files)
                    continue
                counts["rows"] += 1
                rows.append(_alcf_row(r, o, nodes_col, seen))
        except csv.Error as exc:
            raise InputError(f"not a valid CSV row: {exc}", path=p, line=reader.line_num + skipped) from None
    if not rows:
        raise no_jobs_left(p, counts, 0, "job rows")

    line_a = np.array([r[0] for r in rows], dtype=np.int64)
    errors = RowErrors(p, line_a)
    alive = np.ones(len(rows), dtype=bool)
    rt = settle_runtimes(np.array([r[4] for r in rows], dtype=np.float64),
                         np.array([r[3] for r in rows], dtype=np.int64),
                         alive, o, counts, errors, "RUNTIME_SECONDS")
    check_sizes(np.array([r[5] for r in rows], dtype=np.int64), o.max_nodes, alive, o, counts, errors, nodes_col,
                np.array([r[1] for r in rows], dtype=np.int64), "max_nodes, Mira's by default")
    errors.raise_first()
    kept = np.flatnonzero(alive).tolist()
    if not kept:
        raise no_jobs_left(p, counts, len(rows), "job rows")
    t0 = min(math.floor(rows[i][2]) for i in kept)
    jobs: list[Job] = []
    extras: dict[int, AlcfExtra] = {}
    for i in kept:
        _, jid, submit, walltime, _, nodes, user, group, queue, extra = rows[i]
        jobs.append(Job(jid, math.floor(submit) - t0, int(rt[i]), walltime, nodes, user=user, group=group,
                        queue=queue))
        extras[jid] = AlcfExtra(extra.location, extra.start - t0, None if extra.end is None else extra.end - t0,
                                extra.nodes_used, extra.exit_status, extra.line)
    return log_workload(jobs, extras, "alcf", counts, o.first_n, name or trace_name(path), o.max_nodes, t0)


def _alcf_row(r: _Row, o: AlcfOptions, nodes_col: str, seen: dict[int, int]):
    """(line, id, submit in Unix s, walltime, raw runtime, nodes, user, group, queue, extra) of a row."""
    jid = r.integer("COBALT_JOBID", MAX_ID)
    if jid in seen:
        raise r.fail("COBALT_JOBID", f"duplicate job id {jid} (first on line {seen[jid]})")
    seen[jid] = r.line
    start = r.time("START_TIMESTAMP")
    if o.submit_from == "eligible":
        wait = r.number("ELIGIBLE_WAIT_SECONDS")
        if wait < 0:
            raise r.fail("ELIGIBLE_WAIT_SECONDS", f"negative wait {wait} s")
        if wait > start:
            raise r.fail("ELIGIBLE_WAIT_SECONDS", f"a wait of {wait:g} s puts the submit time before 1970")
        submit = start - wait
    else:
        submit = r.time("QUEUED_TIMESTAMP")
    walltime = int(round_seconds(r.number("WALLTIME_SECONDS")))
    if walltime < 1:
        raise r.fail("WALLTIME_SECONDS", f"walltime {r.text('WALLTIME_SECONDS')} s is shorter than 1 s")
    runtime = r.number("RUNTIME_SECONDS")
    nodes = r.integer(nodes_col, MAX_SIZE)
    if nodes < 1:
        raise r.fail(nodes_col, f"node count {nodes} is not positive")
    end = r.time("END_TIMESTAMP") if r.text("END_TIMESTAMP") else None
    extra = AlcfExtra(r.text("LOCATION"), math.floor(start), None if end is None else math.floor(end),
                      r.optional_int("NODES_USED"), r.text("EXIT_STATUS"), r.line)
    return (r.line, jid, submit, walltime, runtime, nodes, _id(r.text("USERNAME_GENID")),
            _id(r.text("PROJECT_NAME_GENID")), r.text("QUEUE_NAME"), extra)


def _id(text: str) -> int:
    """A user/project id when it is a whole number in [0, MAX_ID], else -1 (unknown)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 16 and int(text) <= MAX_ID else -1
