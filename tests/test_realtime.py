"""Real-time policies of seed 002 (§4, §6): hand-computed golden scenarios and properties.

Toy machines.  AlignedMira(4): p0..p3 single blocks (512 nodes), p4 = [0,1], p5 = [2,3] (1024),
p6 = [0..3] (2048).  AlignedMira(8): p0..p7 single blocks, p8 = [0,1], p9 = [2,3], p10 = [4,5],
p11 = [6,7] (1024), p12 = [0..3], p13 = [4..7] (2048), p14 = all (4096).
I/O: every toy size writes (and reads) a checkpoint in 512 s: 16 GB x n / min(n/128 x 4, 216) GB/s
= 512 s for n = 512, 1024, 2048, 4096.

Batch placement (best fit, see test_sim_golden): among free partitions of the size, the one that
blocks the fewest other free partitions, ties to the lowest index.  When several BJs are submitted
together the wfp2 utility is 0 for all (queued 0 s), so they are taken by (submit, id).
Slowdown SD = (end - submit) / runtime.
"""
from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_validated
from heuristics import batch_policy
from heuristics.realtime import HighPriorityQueuePolicy, PreemptivePolicy, WcjsPolicy, baseline_policy
from heuristics.registry import (BATCH_POLICIES, SCHEMES, available_policies, available_schemes, make_policy,
                                 scheme)
from heuristics.wcjs import (CURIE_BJ, CURIE_RT, Thresholds, WcjsConfig, estimated_slowdown, preemption_cost,
                             preemption_penalty, slowdown_after_preemption, threshold_crossing)
from rtsched.checkpoint import CheckpointKind, CheckpointModel
from rtsched.jobs import Job, Workload
from rtsched.machines import AlignedMira, FlatCluster
from rtsched.sim.decisions import Preempt, Start
from rtsched.sim.state import RUNNING, WAITING, JobInfo, JobState

JIT = CheckpointModel.parse("jit")
NO = CheckpointModel.parse("no")
LOG2_3 = math.log2(3.0)  # log2(2 + SD) for a job whose estimated SD is 1


def J(jid, submit, runtime, walltime, nodes, kind="batch", ckpt=True) -> Job:
    return Job(jid, submit, runtime, walltime, nodes, kind=kind, checkpointable=ckpt)


def wl(*jobs) -> Workload:
    return Workload(list(jobs))


def out(result) -> dict:
    return result.outcome_by_id()


def parts(result, job_id) -> list[int]:
    """Partitions of a job's segments, in time order (one entry per stint)."""
    seen = []
    for s in result.schedule:
        if s.job_id == job_id and (not seen or seen[-1][1] != s.partition or s.kind == "restart"):
            seen.append((s.start, s.partition))
    return [p for _, p in seen]


def sd(o) -> float:
    return (o.end - o.job.submit) / o.job.runtime


# ====================================================================================== estimates
def js_running(jid, submit, walltime, nodes, run_start, *, saved=0, last_ckpt=None, expected_end=None,
               alloc=0, alloc_nodes=None, kind="batch") -> JobState:
    s = JobState(0, JobInfo(jid, submit, walltime, nodes, kind, -1, -1, "", True))
    s.status = RUNNING
    s.alloc = alloc
    s.alloc_nodes = alloc_nodes or nodes
    s.run_start = run_start
    s.saved = saved
    s.first_start = run_start
    s.last_ckpt_time = run_start if last_ckpt is None else last_ckpt
    s.expected_end = expected_end if expected_end is not None else run_start + walltime - saved
    return s


def test_estimated_slowdown_eq56_waiting_and_partly_run():
    s = JobState(0, JobInfo(1, 100, 1000, 512, "rt", -1, -1, "", True))
    s.status = WAITING
    # eq. 56: (now - submit + walltime) / walltime = (400 - 100 + 1000) / 1000 = 1.3
    assert estimated_slowdown(s, 400) == pytest.approx(1.3)
    # a preempted job with 600 s saved: remaining walltime 400 -> (400 - 100 + 400) / 1000 = 0.7
    s.saved = 600
    assert estimated_slowdown(s, 400) == pytest.approx(0.7)


def test_estimated_slowdown_eq57_running():
    # submitted 0, started 500, walltime 2000 -> estimated end 2500 (eq. 58: now + walltime - running
    # time = 1000 + 2000 - 500); eq. 57: (2500 - 0) / 2000 = 1.25 whatever the current time.
    s = js_running(1, 0, 2000, 512, 500)
    assert estimated_slowdown(s, 1000) == pytest.approx(1.25)
    assert estimated_slowdown(s, 2400) == pytest.approx(1.25)


def test_threshold_crossing_is_the_first_second_strictly_above():
    # (t - 100 + 1000) / 1000 > 1.1  <=>  t > 200  -> 201.  Threshold 2.0, walltime 3600: t > s + 3600.
    assert threshold_crossing(100, 1000, 1.1) == 201
    assert threshold_crossing(0, 3600, 2.0) == 3601
    assert threshold_crossing(7, 1, 0.5) == 7  # already above at submit


def test_is_high_priority_is_strictly_above_the_category_threshold_and_agrees_with_the_crossing():
    from heuristics.wcjs import is_high_priority

    cfg = WcjsConfig()
    s = JobState(0, JobInfo(1, 100, 1000, 512, "rt", -1, -1, "", True))
    s.status = WAITING
    theta = cfg.rt_threshold(512, 1000)
    t = threshold_crossing(100, 1000, theta)
    # waiting, never run: estimated slowdown (now - 100 + 1000) / 1000, high priority only strictly above θ
    assert not is_high_priority(s, t - 1, cfg) and is_high_priority(s, t, cfg)
    assert estimated_slowdown(s, t - 1) <= theta < estimated_slowdown(s, t)
    # a stricter threshold set (every category 2.0) moves it to 100 + 1000 + 1
    strict = WcjsConfig(rt_thresholds=(2.0, 2.0, 2.0))
    assert not is_high_priority(s, 1100, strict) and is_high_priority(s, 1101, strict)


