"""Metrics golden values worked out by hand (DESIGN.md "Metrics", seed 002 Defs. 1-2, eq. 26).

Scenario A (flat 10-processor cluster, FCFS, no backfilling):
    J1 submit 0,  runtime 100,  10 procs  -> runs [0, 100)
    J2 submit 0,  runtime 5,    4 procs   -> waits for J1, runs [100, 105)       (real-time)
    J3 submit 50, runtime 1000, 6 procs   -> runs beside J2 from 100: [100, 1100)
Per job (turnaround, wait, SD, BSD seed-002 τ=600 s, BSD RL τ=10 s):
    J1: 100, 0,   1,    (0+600)/600 = 1,          max(1, 100/100) = 1
    J2: 105, 100, 21,   (100+600)/600 = 7/6,      max(1, 105/10) = 10.5
    J3: 1050, 50, 1.05, (50+1000)/1000 = 1.05,    1050/1000 = 1.05
Utilization over [first submit, last end) = [0, 1100): (10·100 + 4·5 + 6·1000) / (10·1100) = 7020/11000.
"""
from __future__ import annotations

import json
import math

import pytest

from conftest import run_validated
from heuristics.batch import batch_policy
from rtsched import metrics
from rtsched.checkpoint import CheckpointKind, CheckpointModel
from rtsched.jobs import Job, Workload
from rtsched.machines import FlatCluster
from rtsched.sim.decisions import Preempt, Start
from rtsched.sim.script import ScriptPolicy


@pytest.fixture(scope="module")
def scenario_a():
    jobs = [Job(1, 0, 100, 100, 10), Job(2, 0, 5, 200, 4, kind="rt"), Job(3, 50, 1000, 1000, 6)]
    return run_validated(Workload(jobs), FlatCluster(10), batch_policy("fcfs", "none"))


def test_per_job_values(scenario_a):
    t = metrics.job_table(scenario_a).set_index("id")
    assert t.loc[[1, 2, 3], "turnaround"].tolist() == [100, 105, 1050]
    assert t.loc[[1, 2, 3], "wait"].tolist() == [0, 100, 50]
    assert t.loc[[1, 2, 3], "first_wait"].tolist() == [0, 100, 50]
    assert t.loc[[1, 2, 3], "sd"].tolist() == pytest.approx([1.0, 21.0, 1.05])
    assert t.loc[[1, 2, 3], "bsld_seed002"].tolist() == pytest.approx([1.0, 7 / 6, 1.05])
    assert t.loc[[1, 2, 3], "bsld_rl"].tolist() == pytest.approx([1.0, 10.5, 1.05])


def test_tau_changes_only_its_own_form(scenario_a):
    t = metrics.job_table(scenario_a, tau_seed002=60, tau_rl=600).set_index("id")
    # J2: seed-002 form with τ = 60: (100 + 60)/60; RL form with τ = 600: max(1, 105/600) = 1.
    assert t.loc[2, "bsld_seed002"] == pytest.approx(160 / 60)
    assert t.loc[2, "bsld_rl"] == pytest.approx(1.0)
    assert t.attrs["tau_seed002"] == 60 and t.attrs["tau_rl"] == 600


def test_the_two_bsld_forms_differ_as_defined():
    # A 30 s job that waited 270 s: seed-002 (τ = 600): (270 + 600)/600 = 1.45; RL (τ = 10): 300/30 = 10.
    assert metrics.bounded_slowdown_seed002(300, 30) == pytest.approx(1.45)
    assert metrics.bounded_slowdown_rl(300, 30) == pytest.approx(10.0)
    # A job that ran with no wait scores 1 under both forms whatever its length.
    assert metrics.bounded_slowdown_seed002(5, 5) == pytest.approx(1.0)
    assert metrics.bounded_slowdown_rl(5, 5) == pytest.approx(1.0)


def test_summary_statistics_and_percentiles(scenario_a):
    s = metrics.summarize(metrics.job_table(scenario_a))
    # SD over all jobs: [1, 1.05, 21]; linear interpolation: p5 at rank 0.1, p95 at rank 1.9.
    assert s.loc["all", "n"] == 3
    assert s.loc["all", "mean_sd"] == pytest.approx(23.05 / 3)
    assert s.loc["all", "median_sd"] == pytest.approx(1.05)
    assert s.loc["all", "p5_sd"] == pytest.approx(1.0 + 0.1 * 0.05)
    assert s.loc["all", "p25_sd"] == pytest.approx(1.025)
    assert s.loc["all", "p75_sd"] == pytest.approx(1.05 + 0.5 * 19.95)
    assert s.loc["all", "p95_sd"] == pytest.approx(1.05 + 0.9 * 19.95)
    assert s.loc["rt", "n"] == 1 and s.loc["rt", "mean_wait"] == 100
    assert s.loc["batch", "n"] == 2 and s.loc["batch", "mean_turnaround"] == pytest.approx(575.0)


