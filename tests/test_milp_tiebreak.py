"""The RTJ tie-break stage (``solve(..., rtj_tiebreak=True)``): among the schedules with the proven
least BJ mean within θ_used, the least RTJ mean — a canonical optimum on which every method agrees.

Tiny instances come from a search over generator seeds (random_instance, the parameters below) for
ones where brute force finds BJ-optimal schedules with *different* RTJ sums (``rt_sums_tied``) and
whose least RTJ mean among them is above θ* (so stage 3 really solves, the θ* shortcut does not
apply).  Without the tie-break the methods return different members of that set on some of them
(seed 17 of the 1-BJ/3-RTJ set: CP-SAT 3.0282, the disjunctive MILP 3.4641 as RTJ sums).
"""
from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from fractions import Fraction

import pytest

from conftest import assert_plan_replays
from milp.bruteforce import bruteforce
from milp.instance import Instance, random_instance, table3_instance
from milp.plan import evaluate
from milp.solve import _rtj_tiebreak, _Stage, solve
from rtsched.cli import main as rtsched_main
from rtsched.jobs import Job


_replays = assert_plan_replays  # every plan replays in the core simulator and validates


def _split_tie() -> Instance:
    # 1 block, θ = 1.2.  BJ 1: submit 3,800, 10,000 s (o = 512).  RTJ 2: submit 5,000, 1,000 s.
    # RTJ 3: submit 20,000, 1,000 s (alone: SD 1), so RTJ 2 may reach SD 1.4 (start <= 5,400).
    # Unsplit the BJ waits for RTJ 2: C = 16,000, SD 1.22.  Split at w: part 1 [3800, 4312 + w),
    # RTJ 2 right after it, part 2 after RTJ 2: C = 3800 + 10000 + 2·512 + 1000 = 15,824, SD 1.2024,
    # for every w in [1000, 1088] (w >= ⌈0.1 p⌉; RTJ 2 starts at 4312 + w <= 5400): 89 BJ-optimal
    # schedules, RTJ sums 2.312 .. 2.4.  The tie-break: w = 1000, RTJ 2 SD 1.312, RTJ mean 1.156.
    return Instance(1, [Job(1, 3800, 10_000, 10_000, 512, "batch"), Job(2, 5000, 1000, 1000, 512, "rt"),
                        Job(3, 20_000, 1000, 1000, 512, "rt")], name="split-tie")


def _tied_instances() -> list[tuple[Instance, bool]]:
    """(instance, preempt): every one has several RTJ sums among its BJ-optimal schedules."""
    a = dict(sizes=(512, 1024, 2048), submit_window=1200, runtime_min=60, runtime_max=1200, runtime_step=60)
    b = dict(sizes=(512, 1024, 2048), submit_window=600, runtime_min=60, runtime_max=600, runtime_step=30)
    return [(random_instance(153, 2, 2, 4, name="2bj2rt-s153", **a), False),
            (random_instance(189, 2, 2, 4, name="2bj2rt-s189", **a), False),
            (random_instance(17, 1, 3, 4, name="1bj3rt-s17", **b), False),
            (random_instance(153, 1, 3, 4, name="1bj3rt-s153", **b), False),  # θ* = 1.0889, not 1
            (_split_tie(), True)]


@pytest.mark.parametrize("inst,preempt", _tied_instances(), ids=lambda x: getattr(x, "name", str(x)))
def test_tiebreak_agrees_with_bruteforce_on_theta_bj_and_rtj_means(inst, preempt):
    ref = bruteforce(inst.blocks, inst.jobs, theta=1.2, preempt=preempt, splits="all")
    n_rt, n_bj = len(inst.rt_jobs), len(inst.batch_jobs)
    assert len(ref.rt_sums_tied) > 1  # the RTJ mean of "the" optimum is a tie-break here
    assert ref.rt_sum == ref.rt_sums_tied[0] > ref.theta_star * n_rt  # stage 3 must solve (no θ* shortcut)
    for method in ("cpsat", "milp-disjunctive", "milp-highs", "bruteforce"):
        res = solve(inst, method, preempt=preempt, rtj_tiebreak=True)
        assert res.status == "optimal", method
        assert res.theta_used_exact == ref.theta_used, method
        assert res.evaluation.bj_sum == ref.bj_sum, method
        assert res.evaluation.rt_sum == ref.rt_sum, method
        assert res.rtj_sd_mean == pytest.approx(float(ref.rt_sum / n_rt), abs=1e-12)
        assert res.bj_sd_mean == pytest.approx(float(ref.bj_sum / n_bj), abs=1e-12)
        row = res.stages[-1]
        assert row["stage"] == "rtj_tiebreak" and row["status"] == "optimal" and "shortcut" not in row, method
        assert row["rtj_sd_mean"] == pytest.approx(float(ref.rt_sum / n_rt), abs=1e-12)
        _replays(res)