def test_preemption_penalty_per_checkpoint_model():
    # 512-node BJ, submit 0, walltime 10000, started 0, now 6000 (first stint): done 6000.
    s = js_running(1, 0, 10000, 512, 0)
    # JIT: keeps 6000, loses 0, overhead = write 512 + read 512.
    assert preemption_penalty(s, 6000, JIT, JIT.io) == (6000, 0, 1024)
    # NO: keeps 0, loses 6000, no overhead.
    assert preemption_penalty(s, 6000, NO, NO.io) == (0, 6000, 0)
    # SYS after a checkpoint of 3600 s completed at 4112: work since = 6000 - 4112 = 1888 (lost),
    # kept 3600, overhead = read 512.
    s2 = js_running(1, 0, 10000, 512, 0, saved=3600, last_ckpt=4112, expected_end=10512)
    sys_model = CheckpointModel.parse("sys")
    assert preemption_penalty(s2, 6000, sys_model, sys_model.io) == (3600, 1888, 512)
    # Estimated SD after a JIT preemption: (6000 + 1024 + (10000 - 6000) - 0) / 10000 = 1.1024.
    assert slowdown_after_preemption(s, 6000, JIT, JIT.io) == pytest.approx(1.1024)
    # Second stint that began with a 512 s read at 7012 (saved 6000): at 8000, work since = 8000 - 7012 - 512.
    s3 = js_running(1, 0, 10000, 512, 7012, saved=6000, last_ckpt=6512, expected_end=7012 + 512 + 4000)
    assert preemption_penalty(s3, 8000, NO, NO.io) == (0, 6000 + 476, 0)


def test_weighted_cost_factors_by_hand():
    cfg = WcjsConfig()
    # 512 nodes, walltime 4000, started 0, now 3600: remaining 400 <= min(1000, 900) -> x5;
    # age 3600 -> 1 + ln(3600/900) = 1 + ln 4; SD 1 -> log2 3.
    s = js_running(1, 0, 4000, 512, 0)
    assert preemption_cost(s, 3600, cfg) == pytest.approx(512 * 5 * (1 + math.log(4)) * LOG2_3)
    # walltime 20000: remaining 16400 -> x1; age 600 -> max(1 + ln(2/3), 1) = 1.
    s = js_running(2, 3000, 20000, 512, 3000)
    assert preemption_cost(s, 3600, cfg) == pytest.approx(512 * LOG2_3)
    # Waited 10000 s before starting: SD estimate (10000 + 20000) / 20000 = 1.5 -> log2(3.5).
    s = js_running(3, 0, 20000, 1024, 10000)
    assert preemption_cost(s, 10900, cfg) == pytest.approx(1024 * math.log2(3.5))
    # The near-completion window is capped at 900 s: remaining 1000 of 40000 -> x1 (min(10000, 900)).
    s = js_running(4, 0, 40000, 512, 0)
    assert preemption_cost(s, 39000, cfg) == pytest.approx(512 * (1 + math.log(39000 / 900)) * LOG2_3)
    # Every factor is configuration.
    flat = WcjsConfig(weight_near_completion=False, weight_checkpoint_age=False, weight_slowdown=False)
    assert preemption_cost(js_running(5, 0, 4000, 512, 0), 3600, flat) == 512.0


# ====================================================================================== config
def test_wcjs_config_defaults_are_the_reference_values():
    c = WcjsConfig()
    assert (c.bj_thresholds.narrow_short, c.bj_thresholds.narrow_long, c.bj_thresholds.wide_short,
            c.bj_thresholds.wide_long) == (1.5, 1.5, 17.31, 4.77)
    assert (c.rt_thresholds.narrow_short, c.rt_thresholds.wide_short, c.rt_thresholds.wide_long) == (1.1, 2.0, 1.59)
    assert (c.narrow_max_nodes, c.short_max_walltime, c.near_completion_factor, c.near_completion_fraction,
            c.near_completion_cap, c.ckpt_age_scale) == (4096, 7200, 5.0, 0.25, 900.0, 900.0)
    assert (c.priority, c.backfill, c.blocking) == ("wfp2", "ff", "rt-only")
    # categories: narrow <= 4096 nodes, short <= 120 min walltime
    assert c.category(4096, 7200) == "narrow-short" and c.category(4608, 7201) == "wide-long"
    assert c.bj_threshold(8192, 3600) == 17.31 and c.rt_threshold(8192, 9000) == 1.59


def test_wcjs_curie_preset_and_loading():
    c = WcjsConfig.preset("curie")
    assert c.bj_thresholds == CURIE_BJ == Thresholds(1.5, 3.21, 13.5, 6.02)
    assert c.rt_thresholds == CURIE_RT == Thresholds(1.1, 1.1, 2.0, 2.0)
    assert c.bj_threshold(1024, 9000) == 3.21  # narrow-long
    d = WcjsConfig.from_dict({"preset": "curie", "bj_wide_long": 7.0, "near_completion_factor": 3,
                              "rt_thresholds": {"narrow": 1.2, "wide_short": 2.5, "wide_long": 2.5}})
    assert d.bj_thresholds.wide_long == 7.0 and d.bj_thresholds.narrow_long == 3.21
    assert d.rt_thresholds == Thresholds(1.2, 1.2, 2.5, 2.5) and d.near_completion_factor == 3
    t = WcjsConfig.from_toml("[wcjs]\npreset = 'curie'\nbj_thresholds = [1.5, 3.0, 10.0, 5.0]\nbackfill = 'bf'\n")
    assert t.bj_thresholds == Thresholds(1.5, 3.0, 10.0, 5.0) and t.backfill == "bf"
    assert WcjsConfig.from_dict({"bj_thresholds": [1.4, 12.0, 4.0]}).bj_thresholds == Thresholds(1.4, 1.4, 12.0, 4.0)
    with pytest.raises(ValueError, match="unknown WCJS configuration keys"):
        WcjsConfig.from_dict({"bj_treshold": 1})
    with pytest.raises(ValueError, match="no \\[wcjs\\] table"):
        WcjsConfig.from_toml("[other]\nx = 1\n")


def test_wcjs_config_from_toml_file(tmp_path):
    path = tmp_path / "wcjs.toml"
    path.write_text("[scheme.wcjs]\nrt_narrow = 1.05\nckpt_age_scale = 600\n")
    c = WcjsConfig.from_toml(path, table="scheme.wcjs")
    assert c.rt_thresholds.narrow_short == 1.05 and c.ckpt_age_scale == 600
    plain = tmp_path / "plain.toml"
    plain.write_text("[wcjs]\npreset = 'curie'\n")
    assert make_policy("wcjs", config=str(plain)).config.bj_thresholds == CURIE_BJ
    with pytest.raises(ValueError, match="cannot read"):
        WcjsConfig.from_toml(tmp_path / "missing.toml")


