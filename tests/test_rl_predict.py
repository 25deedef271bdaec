"""Runtime predictors for RLSchert (rtsched.rl.rlschert.predict): MAPE by hand, causal user history, the
conditional estimate while running, and a fit that beats the walltime baseline."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtsched.jobs import Job, Workload
from rtsched.rl.rlschert.predict import (PrerunModel, evaluate_predictors, mape, running_mape, user_history,
                                user_history_estimate)


def test_mape_by_hand():
    assert mape([100, 200], [150, 100], unit=None) == pytest.approx(50.0)
    # in 5-min units: 100 s -> 1 unit, estimate 150 s -> max(1, 0.5) = 1: exact; 900 s = 3 units vs 2
    assert mape([100, 900], [150, 600]) == pytest.approx(100 * (0 + 1 / 3) / 2)


def test_running_mape_by_hand_and_its_figure():
    # job a: 10 slots, predicts 20 until 5 slots ran, then 10; job b: 4 slots, always predicts 2
    running = [[20] * 5 + [10] * 95, [2] * 100]
    # f = 0.5: a after 5 slots -> 10 (exact), b after 2 -> 2 (50 %); f = 0.2: a after 2 -> 20 (100 %)
    assert running_mape([10, 4], running, (0.2, 0.5, 1.0)) == pytest.approx([75.0, 25.0, 25.0])
    from rtsched.rl.rlschert.results import plot_prediction_error

    fig = plot_prediction_error((0.2, 0.5, 1.0), [75.0, 25.0, 25.0], 40.0, title="toy")
    ax = fig.axes[0]
    assert list(ax.get_lines()[0].get_xdata()) == pytest.approx([20.0, 50.0, 100.0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["running prediction", "pre-run prediction (40.0 %)"]


def test_user_history_is_causal():
    jobs = [Job(1, 0, 100, 500, 1, user=7), Job(2, 50, 10, 500, 1, user=7), Job(3, 200, 30, 500, 1, user=7),
            Job(4, 200, 40, 500, 1, user=8), Job(5, 300, 5, 500, 1, user=7)]
    last2, loglast10, count = user_history(Workload(jobs))
    # job 2 (t=50): job 1 ends at 100 > 50, no history; job 3 (t=200): jobs 1 and 2 ended (100, 60)
    assert np.isnan(last2[0]) and np.isnan(last2[1]) and count.tolist() == [0, 0, 2, 0, 3]
    # ended in end order: job 2 (60), job 1 (100), then job 3 (230): last two = 100, 30
    assert last2[2] == pytest.approx(55.0) and last2[4] == pytest.approx(65.0)
    assert loglast10[4] == pytest.approx(np.mean(np.log([10, 100, 30])))
    assert user_history_estimate(Workload(jobs)).tolist() == [500, 500, 55, 500, 65]


def _synthetic(n=600, seed=0):
    rng = np.random.default_rng(seed)
    jobs = []
    t = 0
    for i in range(n):
        t += int(rng.integers(1, 600))
        nodes = int(rng.choice([1, 4, 16, 64]))
        runtime = int(max(1, 300 * nodes ** 0.5 * rng.lognormal(0, 0.3)))
        jobs.append(Job(i + 1, t, runtime, 4 * runtime + 3600, nodes, user=int(rng.integers(0, 5))))
    return Workload(jobs)


@pytest.fixture(scope="module")
def fitted():
    wl = _synthetic()
    return wl, PrerunModel(epochs=100).fit(wl)


@pytest.mark.slow
def test_fit_beats_the_walltime_baseline():
    r = evaluate_predictors(_synthetic(), test_share=0.25, epochs=150)
    assert r["test"] == 150 and r["use_walltime"]
    assert r["prerun"] < 0.5 * r["walltime"]
    assert r["prerun"] < r["user_history"]
    assert set(r["running_by_prefix"]) == {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}


def test_walltime_equal_to_runtime_is_not_a_feature():
    wl = Workload([Job(i + 1, 10 * i, 100 + i, 100 + i, 1) for i in range(50)])
    m = PrerunModel(epochs=20).fit(wl)
    assert not m.use_walltime and m.features(wl).shape[1] == 7


@settings(max_examples=40, deadline=None)
@given(st.floats(1.0, 1e6), st.floats(0.0, 1e6), st.one_of(st.none(), st.floats(1.0, 1e6)))
def test_running_estimate_exceeds_elapsed_and_respects_the_cap(fitted, loc, elapsed, cap):
    _, m = fitted
    est = m.running(loc, elapsed, cap)
    assert est >= elapsed + 1.0
    if cap is not None and cap > elapsed + 1.0:
        assert est <= cap


def test_running_estimate_grows_with_elapsed(fitted):
    _, m = fitted
    est = [m.running(1000.0, e) for e in (0, 500, 1000, 2000, 5000, 20000)]
    assert est == sorted(est)
