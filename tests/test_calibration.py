"""Calibration (issue 24 §1): each seed paper's baseline heuristics on the project's version of its
workload, computed here by the code and compared with the paper's own numbers (docs/rl.md,
"Calibration").  Tolerance: 10 % of the paper's number; where a difference is explained in
docs/rl.md, the test pins the explanation's claim instead (never a copy of one of our results).
"""
from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest

from conftest import shared_data
from rtsched.generators.vasplike import CALIBRATED, STATED
from rtsched.rl.evaluate import sequence_starts
from rtsched.rl.rlschert.results import PAPER_TABLE7, evaluate_rlschert, vasplike_sequences
from rtsched.rl.sequences import run_sequence
from rtsched.rl.trace import read_rl_trace

REL = 0.10  # the tolerance: within 10 % of the paper's number


def assert_within(ours: float, paper: float, what: str, rel: float = REL) -> None:
    assert abs(ours - paper) <= rel * paper, f"{what}: ours {ours:.2f}, paper {paper} (more than {rel:.0%} apart)"


# ---- seed 001 RLSchert: 16 held-out VASP-like sequences, 20 units, rate 0.7 over 200 slots --------------------
# Table 8 (average completion, slots): the "with kill" row is clean; the "without kill" heuristic cells are
# 80.30-80.37 in an order the extraction lost (digest §6.3), so 80.3 for both.
PAPER_TABLE8 = {"sjf": 80.3, "saf": 80.3, "sjf+kill": 80.82, "saf+kill": 81.13}
TABLE7_KEY = {"sjf": "SJF", "saf": "SAF", "sjf+kill": "SJF + rule kill", "saf+kill": "SAF + rule kill"}


def offered_load(sequences, units: int = 20, slots: int = 200) -> float:
    """Work (unit-slots) over capacity during the arrival slots."""
    work = sum(j.runtime * j.nodes for s in sequences for j in s.workload.jobs) / 300
    return work / (len(sequences) * slots * units)


@pytest.fixture(scope="module")
def rlschert_calibrated():
    seqs = vasplike_sequences(16, **asdict(CALIBRATED))
    return seqs, {r["scheduler"]: r for r in evaluate_rlschert(list(TABLE7_KEY), seqs, 20)}


def test_rlschert_heuristics_match_table7_on_the_calibrated_workload(rlschert_calibrated):
    _, rows = rlschert_calibrated
    for name, key in TABLE7_KEY.items():
        assert_within(rows[name]["slowdown"], PAPER_TABLE7[key], f"seed 001 Table 7 {key} (average slowdown)")


def test_rlschert_heuristics_match_table8_completion(rlschert_calibrated):
    _, rows = rlschert_calibrated
    for name, paper in PAPER_TABLE8.items():
        assert_within(rows[name]["completion"], paper, f"seed 001 Table 8 {name} (average completion, slots)")


def test_the_stated_set_is_the_lighter_workload_docs_explain(rlschert_calibrated):
    """docs/rl.md: the stated figures (mean 10 slots × 3 units) load 20 units about 1.07 times and give
    SAF well under half the paper's slowdown; the authors' job set loads them about 1.9 times."""
    seqs, _ = rlschert_calibrated
    stated = vasplike_sequences(16, **asdict(STATED))
    assert 1.0 < offered_load(stated) < 1.15 and 1.75 < offered_load(seqs) < 2.0
    saf = evaluate_rlschert(["saf"], stated, 20)[0]["slowdown"]
    assert saf < 0.5 * PAPER_TABLE7["SAF"]


# ---- seed 000 SchedInspector, Table 4 (SJF base, no backfilling, 50 × 256-job sequences) ----------------------
PAPER_TABLE4_BASE = {"Lublin-1": 333.19, "SDSC-SP2": 149.5}
# Table 5 (no backfilling): the base policies' utilization on Lublin, in %.
PAPER_TABLE5_LUBLIN = {"sjf": 61.49, "f1": 67.37}