# ====================================================================================== registry
def test_registry_names_and_schemes():
    names = available_policies()
    for n in ("fcfs", "sjf", "wfp3", "unicep", "f1", "smallest", "largest", "default", "wfp", "wfp2", "unicef",
              "baseline", "highpq", "preempt", "wcjs"):
        assert n in names
    assert make_policy("sjf", backfill="bf").name == "sjf+bf"
    assert make_policy("wfp2", backfill=None).name == "wfp2+ff"
    expected = {"baseline": None, "highpq": None, "no-ckpt": "no", "sys-ckpt": "sys", "app-ckpt-5": "app",
                "app-ckpt-10": "app", "jit-ckpt": "jit", "wcjs-jit": "jit", "wcjs-app-5": "app", "wcjs-app-10": "app",
                "wcjs-sys": "sys", "wcjs-no": "no"}
    assert set(available_schemes()) == set(expected) == set(SCHEMES)
    for label, kind in expected.items():
        policy, model = scheme(label)
        if kind is not None:
            assert model.kind.value == kind
        else:
            assert model.kind is CheckpointKind.NO
    assert scheme("app-ckpt-5")[1].app_fraction == pytest.approx(0.05)
    assert scheme("wcjs-app-10")[1].app_fraction == pytest.approx(0.10)
    assert scheme("sys-ckpt", sys_interval=1800)[1].sys_interval == 1800
    assert isinstance(scheme("jit-ckpt")[0], PreemptivePolicy) and isinstance(scheme("highpq")[0],
                                                                               HighPriorityQueuePolicy)
    pol, _ = scheme("wcjs-jit", config="curie", rt_wide_long=1.9)
    assert isinstance(pol, WcjsPolicy) and pol.name == "wcjs-jit"
    assert pol.config.bj_thresholds.narrow_long == 3.21 and pol.config.rt_thresholds.wide_long == 1.9
    direct = WcjsPolicy(config="curie", backfill="bf")
    assert direct.config.backfill == "bf" and direct.backfill == "bf" and direct.config.rt_thresholds == CURIE_RT
    with pytest.raises(ValueError, match="unknown scheme"):
        scheme("wcjs-maybe")
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("lifo")
    with pytest.raises(ValueError, match="takes no option"):
        make_policy("wcjs", bj_treshold=2)
    with pytest.raises(ValueError, match="no SYS checkpoints"):
        scheme("jit-ckpt", sys_interval=60)


@pytest.mark.parametrize("name,committed", [(n, False) for n in BATCH_POLICIES + ("baseline", "highpq", "preempt", "wcjs")]
                         + [(n, True) for n in BATCH_POLICIES])
def test_every_registered_policy_runs(name, committed):
    # On 4 blocks (2,048 nodes): job 1 (1,024 nodes) finds an idle machine at t=0; job 2 (an RTJ,
    # 512 nodes) fits beside it at t=5; job 3 needs the whole machine and can start only when job 1
    # ends at 100 (job 2 ended at 55).  Every sane policy gives exactly these starts; one that idles
    # a free machine, starts a job that does not fit, or loses a job does not.
    w = wl(J(1, 0, 100, 200, 1024), J(2, 5, 50, 60, 512, kind="rt"), J(3, 6, 70, 80, 2048))
    policy = make_policy(name, committed=True) if committed else make_policy(name)
    r = run_validated(w, AlignedMira(4), policy)
    assert {jid: o.first_start for jid, o in out(r).items()} == {1: 0, 2: 5, 3: 100}
    assert {jid: o.end for jid, o in out(r).items()} == {1: 100, 2: 55, 3: 170}
    assert sum(o.n_preemptions for o in r.outcomes) == 0


@pytest.mark.parametrize("name,committed", [(n, False) for n in BATCH_POLICIES + ("baseline", "highpq", "preempt", "wcjs")]
                         + [(n, True) for n in BATCH_POLICIES] + [(s, None) for s in SCHEMES])
def test_the_preemptive_attribute_says_whether_a_policy_preempts(name, committed):
    # AlignedMira(4): BJ1 holds the whole machine [0, 100000); RT2 (2048 nodes, walltime 100) arrives at
    # 10 and finds no free partition.  A policy that may preempt does (WCJS once RT2's estimated
    # slowdown passes its threshold, long before BJ1 ends); one that says it never preempts does not:
    # ``rtsched simulate`` refuses --checkpoint jit on the strength of that attribute.
    w = wl(J(1, 0, 100_000, 100_000, 2048), J(2, 10, 50, 100, 2048, kind="rt"))
    if committed is None:
        policy, model = scheme(name)
    else:
        policy = make_policy(name, committed=True) if committed else make_policy(name)
        model = CheckpointModel(CheckpointKind.JIT)
    r = run_validated(w, AlignedMira(4), policy, checkpoint=model)
    preempted = sum(o.n_preemptions for o in r.outcomes)
    if getattr(policy, "preemptive", True):
        assert preempted == 1 and out(r)[2].first_start < 100_000
    else:
        assert preempted == 0 and out(r)[2].first_start == 100_000


def test_preemptive_policies_refuse_a_flat_cluster_loudly():
    w = wl(J(1, 0, 100, 200, 4), J(2, 5, 50, 60, 2, kind="rt"))
    with pytest.raises(ValueError, match="partitioned machine"):
        run_validated(w, FlatCluster(8), make_policy("preempt"))
    r = run_validated(w, FlatCluster(8), make_policy("highpq"))  # non-preemptive ones run anywhere
    assert out(r)[2].first_start == 5


# ====================================================================================== baseline
def test_baseline_ignores_the_job_kind():
    rows = [J(1, 0, 1000, 1000, 1024), J(2, 10, 100, 100, 2048, kind="rt"), J(3, 20, 50, 50, 512),
            J(4, 30, 400, 500, 1024, kind="rt")]
    m = AlignedMira(4)
    a = run_validated(wl(*rows), m, baseline_policy())
    b = run_validated(wl(*[j.with_kind("batch") for j in rows]), m, batch_policy("wfp2", "ff"))
    fp = lambda r: [(s.job_id, s.start, s.end, s.partition) for s in r.schedule]  # noqa: E731
    assert fp(a) == fp(b)
    assert a.policy_name == "baseline(wfp2+ff)"
    assert sum(o.n_preemptions for o in a.outcomes) == 0


