"""``rtsched rl evaluate --trace vasplike``'s evaluation (``rtsched.rl.rlschert.evaluate``): the held-out
sequences, the rows' scores against the results table's, the policies it refuses."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest

from rtsched.errors import OptionError
from rtsched.generators.vasplike import CALIBRATED, HELD_OUT_SEEDS, STATED, generate_vasplike, trace_param_set
from rtsched.rl.rlschert.evaluate import evaluate_vasplike, vasplike_scheduler
from rtsched.rl.rlschert.results import evaluate_rlschert, vasplike_sequences


def test_rows_are_per_held_out_sequence_and_agree_with_the_results_table():
    rows = evaluate_vasplike(["saf", "sjf+kill"], "vasplike", 3)
    assert [(r["policy"], r["start"]) for r in rows] == [(p, HELD_OUT_SEEDS.start + k) for p in ("saf", "sjf+kill")
                                                        for k in range(3)]
    assert [r["jobs"] for r in rows[:3]] == [len(generate_vasplike(s, CALIBRATED).workload)
                                            for s in range(HELD_OUT_SEEDS.start, HELD_OUT_SEEDS.start + 3)]
    table = {r["scheduler"]: r for r in evaluate_rlschert(["saf", "sjf+kill"], vasplike_sequences(3, **asdict(CALIBRATED)),
                                                           20)}
    for name in ("saf", "sjf+kill"):
        mine = [r for r in rows if r["policy"] == name]
        assert np.allclose([r["avg_slowdown"] for r in mine], table[name]["slowdown_per_sequence"])
        assert sum(r["kills"] for r in mine) == table[name]["kills"]
        # all job sizes are ≥ 1 slot = 300 s > τ, so the bounded slowdown is the slowdown here
        assert np.allclose([r["avg_bsld"] for r in mine], [r["avg_slowdown"] for r in mine])
    assert table["sjf+kill"]["kills"] > 0  # the rule kill fires: killed jobs' turnaround counts their lost work


def test_the_stated_set_is_reachable_by_name():
    rows = evaluate_vasplike(["saf"], "vasplike-stated", 2)
    assert [r["jobs"] for r in rows] == [len(generate_vasplike(s, STATED).workload)
                                        for s in range(HELD_OUT_SEEDS.start, HELD_OUT_SEEDS.start + 2)]
    assert [trace_param_set(t) for t in ("vasplike", "vasplike-stated", "x.swf", None)] == \
        ["calibrated", "stated", None, None]


@pytest.mark.parametrize("policy, message", [
    ("f1", "--policies f1: not a policy of the VASP-like workload"),
    ("missing.pt", r"--policies missing.pt: model file not found"),
    ("rtsched/rl/pretrained/table5/rl-lublin-1-rlscheduler.pt", "a model of the rlscheduler agent cannot run"),
])
def test_policies_that_cannot_run_on_the_workload_are_named(policy, message):
    with pytest.raises(OptionError, match=message):
        vasplike_scheduler(policy)


def test_the_number_of_sequences_stays_inside_the_held_out_range():
    with pytest.raises(OptionError, match="--n-sequences: the VASP-like workload holds out 1000 sequences"):
        evaluate_vasplike(["saf"], "vasplike", len(HELD_OUT_SEEDS) + 1)


def test_cli_evaluates_the_workload_like_a_trace(capsys):
    import json

    from rtsched.cli import main

    assert main(["rl", "evaluate", "--trace", "vasplike", "--policies", "saf,rlschert-vasplike-kill",
                 "--n-sequences", "2", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["trace"] == "vasplike" and got["parameter_set"] == "calibrated" and got["machine"] == "flat:20"
    assert got["starts"] == [HELD_OUT_SEEDS.start, HELD_OUT_SEEDS.start + 1]
    rows = got["results"]
    assert [(r["policy"], r["start"]) for r in rows] == [(p, s) for p in ("saf", "rlschert-vasplike-kill")
                                                        for s in got["starts"]]
    assert all({"avg_bsld", "avg_wait", "avg_slowdown", "jobs", "kills"} <= set(r) for r in rows)
    assert [r["avg_slowdown"] for r in rows] == [r["avg_slowdown"] for r in
                                                 evaluate_vasplike(["saf", "rlschert-vasplike-kill"], "vasplike", 2)]
    assert main(["rl", "evaluate", "--trace", "vasplike-stated", "--policies", "saf", "--n-sequences", "1"]) == 0
    assert "vasplike-stated (stated VASP-like workload)" in capsys.readouterr().out
