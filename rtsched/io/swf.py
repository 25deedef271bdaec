"""Standard Workload Format (Parallel Workloads Archive v2.2): streaming reader and atomic writer.

One job a line, 18 whitespace-separated numeric fields, -1 for unknown; ``;`` starts a header
line (``; MaxNodes: 128``).  Times in the file are seconds relative to ``UnixStartTime`` and are
kept as they are: ``Job.submit`` = field 2, ``Workload.start_time`` = ``UnixStartTime``.

The reader streams: it reads about 1 MiB of lines at a time, parses a block of job lines with
NumPy (``rtsched.io.numbers``; whole numbers by NumPy's C text reader), checks and cleans the
whole block at once, and raises at the first bad line of the file with its line number and
field (a block the fast parser refuses is read line by line, to name that line).  The kept jobs
are columns (``JobColumns``): ``read_swf``'s Workload builds its ``Job`` objects on first use of
``jobs``, in bulk, and lets the columns go then (``bench/bench_scale.py``'s reader line: 500,000
lines as fast as ``pandas.read_csv``).  ``read_swf_table`` also returns per-job columns the
``Job`` model does not carry (requested memory, executable, ...), for the RL traces.

``write_swf(read_swf(f))`` reproduces the header lines verbatim and each job line field for field
(whitespace normalised to single spaces): the reader keeps the text of every kept job line
(``header.records``).  A job changed after reading (or one from another reader or a generator)
is written from its ``Job`` fields.  Cleaning and validation rules: ``docs/formats.md``.
"""
from __future__ import annotations

import bisect
import gzip
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Literal, Mapping, Sequence, TypeVar

import numpy as np

from rtsched.errors import InputError
from rtsched.files import atomic_write_stream
from rtsched.io import TraceHeader, trace_name
from rtsched.io.cleaning import (MAX_ID, MAX_SIZE, MAX_TIME_S, ReadOptions, RowErrors, bump, check_sizes,
                                 first_n_positions, gc_paused, no_jobs_left, round_seconds,
                                 settle_runtimes, submit_seconds, too_large)
from rtsched.io.numbers import NUMBER, parse_block
from rtsched.io.source import TraceInput, display_name
from rtsched.jobs import Job, JobColumns, Workload

SWF_FIELDS: tuple[str, ...] = (
    "job number", "submit time", "wait time", "run time", "allocated processors", "average CPU time",
    "used memory", "requested processors", "requested time", "requested memory", "status", "user id",
    "group id", "executable id", "queue", "partition", "preceding job", "think time",
)
N_FIELDS = len(SWF_FIELDS)
(_JOB, _SUBMIT, _WAIT, _RUN, _ALLOC, _CPU, _USED_MEM, _REQ, _REQ_TIME, _REQ_MEM, _STATUS, _USER, _GROUP,
 _EXE, _QUEUE, _PARTITION, _PRECEDING, _THINK) = range(N_FIELDS)

# What each field accepts (docs/formats.md, "SWF: values").  Every field but the job number and
# the submit time may be -1 (unknown); no other negative value is accepted.
TIME_FIELDS = frozenset({_SUBMIT, _WAIT, _RUN, _CPU, _REQ_TIME, _THINK})  # s, <= MAX_TIME_S
SIZE_FIELDS = frozenset({_ALLOC, _REQ})  # processors, <= MAX_SIZE
WHOLE_FIELDS = frozenset({_JOB, _ALLOC, _REQ, _STATUS, _USER, _GROUP, _EXE, _QUEUE, _PARTITION, _PRECEDING})
NO_UNKNOWN_FIELDS = frozenset({_JOB, _SUBMIT})
_HIGH = np.array([MAX_TIME_S if i in TIME_FIELDS else MAX_SIZE if i in SIZE_FIELDS else MAX_ID
                  for i in range(N_FIELDS)], dtype=np.float64)