def test_categories_by_runtime_and_by_walltime(scenario_a):
    cats = metrics.Categories(narrow_max_nodes=5, short_max_seconds=100)
    t = metrics.job_table(scenario_a, categories=cats).set_index("id")
    # J1 10 procs, 100 s -> wide-short; J2 4 procs, 5 s -> narrow-short; J3 6 procs, 1000 s -> wide-long.
    assert t.loc[[1, 2, 3], "category"].tolist() == ["wide-short", "narrow-short", "wide-long"]
    by_wall = metrics.Categories(narrow_max_nodes=5, short_max_seconds=100, duration="walltime")
    t = metrics.job_table(scenario_a, categories=by_wall).set_index("id")
    assert t.loc[2, "category"] == "narrow-long"  # J2's walltime is 200 s
    s = metrics.summarize(t.reset_index(), by=("category", "kind"), include_all=False)
    assert s.loc["narrow-long/rt", "n"] == 1 and s.loc["wide-short/batch", "n"] == 1
    assert s.loc["narrow-short/rt", "n"] == 0 and math.isnan(s.loc["narrow-short/rt", "mean_sd"])


def test_seed002_categories_use_4096_nodes_and_two_hours():
    c = metrics.SEED002_CATEGORIES
    assert c.label(4096, 7200, 9000) == "narrow-short"
    assert c.label(4608, 7201, 7201) == "wide-long"


def test_utilization_over_default_and_stated_windows(scenario_a):
    u = metrics.utilization(scenario_a)
    assert u["window"] == [0, 1100]
    assert u["busy_node_seconds"] == 7020
    assert u["utilization"] == pytest.approx(7020 / 11000)
    assert u["productive_utilization"] == pytest.approx(7020 / 11000)  # no overheads
    # [0, 100): only J1 runs, on all 10 processors.
    assert metrics.utilization(scenario_a, (0, 100))["utilization"] == pytest.approx(1.0)
    # [100, 1100): J2 4·5 + J3 6·1000 over 10·1000.
    assert metrics.utilization(scenario_a, (100, 1100))["utilization"] == pytest.approx(6020 / 10000)


def test_window_selects_jobs_by_submit(scenario_a):
    d = metrics.summary_dict(scenario_a, window=(0, 50))
    assert d["summary"]["all"]["n"] == 2  # J3 was submitted at 50, outside [0, 50)
    assert d["jobs_in_window"] == 2 and d["window"] == [0, 50] and d["window_selects_jobs"] is True


def test_summary_dict_keys_and_json(scenario_a):
    d = metrics.summary_dict(scenario_a)
    for group in ("all", "rt", "batch"):
        for key in ("n", "mean_sd", "mean_bsld", "mean_wait", "mean_turnaround", "p95_sd"):
            assert key in d["summary"][group]
    assert d["bsld_tau"] == 600 and d["bsld_form"] == "seed002"
    assert d["summary"]["rt"]["mean_bsld"] == pytest.approx(7 / 6)
    rl = metrics.summary_dict(scenario_a, bsld="rl")
    assert rl["bsld_tau"] == 10 and rl["summary"]["rt"]["mean_bsld"] == pytest.approx(10.5)
    json.dumps(d, allow_nan=False)  # empty groups give None, never NaN
    assert d["categories"]["wide-long"]["all"]["n"] == 0


