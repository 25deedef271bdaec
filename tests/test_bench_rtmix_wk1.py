"""The weeks bench's paired summary against WCJS-JIT, by hand."""
from __future__ import annotations

import sys

import pytest

from conftest import REPO


def test_paired_over_seeds_counts_and_differences_by_hand():
    sys.path.insert(0, str(REPO / "bench"))
    from bench_rtmix_wk1 import paired_over_seeds

    # five seeds; the policy's (RTJ, BJ) minus WCJS-JIT's: (−1, −1), (−1, +0.5), (+1, −1), (−1, −1), (−1, +0.25)
    ref = [(2.0, 3.0)] * 5
    mine = [(1.0, 2.0), (1.0, 3.5), (3.0, 2.0), (1.0, 2.0), (1.0, 3.25)]
    rows = ([{"policy": "wcjs-jit", "seed": s, "rtj_bsld": r, "bj_bsld": b} for s, (r, b) in enumerate(ref)]
            + [{"policy": "m", "seed": s, "rtj_bsld": r, "bj_bsld": b} for s, (r, b) in enumerate(mine)])
    rec = paired_over_seeds(rows, "m")
    assert rec["seeds"] == [0, 1, 2, 3, 4]
    assert rec["rtj_bsld"]["diff"] == pytest.approx(-0.6) and rec["bj_bsld"]["diff"] == pytest.approx(-0.45)
    lo, hi = rec["bj_bsld"]["ci"][1:]
    assert -1.0 <= lo < -0.45 < hi <= 0.5  # a bootstrap of these five differences stays within their range
    assert rec["better_on_both"] == 2  # seeds 0 and 3
    assert rec["bj_worse"] == 2 and rec["bj_worse_max"] == pytest.approx(0.5)  # seeds 1 and 4
    assert rec["no_worse"] is True and rec["better"] is True  # on the means
