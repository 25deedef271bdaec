"""``rtsched.experiments.weeks``: the Mira weeks and the paired verdicts against WCJS-JIT."""
from __future__ import annotations

import pytest

from rtsched.experiments.weeks import WEEKS, outcome_row, paired_weeks, week_named


def rows(week, policy, rtj, bj):
    return [{"week": week, "policy": policy, "seed": s + 1, "rtj_bsld": r, "bj_bsld": b}
            for s, (r, b) in enumerate(zip(rtj, bj))]


def test_paired_weeks_gives_the_means_the_paired_differences_and_the_verdicts():
    ref_rt, ref_bj = [1.0, 1.2, 1.4, 1.6, 1.8], [2.0, 2.0, 2.0, 2.0, 2.0]
    data = rows("wk1", "wcjs-jit", ref_rt, ref_bj)
    # wk1: RTJ lower by 0.1 on every seed, BJ equal -> no worse on both, not better on both
    data += rows("wk1", "p", [r - 0.1 for r in ref_rt], ref_bj)
    data += rows("wk2", "wcjs-jit", ref_rt, ref_bj)
    # wk2: both lower on every seed -> better on both; the interval of a constant difference is a point
    data += rows("wk2", "p", [r - 0.2 for r in ref_rt], [b - 0.5 for b in ref_bj])
    got = paired_weeks(data, "p")
    assert set(got) == {"wk1", "wk2"}
    wk1, wk2 = got["wk1"], got["wk2"]
    assert wk1["seeds"] == [1, 2, 3, 4, 5]
    assert wk1["rtj_bsld"]["policy"] == pytest.approx(1.3) and wk1["rtj_bsld"]["reference"] == pytest.approx(1.4)
    assert wk1["rtj_bsld"]["ci"] == pytest.approx([-0.1, -0.1, -0.1])
    assert wk1["bj_bsld"]["diff"] == 0 and (wk1["no_worse"], wk1["better"]) == (True, False)
    assert wk2["bj_bsld"]["ci"] == pytest.approx([-0.5, -0.5, -0.5]) and (wk2["no_worse"], wk2["better"]) == (True, True)
    # a worse BJ mean on one week: neither verdict; fewer than 5 common seeds: no interval
    worse = rows("wk1", "wcjs-jit", ref_rt[:3], ref_bj[:3]) + rows("wk1", "q", ref_rt[:3], [2.1, 2.0, 2.0])
    w = paired_weeks(worse, "q")["wk1"]
    assert (w["no_worse"], w["better"]) == (False, False) and w["bj_bsld"]["ci"] is None


def test_the_four_weeks_and_their_windows():
    assert [(w.name, w.log, w.start) for w in WEEKS] == [
        ("wk1", "wk1.log", "2018-01-21"), ("wk2", "wk2.log", "2018-03-18"), ("wk1-10", "wk1-10.log", "2018-01-22"),
        ("dec", "mira_dec_wk1.log", "2014-12-01")]
    assert week_named("dec").window().days == 7.0
    with pytest.raises(ValueError, match="unknown week 'wk3'"):
        week_named("wk3")


class _Outcome:
    def __init__(self, n_preemptions: int) -> None:
        self.n_preemptions = n_preemptions


class _Record:
    """The two fields of a pipeline record that ``outcome_row`` reads."""

    def __init__(self, unfinished: int) -> None:
        group = {"rt": {"mean_bsld_seed002": 1.5, "mean_sd": 2.5, "n": 3},
                 "batch": {"mean_bsld_seed002": 4.0, "mean_sd": 6.0, "n": 7}}
        self.summary = {"unfinished": unfinished, "utilization": 0.75, "summary": group}
        self.outcomes = [_Outcome(2), _Outcome(0), _Outcome(1)]


def test_outcome_row_reads_the_window_groups_and_counts_preemptions():
    assert outcome_row(_Record(0), "x") == {"rtj_bsld": 1.5, "bj_bsld": 4.0, "n_rt": 3, "n_bj": 7, "rtj_sd": 2.5,
                                            "bj_sd": 6.0, "utilization": 0.75, "preemptions": 3}
    with pytest.raises(RuntimeError, match="^rtmix on wk1, seed 2: 4 window jobs never finished$"):
        outcome_row(_Record(4), "rtmix on wk1, seed 2")


def test_a_scheme_with_options_runs_as_that_scheme_with_those_policy_options():
    from rtsched.errors import OptionError
    from rtsched.experiments.weeks import policy_fields

    assert policy_fields("wcjs-jit") == {"scheme": "wcjs-jit", "policy": None, "checkpoint": None}
    assert policy_fields("wcjs-jit:priority=sjf,near_completion_factor=2.5") == {
        "scheme": "wcjs-jit", "policy": None, "checkpoint": None,
        "policy_options": {"priority": "sjf", "near_completion_factor": 2.5}}
    assert policy_fields("replan:k=2,ms=20") == {"scheme": None, "policy": "replan:k=2,ms=20", "checkpoint": "jit"}
    with pytest.raises(OptionError, match="'prio' is not KEY=VALUE"):
        policy_fields("wcjs-jit:prio")


def test_a_policy_list_keeps_each_policys_comma_separated_options_together():
    from rtsched.experiments.weeks import split_policies

    assert split_policies("wcjs-jit:priority=sjf,backfill=sjf,rtmix") == ["wcjs-jit:priority=sjf,backfill=sjf", "rtmix"]
    assert split_policies("wcjs-jit, replan:k=2,ms=20 ,models/a.pt") == ["wcjs-jit", "replan:k=2,ms=20", "models/a.pt"]
    # with a ';' the commas belong to the policies
    assert split_policies("wcjs-jit;rtmix,x;;") == ["wcjs-jit", "rtmix,x"]
    # a KEY=VALUE piece after a plain name is its own (bad) entry, for policy_fields to reject by name
    assert split_policies("rtmix,priority=sjf") == ["rtmix", "priority=sjf"]
    assert split_policies(" , ") == []


def test_wcjs_with_another_batch_order_schedules_a_miralike_day_differently():
    # the option reaches the policy: WCJS-JIT with SJF as its batch order is a different schedule
    from rtsched.experiments.weeks import outcome_row, policy_fields
    from rtsched.generators import generate_miralike
    from rtsched.pipeline import RunSpec, execute

    wl = generate_miralike(days=1.0, seed=9001)
    rows = [outcome_row(execute(RunSpec(machine="mira", rt_percent=10, marking="random", seed=1, tau=600,
                                        **policy_fields(name)), workload=wl), name)
            for name in ("wcjs-jit", "wcjs-jit:priority=sjf", "wcjs-jit:priority=wfp2")]
    assert rows[0] == rows[2] and rows[0]["bj_bsld"] != rows[1]["bj_bsld"]
