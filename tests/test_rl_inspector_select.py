"""SchedInspector's model selection (issue 24 §3–4): the validation score, the choice of the best
validated epoch (``rl train --agent inspector --select-every``), and the shipped models' evaluation."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="the rl extra (gymnasium) is not installed")
pytest.importorskip("torch", reason="the rl extra (torch) is not installed")

from conftest import REPO  # noqa: E402

SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")
PRETRAINED = REPO / "rtsched" / "rl" / "pretrained" / "table5"


def test_relative_gain_by_hand():
    from rtsched.rl.inspector.select import relative_gain

    assert relative_gain(333.19, 27.97, "bsld") == pytest.approx(0.916, abs=5e-4)  # seed 000 Table 4, Lublin
    assert relative_gain(200.0, 250.0, "bsld") == pytest.approx(-0.25)  # worse than the base: negative
    assert relative_gain(0.5, 0.6, "utilization") == pytest.approx(0.2)  # higher is better there
    assert relative_gain(0.0, 3.0, "bsld") == 0.0


def test_select_every_keeps_the_epoch_with_the_best_validation_score(tmp_path):
    """Three tiny epochs scored on two validation sequences: ``best`` is the lowest validation bsld (the
    earliest among equals), best.pt scores exactly that again, the base reference is the SJF mean on the
    same sequences, and the sequences lie in the training range."""
    from rtsched.rl.inspector.select import inspector_validation
    from rtsched.rl.sequences import run_sequence
    from rtsched.rl.trace import load_trace

    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "rtsched", "rl", "train", "--agent", "inspector", "--trace", SAMPLE,
           "--epochs", "3", "--trajs-per-epoch", "2", "--n-envs", "2", "--seq-len", "32", "--start-range", "0,0.6",
           "--select-every", "1", "--validation-sequences", "2", "--out", str(out), "--no-progress", "--seed", "3"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0, res.stderr
    doc = json.loads((out / "selection.json").read_text())
    rows = doc["epochs"]
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    best = min(rows, key=lambda r: (r["validation"], r["epoch"]))
    assert doc["best"] == best
    tr = load_trace(SAMPLE)
    lo_hi = (0, round(0.6 * len(tr)))
    assert len(doc["starts"]) == 2 and all(lo_hi[0] <= s and s + 256 <= lo_hi[1] for s in doc["starts"])
    sjf = np.mean([run_sequence(tr, s, 256, "sjf", goals=("bsld",))["bsld"] for s in doc["starts"]])
    assert doc["base_value"] == pytest.approx(sjf)
    again = inspector_validation(tr, doc["starts"], 256)(str(out / "best.pt"))
    assert again["validation"] == pytest.approx(best["validation"])
    assert again["gain"] == pytest.approx(1 - best["validation"] / sjf)


def test_select_every_options_are_checked():
    base = [sys.executable, "-m", "rtsched", "rl", "train", "--agent", "inspector", "--trace", SAMPLE]
    res = subprocess.run(base + ["--validation-sequences", "3"], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 2 and "--validation-sequences: an option of --select-every" in res.stderr
    res = subprocess.run(base + ["--select-every", "-1"], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 2 and "--select-every: must be at least 0" in res.stderr


@pytest.mark.skipif(not (PRETRAINED / "inspector-lublin-1-sjf.pt").exists(), reason="shipped models absent")
@pytest.mark.parametrize("base", ["sjf", "f1"])
def test_shipped_inspectors_load_and_evaluate(base):
    """Each shipped Lublin-1 inspector loads, inspects its base on the sample trace, and the
    per-sequence values agree with the mean; its manifest entry names the base."""
    from rtsched.rl.modelfiles import read_model_file
    from rtsched.rl.tables import inspect_sequences
    from rtsched.rl.trace import load_trace

    path = str(PRETRAINED / f"inspector-lublin-1-{base}.pt")
    assert read_model_file(path)["env"]["base"] == base
    tr = load_trace(SAMPLE)
    run = inspect_sequences(path, tr, [0, 300], 128, "none", None)
    assert len(run.values) == 2 and run.value == pytest.approx(np.mean(run.values))
    assert 0 < run.inspections and 0 <= run.rejections <= run.inspections
    manifest = json.loads((PRETRAINED / "manifest.json").read_text())
    entry = next(m for m in manifest["models"] if m["file"] == Path(path).name)
    assert entry["base"] == base and entry["agent"] == "inspector"


def test_reward_and_learning_rate_are_options_stored_in_the_model_file(tmp_path):
    """``--reward authors --pi-lr 1e-3`` (the authors' code's bounded reward, seed 000's stated learning
    rate) reach the environment and PPO and are recorded in the checkpoint and best.pt; a run without
    them records the defaults (percentage, 3e-4); --resume with another --reward is refused naming it."""
    from rtsched.rl.modelfiles import read_model_file

    def run(out, *extra):
        cmd = [sys.executable, "-m", "rtsched", "rl", "train", "--agent", "inspector", "--trace", SAMPLE,
               "--epochs", "1", "--trajs-per-epoch", "2", "--n-envs", "2", "--seq-len", "32", "--no-progress",
               "--out", str(out), *extra]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)

    res = run(tmp_path / "code", "--reward", "authors", "--pi-lr", "1e-3", "--select-every", "1",
              "--validation-sequences", "1", "--start-range", "0,0.6")
    assert res.returncode == 0, res.stderr
    for name in ("checkpoint.pt", "best.pt"):
        doc = read_model_file(str(tmp_path / "code" / name))
        assert doc["env"]["reward"] == "authors" and doc["ppo"]["pi_lr"] == 1e-3, name
    res = run(tmp_path / "plain")
    assert res.returncode == 0, res.stderr
    doc = read_model_file(str(tmp_path / "plain" / "checkpoint.pt"))
    assert doc["env"]["reward"] == "percentage" and doc["ppo"]["pi_lr"] == 3e-4
    res = run(tmp_path / "plain", "--resume", "--epochs", "2", "--reward", "winloss")
    assert res.returncode == 1 and "reward" in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_authors_reward_is_bounded_by_hand():
    """seed 000 §3.4: (orig − insp) / orig; the authors' code: (orig − insp) / max(orig, insp, 1)."""
    from rtsched.rl.inspector.env import relative_reward

    assert relative_reward("percentage", 200.0, 50.0, "bsld") == pytest.approx(0.75)
    assert relative_reward("authors", 200.0, 50.0, "bsld") == pytest.approx(0.75)
    assert relative_reward("percentage", 10.0, 1000.0, "bsld") == pytest.approx(-99.0)  # unbounded below
    assert relative_reward("authors", 10.0, 1000.0, "bsld") == pytest.approx(-0.99)  # in [-1, 1]
    assert relative_reward("authors", 0.5, 0.25, "bsld") == pytest.approx(0.25)  # the max(.., 1) floor