# ====================================================================================== high-priority queue
HPQ = [J(1, 0, 1000, 1000, 1024), J(2, 10, 100, 100, 2048, kind="rt"), J(3, 20, 50, 50, 512)]


def test_highpq_blocks_batch_jobs_while_an_rt_job_waits():
    # AlignedMira(4).  t=0: BJ1 (1024) -> p4 [0,1000).  t=10: RT2 (2048) needs p6, which conflicts with
    # p4: it waits.  t=20: BJ3 (512) could run on p2 now, but the waiting RTJ blocks the normal queue.
    # t=1000: BJ1 ends; RT2 -> p6 [1000,1100).  t=1100: BJ3 -> p0 (all singles tie) [1100,1150).
    r = run_validated(wl(*HPQ), AlignedMira(4), make_policy("highpq"))
    o = out(r)
    assert (o[2].first_start, o[2].end, o[3].first_start, o[3].end) == (1000, 1100, 1100, 1150)
    assert parts(r, 2) == [6] and parts(r, 3) == [0]
    assert sd(o[2]) == pytest.approx((1100 - 10) / 100)  # 10.9
    assert sd(o[3]) == pytest.approx((1150 - 20) / 50)  # 22.6


def test_highpq_backfill_option_lets_bjs_fill_around_the_waiting_rt_job():
    # Same trace, blocking="backfill": RT2's reservation is p6 at 1000 (BJ1's walltime end); BJ3 ends
    # at 20 + 50 = 70 <= 1000 -> backfilled on p2 (free: p2, p3, p5; p2 and p3 tie -> p2) [20,70).
    r = run_validated(wl(*HPQ), AlignedMira(4), make_policy("highpq", blocking="backfill"))
    o = out(r)
    assert (o[2].first_start, o[3].first_start, o[3].end) == (1000, 20, 70)
    assert parts(r, 3) == [2]


@pytest.mark.parametrize("order, first", [("fcfs", 2), ("slowdown", 3)])
def test_highpq_order_fcfs_or_estimated_slowdown(order, first):
    # BJ1 holds p6 (the whole toy) [0,1000).  RT2 (submit 100, walltime 10000), RT3 (submit 200,
    # walltime 100), both 2048 nodes.  At 1000: ESD(RT2) = (900 + 10000) / 10000 = 1.09,
    # ESD(RT3) = (800 + 100) / 100 = 9 -> "slowdown" serves RT3 first, "fcfs" RT2.
    w = wl(J(1, 0, 1000, 1000, 2048), J(2, 100, 100, 10000, 2048, kind="rt"), J(3, 200, 100, 100, 2048, kind="rt"))
    r = run_validated(w, AlignedMira(4), make_policy("highpq", rt_order=order))
    o = out(r)
    assert o[first].first_start == 1000
    assert o[5 - first].first_start == 1100


# ====================================================================================== preemptive schemes
# AlignedMira(8).  t=0, all BJs submitted together, taken by id:
#   BJ1 2048 -> p12 [blocks 0-3] (p12 and p13 tie);  BJ2 512 -> p4 (free singles p4..p7 all block 3);
#   BJ3 512 -> p5 (blocks only itself: p10 and p13 are already blocked);  BJ4 512 -> p6 (p6, p7 tie).
#   Block 7 stays free, but no 1024-node partition is.
# t=6000: RT9 (1024 nodes, runtime 500) arrives.  Candidates and the busy BJ nodes each would preempt:
#   p8, p9 -> BJ1 (2048);  p10 -> BJ2 + BJ3 (1024);  p11 -> BJ4 (512)  => p11, preempting BJ4 only.
PRE = [J(1, 0, 20000, 20000, 2048), J(2, 0, 20000, 20000, 512), J(3, 0, 20000, 20000, 512),
       J(4, 0, 10000, 10000, 512), J(9, 6000, 500, 500, 1024, kind="rt")]


@pytest.mark.parametrize("model, rt_start, bj_end, ckpt, restart, lost", [
    # NO: BJ4 loses its 6000 s; RT9 [6000,6500) on p11; BJ4 restarts from 0 at 6500 -> 16500.
    ("no", 6000, 16500, 0, 0, 6000),
    # SYS (3600 s): BJ4 run [0,3600) write [3600,4112) (saved 3600) run [4112,6000) -> lost 1888.
    #   RT9 [6000,6500).  BJ4 at 6500: read [6500,7012), run 3600 -> 7200 [7012,10612),
    #   write [10612,11124) (saved 7200), run the last 2800 s -> 13924.  Writes 2 x 512, read 512.
    ("sys", 6000, 13924, 1024, 512, 1888),
    # APP-10 %: 10 % of 10000 s = 1000 s -> 1 write of 512 s, every 10000 // 2 = 5000 s of work:
    #   run [0,5000) write [5000,5512) run [5512,6000) -> lost 488.  Restart at 6500: read 512,
    #   then 5000 s (no checkpoint left) -> 7012 + 5000 = 12012.
    ("app-10", 6000, 12012, 512, 512, 488),
    # APP-5 %: 500 s < one 512 s write -> no checkpoint at all: behaves like NO.
    ("app-5", 6000, 16500, 0, 0, 6000),
    # JIT: BJ4 writes [6000,6512) (saved 6000, nothing lost); RT9 is bound to p11 and starts at 6512
    #   (JIT delay 512) -> 7012.  BJ4 re-queued at 6512 (block 7 is under RT9's p11: no room) and
    #   restarts at 7012 on p6: read [7012,7524), last 4000 s -> 11524.
    ("jit", 6512, 11524, 512, 512, 0),
])
def test_preemptive_scheme_golden(model, rt_start, bj_end, ckpt, restart, lost):
    r = run_validated(wl(*PRE), AlignedMira(8), make_policy("preempt"), checkpoint=CheckpointModel.parse(model))
    o = out(r)
    rt, bj = o[9], o[4]
    assert parts(r, 9) == [11]
    assert (rt.first_start, rt.end, rt.jit_delay) == (rt_start, rt_start + 500, rt_start - 6000)
    assert (bj.n_preemptions, bj.end, bj.t_ckpt, bj.t_restart, bj.t_lost) == (1, bj_end, ckpt, restart, lost)
    assert parts(r, 4)[0] == 6 and parts(r, 4)[-1] == 6
    assert sd(bj) == pytest.approx(bj_end / 10000)
    assert sd(rt) == pytest.approx((rt_start + 500 - 6000) / 500)  # 1.0, or 2.024 under JIT
    assert all(o[j].n_preemptions == 0 for j in (1, 2, 3))


