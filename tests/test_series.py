"""The one step-function helper (rtsched.series) behind metrics' queue series and plots' panels."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rtsched.metrics import queue_length_series
from rtsched.series import step_series


def test_step_series_by_hand():
    # events: +2 at 5, +1 at 0, -2 at 5, -1 at 9, +3 at 5 -> 0:1, 5:1+2-2+3=4, 9:3
    t, v = step_series([5, 0, 5, 9, 5], [2, 1, -2, -1, 3])
    assert t.tolist() == [0, 5, 9]
    assert v.tolist() == [1, 4, 3]
    assert v.dtype.kind == "i"


def test_empty_series():
    t, v = step_series([], [])
    assert len(t) == 0 and len(v) == 0


def test_queue_length_series_by_hand():
    # jobs wait on [0, 10), [5, 5) (starts at once) and [5, 20)
    times, lengths = queue_length_series([0, 5, 5], [10, 5, 20])
    assert times.tolist() == [0, 5, 10, 20]
    assert lengths.tolist() == [1, 2, 1, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(-5, 5)), max_size=40))
def test_values_are_the_running_sum_at_each_time(events):
    times = [e[0] for e in events]
    deltas = [e[1] for e in events]
    t, v = step_series(times, deltas)
    assert t.tolist() == sorted(set(times))
    for ti, vi in zip(t.tolist(), v.tolist()):
        assert vi == sum(d for tt, d in events if tt <= ti)
    assert np.all(np.diff(t) > 0)
