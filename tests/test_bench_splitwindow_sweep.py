"""``bench/bench_splitwindow.py --recipe clone``: the M sweep by imitation of each configuration's SJF
window teacher, resumable per configuration, with the teacher scored beside each agent."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO

SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")


def _sweep(tmp_path) -> tuple[dict, str]:
    out, js = tmp_path / "sweep", tmp_path / "sweep.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "bench_splitwindow.py"), "--trace", SAMPLE,
                           "--recipe", "clone", "--mask-invalid", "--sizes", "4", "--tails", "0,2",
                           "--placements", "60", "--hidden", "16,8", "--clone-epochs", "2", "--clone-episodes", "1",
                           "--eval-jobs", "100", "--eval-segments", "2", "--out", str(out), "--json", str(js)],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(js.read_text()), proc.stdout


@pytest.mark.slow
def test_clone_sweep_scores_each_configuration_beside_its_teacher_and_resumes(tmp_path):
    from rtsched.rl.modelfiles import load_model

    doc, text = _sweep(tmp_path)
    assert [(c["head"], c["tail"]) for c in doc["configs"]] == [(4, 0), (2, 2)]
    assert doc["settings"]["recipe"] == "clone" and doc["settings"]["mask_invalid"] is True
    for c in doc["configs"]:
        model = load_model(str(tmp_path / "sweep" / f"{c['head']}-{c['tail']}"))
        assert (model.env["head"], model.env["tail"], model.env["mask_invalid"]) == (c["head"], c["tail"], True)
        assert c["avg_wait"] > 0 and c["teacher_wait"] > 0 and not c["reused"] and c["samples"] > 0
    assert "best split vs head-only" in text
    again, text2 = _sweep(tmp_path)  # every configuration is already cloned: reused, same agents, same scores
    assert all(c["reused"] for c in again["configs"]) and "(reused)" in text2
    assert [c["avg_wait"] for c in again["configs"]] == [c["avg_wait"] for c in doc["configs"]]


def test_test_segments_held_out_or_at_random_over_the_whole_trace_as_the_paper():
    """``--protocol held-out`` spaces the segments evenly over the last 20 % (the split the models never
    trained on); ``--protocol paper`` draws them at random over the whole trace, seeded and distinct."""
    sys.path.insert(0, str(REPO / "bench"))
    from bench_splitwindow import segment_starts

    held = segment_starts(10_000, 1000, 4, "held-out", 0)
    assert held == [8000, 8333, 8666, 9000]
    paper = segment_starts(10_000, 1000, 40, "paper", 1)
    assert paper == segment_starts(10_000, 1000, 40, "paper", 1) != segment_starts(10_000, 1000, 40, "paper", 2)
    assert len(set(paper)) == 40 and min(paper) >= 0 and max(paper) <= 9000
    assert min(paper) < 8000 and any(s > 4500 for s in paper)  # the training part is drawn from, not only the tail
