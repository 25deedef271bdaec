"""Cobalt/Qsim job logs (the format the authors' Qsim replays).

One record a line: ``MM/DD/YYYY HH:MM:SS;{Q|S|E};jobid;key=value key=value ...``; Q = queued,
S = started, E = ended.  The keys used are ``qtime`` (Unix s), ``Resource_List.nodect``,
``Resource_List.walltime`` (HH:MM:SS, hours may exceed 24), ``start``, ``end``, ``runtime`` (s),
``exec_host`` (Mira block name, or a partition number in the Curie log) and ``queue_name``
(else ``queue``).

Counting rule: a job is a job id with an E record (a key in both its S and E records takes the
E value); Q records carry no resources.  ``incomplete="walltime"`` also keeps jobs that started (S) but
did not end inside the log, with runtime = walltime.  Times: submit = ``qtime`` shifted so the
earliest kept job submits at 0; ``Workload.start_time`` is the Unix time of t = 0.  Full policy:
``docs/formats.md``.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np

from rtsched.errors import InputError
from rtsched.io import log_workload, trace_name
from rtsched.io.cleaning import (MAX_ID, MAX_SIZE, MAX_TIME_S, ReadOptions, RowErrors, bump, check_sizes,
                                 gc_paused, no_jobs_left, settle_runtimes, too_large)
from rtsched.io.numbers import NUMBER
from rtsched.io.source import TraceInput, display_name
from rtsched.jobs import Job, Workload
from rtsched.machines.sizes import MIRA_NODES

_STAMP = re.compile(r"(\d\d)/(\d\d)/(\d{4}) (\d\d):(\d\d):(\d\d)(\.\d+)?$", re.ASCII)
_PARTS = ("timestamp", "record type", "jobid", "key=value list")
RECORD_TYPES = ("Q", "S", "E")


@dataclass(frozen=True)
class CobaltOptions(ReadOptions):
    """Cobalt log options (the shared ones are documented on ``ReadOptions``).

    Attributes:
        incomplete: jobs with an S but no E record: "drop" (the default, counted) or
            "walltime" (kept with runtime = walltime, an upper bound).
        max_nodes: the machine's size in nodes (default Mira, 49,152); None for unknown.
    """

    incomplete: Literal["drop", "walltime"] = "drop"
    max_nodes: int | None = MIRA_NODES

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.incomplete not in ("drop", "walltime"):
            raise ValueError(f"incomplete must be 'drop' or 'walltime', got {self.incomplete!r}")


@dataclass(frozen=True, slots=True)
class CobaltExtra:
    """What a Cobalt record says beyond the ``Job``: times in s on the workload's clock.

    Attributes:
        start: start time (``start``), None when absent.
        end: end time (``end``), None when absent (no E record).
        exec_host: the block (or partition number) the job ran on, "" when absent.
        ended: True when the job has an E record.
        line: 1-based line of the record the job was built from.
    """

    start: int | None
    end: int | None
    exec_host: str
    ended: bool
    line: int


_WALLTIME = re.compile(r"(\d+):(\d\d?):(\d\d?(?:\.\d*)?)", re.ASCII)


def parse_walltime(text: str) -> int:
    """``HH:MM:SS`` (hours may exceed 24, seconds may have a fraction) -> s, rounded to whole s.

    ValueError when malformed, when the minutes or seconds are 60 or more (``00:99:99``), or
    when the result exceeds ``MAX_TIME_S``.
    """
    m = _WALLTIME.fullmatch(text)
    if m is None:
        raise ValueError(f"expected HH:MM:SS, found {text!r}")
    hours, minutes, sec = int(m[1]), int(m[2]), float(m[3])
    if minutes >= 60 or sec >= 60:
        raise ValueError(f"impossible time {text!r}: minutes and seconds must be below 60")
    total = hours * 3600 + minutes * 60 + int(sec + 0.5)
    if total > MAX_TIME_S:
        raise ValueError(too_large(f"walltime {text!r}", MAX_TIME_S))
    return total


def _stamp_problem(stamp: str) -> str | None:
    """Why ``MM/DD/YYYY HH:MM:SS`` is not a real date-time (``13/45/2018 99:01:47``), or None."""
    m = _STAMP.match(stamp)
    if m is None:
        return f"expected MM/DD/YYYY HH:MM:SS, found {stamp!r}"
    month, day, year, hour, minute, second = (int(x) for x in m.groups()[:6])
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        return f"impossible date-time {stamp!r}: {exc}"
    return None


def _parse(path: str | os.PathLike[str]) -> tuple[dict[int, dict[str, tuple[int, dict[str, str]]]], list[int]]:
    """job id -> record type -> (line, key/values), and the job ids in order of first appearance."""
    jobs: dict[int, dict[str, tuple[int, dict[str, str]]]] = {}
    order: list[int] = []
    with TraceInput(path) as src:
        path = src.name
        for lineno, line in enumerate(src.lines(), 1):
            s = line.strip()
            if not s:
                continue
            parts = s.split(";", 3)
            if len(parts) != 4:
                raise InputError("expected 'MM/DD/YYYY HH:MM:SS;TYPE;JOBID;key=value ...'", path=path,
                                 line=lineno, field=_PARTS[len(parts)])
            stamp, kind, jid_text, rest = parts
            problem = _stamp_problem(stamp)
            if problem is not None:
                raise InputError(problem, path=path, line=lineno, field="timestamp")
            if kind not in RECORD_TYPES:
                raise InputError(f"record type {kind!r} is not Q, S or E", path=path, line=lineno,
                                 field="record type")
            if not (jid_text.isascii() and jid_text.isdigit() and len(jid_text) <= 16 and int(jid_text) <= MAX_ID):
                raise InputError(f"job id {jid_text!r} is not a whole number in [0, {MAX_ID}]", path=path,
                                 line=lineno, field="jobid")
            jid = int(jid_text)
            kv: dict[str, str] = {}
            for token in rest.split():
                key, sep, value = token.partition("=")
                if not sep or not key:
                    raise InputError(f"expected key=value, found {token!r}", path=path, line=lineno,
                                     field=key or token)
                kv[key] = value
            recs = jobs.get(jid)
            if recs is None:
                recs = jobs[jid] = {}
                order.append(jid)
            if kind in recs:
                raise InputError(f"second {kind} record for job {jid} (first on line {recs[kind][0]})",
                                 path=path, line=lineno, field="record type")
            recs[kind] = (lineno, kv)
    return jobs, order


def _value(kv: dict[str, str], key: str, path: str, line: int, *, low: float | None = None,
           high: float = MAX_TIME_S) -> float:
    """The number ``key=`` holds, in [``low``, ``high``]; InputError naming the line and key."""
    raw = kv.get(key)
    if raw is None:
        raise InputError(f"missing {key}=", path=path, line=line, field=key)
    if NUMBER.fullmatch(raw.encode("utf-8")) is None:
        raise InputError(f"not a number: {raw!r}", path=path, line=line, field=key)
    value = float(raw)
    if not math.isfinite(value):
        raise InputError(f"not a finite number: {raw!r}", path=path, line=line, field=key)
    if low is not None and value < low:
        raise InputError(f"{raw} is negative: times and sizes are >= {low:g}", path=path, line=line, field=key)
    if value > high:
        raise InputError(too_large(raw, high), path=path, line=line, field=key)
    return value


def read_cobalt(path: str | os.PathLike[str], options: CobaltOptions | None = None, *,
                name: str | None = None, **opts: object) -> Workload:
    """Read a Cobalt/Qsim log into a Workload (times in s, sizes in nodes; "-" is standard input).

    ``opts`` build a ``CobaltOptions`` when ``options`` is None.  ``header.extras`` maps each job
    id to a ``CobaltExtra``; ``header.cleaning`` counts the job ids seen with Q, S and E records
    ("queued", "started", "ended") and what cleaning dropped.  Raises InputError (file, 1-based
    line, field) on a malformed record, an impossible time, a job bigger than ``max_nodes``, and
    when no job is left.
    """
    o = options if options is not None else CobaltOptions(**opts)  # type: ignore[arg-type]
    with gc_paused():
        return _read_cobalt(path, o, name)


def _read_cobalt(path: str | os.PathLike[str], o: CobaltOptions, name: str | None) -> Workload:
    records, order = _parse(path)
    p = display_name(path)
    counts: dict[str, int] = {
        "job_ids": len(order),
        "queued": sum(1 for r in records.values() if "Q" in r),
        "started": sum(1 for r in records.values() if "S" in r),
        "ended": sum(1 for r in records.values() if "E" in r),
    }
    rows: list[tuple[int, int, int, int, int, float, str, str, bool, float | None, float | None]] = []
    for jid in order:
        recs = records[jid]
        if "E" in recs:
            line, kv = recs["E"]
            if "S" in recs:
                kv = {**recs["S"][1], **kv}
        elif "S" in recs:
            if o.incomplete == "drop":
                bump(counts, "dropped_not_ended")
                continue
            line, kv = recs["S"]
        else:
            bump(counts, "dropped_never_started")
            continue
        submit = math.floor(_value(kv, "qtime", p, line, low=0))
        nodes_f = _value(kv, "Resource_List.nodect", p, line, high=MAX_SIZE)
        if nodes_f < 1 or nodes_f != int(nodes_f):
            raise InputError(f"node count {kv['Resource_List.nodect']!r} is not a positive integer", path=p,
                             line=line, field="Resource_List.nodect")
        nodes = int(nodes_f)
        raw_wall = kv.get("Resource_List.walltime")
        if raw_wall is None:
            raise InputError("missing Resource_List.walltime=", path=p, line=line, field="Resource_List.walltime")
        try:
            walltime = parse_walltime(raw_wall)
        except ValueError as exc:
            raise InputError(str(exc), path=p, line=line, field="Resource_List.walltime") from None
        if walltime < 1:
            raise InputError(f"walltime {raw_wall} is shorter than 1 s", path=p, line=line,
                             field="Resource_List.walltime")
        start = _value(kv, "start", p, line, low=0) if "start" in kv else None
        end = _value(kv, "end", p, line, low=0) if "end" in kv else None
        ended = "E" in recs
        if "runtime" in kv:
            runtime = _value(kv, "runtime", p, line)
        elif ended and start is not None and end is not None:
            runtime = end - start
        elif not ended:
            runtime = float(walltime)
        else:
            raise InputError("missing runtime= (and start=/end=)", path=p, line=line, field="runtime")
        queue = kv.get("queue_name", kv.get("queue", ""))
        rows.append((line, jid, submit, walltime, nodes, runtime, queue, kv.get("exec_host", ""), ended, start, end))
    if not rows:
        raise no_jobs_left(p, counts, len(order), "job records")

    line_a = np.array([r[0] for r in rows], dtype=np.int64)
    ids = np.array([r[1] for r in rows], dtype=np.int64)
    errors = RowErrors(p, line_a)
    alive = np.ones(len(rows), dtype=bool)
    rt = settle_runtimes(np.array([r[5] for r in rows], dtype=np.float64),
                         np.array([r[3] for r in rows], dtype=np.int64),
                         alive, o, counts, errors, "runtime")
    check_sizes(np.array([r[4] for r in rows], dtype=np.int64), o.max_nodes, alive, o, counts, errors,
                "Resource_List.nodect", ids, "max_nodes, Mira's by default")
    errors.raise_first()
    kept = np.flatnonzero(alive).tolist()
    if not kept:
        raise no_jobs_left(p, counts, len(order), "job records")
    bump(counts, "kept_not_ended", sum(1 for i in kept if not rows[i][8]))
    t0 = min(rows[i][2] for i in kept)
    jobs: list[Job] = []
    extras: dict[int, CobaltExtra] = {}
    for i in kept:
        line, jid, submit, walltime, nodes, _, queue, host, ended, start, end = rows[i]
        jobs.append(Job(jid, submit - t0, int(rt[i]), walltime, nodes, queue=queue))
        extras[jid] = CobaltExtra(None if start is None else math.floor(start) - t0,
                                  None if end is None else math.floor(end) - t0, host, ended, line)
    return log_workload(jobs, extras, "cobalt", counts, o.first_n, name or trace_name(path), o.max_nodes, t0)