def test_split_tie_by_hand():
    inst = _split_tie()
    ref = bruteforce(inst.blocks, inst.jobs, theta=1.2, preempt=True, splits="all")
    assert ref.bj_sum == Fraction(12024, 10000) and ref.rt_sum == Fraction(2312, 1000)
    assert len(ref.rt_sums_tied) == 89 and ref.rt_sums_tied[-1] == Fraction(12, 5)
    res = solve(inst, "milp-disjunctive", rtj_tiebreak=True)
    (pl1,) = [p for p in res.placements if p.job_id == 1]
    assert (pl1.start, pl1.split, pl1.restart) == (3800, 1000, 6312) and res.rtj_sd_mean == pytest.approx(1.156)


def test_theta_star_shortcut_when_the_bj_plan_already_has_the_least_rtj_mean():
    # RTJ 2 submitted with the BJ at 0 on one block: the BJ splits around it whatever w, and the
    # BJ-optimal schedules put RTJ 2 anywhere in [5000, 5400]; the least (SD 1) is θ*'s.
    inst = Instance(1, [Job(1, 0, 10_000, 10_000, 512, "batch"), Job(2, 5000, 1000, 1000, 512, "rt"),
                        Job(3, 20_000, 1000, 1000, 512, "rt")], name="shortcut")
    ref = bruteforce(inst.blocks, inst.jobs, theta=1.2, preempt=True, splits="all")
    assert len(ref.rt_sums_tied) == 401 and ref.rt_sum == 2
    for method in ("cpsat", "milp-disjunctive"):
        res = solve(inst, method, rtj_tiebreak=True)
        assert res.status == "optimal" and res.rtj_sd_mean == pytest.approx(1.0, abs=1e-12)
        assert res.bj_sd_mean == pytest.approx(1.2024, abs=1e-12)
        row = res.stages[-1]
        assert row["stage"] == "rtj_tiebreak" and row["status"] == "optimal"
        if row.get("shortcut") is None:  # the BJ stage's plan had a larger RTJ mean: stage 3 solved it
            assert row["rtj_sd_mean_before"] > 1.0


@pytest.mark.slow
def test_table3_5000019_cpsat_and_disjunctive_agree_with_the_tiebreak():
    # docs/benchmarks.md: the same BJ optimum, RTJ means 1.110 (CP-SAT) and 1.198 (disjunctive MILP).
    inst = table3_instance(5_000_019)
    out = {}
    for method in ("cpsat", "milp-disjunctive", "milp-highs"):
        plain = solve(inst, method, workers=1, threads=1)
        tied = solve(inst, method, workers=1, threads=1, rtj_tiebreak=True)
        assert plain.status == tied.status == "optimal", method
        assert tied.bj_sd_mean == pytest.approx(plain.bj_sd_mean, abs=1e-12), method
        assert tied.theta_used == plain.theta_used == 1.2
        assert tied.rtj_sd_mean <= plain.rtj_sd_mean + 1e-12
        assert [s["stage"] for s in tied.stages] == ["theta_star", "bj", "rtj_tiebreak"]
        _replays(tied)
        out[method] = (plain, tied)
    means = [t.rtj_sd_mean for _, t in out.values()]
    assert max(means) - min(means) <= 1e-9
    assert out["milp-disjunctive"][0].rtj_sd_mean > means[0] + 0.05  # the tie the stage breaks (1.198 vs 1.110)
    assert out["cpsat"][1].evaluation.rt_sum == out["milp-disjunctive"][1].evaluation.rt_sum  # exactly


def _some_instances() -> list[Instance]:
    a = dict(sizes=(512, 1024, 2048), submit_window=1200, runtime_min=60, runtime_max=1200, runtime_step=60)
    return [random_instance(s, 2, 2, 4, name=f"2bj2rt-s{s}", **a) for s in (46, 139, 3)] + \
           [table3_instance(5_000_027), table3_instance(3)]


@pytest.mark.slow
@pytest.mark.parametrize("inst", _some_instances(), ids=lambda i: i.name)
def test_tiebreak_keeps_the_bj_mean_and_never_raises_the_rtj_mean(inst):
    for method in ("cpsat", "milp-disjunctive"):
        plain = solve(inst, method, workers=1, threads=1)
        tied = solve(inst, method, workers=1, threads=1, rtj_tiebreak=True)
        assert plain.status == tied.status == "optimal", method
        assert tied.evaluation.bj_sum == plain.evaluation.bj_sum, method  # exact Fractions
        assert tied.evaluation.rt_sum <= plain.evaluation.rt_sum, method
        assert tied.evaluation.rt_mean <= tied.theta_used_exact
        _replays(tied)