def test_preemptive_ties_go_to_the_lowest_partition_index_and_take_all_children():
    # As PRE plus BJ5 (512) on block 7 (p7): now p10 (BJ2 + BJ3) and p11 (BJ4 + BJ5) both cost 1024
    # nodes -> p10 (lower index); both of its children's jobs are preempted (JIT, writes end at 6512).
    rows = PRE[:4] + [J(5, 0, 20000, 20000, 512), PRE[4]]
    r = run_validated(wl(*rows), AlignedMira(8), make_policy("preempt"), checkpoint=JIT)
    o = out(r)
    assert parts(r, 9) == [10] and o[9].first_start == 6512
    assert [o[j].n_preemptions for j in (1, 2, 3, 4, 5)] == [0, 1, 1, 0, 0]


def test_preempting_a_parent_and_draining_jobs_count_as_leaving():
    # AlignedMira(4), JIT.  BJ1 (2048) on p6 [0, ...), runtime 5000.
    # t=1000: RT2 and RT3 (512 each).  RT2: every single block costs BJ1's 2048 nodes -> p0 (lowest);
    #   BJ1 (the parent) writes [1000,1512).  RT3 in the same pass: BJ1 is already leaving, so p1 costs
    #   0 -> bound to p1.  t=1100: RT4 (512): p2 costs 0 as well (BJ1 writing; p0/p1's RTJs block
    #   only p0, p1, p4, p6) -> bound to p2.  All three start at 1512 (JIT delays 512, 512, 412), end 1812.
    # BJ1 is preempted once, re-queued at 1512, restarts on p6 at 1812: read 512 + its last 4000 s -> 6324.
    w = wl(J(1, 0, 5000, 6000, 2048), J(2, 1000, 300, 300, 512, kind="rt"), J(3, 1000, 300, 300, 512, kind="rt"),
           J(4, 1100, 300, 300, 512, kind="rt"))
    r = run_validated(w, AlignedMira(4), make_policy("preempt"), checkpoint=JIT)
    o = out(r)
    assert [parts(r, j) for j in (2, 3, 4)] == [[0], [1], [2]]
    assert [(o[j].first_start, o[j].jit_delay) for j in (2, 3, 4)] == [(1512, 512), (1512, 512), (1512, 412)]
    assert (o[1].n_preemptions, o[1].t_ckpt, o[1].t_restart, o[1].t_lost, o[1].end) == (1, 512, 512, 0, 6324)


def test_preempted_jobs_can_be_preempted_again():
    # AlignedMira(4), NO.  BJ1 (2048, runtime 5000) on p6.  RT2 (512) at 1000 -> p0, BJ1 loses 1000 s;
    # RT2 ends 1300; BJ1 restarts at 1300.  RT3 (512) at 2000 -> preempts BJ1 again (700 s lost);
    # RT3 ends 2300; BJ1 restarts from 0 at 2300 -> 7300.
    w = wl(J(1, 0, 5000, 6000, 2048), J(2, 1000, 300, 300, 512, kind="rt"), J(3, 2000, 300, 300, 512, kind="rt"))
    r = run_validated(w, AlignedMira(4), make_policy("preempt"), checkpoint=NO)
    o = out(r)
    assert (o[1].n_preemptions, o[1].t_lost, o[1].end) == (2, 1700, 7300)
    assert (o[2].first_start, o[3].first_start) == (1000, 2000)


def test_rt_and_non_checkpointable_jobs_are_never_preempted():
    # AlignedMira(4), NO.  t=0: N1 (1024, not checkpointable) -> p4; BJ2 (512) -> p2 (p2, p3 tie).
    # t=10: RT3 (512) -> p3, the only free block.  t=20: RT4 (512): p0, p1 conflict with N1, p3 is RT3's;
    # p2 only costs BJ2 -> preempted; RT4 [20,1020).  t=30: RT5 (512): every block is held by N1 or an
    # RTJ -> it waits (and blocks the queue) until RT3 ends at 1010 -> p3 [1010,1110).
    # BJ2 (re-queued at 20, from scratch) restarts on p2 when RT4 ends: [1020, 6020).
    w = wl(J(1, 0, 5000, 5000, 1024, ckpt=False), J(2, 0, 5000, 5000, 512), J(3, 10, 1000, 1000, 512, kind="rt"),
           J(4, 20, 1000, 1000, 512, kind="rt"), J(5, 30, 100, 100, 512, kind="rt"))
    r = run_validated(w, AlignedMira(4), make_policy("preempt"), checkpoint=NO)
    o = out(r)
    assert [o[j].n_preemptions for j in (1, 2, 3, 4, 5)] == [0, 1, 0, 0, 0]
    assert [parts(r, j) for j in (3, 4, 5)] == [[3], [2], [3]]
    assert (o[4].first_start, o[5].first_start, o[2].end, o[2].t_lost) == (20, 1010, 6020, 20)


# ====================================================================================== WCJS
def wcjs(**kw) -> WcjsPolicy:
    return make_policy("wcjs", **kw)


def test_wcjs_rt_job_preempts_only_past_its_threshold():
    # AlignedMira(4), NO.  BJ1 (2048, walltime 10000) on p6 from 0.  RT2 (2048, walltime 1000,
    # runtime 500) at 100: ESD = 1.0 <= 1.1 (narrow) -> low-priority queue, no room, no preemption.
    # ESD > 1.1 first at t = 201 ((201 - 100 + 1000) / 1000 = 1.101); the policy asked for a wake-up
    # then: RT2 is promoted and preempts BJ1 (its SD after a NO preemption: (201 + 10000) / 10000 =
    # 1.0201 <= 1.5).  RT2 [201,701); BJ1 restarts from 0 at 701 -> 10701 (201 s lost).
    w = wl(J(1, 0, 10000, 10000, 2048), J(2, 100, 500, 1000, 2048, kind="rt"))
    r = run_validated(w, AlignedMira(4), wcjs(), checkpoint=NO)
    o = out(r)
    assert (o[2].first_start, o[2].end, o[1].t_lost, o[1].end) == (201, 701, 201, 10701)
    # Without the wake-up the next event is BJ1's end: RT2 simply waits for it.
    r = run_validated(w, AlignedMira(4), wcjs(wake_on_threshold=False), checkpoint=NO)
    assert out(r)[2].first_start == 10000 and out(r)[1].n_preemptions == 0