def _draw(trace, seq_len: int, n: int, seed: int = 1) -> list[int]:
    return sequence_starts(trace, seq_len, n, seed)  # what `rtsched rl evaluate --n-sequences N --seed S` draws


def test_schedinspector_base_sjf_on_lublin1_matches_table4():
    tr = read_rl_trace(str(shared_data("traces", "swf", "lublin_256.swf")))
    starts = _draw(tr, 256, 50)
    for base in ("sjf", "f1"):
        runs = [run_sequence(tr, s, 256, base, goals=("bsld", "utilization")) for s in starts]
        if base == "sjf":
            assert_within(float(np.mean([r["bsld"] for r in runs])), PAPER_TABLE4_BASE["Lublin-1"],
                          "seed 000 Table 4 Base→Lublin (SJF, bsld)")
        assert_within(100 * float(np.mean([r["utilization"] for r in runs])), PAPER_TABLE5_LUBLIN[base],
                      f"seed 000 Table 5 Lublin {base} utilization (no backfilling)")


def test_schedinspector_sdsc_sp2_difference_is_the_shared_files_part_of_the_log():
    """docs/rl.md: the shared SDSC-SP2 file is the log's first 4,961 jobs; its 256-job windows average a
    third of the paper's 149.5 (whose windows come from the full log's last 80 %), so no draw from it
    can reach the paper's value."""
    tr = read_rl_trace(str(shared_data("traces", "swf", "sdsc-sp2-1998-first4961.swf")))
    every = [run_sequence(tr, s, 256, "sjf", goals=("bsld",))["bsld"] for s in range(0, len(tr) - 256, 64)]
    assert np.mean(every) < 0.5 * PAPER_TABLE4_BASE["SDSC-SP2"]
    drawn = float(np.mean([run_sequence(tr, s, 256, "sjf", goals=("bsld",))["bsld"] for s in _draw(tr, 256, 50)]))
    assert drawn < 0.5 * PAPER_TABLE4_BASE["SDSC-SP2"]


# ---- seed 004 split window: SJF bsld 73.3 on Lublin-256 (episodes of 1,000 placements, random starts) ----------
PAPER_DBF_SJF_BSLD = 73.3


def _lublin_1000(n: int, policies):
    tr = read_rl_trace(str(shared_data("traces", "swf", "lublin_256.swf")))
    starts = _draw(tr, 1000, n)
    return {(p, b): float(np.mean([run_sequence(tr, s, 1000, p, backfill=b, goals=("bsld",))["bsld"] for s in starts]))
            for p, b in policies}


def test_splitwindow_sjf_bsld_is_runtime_sjf_with_rlschedulers_backfilling():
    """The paper's 73.3 is reached by SJF on requested runtime with RLScheduler's backfilling (the code
    base whose Lublin file the paper uses), on ten 1,000-job sequences."""
    got = _lublin_1000(10, [("sjf", "rlscheduler")])
    assert_within(got[("sjf", "rlscheduler")], PAPER_DBF_SJF_BSLD, "seed 004 SJF bsld")


@pytest.mark.slow
def test_splitwindow_sjf_on_the_papers_100_episodes_and_its_own_sjf_definition():
    """The paper's protocol (100 evaluation episodes) confirms the match; the paper's own definition of
    SJF (smallest requested cores) with EASY does not reach 73.3 (docs/rl.md explains)."""
    got = _lublin_1000(100, [("sjf", "rlscheduler"), ("smallest", "easy"), ("sjf", "easy")])
    assert_within(got[("sjf", "rlscheduler")], PAPER_DBF_SJF_BSLD, "seed 004 SJF bsld, 100 episodes")
    assert got[("smallest", "easy")] > (1 + REL) * PAPER_DBF_SJF_BSLD
    assert got[("sjf", "easy")] > (1 + REL) * PAPER_DBF_SJF_BSLD