# The lowest whole value of each field: -1 (unknown) where allowed, else 0.  Job number and submit
# time may not be unknown; a negative one is refused.
_LOW = np.array([0.0 if i in NO_UNKNOWN_FIELDS else -1.0 for i in range(N_FIELDS)])
_WHOLE = np.array([i in WHOLE_FIELDS for i in range(N_FIELDS)])
_UNKNOWN_OK = np.array([i not in NO_UNKNOWN_FIELDS for i in range(N_FIELDS)])
# Header keys a synthesised header derives from the workload itself.
_DERIVED_KEYS = ("MaxJobs", "MaxRecords", "MaxNodes", "MaxProcs", "UnixStartTime")
# Header keys that fix how jobs are read: they must come before the first job line.
_MACHINE_KEYS = ("MaxNodes", "MaxProcs")
# The columns the scan keeps for each job, a block at a time (JobColumns', queue as its number).
_KEPT = ("id", "submit", "runtime", "walltime", "nodes", "user", "group", "queue")

ProcsRule = Literal["requested", "allocated", "max"]
ProcsPerNode = int | Literal["header", "header_if_known"] | None
ZeroRequestRule = Literal["unknown", "one_second"]
T = TypeVar("T")


@dataclass(frozen=True)
class SwfOptions(ReadOptions):
    """SWF cleaning options (the shared ones are documented on ``ReadOptions``).

    Attributes:
        walltime_from_runtime: a requested time that is unknown (-1, or 0 unless
            ``requested_time_zero="one_second"``) becomes the job's runtime (RLScheduler's rule;
            perfect estimates on the Lublin traces).  When False such a job raises InputError.
        procs: processor count used for the job size: "requested" (field 8, or field 5 when
            field 8 is unknown; the default), "allocated" (field 5, or 8 when unknown), or
            "max" (the larger of the two; RLScheduler's rule).
        procs_per_node: None (the default): sizes are processors and the machine is MaxProcs
            (else MaxNodes) processors.  An int k: nodes = ceil(processors / k), the machine is
            MaxNodes (else MaxProcs // k).  "header": k = MaxProcs / MaxNodes from the header,
            nodes = ceil(processors * MaxNodes / MaxProcs) (RLScheduler's rule); both keys are
            needed.  "header_if_known": "header" when the header has both keys, else None.
        requested_time_zero: a requested time of 0 s is "unknown" (the default, like -1) or
            becomes "one_second" (RLScheduler: walltime = max(requested time, 1)).
        unknown_runtime: None (the default) keeps a run time of -1 unknown (the job is dropped
            as runtime <= 0); an int n >= 1 makes it n s first (RLScheduler's loader uses 10).
    """

    walltime_from_runtime: bool = True
    procs: ProcsRule = "requested"
    procs_per_node: ProcsPerNode = None
    requested_time_zero: ZeroRequestRule = "unknown"
    unknown_runtime: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.procs not in ("requested", "allocated", "max"):
            raise ValueError(f"procs must be 'requested', 'allocated' or 'max', got {self.procs!r}")
        ppn = self.procs_per_node
        if not (ppn is None or ppn in ("header", "header_if_known") or
                (isinstance(ppn, int) and not isinstance(ppn, bool) and ppn >= 1)):
            raise ValueError(f"procs_per_node must be None, 'header', 'header_if_known' or an int >= 1, got {ppn!r}")
        if self.requested_time_zero not in ("unknown", "one_second"):
            raise ValueError(f"requested_time_zero must be 'unknown' or 'one_second', got {self.requested_time_zero!r}")
        u = self.unknown_runtime
        if u is not None and not (isinstance(u, int) and not isinstance(u, bool) and 1 <= u <= MAX_TIME_S):
            raise ValueError(f"unknown_runtime must be None or an int in [1, {MAX_TIME_S}], got {u!r}")


@dataclass
class SwfTable:
    """What ``read_swf_table`` read: the cleaned jobs in file order and columns aligned with them.

    Attributes:
        table: the cleaned jobs as columns (``JobColumns``), in the order of their lines (before
            ``first_n``); ``jobs`` builds their ``Job`` objects on first use.
        columns: per-job NumPy arrays aligned with ``jobs``: the SWF fields asked for (by their
            ``SWF_FIELDS`` name; int64 for whole-number fields, else float64 as written),
            "processors" (the count the ``procs`` rule chose) and "line" (1-based).
        header: the ``TraceHeader`` (key/values, raw lines, cleaning counts, records).
        max_nodes, start_time, name: as on the ``Workload``.
    """

    table: JobColumns
    columns: dict[str, np.ndarray]
    header: TraceHeader
    max_nodes: int | None
    start_time: int | None
    name: str
    text: "_KeptText | None" = field(repr=False)  # the kept lines' text (None: not kept) ...
    offsets: np.ndarray = field(repr=False)  # ... and where each job's line starts in it

    @property
    def jobs(self) -> list[Job]:
        """The cleaned jobs (``Job`` objects, built on first use), in the order of their lines."""
        return self.table.jobs()


