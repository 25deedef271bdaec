"""Errors raised on bad input, always naming where the problem is."""
from __future__ import annotations


class RtschedError(Exception):
    """Base class of every error rtsched raises on purpose."""


class InputError(RtschedError, ValueError):
    """Bad input data: names the file, the 1-based line and the field at fault."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.reason = message
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class OptionError(RtschedError, ValueError):
    """A bad option or setting (unknown name, out-of-range value, options that exclude each
    other): a usage error (command-line exit status 2); the message names the option and what
    it allows."""


class InfeasibleError(RtschedError):
    """An instance or a decision that cannot be satisfied (job larger than the machine, ...)."""


class DecisionError(RtschedError):
    """A policy asked the simulator for something impossible (start on a busy partition, ...)."""


class ScheduleError(RtschedError):
    """The validator found a schedule that breaks the model's rules."""
