"""Cleaning rules and value bounds shared by every reader, on NumPy columns of one block of rows.

A reader parses a block of rows into arrays, then applies these rules to the whole block at
once.  Rules that refuse a row do not raise at once: they report to a ``RowErrors``, which
raises the error of the earliest line once the block is checked, so the error a user sees is
always the first bad line of the file, whatever rule it breaks.  The policy itself (what each
rule does and why) is documented in ``docs/formats.md``.
"""
from __future__ import annotations

import gc
from numbers import Integral
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Literal

import numpy as np

from rtsched.errors import InputError, OptionError
from rtsched.jobs import MAX_TIME_S

RuntimeRule = Literal["clip", "keep", "raise"]
OversizeRule = Literal["raise", "drop"]

# The largest job size (nodes or processors) a reader accepts: 10^8.  The largest machines
# have about 10^7 cores; the bound keeps size x time (<= 10^18 node-s) inside int64.
MAX_SIZE = 10**8
# The largest id (job, user, group, executable, ...) or amount (SWF memory, KB) a reader
# accepts: 2^53 - 1, the largest integer a float64 holds exactly.
MAX_ID = 2**53 - 1

LIMIT_NAMES = {MAX_TIME_S: f"MAX_TIME_S = {MAX_TIME_S} s", MAX_SIZE: f"MAX_SIZE = {MAX_SIZE}",
               MAX_ID: f"MAX_ID = {MAX_ID}"}


def too_large(text: str, limit: float) -> str:
    """The message for a value above one of the documented maxima."""
    return f"{text} is larger than the largest accepted value, {LIMIT_NAMES.get(int(limit), limit)}"


__all__ = ["LIMIT_NAMES", "MAX_ID", "MAX_SIZE", "MAX_TIME_S", "ReadOptions", "RowErrors", "bump", "check_sizes",
           "first_n_positions", "gc_paused", "no_jobs_left", "round_seconds", "settle_runtimes", "submit_seconds",
           "too_large"]


@dataclass(frozen=True)
class ReadOptions:
    """Cleaning options shared by every reader.

    Attributes:
        drop_nonpositive_runtime: drop (and count) jobs whose runtime is <= 0 s; when False they
            are kept with a runtime of 1 s.
        runtime_above_walltime: "clip" (runtime = walltime, the default: a job never runs past
            its walltime on the machines we model), "keep", or "raise" (InputError).
        oversize: jobs with more nodes than the machine: "raise" (InputError) or "drop" (count).
        first_n: keep only the first N >= 1 jobs, in (submit, id) order, after cleaning.
    """

    drop_nonpositive_runtime: bool = True
    runtime_above_walltime: RuntimeRule = "clip"
    oversize: OversizeRule = "raise"
    first_n: int | None = None

    def __post_init__(self) -> None:
        if self.runtime_above_walltime not in ("clip", "keep", "raise"):
            raise OptionError(f"reader option runtime_above_walltime must be 'clip', 'keep' or 'raise', "
                              f"got {self.runtime_above_walltime!r}")
        if self.oversize not in ("raise", "drop"):
            raise OptionError(f"reader option oversize must be 'raise' or 'drop', got {self.oversize!r}")
        if self.first_n is not None and (isinstance(self.first_n, bool) or not isinstance(self.first_n, Integral)
                                         or self.first_n < 1):  # no job is an error, never a request
            raise OptionError(f"reader option first_n must be an integer >= 1, got {self.first_n!r}")


def bump(counts: dict[str, int], key: str, n: int = 1) -> None:
    """Add ``n`` to ``counts[key]`` (a key is only created for a non-zero count)."""
    if n:
        counts[key] = counts.get(key, 0) + int(n)


class RowErrors:
    """The error of the earliest bad line of a block, over several vectorised checks.

    ``lines`` are the 1-based file lines of the block's rows (any order).  Each ``check`` names
    the rows a rule refuses; at equal lines the check made first wins, so checks are made in
    the order a row's fields are read.  ``raise_first`` raises the earliest error found, if any.
    """

    def __init__(self, path: str, lines: np.ndarray) -> None:
        self.path = path
        self.lines = lines
        self.best: tuple[int, Callable[[], InputError]] | None = None  # (line, builds the error)

    def check(self, bad: np.ndarray, field: str | Callable[[int], str],
              message: Callable[[int], str]) -> None:
        """Rows where ``bad`` is True break a rule; ``message(row)`` (and ``field(row)``) say how."""
        rows = np.flatnonzero(bad)
        if not len(rows):
            return
        row = int(rows[np.argmin(self.lines[rows])])
        line = int(self.lines[row])
        if self.best is None or line < self.best[0]:
            def build() -> InputError:
                name = field(row) if callable(field) else field
                return InputError(message(row), path=self.path, line=line, field=name)
            self.best = (line, build)

    def add(self, error: InputError) -> None:
        """A ready error (a parse error found line by line) competes by its line too."""
        line = error.line if error.line is not None else 0
        if self.best is None or line < self.best[0]:
            self.best = (line, lambda: error)

    def raise_first(self) -> None:
        if self.best is not None:
            raise self.best[1]()