def read_swf(path: str | os.PathLike[str], options: SwfOptions | None = None, *, name: str | None = None,
             **opts: object) -> Workload:
    """Read an SWF file (``.gz`` too; "-" is standard input) into a Workload.

    Times are in s; sizes in processors, or nodes with ``procs_per_node``.  ``opts`` build a
    ``SwfOptions`` when ``options`` is None.  Raises InputError (file, 1-based line, field) at
    the first bad line: a malformed line, a value out of range, a duplicate job number, a job
    bigger than the machine; and when no job is left.
    """
    o = options if options is not None else SwfOptions(**opts)  # type: ignore[arg-type]
    with gc_paused():
        return _read_swf(path, o, name)


def _read_swf(path: str | os.PathLike[str], o: SwfOptions, name: str | None) -> Workload:
    table = read_swf_table(path, o, name=name)
    jobs, offsets = table.table, table.offsets
    keep = None
    if o.first_n is not None:
        keep = first_n_positions(jobs.submit, jobs.id, o.first_n, table.header.cleaning)
    if keep is not None:
        jobs, offsets = jobs.take(keep), offsets[keep]
    order = jobs.sort_order()  # (submit, id) order, as Workload keeps its jobs (None: in it already)
    if order is not None:
        jobs, offsets = jobs.take(order), offsets[order]
    th = table.header
    _attach(th, jobs, table.text, offsets)
    # The scan refused duplicate job numbers, and the columns are in (submit, id) order now: the
    # Workload checks neither again, and builds the Job objects when someone needs them.
    return Workload.of_columns(jobs, name=table.name, max_nodes=table.max_nodes, start_time=table.start_time,
                               header=th, unique_ids=True, release=True)


def read_swf_table(path: str | os.PathLike[str], options: SwfOptions | None = None, *,
                   fields: Sequence[str] = (), name: str | None = None, records: bool = True) -> SwfTable:
    """Read an SWF file like ``read_swf`` (``first_n`` aside) and keep the columns ``fields``.

    ``fields`` are ``SWF_FIELDS`` names, "processors" or "line".  ``header.records`` and
    ``header.as_read`` map every job of ``jobs``; with ``records=False`` the text of the job lines
    is not kept (less memory) and ``header.records`` is empty.
    """
    o = options if options is not None else SwfOptions()
    unknown = [f for f in fields if f not in SWF_FIELDS and f not in ("processors", "line")]
    if unknown:
        raise ValueError(f"unknown SWF column(s) {unknown}; valid: {', '.join(SWF_FIELDS)}, processors, line")
    scan = _Scan(path, o, tuple(fields), records)
    with gc_paused(), TraceInput(path) as src:
        for first_line, block in src.blocks():
            scan.block(first_line, block)
        return scan.finish(name)


