"""Workload readers and writers: SWF, Cobalt/Qsim logs, ALCF DIM_JOB_COMPOSITE CSV.

``read_workload(path, fmt=None, **opts)`` picks the reader by ``fmt`` ("swf", "cobalt", "alcf")
or by the file's extension (``.swf``, ``.log``, ``.csv``, optionally ``.gz``); the path "-" reads
standard input and needs ``fmt``.  Gzip data is recognised by its first bytes.  ``opts`` are the
fields of that reader's options dataclass (``SwfOptions``, ``CobaltOptions``, ``AlcfOptions``).
Bad input of any kind (a malformed line, a value out of range, corrupt gzip, a text encoding other
than UTF-8, a trace without jobs) raises a one-line ``InputError`` naming the file, line and
field.  The cleaning policy of every reader and the value bounds (``MAX_TIME_S``, ``MAX_SIZE``,
``MAX_ID``) are in ``docs/formats.md``.

Every reader returns a ``Workload`` whose ``header`` is a ``TraceHeader``: a plain
``dict[str, str]`` of header key/values that also carries, as attributes, the reader's side
tables (original records, per-job extras such as Cobalt ``exec_host``) and the counts of what
cleaning did.  ``Workload.replace_jobs``/``head`` copy the header into a plain ``dict``, dropping
the side tables: they describe the jobs exactly as read.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import fields
from typing import Any, Mapping

import numpy as np

from rtsched.errors import InputError, OptionError
from rtsched.io.cleaning import MAX_ID, MAX_SIZE, MAX_TIME_S, ReadOptions, first_n_positions
from rtsched.io.source import STDIN
from rtsched.jobs import Job, Workload

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

    ``records`` and ``as_read`` are read-only mappings; the SWF reader builds their id index on
    the first lookup, so reading a large trace pays nothing for them.
    """

    def __init__(self, items: dict[str, str] | None = None, *, fmt: str = "",
                 lines: list[str] | None = None) -> None:
        super().__init__(items or {})
        self.fmt = fmt
        self.lines: list[str] = list(lines or [])
        self.records: Mapping[int, Any] = {}
        self.extras: Mapping[int, Any] = {}
        self.as_read: Mapping[int, Job] = {}
        self.cleaning: dict[str, int] = {}


def trace_extras(workload: Workload) -> dict[int, Any]:
    """job id -> reader extras (``CobaltExtra``, ``AlcfExtra``); empty when the reader kept none."""
    header = workload.header
    return header.extras if isinstance(header, TraceHeader) else {}


def cleaning_counts(workload: Workload) -> dict[str, int]:
    """What the reader's cleaning rules did (dropped, clipped, ... counts); empty if unknown."""
    header = workload.header
    return dict(header.cleaning) if isinstance(header, TraceHeader) else {}


def log_workload(jobs: list[Job], extras: dict[int, Any], fmt: str, counts: dict[str, int], first_n: int | None,
                 name: str, max_nodes: int | None, start_time: int) -> Workload:
    """The workload of a job log (Cobalt, ALCF): the first ``first_n`` jobs in (submit, id) order,
    each with its log-only fields (``extras``), the jobs as read and the cleaning counts."""
    keep = first_n_positions(np.array([j.submit for j in jobs]), np.array([j.id for j in jobs]), first_n, counts)
    if keep is not None:
        jobs = [jobs[i] for i in keep.tolist()]
    th = TraceHeader(fmt=fmt)
    th.extras = {j.id: extras[j.id] for j in jobs}
    th.as_read = {j.id: j for j in jobs}
    th.cleaning = counts
    return Workload(jobs, name=name, max_nodes=max_nodes, start_time=start_time, header=th)


def trace_name(path: str | os.PathLike[str]) -> str:
    """A workload name from a file name: the base name without extensions (``wk1.log`` -> ``wk1``;
    "stdin" for "-")."""
    if os.fspath(path) == STDIN:
        return "stdin"
    base = os.path.basename(os.fspath(path))
    if base.endswith(".gz"):
        base = base[:-3]
    return os.path.splitext(base)[0] or base


