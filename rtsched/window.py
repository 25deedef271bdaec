"""Results windows: the span of submit times whose jobs the metrics count (seed 002 §7)."""
from __future__ import annotations

from datetime import datetime, timezone

from rtsched.jobs import Workload

DAY = 86400  # s


def parse_window(text: str, workload: Workload) -> tuple[int, int]:
    """Parse ``START/DAYS`` into (t0, t1) seconds in the workload's own time axis.

    START is an ISO date/time (UTC, e.g. ``2018-01-21`` or ``1971-08-20T00:00``) or an integer
    number of seconds.  An ISO date needs ``workload.start_time`` (the absolute Unix time of the
    workload's t = 0, set by the Cobalt and SWF readers); plain seconds are taken as workload time.
    """
    start_text, sep, days_text = text.partition("/")
    if not sep:
        raise ValueError(f"window {text!r}: use START/DAYS, e.g. 2018-01-21/7")
    days = float(days_text)
    if start_text.lstrip("-").isdigit():
        t0 = int(start_text)
    else:
        if workload.start_time is None:
            raise ValueError(f"window {text!r}: the workload has no absolute start time; give START in seconds")
        stamp = datetime.fromisoformat(start_text)
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        t0 = int(stamp.timestamp()) - int(workload.start_time)
    return t0, t0 + int(round(days * DAY))
