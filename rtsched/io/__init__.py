"""Workload readers and writers: SWF, Cobalt/Qsim logs, ALCF DIM_JOB_COMPOSITE CSV.

``read_workload(path, fmt=None, **opts)`` picks the reader by ``fmt`` ("swf", "cobalt", "alcf")
or by the file's extension (``.swf``, ``.log``, ``.csv``; a trailing ``.gz`` is read through
gzip).  ``opts`` are the fields of that reader's options dataclass (``SwfOptions``,
``CobaltOptions``, ``AlcfOptions``).  The cleaning policy of every reader is in
``docs/formats.md``.

Every reader returns a ``Workload`` whose ``header`` is a ``TraceHeader``: a plain
``dict[str, str]`` of header key/values that also carries, as attributes, the reader's side
tables (original records, per-job extras such as Cobalt ``exec_host``) and the counts of what
cleaning did.  ``Workload.replace_jobs``/``head`` copy the header into a plain ``dict``, dropping
the side tables: they describe the jobs exactly as read.
"""
from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass, fields
from typing import Any, Literal, TextIO

from rtsched.errors import InputError
from rtsched.jobs import Job, Workload

RuntimeRule = Literal["clip", "keep", "raise"]
OversizeRule = Literal["raise", "drop"]
FORMATS: tuple[str, ...] = ("swf", "cobalt", "alcf")


class TraceHeader(dict[str, str]):
    """Header key/values of a trace (``str -> str``) plus the reader's side tables.

    Attributes:
        fmt: the format read ("swf", "cobalt", "alcf").
        lines: the raw header lines, in order (SWF; empty for the other formats).
        records: job id -> the job's original record (SWF: the 18 field strings).
        extras: job id -> per-job data the ``Job`` model does not carry (Cobalt ``exec_host``
            and start/end, ALCF ``LOCATION``, ...), times on the workload's clock (s).
        as_read: job id -> the ``Job`` as the reader built it (lets a writer see later edits).
        cleaning: counts of what the cleaning rules did (``docs/formats.md``).
    """

    def __init__(self, items: dict[str, str] | None = None, *, fmt: str = "",
                 lines: list[str] | None = None) -> None:
        super().__init__(items or {})
        self.fmt = fmt
        self.lines: list[str] = list(lines or [])
        self.records: dict[int, Any] = {}
        self.extras: dict[int, Any] = {}
        self.as_read: dict[int, Job] = {}
        self.cleaning: dict[str, int] = {}


def trace_extras(workload: Workload) -> dict[int, Any]:
    """job id -> reader extras (``CobaltExtra``, ``AlcfExtra``); empty when the reader kept none."""
    header = workload.header
    return header.extras if isinstance(header, TraceHeader) else {}


def cleaning_counts(workload: Workload) -> dict[str, int]:
    """What the reader's cleaning rules did (dropped, clipped, ... counts); empty if unknown."""
    header = workload.header
    return dict(header.cleaning) if isinstance(header, TraceHeader) else {}


@dataclass(frozen=True)
class ReadOptions:
    """Cleaning options shared by every reader.

    Attributes:
        drop_nonpositive_runtime: drop (and count) jobs whose runtime is <= 0 s; when False they
            are kept with a runtime of 1 s.
        runtime_above_walltime: "clip" (runtime = walltime, the default: a job never runs past
            its walltime on the machines we model), "keep", or "raise" (InputError).
        oversize: jobs with more nodes than the machine: "raise" (InputError) or "drop" (count).
        first_n: keep only the first N jobs, in (submit, id) order, after cleaning.
    """

    drop_nonpositive_runtime: bool = True
    runtime_above_walltime: RuntimeRule = "clip"
    oversize: OversizeRule = "raise"
    first_n: int | None = None

    def __post_init__(self) -> None:
        if self.runtime_above_walltime not in ("clip", "keep", "raise"):
            raise ValueError(f"runtime_above_walltime must be 'clip', 'keep' or 'raise', "
                             f"got {self.runtime_above_walltime!r}")
        if self.oversize not in ("raise", "drop"):
            raise ValueError(f"oversize must be 'raise' or 'drop', got {self.oversize!r}")
        if self.first_n is not None and self.first_n < 0:
            raise ValueError(f"first_n must be >= 0, got {self.first_n}")


def seconds(value: float) -> int:
    """A duration in s rounded to the nearest integer second (halves up)."""
    return int(value + 0.5) if value >= 0 else -int(-value + 0.5)


def settle_runtime(runtime: float, walltime: int, opts: ReadOptions, counts: dict[str, int], *,
                   path: str, line: int, field: str) -> int | None:
    """Apply the shared runtime rules; the runtime in whole s, or None when the job is dropped.

    ``runtime`` is the raw value in s, ``walltime`` the job's walltime in s (>= 1).
    """
    if runtime <= 0:
        if opts.drop_nonpositive_runtime:
            bump(counts, "dropped_nonpositive_runtime")
            return None
        bump(counts, "runtime_raised_to_1")
        runtime = 1
    rt = seconds(runtime)
    if rt < 1:
        bump(counts, "runtime_raised_to_1")
        rt = 1
    if rt > walltime:
        rule = opts.runtime_above_walltime
        if rule == "raise":
            raise InputError(f"runtime {rt} s exceeds the walltime {walltime} s", path=path, line=line,
                             field=field)
        bump(counts, "clipped_runtime" if rule == "clip" else "kept_runtime_above_walltime")
        if rule == "clip":
            rt = walltime
    return rt


