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
from typing import Literal

from rtsched.errors import InputError
from rtsched.io import (ReadOptions, TraceHeader, bump, check_size, first_jobs, open_text,
                        settle_runtime, trace_name)
from rtsched.jobs import Job, Workload
from rtsched.machines.sizes import MIRA_NODES

_STAMP = re.compile(r"\d\d/\d\d/\d{4} \d\d:\d\d:\d\d(\.\d+)?$")
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


def parse_walltime(text: str) -> int:
    """``HH:MM:SS`` (hours may exceed 24, seconds may have a fraction) -> s.  ValueError if malformed."""
    parts = text.split(":")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        raise ValueError(f"expected HH:MM:SS, found {text!r}")
    sec = float(parts[2])
    if not (math.isfinite(sec) and sec >= 0):
        raise ValueError(f"expected HH:MM:SS, found {text!r}")
    return int(parts[0]) * 3600 + int(parts[1]) * 60 + int(sec + 0.5)


def _parse(path: str) -> tuple[dict[int, dict[str, tuple[int, dict[str, str]]]], list[int]]:
    """job id -> record type -> (line, key/values), and the job ids in order of first appearance."""
    jobs: dict[int, dict[str, tuple[int, dict[str, str]]]] = {}
    order: list[int] = []
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            s = line.strip()
            if not s:
                continue
            parts = s.split(";", 3)
            if len(parts) != 4:
                raise InputError("expected 'MM/DD/YYYY HH:MM:SS;TYPE;JOBID;key=value ...'", path=path,
                                 line=lineno, field=_PARTS[len(parts)])
            stamp, kind, jid_text, rest = parts
            if not _STAMP.match(stamp):
                raise InputError(f"expected MM/DD/YYYY HH:MM:SS, found {stamp!r}", path=path, line=lineno,
                                 field="timestamp")
            if kind not in RECORD_TYPES:
                raise InputError(f"record type {kind!r} is not Q, S or E", path=path, line=lineno,
                                 field="record type")
            try:
                jid = int(jid_text)
            except ValueError:
                raise InputError(f"job id {jid_text!r} is not an integer", path=path, line=lineno,
                                 field="jobid") from None
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


def _value(kv: dict[str, str], key: str, path: str, line: int) -> float:
    raw = kv.get(key)
    if raw is None:
        raise InputError(f"missing {key}=", path=path, line=line, field=key)
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"not a number: {raw!r}", path=path, line=line, field=key) from None
    if not math.isfinite(value):
        raise InputError(f"not a finite number: {raw!r}", path=path, line=line, field=key)
    return value


def read_cobalt(path: str | os.PathLike[str], options: CobaltOptions | None = None, *,
                name: str | None = None, **opts: object) -> Workload:
    """Read a Cobalt/Qsim log into a Workload (times in s, sizes in nodes).

    ``opts`` build a ``CobaltOptions`` when ``options`` is None.  ``header.extras`` maps each job
    id to a ``CobaltExtra``; ``header.cleaning`` counts the job ids seen with Q, S and E records
    ("queued", "started", "ended") and what cleaning dropped.  Raises InputError (file, 1-based
    line, field) on a malformed record or a job bigger than ``max_nodes``.
    """
    o = options if options is not None else CobaltOptions(**opts)  # type: ignore[arg-type]
    p = os.fspath(path)
    records, order = _parse(p)
    counts: dict[str, int] = {
        "job_ids": len(order),
        "queued": sum(1 for r in records.values() if "Q" in r),
        "started": sum(1 for r in records.values() if "S" in r),
        "ended": sum(1 for r in records.values() if "E" in r),
    }
    rows: list[tuple[int, int, int, int, int, str, CobaltExtra, float | None, float | None]] = []
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
        submit = math.floor(_value(kv, "qtime", p, line))
        nodes_f = _value(kv, "Resource_List.nodect", p, line)
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
        start = _value(kv, "start", p, line) if "start" in kv else None
        end = _value(kv, "end", p, line) if "end" in kv else None
        ended = "E" in recs
        if "runtime" in kv:
            runtime = _value(kv, "runtime", p, line)
        elif ended and start is not None and end is not None:
            runtime = end - start
        elif not ended:
            runtime = float(walltime)
        else:
            raise InputError("missing runtime= (and start=/end=)", path=p, line=line, field="runtime")
        rt = settle_runtime(runtime, walltime, o, counts, path=p, line=line, field="runtime")
        if rt is None:
            continue
        if not check_size(nodes, o.max_nodes, o, counts, path=p, line=line, field="Resource_List.nodect",
                          job_id=jid):
            continue
        queue = kv.get("queue_name", kv.get("queue", ""))
        extra = CobaltExtra(None, None, kv.get("exec_host", ""), ended, line)
        if not ended:
            bump(counts, "kept_not_ended")
        rows.append((jid, submit, rt, walltime, nodes, queue, extra, start, end))

    t0 = min((r[1] for r in rows), default=0)
    jobs: list[Job] = []
    extras: dict[int, CobaltExtra] = {}
    for jid, submit, rt, walltime, nodes, queue, extra, start, end in rows:
        jobs.append(Job(jid, submit - t0, rt, walltime, nodes, queue=queue))
        extras[jid] = CobaltExtra(None if start is None else math.floor(start) - t0,
                                  None if end is None else math.floor(end) - t0,
                                  extra.exec_host, extra.ended, extra.line)
    jobs = first_jobs(jobs, o.first_n, counts)
    th = TraceHeader(fmt="cobalt")
    th.extras = {j.id: extras[j.id] for j in jobs}
    th.as_read = {j.id: j for j in jobs}
    th.cleaning = counts
    return Workload(jobs, name=name or trace_name(p), max_nodes=o.max_nodes,
                    start_time=t0 if rows else None, header=th)