def detect_format(path: str | os.PathLike[str]) -> str:
    """"swf", "cobalt" or "alcf" from the extension (``.swf``, ``.log``, ``.csv``, optionally ``.gz``)."""
    if os.fspath(path) == STDIN:
        raise InputError("a trace read from standard input ('-') has no extension to tell its format: "
                         f"pass the format (--format / fmt=) as one of {', '.join(FORMATS)}", path="<stdin>")
    if os.path.isdir(path):
        raise InputError("is a folder, not a trace file", path=os.fspath(path))
    p = os.fspath(path).lower()
    if p.endswith(".gz"):
        p = p[:-3]
    ext = os.path.splitext(p)[1]
    fmt = {".swf": "swf", ".log": "cobalt", ".csv": "alcf"}.get(ext)
    if fmt is None:
        raise InputError(f"cannot tell the trace format from the extension {ext or '(none)'!r}; "
                         f"pass the format (--format / fmt=) as one of {', '.join(FORMATS)}", path=os.fspath(path))
    return fmt


class ReaderOptionError(OptionError, TypeError):
    """An unknown reader option: rtsched's usage error, and the TypeError a misspelt keyword
    argument raised before (callers that catch either keep working)."""


def read_workload(path: str | os.PathLike[str], fmt: str | None = None, **opts: Any) -> Workload:
    """Read a trace with the reader for ``fmt`` (or the extension's format); "-" is standard input.

    Raises InputError naming the file, line and field on bad input, and when the trace has no
    job (empty, header only, or every job dropped by cleaning).  ``opts`` are fields of
    ``SwfOptions`` / ``CobaltOptions`` / ``AlcfOptions`` (for instance
    ``first_n=100``), plus ``name`` for the workload's name.  Unknown or invalid options raise
    ``OptionError`` (unknown ones: ``ReaderOptionError``, also a TypeError as before).
    """
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r}; expected one of {', '.join(FORMATS)}")
    name = opts.pop("name", None)
    if fmt == "swf":
        reader, options_cls = read_swf, SwfOptions
    else:  # the Mira log readers load on first use (start-up of the commands that read SWF)
        reader, options_cls = __getattr__(f"read_{fmt}"), __getattr__(f"{fmt.capitalize()}Options")
    valid = {f.name for f in fields(options_cls)}
    unknown = sorted(set(opts) - valid)
    if unknown:
        raise ReaderOptionError(f"unknown {fmt} reader option(s) {', '.join(unknown)}; "
                                f"valid: {', '.join(sorted(valid))}")
    return reader(path, options_cls(**opts), name=name)


# The readers import the helpers above from this package: keep these imports last.
from rtsched.io.swf import SWF_FIELDS, SwfOptions, SwfTable, read_swf, read_swf_table, write_swf  # noqa: E402

# The Cobalt and ALCF readers and the size normalisers are imported on first use of one of their
# names (``from rtsched.io import read_cobalt`` works as before): a command that reads SWF does not
# pay for them at start-up.
_LAZY = {name: module for module, names in (
    ("rtsched.io.alcf", ("AlcfExtra", "AlcfOptions", "read_alcf")),
    ("rtsched.io.cobalt", ("CobaltExtra", "CobaltOptions", "parse_walltime", "read_cobalt")),
    ("rtsched.io.normalize", ("normalize_sizes", "normalize_to_mira"))) for name in names}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

__all__ = [
    "AlcfExtra", "AlcfOptions", "CobaltExtra", "CobaltOptions", "FORMATS", "MAX_ID", "MAX_SIZE", "MAX_TIME_S",
    "ReadOptions", "ReaderOptionError", "STDIN", "SWF_FIELDS", "SwfOptions", "SwfTable", "TraceHeader", "cleaning_counts",
    "detect_format", "normalize_sizes", "normalize_to_mira", "parse_walltime", "read_alcf", "read_cobalt",
    "read_swf", "read_swf_table", "read_workload", "trace_extras", "write_swf",
]