def bump(counts: dict[str, int], key: str, n: int = 1) -> None:
    counts[key] = counts.get(key, 0) + n


def check_size(nodes: int, max_nodes: int | None, opts: ReadOptions, counts: dict[str, int], *,
               path: str, line: int, field: str, job_id: int) -> bool:
    """True if the job fits (or the machine size is unknown); False if it is to be dropped."""
    if max_nodes is None or nodes <= max_nodes:
        return True
    if opts.oversize == "drop":
        bump(counts, "dropped_oversize")
        return False
    raise InputError(f"job {job_id} asks for {nodes} nodes, more than the machine's {max_nodes} "
                     f"(pass oversize='drop' to drop such jobs)", path=path, line=line, field=field)


def first_jobs(jobs: list[Job], first_n: int | None, counts: dict[str, int]) -> list[Job]:
    """The first ``first_n`` jobs in (submit, id) order (all when None)."""
    if first_n is None or first_n >= len(jobs):
        return jobs
    kept = sorted(jobs, key=lambda j: (j.submit, j.id))[:first_n]
    bump(counts, "cut_by_first_n", len(jobs) - len(kept))
    return kept


def open_text(path: str | os.PathLike[str]) -> TextIO:
    """Open a trace for reading as UTF-8 text (gzip when the name ends in ``.gz``)."""
    p = os.fspath(path)
    try:
        if p.endswith(".gz"):
            return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8", errors="replace", newline="")
        return open(p, encoding="utf-8", errors="replace", newline="")
    except OSError as exc:
        raise InputError(f"cannot read trace: {exc.strerror or exc}", path=p) from exc


def trace_name(path: str | os.PathLike[str]) -> str:
    """A workload name from a file name: the base name without extensions (``wk1.log`` -> ``wk1``)."""
    base = os.path.basename(os.fspath(path))
    if base.endswith(".gz"):
        base = base[:-3]
    return os.path.splitext(base)[0] or base


def detect_format(path: str | os.PathLike[str]) -> str:
    """"swf", "cobalt" or "alcf" from the extension (``.swf``, ``.log``, ``.csv``, optionally ``.gz``)."""
    p = os.fspath(path).lower()
    if p.endswith(".gz"):
        p = p[:-3]
    ext = os.path.splitext(p)[1]
    fmt = {".swf": "swf", ".log": "cobalt", ".csv": "alcf"}.get(ext)
    if fmt is None:
        raise InputError(f"cannot tell the trace format from the extension {ext or '(none)'!r}; "
                         f"pass fmt= one of {', '.join(FORMATS)}", path=os.fspath(path))
    return fmt


def read_workload(path: str | os.PathLike[str], fmt: str | None = None, **opts: Any) -> Workload:
    """Read a trace with the reader for ``fmt`` (or the extension's format).

    ``opts`` are fields of ``SwfOptions`` / ``CobaltOptions`` / ``AlcfOptions`` (for instance
    ``first_n=100``), plus ``name`` for the workload's name.  Unknown options raise TypeError.
    """
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r}; expected one of {', '.join(FORMATS)}")
    name = opts.pop("name", None)
    reader, options_cls = {
        "swf": (read_swf, SwfOptions),
        "cobalt": (read_cobalt, CobaltOptions),
        "alcf": (read_alcf, AlcfOptions),
    }[fmt]
    valid = {f.name for f in fields(options_cls)}
    unknown = sorted(set(opts) - valid)
    if unknown:
        raise TypeError(f"unknown {fmt} reader option(s) {', '.join(unknown)}; "
                        f"valid: {', '.join(sorted(valid))}")
    return reader(path, options_cls(**opts), name=name)


# The readers import the helpers above from this package: keep these imports last.
from rtsched.io.alcf import AlcfExtra, AlcfOptions, read_alcf  # noqa: E402
from rtsched.io.cobalt import CobaltExtra, CobaltOptions, parse_walltime, read_cobalt  # noqa: E402
from rtsched.io.normalize import normalize_sizes, normalize_to_mira  # noqa: E402
from rtsched.io.swf import SWF_FIELDS, SwfOptions, read_swf, write_swf  # noqa: E402

__all__ = [
    "AlcfExtra", "AlcfOptions", "CobaltExtra", "CobaltOptions", "FORMATS", "ReadOptions", "SWF_FIELDS",
    "SwfOptions", "TraceHeader", "cleaning_counts", "detect_format", "normalize_sizes",
    "normalize_to_mira", "parse_walltime", "read_alcf", "read_cobalt", "read_swf", "read_workload",
    "trace_extras", "write_swf",
]
