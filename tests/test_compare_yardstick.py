"""rtsched compare's fair yardstick (issue 23 §2): θ violations, gap ranges, paired bootstrap
intervals against a reference and against replan, a reading that says only what they support,
fresh sets from --seeds, duplicate instances refused, replan's options in the cache keys."""
from __future__ import annotations

import json
import math

import pytest

from milp.compare import (OPTIMUM, PolicyRun, paired, paired_bootstrap, reading, run_keys, table3)
from milp.instance import save_instance, table3_instance
from rtsched.cli import main


def runs_for(values: dict[str, list[tuple[float, float]]], theta: float = 1.2) -> list[PolicyRun]:
    """PolicyRuns from {policy: [(bj, rtj) per instance]}; the optimum's rows carry θ_used."""
    out = []
    n = len(next(iter(values.values())))
    opt = values[OPTIMUM]
    for i in range(n):
        for name, vals in values.items():
            bj, rt = vals[i]
            r = PolicyRun(f"i{i}", name, bj, rt, "optimal" if name == OPTIMUM else "simulated",
                          {"theta": theta} if name == OPTIMUM else {})
            r.bj_gap = bj / opt[i][0] - 1
            r.rtj_gap = rt / opt[i][1] - 1
            r.matches_optimum = name == OPTIMUM
            out.append(r)
    return out


def test_paired_bootstrap_is_seeded_and_brackets_the_mean():
    diffs = [0.1, 0.3, -0.05, 0.2, 0.15, 0.25]
    a = paired_bootstrap(diffs)
    assert a == paired_bootstrap(diffs)  # the same numbers on every run
    mean, lo, hi = a
    assert mean == pytest.approx(sum(diffs) / len(diffs))
    assert lo < mean < hi and lo >= min(diffs) and hi <= max(diffs)
    assert paired_bootstrap([0.5] * 4) is None  # too few to say anything
    assert paired_bootstrap([0.5] * 6) == (0.5, 0.5, 0.5)  # no spread: a point


def test_table_counts_theta_violations_and_gap_ranges_and_pairs_against_reference_and_replan():
    # "baseline" beats the optimum's BJ mean on every instance by breaking θ there.
    values = {OPTIMUM: [(2.0, 1.2)] * 6,
              "wcjs-jit": [(2.4, 1.1), (2.2, 1.2), (2.6, 1.15), (2.3, 1.1), (2.5, 1.2), (2.4, 1.1)],
              "baseline": [(1.8, 1.9), (1.9, 2.0), (1.7, 1.8), (1.8, 2.1), (1.9, 1.9), (1.8, 2.0)],
              "replan": [(2.1, 1.2), (2.0, 1.2), (2.2, 1.1), (2.1, 1.2), (2.1, 1.2), (2.0, 1.15)]}
    rows = {r["algorithm"]: r for r in table3(runs_for(values))}
    assert rows["baseline"]["theta_violations"] == 6 and rows["wcjs-jit"]["theta_violations"] == 0
    assert rows[OPTIMUM]["theta_violations"] is None
    assert rows["baseline"]["bj_gap_best"] == pytest.approx(-0.15) and rows["baseline"]["bj_gap_worst"] == pytest.approx(-0.05)
    v = rows["replan"]["vs_reference"]
    assert v["against"] == "wcjs-jit" and v["instances"] == 6
    assert v["bj"][0] == pytest.approx(sum(a[0] - b[0] for a, b in zip(values["replan"], values["wcjs-jit"])) / 6)
    assert v["bj"][2] < 0  # replan's BJ mean is lower on every instance
    assert rows["wcjs-jit"]["vs_yardstick"]["against"] == "replan"
    assert rows["replan"]["vs_yardstick"] is None and rows["wcjs-jit"]["vs_reference"] is None
    text = reading(list(rows.values()))
    # BJ alone is never compared across policies that break θ: baseline, below the optimum on BJ, is not "closest"
    assert "baseline is closest" not in text
    assert "of the policies that keep θ on every instance, replan is closest to the optimum" in text
    assert "baseline" in text  # it is placed by the intervals (lower BJ, higher RTJ)
    assert "lower on one mean and higher on the other: baseline" in text


def test_the_reading_refuses_bj_comparisons_when_every_policy_breaks_theta():
    values = {OPTIMUM: [(2.0, 1.2)] * 5, "wcjs-jit": [(1.9, 1.5)] * 5, "baseline": [(1.8, 1.9)] * 5}
    text = reading(table3(runs_for(values), yardstick=None))
    assert "every policy breaks θ on some instance, so BJ gaps are not compared" in text


def test_replan_options_enter_the_cache_key():
    inst = [table3_instance(0)]
    k_default = run_keys(inst, ["replan"], "jit", {})[0]
    assert k_default == run_keys(inst, ["replan:ms=200"], "jit", {})[0]  # the same policy (200 ms is the default)
    assert k_default != run_keys(inst, ["replan:ms=300"], "jit", {})[0]
    assert k_default != run_keys(inst, ["replan:k=4"], "jit", {})[0]


def test_compare_refuses_the_same_instance_twice(tmp_path, capsys):
    save_instance(table3_instance(1), tmp_path / "a.json")
    save_instance(table3_instance(1), tmp_path / "b.json")
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "b.json: the same instance as" in err and "a.json" in err


@pytest.mark.parametrize("argv, message", [
    (["--count", "3"], "--count and --walltime-factor shape a fresh set"),
    (["--seeds", "5", "--walltime-factor", "0.5,1"], "--walltime-factor needs 1 <= LO <= HI"),
    (["--seeds", "5", "--walltime-factor", "x"], "expected LO,HI"),
    (["--seeds", "9-3"], "--seeds: expected"),
    (["--seeds", "1,2", "--count", "4"], "--count goes with --seeds S"),
    (["--replan", "wcjs"], "--replan: expected replan"),
])
def test_compare_usage_errors(argv, message, capsys):
    assert main(["compare", "--no-progress", *argv]) == 2
    assert message in capsys.readouterr().err


def test_compare_generates_a_fresh_set_and_its_json_has_every_instance(capsys):
    rc = main(["compare", "--seeds", "900", "--count", "2", "--walltime-factor", "1,1", "--policies", "wcjs-jit",
               "--replan", "replan:ms=50", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["instances"] == ["table3-900", "table3-901"] and out["walltime_factor"] == "1,1"
    assert out["policies"] == ["wcjs-jit", "replan:ms=50"] and out["yardstick"] == "replan:ms=50"
    runs = out["runs"]
    assert {(r["instance"], r["policy"]) for r in runs} == {
        (i, p) for i in ("table3-900", "table3-901") for p in ("optimum", "wcjs-jit", "replan:ms=50")}
    inst = table3_instance(900, walltime_factor=(1.0, 1.0))
    assert all(j.walltime == j.runtime for j in inst.jobs)
    assert out["seconds"] > 0 and math.isfinite(out["seconds"])