# Four busy blocks of AlignedMira(4) (each BJ starts on arrival, best fit by arrival order):
#   BJ1 p0: submit 0,    walltime 4000,  runtime 4000
#   BJ2 p1: submit 0,    walltime 20000, runtime 20000
#   BJ3 p2: submit 1800, walltime 20000, runtime 20000
#   BJ4 p3: submit 3000, walltime W4,    runtime R4
# RT9 (512 nodes, runtime 400, walltime 500) arrives at 3600; RT thresholds 0.5 (ESD 1 > 0.5:
# promoted on arrival).  Weighted costs at 3600 (nodes x near-completion x ckpt-age x log2(2 + SD),
# every BJ started on submission so SD = 1 -> log2 3):
#   p0: BJ1 remaining 400 <= min(1000, 900) -> x5; age 3600 -> 1 + ln 4:  512*5*2.3863*1.585 = 9682.4
#   p1: BJ2 age 3600 -> 1 + ln 4:                                         512*2.3863*1.585   = 1936.5
#   p2: BJ3 age 1800 -> 1 + ln 2:                                         512*1.6931*1.585   = 1374.0
#   p3: BJ4 age 600 -> max(1 + ln(2/3), 1) = 1 (W4 = 20000 or 1200: remaining 16400 or 600 > 300):
#                                                                         512*1*1.585         =  811.5
# BJ SD after a JIT preemption ((now + write 512 + read 512 + walltime - done - submit) / walltime):
#   BJ1 (3600+1024+400)/4000 = 1.256;  BJ2 (3600+1024+16400)/20000 = 1.0512;
#   BJ3 (3600+1024+18200-1800)/20000 = 1.0512;  BJ4 with W4 = 1200: (3600+1024+600-3000)/1200 = 1.853.
def four_blocks(w4: int, r4: int):
    return wl(J(1, 0, 4000, 4000, 512), J(2, 0, 20000, 20000, 512), J(3, 1800, 20000, 20000, 512),
              J(4, 3000, r4, w4, 512), J(9, 3600, 400, 500, 512, kind="rt"))


def test_wcjs_picks_the_lowest_weighted_cost_partition():
    cfg = dict(rt_thresholds=(0.5, 0.5, 0.5))
    m = AlignedMira(4)
    costs = {0: 512 * 5 * (1 + math.log(4)) * LOG2_3, 1: 512 * (1 + math.log(4)) * LOG2_3,
             2: 512 * (1 + math.log(2)) * LOG2_3, 3: 512 * LOG2_3}
    assert min(costs, key=costs.get) == 3 and costs[3] == pytest.approx(811.5, abs=0.1)
    r = run_validated(four_blocks(20000, 10000), m, wcjs(**cfg), checkpoint=JIT)
    o = out(r)
    assert [parts(r, j)[0] for j in (1, 2, 3, 4)] == [0, 1, 2, 3]
    # p3 wins: BJ4 writes [3600,4112); RT9 bound to p3 starts at 4112 (JIT delay 512) -> 4512.
    # BJ4, re-queued at 4112, restarts on p0 (free since BJ1 ended at 4000): read [4112,4624) and its
    # last 9400 s -> 14024; SD (14024 - 3000) / 10000 = 1.1024; nothing lost.
    assert parts(r, 9) == [3]
    assert (o[9].first_start, o[9].jit_delay, o[9].end) == (4112, 512, 4512)
    assert sd(o[9]) == pytest.approx((4512 - 3600) / 400)
    assert (o[4].n_preemptions, o[4].t_ckpt, o[4].t_restart, o[4].t_lost, o[4].end) == (1, 512, 512, 0, 14024)
    assert parts(r, 4) == [3, 0]
    assert sd(o[4]) == pytest.approx(1.1024)
    assert [o[j].n_preemptions for j in (1, 2, 3)] == [0, 0, 0]


def test_wcjs_bj_threshold_criterion():
    # BJ4 with walltime 1200 would reach an estimated SD of 1.853 > 1.5 after a JIT preemption ->
    # p3 rejected; the cheapest eligible partition is p2 (1374.0): BJ3 is preempted.  BJ3 writes
    # [3600,4112), RT9 starts on p2 at 4112; BJ3 restarts on p0 at 4112: read to 4624 + its last
    # 18200 s -> 22824: SD (22824 - 1800) / 20000 = 1.0512, exactly the estimate (restarted at once).
    m = AlignedMira(4)
    r = run_validated(four_blocks(1200, 1200), m, wcjs(rt_thresholds=(0.5, 0.5, 0.5)), checkpoint=JIT)
    o = out(r)
    assert parts(r, 9) == [2] and o[9].first_start == 4112
    assert (o[3].n_preemptions, o[4].n_preemptions, o[3].end) == (1, 0, 22824)
    assert sd(o[3]) == pytest.approx(1.0512)
    # The authors' test (the BJ's *current* estimated SD, 1.0 for all) accepts p3, the cheapest.
    r = run_validated(four_blocks(1200, 1200), m, wcjs(rt_thresholds=(0.5, 0.5, 0.5), threshold_estimate="current"),
                      checkpoint=JIT)
    assert parts(r, 9) == [3] and out(r)[4].n_preemptions == 1
    # With the criterion off, p3 as well.
    r = run_validated(four_blocks(1200, 1200), m, wcjs(rt_thresholds=(0.5, 0.5, 0.5), reject_threshold=False),
                      checkpoint=JIT)
    assert parts(r, 9) == [3]


def test_wcjs_rt_on_a_child_rejects_the_candidate():
    # As the cost test, but job 4 on p3 is an RTJ (never preempted).  RT9 now needs 1024 nodes:
    # candidates p4 (BJ1 + BJ2: 9682.4 + 1936.5) and p5 (BJ3 + the RTJ on its child p3).  p5 is rejected
    # by criterion 1 although cheaper -> p4: BJ1 and BJ2 are both preempted (JIT, writes end at 4112).
    rows = list(four_blocks(20000, 10000).jobs)
    rows[3] = J(4, 3000, 10000, 20000, 512, kind="rt")
    rows[4] = J(9, 3600, 400, 500, 1024, kind="rt")
    r = run_validated(wl(*rows), AlignedMira(4), wcjs(rt_thresholds=(0.5, 0.5, 0.5)), checkpoint=JIT)
    o = out(r)
    assert parts(r, 9) == [4] and o[9].first_start == 4112
    assert [o[j].n_preemptions for j in (1, 2, 3, 4)] == [1, 1, 0, 0]