class _Scan:
    """The state of one streaming read: header so far, machine, duplicate tracking, kept jobs."""

    def __init__(self, path: str | os.PathLike[str], opts: SwfOptions, fields: tuple[str, ...],
                 records: bool = True) -> None:
        self.path = os.fspath(path)
        self.source = display_name(path)
        self.opts = opts
        self.fields = fields
        self.header: dict[str, str] = {}
        self.key_lines: dict[str, int] = {}
        self.raw_header: list[str] = []
        self.last_key: str | None = None
        self.machine: tuple[int | None, tuple[int, int] | None] | None = None  # fixed at the first job line
        self.counts: dict[str, int] = {"records": 0}
        self.max_id = -1  # ids so far were increasing up to max_id ...
        self.history: list[tuple[np.ndarray, np.ndarray]] | None = []  # ... with these (ids, lines)
        self.first_line: dict[int, int] | None = None  # id -> first line, once ids went out of order
        self.kept: dict[str, list[np.ndarray]] = {c: [] for c in _KEPT}  # the kept jobs' columns, a block at a time
        self.text = _KeptText() if records else None
        self.offsets: list[np.ndarray] = []
        self.columns: dict[str, list[np.ndarray]] = {c: [] for c in fields}

    # ------------------------------------------------------------------------- blocks and lines
    def block(self, first_line: int, block: bytes) -> None:
        if b";" in block:  # header or comment lines: up to the last of them line by line, the rest at once
            cut = block.find(b"\n", block.rfind(b";")) + 1
            self.line_by_line(first_line, block[:cut])
            if cut == len(block):
                return
            first_line += block.count(b"\n", 0, cut)
            block = block[cut:]
            if self.machine is None and not block.isspace():  # as line_by_line does at the first job line
                self.machine = _machine(self.header, self.key_lines, self.source, self.opts)
        if self.machine is not None:
            values = parse_block(block, N_FIELDS)
            if values is not None:
                starts = np.zeros(len(values), dtype=np.int64)
                starts[1:] = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)[:-1] + 1
                lines = np.arange(first_line, first_line + len(values), dtype=np.int64)
                whole = b"." not in block and b"e" not in block and b"E" not in block
                self.rows(values, lines, starts, block, None, whole)
                return
        self.line_by_line(first_line, block)

    def line_by_line(self, first_line: int, block: bytes) -> None:
        """A block with header or blank lines, or one the fast parser refused."""
        job_lines: list[bytes] = []
        starts: list[int] = []
        numbers: list[int] = []
        pending: InputError | None = None
        offset = 0
        lineno = first_line
        for raw in block.split(b"\n")[:-1]:
            s = raw.strip()
            if s:
                try:
                    if s[:1] == b";":
                        self.header_line(raw.decode("utf-8"), lineno)
                    else:
                        if self.machine is None:
                            self.machine = _machine(self.header, self.key_lines, self.source, self.opts)
                        job_lines.append(raw)
                        starts.append(offset)
                        numbers.append(lineno)
                except InputError as exc:
                    pending = exc
                    break
            offset += len(raw) + 1
            lineno += 1
        if not job_lines:
            if pending is not None:
                raise pending
            return
        values = parse_block(b"\n".join(job_lines) + b"\n", N_FIELDS)
        if values is None:
            rows: list[list[float]] = []
            for raw, n in zip(job_lines, numbers):
                try:
                    rows.append(_parse_line(raw, n, self.source))
                except InputError as exc:
                    pending = exc
                    break
            values = np.array(rows, dtype=np.float64).reshape(len(rows), N_FIELDS)
        k = len(values)
        self.rows(values, np.array(numbers[:k], dtype=np.int64), np.array(starts[:k], dtype=np.int64), block,
                  pending)

    def header_line(self, line: str, lineno: int) -> None:
        self.raw_header.append(line.rstrip("\r"))
        before = [self.header.get(k) for k in _MACHINE_KEYS]
        self.last_key = _header_line(line.strip(), self.header, self.key_lines, lineno, self.last_key)
        if self.machine is not None and [self.header.get(k) for k in _MACHINE_KEYS] != before:
            raise InputError(f"{' and '.join(_MACHINE_KEYS)} must come before the first job line (they fix "
                             f"the job sizes)", path=self.source, line=lineno, field=self.last_key)

    # ------------------------------------------------------------------------- rows
    def rows(self, values: np.ndarray, lines: np.ndarray, starts: np.ndarray, block: bytes,
             pending: InputError | None, whole: bool = False) -> None:
        """Check and clean a block's job rows; keep the surviving jobs.  Raises at the first bad line.
        ``whole``: every value is a whole number (the block has no point or exponent)."""
        errors = RowErrors(self.source, lines)
        if pending is not None:
            errors.add(pending)
        self.counts["records"] += len(values)

        def token(row: int, col: int) -> str:
            start = int(starts[row])
            end = block.find(b"\n", start)
            return block[start:end].split()[col].decode("utf-8")

        valid = _first_bad_value(values, errors, token, whole)
        v = values[:valid]
        jid = v[:, _JOB].astype(np.int64)
        self.check_duplicates(jid, lines[:valid], errors)
        kept = self.clean(v, jid, errors, token)
        errors.raise_first()
        if kept is not None:
            alive, submit, runtime, walltime, nodes, procs = kept
            self.keep(v, alive, jid, submit, runtime, walltime, nodes, procs, lines[:valid], starts[:valid], block)

    def check_duplicates(self, jid: np.ndarray, lines: np.ndarray, errors: RowErrors) -> None:
        """A job number seen before is an error naming its first line.  While numbers increase
        (the usual case) a block is checked against the largest number so far, without lookups;
        the (number, line) arrays are kept for the day a block goes out of order."""
        if not len(jid):
            return
        if self.first_line is None:
            assert self.history is not None
            if jid[0] > self.max_id and (len(jid) == 1 or bool((np.diff(jid) > 0).all())):
                self.max_id = int(jid[-1])
                self.history.append((jid, lines.astype(np.int32)))
                return
            ids = [a for a, _ in self.history]
            at = [b for _, b in self.history]
            self.first_line = dict(zip(np.concatenate(ids).tolist() if ids else [],
                                       np.concatenate(at).tolist() if at else []))
            self.history = None
        seen = self.first_line
        for row, (j, line) in enumerate(zip(jid.tolist(), lines.tolist())):
            first = seen.setdefault(j, line)
            if first != line:
                errors.check(np.arange(len(jid)) == row, "job number",
                             lambda r, j=j, first=first: f"duplicate job number {j} (first on line {first})")
                return

    def clean(self, v: np.ndarray, jid: np.ndarray, errors: RowErrors, token: Callable[[int, int], str]):
        """The cleaning rules (docs/formats.md) on valid rows; None when there are none."""
        if not len(v):
            return None
        o, counts = self.opts, self.counts
        assert self.machine is not None
        max_nodes, ratio = self.machine
        submit = submit_seconds(v[:, _SUBMIT])
        runtime = v[:, _RUN]
        if o.unknown_runtime is not None:
            runtime = np.where(runtime == -1, float(o.unknown_runtime), runtime)
        alloc = v[:, _ALLOC].astype(np.int64)
        req = v[:, _REQ].astype(np.int64)
        if o.procs == "max":
            procs = np.maximum(alloc, req)
        elif o.procs == "allocated":
            procs = np.where(alloc > 0, alloc, req)
        else:
            procs = np.where(req > 0, req, alloc)
        alive = procs > 0
        bump(counts, "dropped_no_processors", np.count_nonzero(~alive))

        requested = round_seconds(v[:, _REQ_TIME])
        if o.requested_time_zero == "one_second":
            requested[requested == 0] = 1
        unknown = alive & (requested < 1)
        if o.drop_nonpositive_runtime:
            never_ran = unknown & (runtime <= 0)
            bump(counts, "dropped_nonpositive_runtime", np.count_nonzero(never_ran))
            alive &= ~never_ran
            unknown &= ~never_ran
        if not o.walltime_from_runtime:
            errors.check(unknown, "requested time",
                         lambda r: f"requested time {token(r, _REQ_TIME)} is unknown (pass walltime_from_runtime=True "
                                   f"to use the runtime)")
        bump(counts, "walltime_from_runtime", np.count_nonzero(unknown))
        walltime = np.where(unknown, np.maximum(round_seconds(runtime), 1), requested)
        rt = settle_runtimes(runtime, walltime, alive, o, counts, errors, "run time")

        nodes = procs if ratio is None else -((-procs * ratio[0]) // ratio[1])
        check_sizes(nodes, max_nodes, alive, o, counts, errors,
                    lambda r: "allocated processors" if procs[r] == alloc[r] != req[r] else "requested processors",
                    jid, "the header's MaxProcs, else MaxNodes")
        return alive, submit, rt, walltime, nodes, procs

    def keep(self, v: np.ndarray, alive: np.ndarray, jid: np.ndarray, submit: np.ndarray, runtime: np.ndarray,
             walltime: np.ndarray, nodes: np.ndarray, procs: np.ndarray, lines: np.ndarray, starts: np.ndarray,
             block: bytes) -> None:
        k = np.flatnonzero(alive)
        if not len(k):
            return
        for column, values in zip(self.kept.values(), (jid[k], submit[k], runtime[k], walltime[k], nodes[k],
                                                       v[k, _USER].astype(np.int64), v[k, _GROUP].astype(np.int64),
                                                       v[k, _QUEUE].astype(np.int64))):
            column.append(values)
        if self.text is not None:
            self.offsets.append(self.text.add(block) + starts[k])
        cols = self.columns
        for name in self.fields:
            if name == "processors":
                cols[name].append(procs[k])
            elif name == "line":
                cols[name].append(lines[k])
            else:
                i = SWF_FIELDS.index(name)
                cols[name].append(v[k, i].astype(np.int64) if i in WHOLE_FIELDS else v[k, i].copy())

    # ------------------------------------------------------------------------- the end
    def finish(self, name: str | None) -> SwfTable:
        counts = self.counts
        if counts["records"] == 0:
            what = "only header lines" if self.raw_header else "no job lines (it is empty)"
            raise InputError(f"no jobs: the trace has {what}", path=self.source)
        kept = {}
        for c in _KEPT:  # one column at a time, its blocks' parts let go at once (all at once: 64 B a job more)
            parts = self.kept.pop(c)
            kept[c] = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            parts.clear()
        if not len(kept["id"]):
            raise no_jobs_left(self.source, counts, counts["records"], "job lines")
        assert self.machine is not None
        max_nodes = self.machine[0]
        th = TraceHeader(self.header, fmt="swf", lines=self.raw_header)
        th.cleaning = counts
        offsets = np.concatenate(self.offsets) if self.offsets else np.zeros(0, dtype=np.int64)
        codes, at = np.unique(kept.pop("queue"), return_inverse=True)  # queue numbers -> one str each
        names = np.array([str(q) if q >= 0 else "" for q in codes.tolist()], dtype=object)
        n = len(kept["id"])
        jobs = JobColumns(**kept, queue=names[at.reshape(-1)], is_rt=np.zeros(n, dtype=bool),
                          checkpointable=np.ones(n, dtype=bool))
        _attach(th, jobs, self.text, offsets)
        start = _header_int(self.header, "UnixStartTime", self.key_lines, self.source, minimum=0, maximum=MAX_TIME_S)
        columns = {c: np.concatenate(parts) for c, parts in self.columns.items()}
        return SwfTable(jobs, columns, th, max_nodes, start, name or trace_name(self.path), self.text, offsets)


# ---------------------------------------------------------------------------------- helpers
def _parse_line(raw: bytes, lineno: int, source: str) -> list[float]:
    """The 18 numbers of one job line, or InputError naming the line and field."""
    tokens = raw.split()
    if len(tokens) != N_FIELDS:
        missing = SWF_FIELDS[len(tokens)] if len(tokens) < N_FIELDS else f"field {N_FIELDS + 1}"
        raise InputError(f"expected {N_FIELDS} SWF fields, found {len(tokens)}", path=source, line=lineno,
                         field=missing)
    for i, t in enumerate(tokens):
        if not NUMBER.fullmatch(t):
            raise InputError(f"not a number: {t.decode('utf-8')!r}", path=source, line=lineno, field=SWF_FIELDS[i])
    return [float(t) for t in tokens]


def _first_bad_value(values: np.ndarray, errors: RowErrors, token: Callable[[int, int], str],
                     whole: bool = False) -> int:
    """Index of the first row with a value no field accepts (reported to ``errors``), else len(values).
    ``whole``: the values are known to be whole numbers (the usual block): two comparisons decide
    when every value is good."""
    if whole and bool(((values >= _LOW) & (values <= _HIGH)).all()):
        return len(values)
    with np.errstate(invalid="ignore"):
        infinite = ~np.isfinite(values)
        fractional = _WHOLE & (values != np.floor(values))
        negative = (values < 0) & ~(_UNKNOWN_OK & (values == -1))
        too_big = values > _HIGH
    bad = infinite | fractional | negative | too_big
    rows = np.flatnonzero(bad.any(axis=1))
    if not len(rows):
        return len(values)
    row = int(rows[0])
    col = int(np.argmax(bad[row]))

    def message(r: int) -> str:
        text = token(r, col)
        if infinite[r, col]:
            return f"not a finite number: {text!r}"
        if fractional[r, col]:
            return f"{text!r} is not a whole number"
        if negative[r, col]:
            if col in NO_UNKNOWN_FIELDS:
                return f"negative {SWF_FIELDS[col]} {text}"
            return f"negative value {text}: the only negative value allowed is -1 (unknown)"
        return too_large(text, _HIGH[col])

    errors.check(np.arange(len(values)) == row, SWF_FIELDS[col], message)
    return row


def _attach(th: TraceHeader, jobs: JobColumns, text: "_KeptText | None", offsets: np.ndarray) -> None:
    """Give ``th`` its per-job tables: ``records`` (a job line's fields) and ``as_read`` (the
    ``Job`` objects the workload holds, built on first use)."""
    if text is not None:
        th.records = _ById(jobs.id, lambda i: text.fields_at(int(offsets[i])))
    th.as_read = _ById(jobs.id, lambda i: jobs.jobs()[i])


class _KeptText:
    """The text of the kept blocks, addressed by one global byte offset; gives back a job line's fields."""

    def __init__(self) -> None:
        self.blocks: list[bytes] = []
        self.bases: list[int] = []
        self.size = 0

    def add(self, block: bytes) -> int:
        """Keep ``block``; its base offset."""
        base = self.size
        self.blocks.append(block)
        self.bases.append(base)
        self.size += len(block)
        return base

    def fields_at(self, offset: int) -> tuple[str, ...]:
        i = bisect.bisect_right(self.bases, offset) - 1
        block, local = self.blocks[i], offset - self.bases[i]
        end = block.find(b"\n", local)
        return tuple(block[local:end].decode("utf-8").split())


class _ById(Mapping[int, T]):
    """job id -> value, for jobs kept in read order; the id index is built on the first lookup."""

    def __init__(self, ids: np.ndarray, value: Callable[[int], T]) -> None:
        self._ids = ids
        self._value = value
        self._index: dict[int, int] | None = None

    def _position(self, key: object) -> int:
        if self._index is None:
            self._index = dict(zip(self._ids.tolist(), range(len(self._ids))))
        return self._index[key]  # type: ignore[index]

    def __getitem__(self, key: int) -> T:
        return self._value(self._position(key))

    def __contains__(self, key: object) -> bool:
        try:
            self._position(key)
        except (KeyError, TypeError):
            return False
        return True

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids.tolist())

    def __len__(self) -> int:
        return len(self._ids)


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