def test_overheads_and_productive_utilization_under_sys_checkpointing():
    """One 512-node job on a 1024-node flat machine, SYS-CKPT every 3600 s, preempted at 9000 s.

    Segments (see test_checkpoint): run [0,3600) ckpt [3600,4112) run [4112,7712) ckpt [7712,8224)
    run [8224,9000) (progress 7200 -> 7976, all lost) restart [9000,9512) run [9512,12312).
    Busy 12312 s, checkpoint 1024 s, restart 512 s, lost 776 s, useful 10000 s (the runtime).
    """
    plan = {0: [Start(1)], 9000: [Preempt(1), Start(1)]}
    result = run_validated(Workload([Job(1, 0, 10000, 10000, 512)]), FlatCluster(1024), ScriptPolicy(plan),
                           checkpoint=CheckpointModel(CheckpointKind.SYS, sys_interval=3600))
    u = metrics.utilization(result)
    assert u["window"] == [0, 12312]
    assert (u["ckpt_node_seconds"], u["restart_node_seconds"], u["lost_node_seconds"]) == \
        (1024 * 512, 512 * 512, 776 * 512)
    assert u["useful_node_seconds"] == 10000 * 512
    assert u["utilization"] == pytest.approx(0.5)
    assert u["productive_utilization"] == pytest.approx(10000 * 512 / (1024 * 12312))
    assert u["chr_ckpt"] == pytest.approx(1024 * 512 / 3600)
    # [8000, 9000): the last 224 s of the second write and the 776 lost seconds: all overhead.
    w = metrics.utilization(result, (8000, 9000))
    assert w["busy_node_seconds"] == 1000 * 512
    assert w["overhead_node_seconds"] == 1000 * 512
    assert w["productive_utilization"] == pytest.approx(0.0)
    row = metrics.job_table(result).iloc[0]
    assert (row["t_ckpt"], row["t_restart"], row["t_lost"], row["t_pre"], row["n_preemptions"]) == (1024, 512, 776, 1288, 1)
    assert row["wait"] == 12312 - 10000 and row["first_wait"] == 0


def test_no_ckpt_lost_work_counted_once_per_restart():
    # Preempted twice under NO-CKPT: run [0,300) lost, run [300,700) lost, run [700,1700) -> 700 s lost.
    plan = {0: [Start(1)], 300: [Preempt(1), Start(1)], 700: [Preempt(1), Start(1)]}
    result = run_validated(Workload([Job(1, 0, 1000, 1000, 4)]), FlatCluster(4), ScriptPolicy(plan),
                           checkpoint=CheckpointModel(CheckpointKind.NO))
    lost = metrics.segment_lost_seconds(result.schedule)
    assert lost.tolist() == [300, 400, 0]
    u = metrics.utilization(result)
    assert u["lost_node_seconds"] == 700 * 4 and u["productive_utilization"] == pytest.approx(1000 / 1700)


def test_bad_window_is_rejected(scenario_a):
    with pytest.raises(ValueError):
        metrics.utilization(scenario_a, (100, 50))


def test_summary_dict_reuses_a_matching_table_and_rejects_another(scenario_a):
    table = metrics.job_table(scenario_a, (0, 1100))
    assert metrics.summary_dict(scenario_a, (0, 1100), table=table) == metrics.summary_dict(scenario_a, (0, 1100))
    with pytest.raises(ValueError, match="built with"):
        metrics.summary_dict(scenario_a, (0, 50), table=table)


def test_rl_sequence_scores_by_hand():
    # Three jobs (times in s): submit 0/0/5, runtime 100/4/20, start 0/100/10, nodes 2/1/1 on 4
    # nodes, users 1/1/2.  Turnarounds 100/104/25; waits 0/100/5.
    # bsld (τ = 10): max(1, 100/100) = 1, max(1, 104/10) = 10.4, max(1, 25/20) = 1.25 -> 12.65/3.
    # slowdown 1, 26, 1.25 -> 28.25/3.  Work 2·100 + 4 + 20 = 224 node-s; last end 104, last
    # start 100 -> utilization 224/(4·104) or 224/(4·100).  Fairness: user 1 mean bsld 5.7, user 2 1.25.
    from rtsched.rl.rewards import reward_of

    args = ([0, 0, 5], [100, 4, 20], [0, 100, 10], [2, 1, 1], 4, [1, 1, 2])
    expect = {"bsld": 12.65 / 3, "wait": 35.0, "turnaround": 229 / 3, "slowdown": 28.25 / 3,
              "utilization": 224 / 416, "fairness": 5.7}
    for goal, value in expect.items():
        assert metrics.sequence_metric(goal, *args) == pytest.approx(value), goal
    assert metrics.sequence_metric("utilization", *args, util_window="last_start") == pytest.approx(224 / 400)
    assert reward_of("bsld", 12.65 / 3) == pytest.approx(-12.65 / 3)
    assert reward_of("utilization", 0.5) == 0.5
    with pytest.raises(ValueError, match="never started"):
        metrics.sequence_metric("bsld", [0], [10], [-1])
    with pytest.raises(ValueError, match="unknown goal"):
        metrics.sequence_metric("makespan", *args)
