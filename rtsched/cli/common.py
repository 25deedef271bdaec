"""What every ``rtsched`` command shares: errors and exit codes, option types, output paths, the
console, number formatting.

Exit codes: 0 success; 1 bad data (a malformed trace, an infeasible instance, a corrupt model
file: ``RtschedError``); 2 bad usage (an unknown or out-of-range option: ``UsageError`` or an
argparse error); 130 interrupted (Ctrl-C, SIGTERM).  Every error is one line on stderr that names
the file, line, field or option at fault.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from rtsched.errors import OptionError
from rtsched.optiontext import int_list  # noqa: F401  (the CLI's list parser; re-exported for its commands)

UsageError = OptionError  # a bad option value (exit 2); the message names the option and what it allows


# ------------------------------------------------------------------------------------- option types
def _checked(text: str, convert, accept, expected: str, out_of_range: str):
    """``convert(text)`` if it parses and ``accept`` takes it, else an argparse error that says
    what the option expects (argparse prefixes the option's name)."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not accept(value):
        raise argparse.ArgumentTypeError(f"{out_of_range}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1."""
    return _checked(text, int, lambda v: v >= 1, "a whole number >= 1", "must be >= 1")


def nonneg_int(text: str) -> int:
    """argparse type: an integer ≥ 0."""
    return _checked(text, int, lambda v: v >= 0, "a whole number >= 0", "must be >= 0")


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    return _checked(text, float, lambda v: math.isfinite(v) and v > 0, "a number > 0", "must be a finite number > 0")


def nonneg_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    return _checked(text, float, lambda v: math.isfinite(v) and v >= 0, "a number >= 0", "must be a finite number >= 0")


def unit_float(text: str) -> float:
    """argparse type: a finite number in [0, 1] (a weight or a probability)."""
    return _checked(text, float, lambda v: math.isfinite(v) and 0 <= v <= 1, "a number in [0, 1]",
                    "must be a finite number in [0, 1]")


def _why(what: str) -> str:
    return f" ({what})" if what else ""


def int_in(lo: int, hi: int, what: str = ""):
    """argparse type: an integer in [lo, hi] (``what``: why the upper limit, for the message)."""
    allowed = f"in [{lo:,}, {hi:,}]"
    return lambda text: _checked(text, int, lambda v: lo <= v <= hi, f"a whole number {allowed}",
                                 f"must be {allowed}{_why(what)}")


def float_in(lo: float, hi: float, what: str = ""):
    """argparse type: a finite number in (lo, hi]."""
    allowed = f"in ({lo:g}, {hi:g}]"
    return lambda text: _checked(text, float, lambda v: math.isfinite(v) and lo < v <= hi, f"a number {allowed}",
                                 f"must be a finite number {allowed}{_why(what)}")


def percent(text: str) -> float:
    """argparse type: a percentage in [0, 100]."""
    return _checked(text, float, lambda v: math.isfinite(v) and 0 <= v <= 100, "a percentage in [0, 100]",
                    "must be in [0, 100]")


def name_list(text: str, option: str) -> list[str]:
    """A comma-separated list of names; an empty list is a usage error naming ``option``."""
    names = [x.strip() for x in str(text).split(",") if x.strip()]
    if not names:
        raise UsageError(f"{option}: no name given (got {text!r})")
    return names


def changed_options(args, defaults: dict) -> list[str]:
    """The options among ``defaults`` (argparse dest -> its default) whose value differs from the
    default, as ``--name``: the options a mode that does not use them must refuse, not ignore."""
    def norm(v):
        return tuple(v) if isinstance(v, list) else v

    return [f"--{dest.replace('_', '-')}" for dest, default in defaults.items()
            if norm(getattr(args, dest)) != norm(default)]


def given_options(args, dests) -> list[str]:
    """The options among ``dests`` (argparse dests whose default is None) that were given, as ``--name``:
    the options a mode that does not use them must refuse, not ignore."""
    return [f"--{dest.replace('_', '-')}" for dest in dests if getattr(args, dest, None) is not None]


# ------------------------------------------------------------------------------------- output paths
# What each writer writes, by the name's ending (lower case); a name with another ending is refused
# rather than written in a format it does not announce (`traces convert x.csv` wrote SWF).
SCHEDULE_FORMATS = {".csv": "CSV", ".parquet": "Parquet"}
EVALYS_FORMATS = {".csv": "an evalys jobs CSV"}
SWF_FORMATS = {".swf": "SWF", ".swf.gz": "gzip-compressed SWF"}
CONVERT_FORMATS = {**SWF_FORMATS, ".json": "a Batsim workload"}


def check_extension(path: str | None, option: str, formats: dict[str, str]) -> None:
    """Refuse an output name whose ending is none of ``formats`` (ending -> what is written there).
    Standard output (``-``) and an existing special file (``/dev/null``, a FIFO) take any name."""
    from rtsched.files import target_kind

    if path is None or path == "-" or target_kind(path) == "direct":
        return
    if any(str(path).lower().endswith(ending) for ending in formats):
        return
    said = "; ".join(f"{ending} writes {what}" for ending, what in formats.items())
    raise UsageError(f"{option}: {path}: the name must end in {' or '.join(formats)} ({said})")


def check_distinct_outputs(outputs: dict[str, str | None]) -> None:
    """Refuse one file given to two output options (option -> path; None: not given): the second
    writer would silently replace what the first wrote."""
    seen: dict[str, str] = {}
    for option, path in outputs.items():
        if path is None or path == "-":
            continue
        real = os.path.realpath(path)
        if real in seen and not (os.path.exists(path) and not os.path.isfile(path)):  # /dev/null twice is fine
            raise UsageError(f"{option}: {path} is also given to {seen[real]}; give each output its own file")
        seen.setdefault(real, option)


def check_output(path: str | None, option: str, *, folder: bool = False, stdout: bool = False,
                 inputs: tuple = ()) -> None:
    """Refuse an output path that cannot be written, before any long work starts.

    ``folder``: the path is a folder that will be created (its nearest existing ancestor must be
    a writable folder).  Otherwise the path is a file: its folder must exist and be writable, and
    the path must not be a folder.  ``-`` (standard output) is accepted only where ``stdout`` says
    the command writes it there; elsewhere it is refused (it would make a file named ``-``).
    ``inputs``: the files the command reads; an output that is one of them is refused (writing it
    would destroy the input).
    """
    if path is None:
        return
    for source in inputs:
        if source and source != "-" and os.path.isfile(source) and os.path.exists(path) \
                and os.path.samefile(source, path):
            raise UsageError(f"{option}: {path} is the input {source}; writing it would destroy the input")
    if path == "-":
        if stdout:
            return
        kind = "folder" if folder else "file"
        raise UsageError(f"{option}: '-' (standard output) is not supported here; give a {kind} name "
                         f"(./- for a {kind} named -)")
    p = Path(path)
    if folder:
        if p.exists() and not p.is_dir():
            raise UsageError(f"{option}: {path} exists and is not a folder")
        parent = p
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise UsageError(f"{option}: {path}: {parent} is a file, not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise UsageError(f"{option}: {path}: the folder {parent} is not writable")
        return
    if p.is_dir():
        raise UsageError(f"{option}: {path} is a folder; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        ancestor = parent
        while not ancestor.exists():
            ancestor = ancestor.parent
        if ancestor.is_file():
            raise UsageError(f"{option}: {path}: {ancestor} is a file, not a folder")
        raise UsageError(f"{option}: {path}: the folder {parent} does not exist")
    if not parent.is_dir():
        raise UsageError(f"{option}: {path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UsageError(f"{option}: {path} is not writable")


# ------------------------------------------------------------------------------------- printing
def console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr)


@contextmanager
def progress_bar(label: str, enabled: bool, total: int | None = None):
    """A transient rich progress bar on stderr (only on a terminal, and when ``enabled``); yields
    ``update(done, total=None, note="")`` or None."""
    if not (enabled and sys.stderr.isatty()):
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.description}"), transient=True, console=console(stderr=True))
    task = bar.add_task("", total=total)

    def update(done: int, total: int | None = None, note: str = "") -> None:
        bar.update(task, completed=done, total=total, description=note)

    with bar:
        yield update


def fmt(x, digits: int = 2) -> str:
    """A number for a table: thousands separators, ``–`` for missing."""
    if x is None:
        return "–"
    if isinstance(x, float):
        if not math.isfinite(x):
            return "–"
        return f"{x:,.{digits}f}"
    return f"{x:,}"


def pct(x) -> str:
    """A relative difference as a signed percentage (``–`` for missing)."""
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x * 100:+.0f} %"


__all__ = ["CONVERT_FORMATS", "EVALYS_FORMATS", "SCHEDULE_FORMATS", "SWF_FORMATS", "UsageError", "changed_options",
           "check_distinct_outputs", "check_extension", "check_output", "console", "float_in", "fmt", "int_in", "int_list",
           "name_list",
           "nonneg_float", "nonneg_int", "pct", "percent", "positive_float", "positive_int", "progress_bar"]