def round_seconds(values: np.ndarray | float) -> np.ndarray:
    """Durations in s (an array or one value) rounded to the nearest whole second, halves away
    from zero, as int64.  The values must be finite and within int64; -1 (unknown) stays -1."""
    return (np.sign(values) * np.floor(np.abs(values) + 0.5)).astype(np.int64)


def submit_seconds(values: np.ndarray | float) -> np.ndarray:
    """Submit times in s (an array or one value) as whole seconds, rounded down (a job submitted
    during second s is in the queue at s), as int64.  The one rule of every reader and of the
    API's DataFrames; durations use ``round_seconds``."""
    return np.floor(values).astype(np.int64)


def settle_runtimes(runtime: np.ndarray, walltime: np.ndarray, alive: np.ndarray, opts: ReadOptions,
                    counts: dict[str, int], errors: RowErrors, field: str) -> np.ndarray:
    """Apply the shared runtime rules to a block; the runtimes in whole s (int64).

    ``runtime`` holds the raw values in s (float), ``walltime`` the walltimes in s (>= 1) and
    ``alive`` the rows still kept; rows the rules drop are cleared in ``alive`` (in place).
    """
    nonpositive = alive & (runtime <= 0)
    if opts.drop_nonpositive_runtime:
        bump(counts, "dropped_nonpositive_runtime", np.count_nonzero(nonpositive))
        alive &= ~nonpositive
    else:
        bump(counts, "runtime_raised_to_1", np.count_nonzero(nonpositive))
    rt = round_seconds(np.where(nonpositive, 1.0, runtime))
    below_one = alive & (rt < 1)
    bump(counts, "runtime_raised_to_1", np.count_nonzero(below_one))
    rt[rt < 1] = 1
    over = alive & (rt > walltime)
    rule = opts.runtime_above_walltime
    if rule == "raise":
        errors.check(over, field, lambda r: f"runtime {rt[r]} s exceeds the walltime {walltime[r]} s")
    elif rule == "clip":
        bump(counts, "clipped_runtime", np.count_nonzero(over))
        rt = np.where(over, walltime, rt)
    else:
        bump(counts, "kept_runtime_above_walltime", np.count_nonzero(over))
    return rt


def check_sizes(nodes: np.ndarray, max_nodes: int | None, alive: np.ndarray, opts: ReadOptions,
                counts: dict[str, int], errors: RowErrors, field: str | Callable[[int], str],
                ids: np.ndarray, size_from: str = "the reader's max_nodes") -> None:
    """Jobs bigger than the machine raise (``oversize="raise"``) or are dropped from ``alive``;
    ``size_from`` says where ``max_nodes`` comes from (for the message)."""
    if max_nodes is None:
        return
    over = alive & (nodes > max_nodes)
    if opts.oversize == "drop":
        bump(counts, "dropped_oversize", np.count_nonzero(over))
        alive &= ~over
        return
    errors.check(over, field, lambda r: f"job {ids[r]} asks for {nodes[r]} nodes, more than the machine's "
                                        f"{max_nodes} ({size_from}; a reader with oversize='drop' drops such jobs)")


def first_n_positions(submit: np.ndarray, ids: np.ndarray, first_n: int | None,
                      counts: dict[str, int]) -> np.ndarray | None:
    """Positions of the first ``first_n`` jobs in (submit, id) order, in their original order;
    None when every job is kept."""
    if first_n is None or first_n >= len(ids):
        return None
    keep = np.sort(np.lexsort((ids, submit))[:first_n])
    bump(counts, "cut_by_first_n", len(ids) - len(keep))
    return keep


def no_jobs_left(path: str, counts: dict[str, int], n_records: int, what: str) -> InputError:
    """The error for a trace without a job to keep: none in the file, or every one dropped."""
    if n_records == 0:
        return InputError(f"no jobs: the trace has no {what}", path=path)
    dropped = ", ".join(f"{k} {n}" for k, n in counts.items() if k.startswith(("dropped_", "cut_")))
    return InputError(f"no jobs left: cleaning dropped all {n_records} {what} ({dropped or 'see the counts'})",
                      path=path)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a reader builds its jobs.

    A million ``Job`` objects would otherwise trigger dozens of collections that walk every
    object made so far (a third of the reading time); the readers create no reference cycles,
    so nothing is left for the collector to find.  Nested pauses are fine.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