# Larger-job criterion.  AlignedMira(4): BJ1 (1024, walltime 20000) -> p4; BJ2, BJ3 (512, walltime
# 1100) -> p2, p3.  RT9 (512) at 1000 (threshold 0.5).  Costs at 1000 (age 1000 -> 1 + ln(10/9) =
# 1.10536; SD 1 -> log2 3):  p0, p1: BJ1 1024*1.10536*1.585 = 1794.0;  p2, p3: BJ2/BJ3 remaining
# 100 <= min(275, 900) -> x5: 512*5*1.10536*1.585 = 4485.0.  (BJ-threshold criterion off: BJ2 would
# reach (1000 + 1024 + 100) / 1100 = 1.93 > 1.5.)
LARGER = [J(1, 0, 20000, 20000, 1024), J(2, 0, 1100, 1100, 512), J(3, 0, 1100, 1100, 512),
          J(9, 1000, 100, 100, 512, kind="rt")]


def test_wcjs_larger_job_criterion():
    m = AlignedMira(4)
    r = run_validated(wl(*LARGER), m, wcjs(rt_thresholds=(0.5, 0.5, 0.5), reject_threshold=False), checkpoint=JIT)
    o = out(r)
    # p0/p1 would preempt BJ1 (1024 > 512 nodes): rejected; p2 and p3 tie -> p2: BJ2 preempted.
    assert parts(r, 1)[0] == 4 and parts(r, 9) == [2]
    assert (o[1].n_preemptions, o[2].n_preemptions) == (0, 1)
    r = run_validated(wl(*LARGER), m, wcjs(rt_thresholds=(0.5, 0.5, 0.5), reject_threshold=False,
                                           reject_larger=False), checkpoint=JIT)
    assert parts(r, 9) == [0] and out(r)[1].n_preemptions == 1  # the cheaper, larger BJ1


def test_wcjs_waits_when_no_candidate_is_eligible():
    # BJ1 (2048) holds p6; RT2 (512) is promoted at once (threshold 0.5) but every candidate would
    # preempt a larger job: it waits until BJ1 ends at 3000.  The preemptive scheme preempts BJ1.
    w = wl(J(1, 0, 3000, 3000, 2048), J(2, 100, 100, 100, 512, kind="rt"))
    r = run_validated(w, AlignedMira(4), wcjs(rt_thresholds=(0.5, 0.5, 0.5)), checkpoint=JIT)
    assert out(r)[2].first_start == 3000 and out(r)[1].n_preemptions == 0
    r = run_validated(w, AlignedMira(4), make_policy("preempt"), checkpoint=JIT)
    assert out(r)[2].first_start == 100 + 512 and out(r)[1].n_preemptions == 1


def test_wcjs_patient_rt_jobs_and_bjs_use_the_batch_policy():
    # With the default thresholds an RTJ that finds room starts through the batch policy (ESD 1.0 at
    # arrival, never promoted), and no BJ ever preempts anything.  BJ1 (1024) -> p4 [0,1000); RT2 (1024)
    # at 10 -> p5 [10,110) through the batch pass; BJ3 (512) at 20 finds no block free and waits
    # (it may not preempt) until RT2 ends: p2 [110,160).
    w = wl(J(1, 0, 1000, 1000, 1024), J(2, 10, 100, 200, 1024, kind="rt"), J(3, 20, 50, 50, 512))
    r = run_validated(w, AlignedMira(4), wcjs(), checkpoint=JIT)
    o = out(r)
    assert (o[2].first_start, o[3].first_start) == (10, 110)
    assert parts(r, 2) == [5] and parts(r, 3) == [2]
    assert sum(x.n_preemptions for x in r.outcomes) == 0


# While a high-priority RTJ waits.  AlignedMira(4), JIT; narrow_max_nodes = 1024 makes the 2048-node
# RT2 "wide", RT thresholds narrow 1.1 (default), wide 0.5 (RT2 is promoted on arrival).
#   RT1 (512, runtime = walltime = 1000) at 0: low priority (ESD 1.0), starts through the batch pass
#       on p0 (singles tie -> lowest index) [0,1000).
#   RT2 (2048, runtime 100, walltime 200) at 10: high priority; its only partition p6 holds RT1 on a
#       child -> criterion 1 rejects it: RT2 waits.
#   BJ3 (512, 50 s) at 20, BJ4 (512, 3000 s) at 25, RT5 (512, runtime 100, walltime 1000) at 30
#       (low priority until it crosses 1.1 at 30 + 100 = 130, i.e. at 131: a wake-up is asked for).
# "rt-only" (the default, the authors' simulator): BJs go on, low-priority RTJs wait.
#   20: BJ3 -> p1 (p1 blocks no free partition, p2/p3 would block p5) [20,70).  25: BJ4 -> p2 (p2, p3
#   tie) [25, ...).  30: RT5 held back although p3 is free.  131: RT5 promoted (ESD 1.101; RT2 1.605
#   comes first and still fails) -> free p1 [131,231): a later high-priority RTJ takes free space
#   ahead of the waiting wide one (Alg. 1 serves each in turn).  1000: RT1 ends; RT2 may preempt BJ4
#   (BJ4's SD after a JIT preemption (1000 + 512 + 512 + 3000 - 975 - 25) / 3000 = 1.341 <= 1.5):
#   BJ4 writes [1000,1512), RT2 [1512,1612) (JIT delay 512); BJ4 restarts on p0 at 1612: read to
#   2124 + its last 2025 s -> 4149.
# "block" (Alg. 1's text: no low-priority job while a high-priority one waits): BJ3, BJ4 and RT5 wait;
#   RT5 is promoted at 131 -> p1 [131,231); RT2 [1000,1100) on p6; 1100: wfp2 takes BJ3 (queued
#   1080 s, walltime 50) before BJ4 -> p0 [1100,1150); BJ4 -> p1 [1100,4100).
# "backfill": RT2 is the head with a reservation on p6 at 1000: BJ3 (ends 70) backfills on p1; BJ4
#   (ends 3025) and RT5 (1030) may not; RT5 promoted at 131 -> p1; RT2 [1000,1100); BJ4 -> p0 at 1100.
WAITING_WIDE = [J(1, 0, 1000, 1000, 512, kind="rt"), J(2, 10, 100, 200, 2048, kind="rt"), J(3, 20, 50, 50, 512),
                J(4, 25, 3000, 3000, 512), J(5, 30, 100, 1000, 512, kind="rt")]


