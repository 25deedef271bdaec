"""Step functions over time built from (time, ±delta) events: the one helper behind the queue-length
series of ``rtsched.metrics`` and the utilisation/queue panels of ``rtsched.plots`` (both in the
measure layer, which may not import each other)."""
from __future__ import annotations

import numpy as np


def step_series(times, deltas) -> tuple[np.ndarray, np.ndarray]:
    """``(times, values)`` of the step function that starts at 0 and changes by ``deltas[i]`` at
    ``times[i]`` (events in any order; equal times merged): ``values[k]`` holds on
    ``[times[k], times[k + 1])``.  Integer deltas give integer values."""
    t = np.asarray(times)
    d = np.asarray(deltas)
    if len(t) == 0:
        return t.astype(np.int64), d.astype(np.int64)
    order = np.argsort(t, kind="stable")
    t = t[order]
    v = np.cumsum(d[order])
    keep = np.append(t[1:] != t[:-1], True)  # the value after the last event at each time
    return t[keep], v[keep]


__all__ = ["step_series"]
