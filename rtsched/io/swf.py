"""Standard Workload Format (Parallel Workloads Archive v2.2): reader and atomic writer.

One job a line, 18 whitespace-separated numeric fields, -1 for unknown; ``;`` starts a header
line (``; MaxNodes: 128``).  Times in the file are seconds relative to ``UnixStartTime`` and are
kept as they are: ``Job.submit`` = field 2, ``Workload.start_time`` = ``UnixStartTime``.

``write_swf(read_swf(f))`` reproduces the header lines verbatim and each job line field for field
(whitespace normalised to single spaces): the reader keeps every job's 18 original field strings
in ``header.records``.  A job changed after reading (or one from another reader or a generator)
is written from its ``Job`` fields.  Cleaning rules: ``docs/formats.md``.
"""
from __future__ import annotations

import gzip
import math
import os
import tempfile
from dataclasses import dataclass
from typing import Iterable, Iterator, Literal

from rtsched.errors import InputError
from rtsched.io import (ReadOptions, TraceHeader, bump, check_size, first_jobs, open_text, seconds,
                        settle_runtime, trace_name)
from rtsched.jobs import Job, Workload

SWF_FIELDS: tuple[str, ...] = (
    "job number", "submit time", "wait time", "run time", "allocated processors", "average CPU time",
    "used memory", "requested processors", "requested time", "requested memory", "status", "user id",
    "group id", "executable id", "queue", "partition", "preceding job", "think time",
)
N_FIELDS = len(SWF_FIELDS)
# Header keys a synthesised header derives from the workload itself.
_DERIVED_KEYS = ("MaxJobs", "MaxRecords", "MaxNodes", "MaxProcs", "UnixStartTime")

ProcsRule = Literal["requested", "allocated", "max"]


@dataclass(frozen=True)
class SwfOptions(ReadOptions):
    """SWF cleaning options (the shared ones are documented on ``ReadOptions``).

    Attributes:
        walltime_from_runtime: a requested time of -1 (or 0: unknown) becomes the job's runtime
            (RLScheduler's rule; perfect estimates on the Lublin traces).  When False such a job
            raises InputError.
        procs: processor count used for the job size: "requested" (field 8, or field 5 when
            field 8 is unknown; the default), "allocated" (field 5, or 8 when unknown), or
            "max" (the larger of the two; RLScheduler's rule).
        procs_per_node: None (the default): sizes are processors and the machine is MaxProcs
            (else MaxNodes) processors.  An int k: nodes = ceil(processors / k), the machine is
            MaxNodes (else MaxProcs // k).  "header": k = MaxProcs / MaxNodes from the header,
            nodes = ceil(processors * MaxNodes / MaxProcs) (RLScheduler's rule).
    """

    walltime_from_runtime: bool = True
    procs: ProcsRule = "requested"
    procs_per_node: int | Literal["header"] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.procs not in ("requested", "allocated", "max"):
            raise ValueError(f"procs must be 'requested', 'allocated' or 'max', got {self.procs!r}")
        ppn = self.procs_per_node
        if not (ppn is None or ppn == "header" or (isinstance(ppn, int) and ppn >= 1)):
            raise ValueError(f"procs_per_node must be None, 'header' or an int >= 1, got {ppn!r}")


def _number(token: str, index: int, path: str, line: int) -> int | float:
    try:
        return int(token)
    except ValueError:
        pass
    try:
        value = float(token)
    except ValueError:
        raise InputError(f"not a number: {token!r}", path=path, line=line, field=SWF_FIELDS[index]) from None
    if not math.isfinite(value):
        raise InputError(f"not a finite number: {token!r}", path=path, line=line, field=SWF_FIELDS[index])
    return value


def _header_line(s: str, header: dict[str, str], key_lines: dict[str, int], lineno: int,
                 last_key: str | None) -> str | None:
    """Record one stripped ``;`` line into ``header``; returns the key later indented lines continue.

    ``; Key: value`` sets a key (a repeated key appends its value on a new line); a line indented
    by two or more spaces after ``;`` continues the previous key's value; anything else is a
    comment.
    """
    body = s[1:]
    text = body.strip()
    if not text:
        return None
    key, sep, value = text.partition(":")
    if sep and key and body[:2].strip() and not any(c.isspace() for c in key) and not value.startswith("//"):
        value = value.strip()
        header[key] = f"{header[key]}\n{value}" if key in header else value
        key_lines.setdefault(key, lineno)
        return key
    if last_key is not None and body.startswith("  "):
        header[last_key] = f"{header[last_key]}\n{text}"
        return last_key
    return None


