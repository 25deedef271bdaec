"""Model selection on validation sequences disjoint from the test sequences (rtsched.rl.selection)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("torch", reason="the rl extra (torch) is not installed")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rtsched.rl.selection import train_selected, validation_starts, windows_overlap  # noqa: E402

from conftest import REPO  # noqa: E402

SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")
TABLE_V_STARTS = [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085]


def test_windows_overlap_by_hand():
    assert windows_overlap(0, 10, 9, 5) and windows_overlap(9, 5, 0, 10)
    assert not windows_overlap(0, 10, 10, 5) and not windows_overlap(10, 5, 0, 10)


@settings(max_examples=50, deadline=None)
@given(tests=st.lists(st.integers(0, 9000), min_size=1, max_size=10), seed=st.integers(0, 100))
def test_validation_windows_avoid_every_test_window(tests, seed):
    try:
        vs = validation_starts(10_000, 256, 5, [(t, 1024) for t in tests], seed=seed)
    except ValueError:
        return  # not enough room: a clear error
    assert len(set(vs)) == 5
    assert all(0 <= s <= 10_000 - 256 for s in vs)
    assert not any(windows_overlap(s, 256, t, 1024) for s in vs for t in tests)


def test_table_v_leaves_little_room_for_validation_windows():
    vs = validation_starts(10_000, 512, 10, [(t, 1024) for t in TABLE_V_STARTS], seed=2)
    assert all(s + 512 <= 1981 or 6252 <= s <= 7085 - 512 or s >= 9874 for s in vs)
    assert validation_starts(10_000, 512, 10, [(t, 1024) for t in TABLE_V_STARTS], seed=2) == vs  # seeded
    # 1,024-job windows fit only before the first test sequence (starts 0..957)
    assert max(validation_starts(10_000, 1024, 10, [(t, 1024) for t in TABLE_V_STARTS], seed=2)) <= 957
    with pytest.raises(ValueError, match="only 958 1024-job windows avoid the 10 test windows"):
        validation_starts(10_000, 1024, 959, [(t, 1024) for t in TABLE_V_STARTS], seed=2)


def test_train_selected_chooses_on_validation_then_tests_once(tmp_path):
    from rtsched.rl.evaluate import evaluate

    out = str(tmp_path / "run")
    res = train_selected(SAMPLE, out, 2, test_starts=[300, 1200], test_len=200, val_len=100, n_val=4,
                         backfill="rlscheduler", seq_len=32, trajs_per_epoch=2, n_envs=2, train_pi_iters=2,
                         train_v_iters=2, seed=1)
    assert res["epochs"] == 2
    for e in (1, 2):
        assert os.path.exists(os.path.join(out, "snapshots", f"epoch-{e:04d}.pt"))
    vals = {r["epoch"]: r["validation"] for r in res["scores"]}
    assert res["selected_epoch"] == min(vals, key=lambda e: (vals[e], e))
    assert not any(windows_overlap(s, 100, t, 200) for s in res["val_starts"] for t in (300, 1200))
    # the validation score is the selected snapshot's mean avg bsld on the validation sequences, the test
    # score its mean on the test sequences
    snap = os.path.join(out, "snapshots", f"epoch-{res['selected_epoch']:04d}.pt")
    v = evaluate([snap], SAMPLE, starts=res["val_starts"], seq_len=100, backfill="rlscheduler")
    assert np.mean([r["avg_bsld"] for r in v]) == pytest.approx(res["validation"])
    t = evaluate([snap], SAMPLE, starts=[300, 1200], seq_len=200, backfill="rlscheduler")
    assert np.mean([r["avg_bsld"] for r in t]) == pytest.approx(res["test"])
    doc = json.load(open(os.path.join(out, "selection.json")))
    assert doc["best"]["epoch"] == res["selected_epoch"] and doc["test"]["value"] == pytest.approx(res["test"])
    # resuming to 3 epochs keeps the earlier validation scores and adds one
    res2 = train_selected(SAMPLE, out, 3, test_starts=[300, 1200], test_len=200, val_len=100, n_val=4,
                          backfill="rlscheduler", seq_len=32, trajs_per_epoch=2, n_envs=2, train_pi_iters=2,
                          train_v_iters=2, seed=1)
    assert res2["epochs"] == 3 and {r["epoch"] for r in res2["scores"]} == {1, 2, 3}


def test_trajectory_filtering_stages_and_selection_over_both(tmp_path):
    """filter_epochs: stage 1 on windows whose SJF score lies in the range, stage 2 on all windows from
    stage 1's model; the choice runs over both stages' snapshots."""
    import torch

    out = str(tmp_path / "run")
    kw = dict(test_starts=[300, 1200], test_len=200, val_len=100, n_val=4, backfill="none", seq_len=32,
              trajs_per_epoch=2, n_envs=2, train_pi_iters=2, train_v_iters=2, seed=1)
    with pytest.raises(ValueError, match="filter_epochs"):
        train_selected(SAMPLE, out, 2, filter_epochs=2, **kw)
    res = train_selected(SAMPLE, out, 3, filter_epochs=1, **kw)
    stages = sorted((r["stage"], r["epoch"]) for r in res["scores"])
    assert stages == [(1, 1), (2, 1), (2, 2)]
    best = min(res["scores"], key=lambda r: (r["validation"], r["stage"], r["epoch"]))
    assert (res["selected_stage"], res["selected_epoch"]) == (best["stage"], best["epoch"])
    stage1 = torch.load(os.path.join(out, "stage1", "checkpoint.pt"), weights_only=False)["env"]
    stage2 = torch.load(os.path.join(out, "checkpoint.pt"), weights_only=False)["env"]
    lo, hi = stage1["sjf_filter"]  # "auto": (median, 2 x mean) of sampled SJF scores
    assert 0 < lo < hi
    assert stage2.get("sjf_filter") is None
    doc = json.load(open(os.path.join(out, "selection.json")))
    assert doc["test"]["stage"] == best["stage"] and os.path.exists(os.path.join(out, doc["test"]["snapshot"]))


def test_train_selected_continues_a_finished_run_from_its_weights(tmp_path):
    """init_from (without filtering): the run starts from that model's weights, exactly as
    ``rtsched.rl.api.train(init_from=...)`` does with the same settings (here a policy rate of 1e-3)."""
    import torch

    from rtsched.rl.api import train

    kw = dict(backfill="none", seq_len=32, trajs_per_epoch=2, n_envs=2, train_pi_iters=2, train_v_iters=2, seed=1)
    first = str(tmp_path / "first")
    train_selected(SAMPLE, first, 1, test_starts=[300, 1200], test_len=200, val_len=100, n_val=4, **kw)
    start = os.path.join(first, "checkpoint.pt")
    out = str(tmp_path / "continued")
    res = train_selected(SAMPLE, out, 1, test_starts=[300, 1200], test_len=200, val_len=100, n_val=4,
                         init_from=start, pi_lr=1e-3, **kw)
    plain = str(tmp_path / "plain")
    train("rlscheduler", SAMPLE, goal="bsld", epochs=1, out=plain, init_from=start, pi_lr=1e-3, **kw)
    a = torch.load(os.path.join(out, "checkpoint.pt"), weights_only=False)
    b = torch.load(os.path.join(plain, "checkpoint.pt"), weights_only=False)
    assert all(torch.equal(a["actor"][k], b["actor"][k]) for k in a["actor"])
    fresh = torch.load(start, weights_only=False)
    assert not all(torch.equal(a["actor"][k], fresh["actor"][k]) for k in a["actor"])  # it trained on
    assert res["epochs"] == 1 and res["selected_stage"] == 1
