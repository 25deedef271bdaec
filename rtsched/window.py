"""Results windows: the span of submit times whose jobs the metrics count (seed 002 §7).

One parser for every way a window is written:

* on the command line, ``--window START/DAYS``: START is an ISO date or date-time (UTC when no
  zone is given, e.g. ``2018-01-21`` or ``2018-01-21T06:00``), an integer Unix epoch time in s
  (``1516492800``), or ``+SECONDS``, an offset from the trace's t = 0 (``+86400``);
* in a grid file, ``window = { start = "2018-01-21", days = 7 }`` (ISO or epoch s) or
  ``{ offset = 86400, days = 7 }``.

Absolute starts (ISO, epoch) need the trace's absolute start time (``Workload.start_time``: SWF
``UnixStartTime``, Cobalt logs); an offset works on any trace.  DAYS may be fractional, > 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from rtsched.errors import OptionError
from rtsched.jobs import MAX_TIME_S

DAY = 86400  # s
_KEYS = {"start", "offset", "days"}


def _parse_iso(text: str, where: str) -> datetime:
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{where}: start {text!r} is not an ISO date/time (e.g. 2018-01-21), an epoch time "
                         "in s or +SECONDS") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp


@dataclass(frozen=True)
class WindowSpec:
    """A results window: ``days`` from ``start`` (ISO date/time, UTC if no zone, or integer Unix
    epoch s) or from ``offset`` s after the workload's t = 0 (exactly one of the two)."""

    days: float
    start: str | int | None = None
    offset: int | None = None

    def __post_init__(self) -> None:
        if (self.start is None) == (self.offset is None):
            raise ValueError("window: give exactly one of start (ISO date or epoch s) and offset (s)")
        if not (isinstance(self.days, (int, float)) and math.isfinite(self.days) and self.days > 0):
            raise ValueError(f"window: days must be a number > 0, got {self.days!r}")
        if self.days * DAY > MAX_TIME_S:  # no job time reaches past it: the window would be mostly empty time
            raise ValueError(f"window: days must be at most MAX_TIME_S / 86400 = {MAX_TIME_S // DAY:,}, "
                             f"got {self.days:g}")
        if isinstance(self.start, str):
            _parse_iso(self.start, "window")

    def as_dict(self) -> dict:
        d: dict[str, Any] = {"days": self.days}
        if self.start is not None:
            d["start"] = self.start
        if self.offset is not None:
            d["offset"] = self.offset
        return d

    def text(self) -> str:
        """The command-line spelling (``START/DAYS``)."""
        start = f"+{self.offset}" if self.offset is not None else str(self.start)
        return f"{start}/{self.days:g}"

    @classmethod
    def from_dict(cls, d: dict | None, where: str = "window") -> "WindowSpec | None":
        """From a grid file's table (``None`` stays ``None``)."""
        if d is None:
            return None
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a table {{ start = ..., days = ... }}, got {d!r}")
        unknown = set(d) - _KEYS
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; use start, offset, days")
        if "days" not in d:
            raise ValueError(f"{where}: 'days' is required")
        start = d.get("start")
        if start is not None and not isinstance(start, (str, int)):
            start = start.isoformat()  # TOML dates parse to datetime/date objects: keep their ISO text
        try:
            days = float(d["days"])
        except (TypeError, ValueError):
            raise ValueError(f"{where}: days must be a number, got {d['days']!r}") from None
        offset = d.get("offset")
        try:
            return cls(days=days, start=start, offset=None if offset is None else int(offset))
        except ValueError as exc:
            raise ValueError(str(exc).replace("window", where, 1)) from None

    @classmethod
    def parse(cls, text: str, where: str = "--window") -> "WindowSpec":
        """From the command-line form ``START/DAYS`` (module docstring)."""
        start_text, sep, days_text = str(text).strip().partition("/")
        if not sep or not start_text or not days_text:
            raise ValueError(f"{where}: use START/DAYS, e.g. 2018-01-21/7, got {text!r}")
        try:
            days = float(days_text)
        except ValueError:
            raise ValueError(f"{where}: DAYS must be a number, got {days_text!r}") from None
        try:
            if start_text.startswith("+"):
                if not start_text[1:].isdigit():
                    raise ValueError(f"window: +SECONDS needs whole seconds, got {start_text!r}")
                return cls(days=days, offset=int(start_text[1:]))
            if start_text.isdigit():
                return cls(days=days, start=int(start_text))
            return cls(days=days, start=start_text)
        except ValueError as exc:
            raise ValueError(str(exc).replace("window", where, 1)) from None

    def epoch_start(self) -> int | None:
        """Absolute Unix time of the window start, or None for an offset window."""
        if self.start is None:
            return None
        if isinstance(self.start, int):
            return self.start
        return int(_parse_iso(self.start, "window").timestamp())

    def seconds(self, workload_start_time: int | None) -> tuple[int, int]:
        """(t0, t1) in the workload's own time axis (s after its t = 0)."""
        if self.offset is not None:
            t0 = self.offset
        else:
            if workload_start_time is None:
                from rtsched.errors import OptionError  # a ValueError too; the CLI prints it as one line

                raise OptionError(f"window (--window) starting {self.start!r}: the trace has no absolute start time "
                                  "(SWF UnixStartTime); give the start as +SECONDS from its t = 0")
            t0 = int(self.epoch_start()) - int(workload_start_time)
        return t0, t0 + int(round(self.days * DAY))


def check_selects(spec: WindowSpec, window: tuple[int, int], submits, start_time: int | None) -> None:
    """Refuse a results window in which no job is submitted (every metric would be empty): an
    ``OptionError`` naming the window and the span of the trace's submit times."""
    submits = list(submits)
    t0, t1 = window
    if not submits or any(t0 <= s < t1 for s in submits):
        return
    first, last = min(submits), max(submits)
    if start_time is None:
        span = f"+{first} .. +{last} s after its t = 0"
    else:
        def iso(t: int) -> str:
            return datetime.fromtimestamp(int(start_time) + t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

        span = f"{iso(first)} .. {iso(last)}"
    raise OptionError(f"window (--window) {spec.text()}: no job is submitted in it; the trace's jobs are submitted "
                      f"{span}")


__all__ = ["DAY", "WindowSpec", "check_selects"]