def _header_int(header: dict[str, str], key: str, lines: dict[str, int], path: str, *,
                minimum: int = 1) -> int | None:
    """The leading integer of a header value; None when absent or below ``minimum`` (unknown)."""
    raw = header.get(key)
    if raw is None:
        return None
    token = raw.split()[0] if raw.split() else ""
    try:
        value = int(float(token))
    except ValueError:
        raise InputError(f"header value {raw!r} is not a number", path=path, line=lines.get(key),
                         field=key) from None
    return value if value >= minimum else None


def _machine(header: dict[str, str], lines: dict[str, int], path: str,
             opts: SwfOptions) -> tuple[int | None, tuple[int, int] | None]:
    """(machine size in the jobs' unit, (numerator, denominator) of nodes per processor)."""
    max_nodes = _header_int(header, "MaxNodes", lines, path)
    max_procs = _header_int(header, "MaxProcs", lines, path)
    ppn = opts.procs_per_node
    if ppn is None:
        return (max_procs or max_nodes), None
    if ppn == "header":
        if max_nodes is None or max_procs is None:
            raise InputError("procs_per_node='header' needs both MaxNodes and MaxProcs in the header",
                             path=path, field="MaxProcs" if max_nodes else "MaxNodes")
        return max_nodes, (max_nodes, max_procs)
    return (max_nodes or (max_procs // ppn if max_procs else None)), (1, ppn)


def read_swf(path: str | os.PathLike[str], options: SwfOptions | None = None, *, name: str | None = None,
             **opts: object) -> Workload:
    """Read an SWF file (``.gz`` too) into a Workload.

    Times are in s; sizes in processors, or nodes with ``procs_per_node``.  ``opts`` build a
    ``SwfOptions`` when ``options`` is None.  Raises InputError (file, 1-based line, field) on a
    malformed line, a duplicate job number, a negative submit time or a job bigger than the machine.
    """
    o = options if options is not None else SwfOptions(**opts)  # type: ignore[arg-type]
    p = os.fspath(path)
    header: dict[str, str] = {}
    key_lines: dict[str, int] = {}
    raw_header: list[str] = []
    rows: list[tuple[int, list[str], list[int | float]]] = []
    last_key: str | None = None
    with open_text(p) as fh:
        for lineno, line in enumerate(fh, 1):
            s = line.strip()
            if not s:
                continue
            if s[0] == ";":
                raw_header.append(line.rstrip("\r\n"))
                last_key = _header_line(s, header, key_lines, lineno, last_key)
                continue
            tokens = s.split()
            if len(tokens) != N_FIELDS:
                missing = SWF_FIELDS[len(tokens)] if len(tokens) < N_FIELDS else f"field {N_FIELDS + 1}"
                raise InputError(f"expected {N_FIELDS} SWF fields, found {len(tokens)}", path=p, line=lineno,
                                 field=missing)
            try:
                values: list[int | float] = list(map(int, tokens))
            except ValueError:
                values = [_number(t, i, p, lineno) for i, t in enumerate(tokens)]
            rows.append((lineno, tokens, values))

    max_nodes, ratio = _machine(header, key_lines, p, o)
    counts: dict[str, int] = {"records": len(rows)}
    jobs: list[Job] = []
    records: dict[int, tuple[str, ...]] = {}
    first_line: dict[int, int] = {}
    for lineno, tokens, v in rows:
        jid = v[0]
        if not isinstance(jid, int):
            raise InputError(f"job number {tokens[0]!r} is not an integer", path=p, line=lineno,
                             field="job number")
        if jid in first_line:
            raise InputError(f"duplicate job number {jid} (first on line {first_line[jid]})", path=p,
                             line=lineno, field="job number")
        first_line[jid] = lineno
        submit = math.floor(v[1])
        if submit < 0:
            raise InputError(f"negative submit time {tokens[1]}", path=p, line=lineno, field="submit time")
        alloc, req = int(v[4]), int(v[7])
        if o.procs == "max":
            procs = max(alloc, req)
        elif o.procs == "allocated":
            procs = alloc if alloc > 0 else req
        else:
            procs = req if req > 0 else alloc
        if procs <= 0:
            bump(counts, "dropped_no_processors")
            continue
        runtime = v[3]
        req_time = seconds(v[8])
        if req_time < 1:
            if runtime <= 0 and o.drop_nonpositive_runtime:
                bump(counts, "dropped_nonpositive_runtime")
                continue
            if not o.walltime_from_runtime:
                raise InputError(f"requested time {tokens[8]} is unknown (pass walltime_from_runtime=True "
                                 f"to use the runtime)", path=p, line=lineno, field="requested time")
            walltime = max(seconds(runtime), 1)
            bump(counts, "walltime_from_runtime")
        else:
            walltime = req_time
        rt = settle_runtime(runtime, walltime, o, counts, path=p, line=lineno, field="run time")
        if rt is None:
            continue
        nodes = procs if ratio is None else -(-procs * ratio[0] // ratio[1])
        field = "allocated processors" if procs == alloc and procs != req else "requested processors"
        if not check_size(nodes, max_nodes, o, counts, path=p, line=lineno, field=field, job_id=jid):
            continue
        queue = int(v[14])
        jobs.append(Job(jid, submit, rt, walltime, nodes, user=int(v[11]), group=int(v[12]),
                        queue=str(queue) if queue >= 0 else ""))
        records[jid] = tuple(tokens)

    jobs = first_jobs(jobs, o.first_n, counts)
    th = TraceHeader(header, fmt="swf", lines=raw_header)
    th.records = {j.id: records[j.id] for j in jobs}
    th.as_read = {j.id: j for j in jobs}
    th.cleaning = counts
    start = _header_int(header, "UnixStartTime", key_lines, p, minimum=0)
    return Workload(jobs, name=name or trace_name(p), max_nodes=max_nodes, start_time=start, header=th)


# ------------------------------------------------------------------------------------------ writer
def _job_fields(job: Job, record: tuple[str, ...] | None) -> list[str]:
    """18 SWF fields for a job: its ``Job`` values over the record's other fields (or -1)."""
    out = list(record) if record is not None else ["-1"] * N_FIELDS
    out[0], out[1], out[3] = str(job.id), str(job.submit), str(job.runtime)
    out[4] = out[7] = str(job.nodes)  # sizes in the Job's unit
    out[8] = str(job.walltime)
    out[2] = out[5] = out[6] = "-1"  # wait, CPU time and memory no longer describe the job
    out[11], out[12] = str(job.user), str(job.group)
    out[14] = job.queue if job.queue.isdigit() else "-1"
    return out


def swf_lines(workload: Workload) -> Iterator[str]:
    """The lines (without newlines) of ``workload`` as an SWF file.

    A workload read by ``read_swf`` keeps its header lines verbatim and each unchanged job's
    original fields; otherwise the header is made from ``workload.header`` plus MaxJobs,
    MaxRecords, MaxNodes = MaxProcs = ``max_nodes`` and UnixStartTime = ``start_time``, and jobs
    are written from their ``Job`` fields (wait time from the start time a Cobalt or ALCF reader
    kept, when the job is unchanged).
    """
    header = workload.header
    swf = isinstance(header, TraceHeader) and header.fmt == "swf"
    if swf:
        yield from header.lines
    else:
        yield from _synth_header(workload)
    traced = isinstance(header, TraceHeader)
    records = header.records if swf else {}
    as_read = header.as_read if traced else {}
    extras = header.extras if traced else {}
    for job in workload.jobs:
        unchanged = as_read.get(job.id) == job
        rec = records.get(job.id)
        if rec is not None and unchanged:
            yield " ".join(rec)
            continue
        fields = _job_fields(job, rec)
        start = getattr(extras.get(job.id), "start", None)
        if unchanged and start is not None and start >= job.submit:
            fields[2] = str(start - job.submit)  # wait time from a Cobalt/ALCF start
        yield " ".join(fields)


def _synth_header(workload: Workload) -> Iterator[str]:
    items = dict(workload.header)
    yield f"; Version: {items.pop('Version', '2.2')}"
    for key, value in items.items():
        if key in _DERIVED_KEYS:
            continue
        for part in value.split("\n"):
            yield f"; {key}: {part}"
    n = len(workload)
    yield f"; MaxJobs: {n}"
    yield f"; MaxRecords: {n}"
    if workload.max_nodes is not None:
        yield f"; MaxNodes: {workload.max_nodes}"
        yield f"; MaxProcs: {workload.max_nodes}"
    if workload.start_time is not None:
        yield f"; UnixStartTime: {workload.start_time}"


def write_swf(workload: Workload, path: str | os.PathLike[str]) -> None:
    """Write ``workload`` as SWF (gzip when ``path`` ends in ``.gz``), atomically.

    The text goes to a temporary file in the target's folder, is flushed to disk and then
    renamed over ``path`` (``os.replace``): on any error nothing half-written remains and an
    existing file is left untouched.
    """
    _atomic_write(os.fspath(path), (line + "\n" for line in swf_lines(workload)))


def _atomic_write(path: str, chunks: Iterable[str]) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as raw:
            if path.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
                    for chunk in chunks:
                        gz.write(chunk.encode("utf-8"))
            else:
                raw.write("".join(chunks).encode("utf-8"))
            raw.flush()
            os.fsync(raw.fileno())
        mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