def _header_int(header: dict[str, str], key: str, lines: dict[str, int], source: str, *,
                minimum: int = 1, maximum: int = MAX_SIZE) -> int | None:
    """The leading integer of a header value; None when absent or below ``minimum`` (unknown)."""
    raw = header.get(key)
    if raw is None:
        return None
    token = raw.split()[0] if raw.split() else ""
    if not NUMBER.fullmatch(token.encode("utf-8", "replace")):
        raise InputError(f"header value {raw!r} is not a number", path=source, line=lines.get(key), field=key)
    value = float(token)
    if not value <= maximum:
        raise InputError(too_large(f"header value {token}", maximum), path=source, line=lines.get(key), field=key)
    value = int(value)
    return value if value >= minimum else None


def _machine(header: dict[str, str], lines: dict[str, int], source: str,
             opts: SwfOptions) -> tuple[int | None, tuple[int, int] | None]:
    """(machine size in the jobs' unit, (numerator, denominator) of nodes per processor)."""
    max_nodes = _header_int(header, "MaxNodes", lines, source)
    max_procs = _header_int(header, "MaxProcs", lines, source)
    ppn = opts.procs_per_node
    if ppn == "header_if_known":
        ppn = "header" if max_nodes is not None and max_procs is not None else None
    if ppn is None:
        return (max_procs or max_nodes), None
    if ppn == "header":
        if max_nodes is None or max_procs is None:
            raise InputError("procs_per_node='header' needs both MaxNodes and MaxProcs in the header",
                             path=source, field="MaxProcs" if max_nodes else "MaxNodes")
        return max_nodes, (max_nodes, max_procs)
    assert isinstance(ppn, int)
    return (max_nodes or (max_procs // ppn if max_procs else None)), (1, ppn)


# ------------------------------------------------------------------------------------------ writer
def _job_fields(job: Job, record: tuple[str, ...] | None) -> list[str]:
    """18 SWF fields for a job: its ``Job`` values over the record's other fields (or -1)."""
    out = list(record) if record is not None else ["-1"] * N_FIELDS
    out[0], out[1], out[3] = str(job.id), str(job.submit), str(job.runtime)
    out[4] = out[7] = str(job.nodes)  # sizes in the Job's unit
    out[8] = str(job.walltime)
    out[2] = out[5] = out[6] = "-1"  # wait, CPU time and memory no longer describe the job
    out[11], out[12] = str(job.user), str(job.group)
    out[14] = job.queue if job.queue.isascii() and job.queue.isdigit() else "-1"
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
    def fill(raw) -> None:
        if path.lower().endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
                for chunk in chunks:
                    gz.write(chunk.encode("utf-8"))
        else:
            raw.write("".join(chunks).encode("utf-8"))

    atomic_write_stream(path, fill)