@pytest.mark.parametrize("blocking, starts, ends", [
    ("rt-only", {1: 0, 2: 1512, 3: 20, 4: 25, 5: 131}, {2: 1612, 3: 70, 4: 4149, 5: 231}),
    ("block", {1: 0, 2: 1000, 3: 1100, 4: 1100, 5: 131}, {2: 1100, 3: 1150, 4: 4100, 5: 231}),
    ("backfill", {1: 0, 2: 1000, 3: 20, 4: 1100, 5: 131}, {2: 1100, 3: 70, 4: 4100, 5: 231}),
])
def test_wcjs_what_starts_while_a_high_priority_rt_job_waits(blocking, starts, ends):
    cfg = dict(rt_thresholds=Thresholds(1.1, 1.1, 0.5, 0.5), narrow_max_nodes=1024)
    policy = wcjs(**cfg) if blocking == "rt-only" else wcjs(blocking=blocking, **cfg)  # rt-only: the default
    r = run_validated(wl(*WAITING_WIDE), AlignedMira(4), policy, checkpoint=JIT)
    o = out(r)
    assert {j: o[j].first_start for j in starts} == starts
    assert {j: o[j].end for j in ends} == ends
    assert parts(r, 2) == [6] and parts(r, 5) == [1]
    if blocking == "rt-only":
        assert parts(r, 3) == [1] and parts(r, 4) == [2, 0]
        assert (o[4].n_preemptions, o[4].t_ckpt, o[4].t_restart, o[4].t_lost, o[2].jit_delay) == (1, 512, 512, 0, 512)
    else:
        assert sum(x.n_preemptions for x in r.outcomes) == 0
    if blocking == "block":
        assert parts(r, 3) == [0] and parts(r, 4) == [1]


# ====================================================================================== properties
class Checked:
    """Wraps a policy and checks each decision list: every group of Preempts is immediately followed
    by the Start of an RT job (BJs never preempt), only running checkpointable BJs are preempted,
    and WCJS preempts only for RTJs past their threshold."""

    def __init__(self, policy) -> None:
        self.policy = policy
        self.name = getattr(policy, "name", "checked")
        self.preempts = 0

    def decide(self, view):
        ds = self.policy.decide(view)
        pending = []
        for d in ds:
            if type(d) is Preempt:
                v = view.job(d.job_id)
                assert v.info.kind == "batch" and v.info.checkpointable and v.status == RUNNING
                pending.append(d)
            elif type(d) is Start and pending:
                rt = view.job(d.job_id)
                assert rt.info.kind == "rt", "a batch job started on preempted resources"
                if isinstance(self.policy, WcjsPolicy):
                    cfg = self.policy.config
                    assert estimated_slowdown(rt, view.now) > cfg.rt_threshold(rt.info.nodes, rt.info.walltime)
                self.preempts += len(pending)
                pending = []
        assert not pending, "preemptions without an RT start"
        if not getattr(self.policy, "preemptive", False):  # baseline, highpq
            assert not any(type(d) is Preempt for d in ds)
        return ds


@st.composite
def rt_workloads(draw, max_jobs: int = 14):
    n = draw(st.integers(1, max_jobs))
    jobs = []
    t = 0
    for i in range(n):
        t += draw(st.integers(0, 600))
        runtime = draw(st.integers(1, 4000))
        walltime = runtime + draw(st.integers(0, 3000))
        nodes = draw(st.sampled_from([512, 1024, 2048, 4096])) - draw(st.integers(0, 100))
        kind = draw(st.sampled_from(["batch", "batch", "rt"]))
        ckpt = draw(st.sampled_from([True, True, True, False]))
        jobs.append(Job(i + 1, t, runtime, walltime, nodes, kind=kind, checkpointable=ckpt))
    return Workload(jobs)


def fingerprint(result):
    return [(s.job_id, s.start, s.end, s.kind, s.partition, s.progress_to) for s in result.schedule]


SCHEME_NAMES = sorted(SCHEMES)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=rt_workloads(), label=st.sampled_from(SCHEME_NAMES),
       blocking=st.sampled_from(["rt-only", "block", "backfill"]))
def test_every_scheme_valid_rt_never_preempted_deterministic(w, label, blocking):
    machine = AlignedMira(8)
    opts = {} if label == "baseline" else {"blocking": blocking}
    policy, model = scheme(label, **opts)
    a = run_validated(w, machine, Checked(policy), checkpoint=model)
    policy2, _ = scheme(label, **opts)
    b = run_validated(w, machine, policy2, checkpoint=model)
    assert fingerprint(a) == fingerprint(b)
    for o in a.outcomes:
        if o.job.kind == "rt" or not o.job.checkpointable:
            assert o.n_preemptions == 0
        if model.kind is CheckpointKind.JIT:
            assert o.t_lost == 0
        if label in ("baseline", "highpq"):
            assert o.n_preemptions == 0


def test_random_workload_under_each_scheme_rt_never_preempted():
    # A fixed random 60-job mix on AlignedMira(8): every scheme, with the decision checker.
    rng = random.Random(1)
    jobs, t = [], 0
    for i in range(60):
        t += rng.randint(0, 300)
        runtime = rng.randint(60, 6000)
        jobs.append(Job(i + 1, t, runtime, runtime + rng.randint(0, 4000), rng.choice([512, 1024, 2048, 4096, 700]),
                        kind="rt" if rng.random() < 0.25 else "batch", checkpointable=rng.random() < 0.9))
    w = Workload(jobs)
    total = {}
    for label in SCHEME_NAMES:
        policy, model = scheme(label)
        checked = Checked(policy)
        r = run_validated(w, AlignedMira(8), checked, checkpoint=model)
        assert all(o.n_preemptions == 0 for o in r.outcomes if o.job.kind == "rt" or not o.job.checkpointable)
        total[label] = checked.preempts
    assert total["baseline"] == total["highpq"] == 0
    assert all(total[s] > 0 for s in SCHEME_NAMES if s not in ("baseline", "highpq"))  # the mix does preempt