def test_sequence_milp_with_a_binding_cap_runs_the_stage_on_the_capped_model():
    inst = random_instance(153, 2, 2, 4, sizes=(512, 1024, 2048), submit_window=1200, runtime_min=60,
                           runtime_max=1200, runtime_step=60)
    plain = solve(inst, "milp-highs", preempt=False, sequences=3)
    tied = solve(inst, "milp-highs", preempt=False, sequences=3, rtj_tiebreak=True)
    assert tied.restricted and tied.status == plain.status == "optimal"
    assert tied.evaluation.bj_sum == plain.evaluation.bj_sum
    assert tied.evaluation.rt_sum <= plain.evaluation.rt_sum
    _replays(tied)


def test_default_solve_is_unchanged_and_records_no_third_stage():
    inst = random_instance(17, 1, 3, 4, sizes=(512, 1024, 2048), submit_window=600, runtime_min=60,
                           runtime_max=600, runtime_step=30)
    res = solve(inst, "milp-disjunctive")
    assert [s["stage"] for s in res.stages] == ["theta_star", "bj"]
    # the disjunctive MILP's own BJ-optimal schedule, not the least RTJ sum (3.0282...)
    assert res.evaluation.rt_sum > bruteforce(inst.blocks, inst.jobs, theta=1.2).rt_sum


def test_a_stage_that_stops_early_keeps_the_bj_plan_and_says_so():
    inst = _split_tie()
    st2_res = solve(inst, "cpsat")
    st2 = _Stage("optimal", st2_res.placements, None, 0.0, {})
    better = solve(inst, "cpsat", rtj_tiebreak=True).placements
    rows, notes = [], []

    def record(name, st, extra=None):
        rows.append({"stage": name, "status": st.status, **(extra or {})})

    def timed_out(objective, bound, limit, hint, bj_sum_bound=None):
        assert objective == "rt" and bj_sum_bound == evaluate(inst, hint).bj_sum
        return _Stage("feasible", better, 2.0, 1.0, {})

    plan, proven = _rtj_tiebreak(inst, timed_out, st2, Fraction(6, 5), None, 1.0, record, notes)
    assert plan == st2.plan and not proven
    assert rows[0]["stage"] == "rtj_tiebreak" and rows[0]["status"] == "feasible"
    assert any("not proven" in n for n in notes)

    def cheats(objective, bound, limit, hint, bj_sum_bound=None):  # a plan with a worse BJ sum
        worse = solve(inst, "cpsat", preempt=False).placements
        return _Stage("optimal", worse, 2.0, 1.0, {})

    notes.clear()
    plan, proven = _rtj_tiebreak(inst, cheats, st2, Fraction(6, 5), None, 1.0, record, notes)
    assert plan == st2.plan and not proven and any("exact check" in n for n in notes)


def test_cli_solve_and_compare_flags(tmp_path):
    inst = random_instance(17, 1, 3, 4, sizes=(512, 1024, 2048), submit_window=600, runtime_min=60,
                           runtime_max=600, runtime_step=30, name="cli")
    path = tmp_path / "i.json"
    path.write_text(json.dumps(inst.to_dict()))

    def run(*argv) -> dict:
        buf = io.StringIO()
        with redirect_stdout(buf):
            assert rtsched_main(list(argv)) == 0
        return json.loads(buf.getvalue())

    plain = run("solve", str(path), "--method", "milp-disjunctive", "--json")
    tied = run("solve", str(path), "--method", "milp-disjunctive", "--json", "--rtj-tiebreak")
    assert [s["stage"] for s in plain["stages"]] == ["theta_star", "bj"]
    assert tied["stages"][-1]["stage"] == "rtj_tiebreak" and tied["bj_sd_mean"] == plain["bj_sd_mean"]
    least = float(bruteforce(inst.blocks, inst.jobs, theta=1.2).rt_sum / 3)
    assert tied["rtj_sd_mean"] == pytest.approx(least, abs=1e-12) and least < plain["rtj_sd_mean"]
    on = run("compare", str(path), "--policies", "wcjs-jit", "--json", "--rtj-tiebreak")
    off = run("compare", str(path), "--policies", "wcjs-jit", "--json", "--no-rtj-tiebreak")
    assert on["rtj_tiebreak"] is True and off["rtj_tiebreak"] is False
    opt_on, opt_off = on["runs"][0], off["runs"][0]
    assert opt_on["rtj_sd_mean"] == pytest.approx(tied["rtj_sd_mean"], abs=1e-12)
    assert opt_on["rtj_sd_mean_before_tiebreak"] == pytest.approx(opt_off["rtj_sd_mean"], abs=1e-12)
    assert "rtj_sd_mean_before_tiebreak" not in opt_off
    assert on["runs"][1]["bj_gap"] == pytest.approx(off["runs"][1]["bj_gap"], abs=1e-12)
