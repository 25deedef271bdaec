"""RLSchert training (PPO + imitation), its model as a core policy, the CLI and the shipped model."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from rtsched.rl.trainer import PPOConfig, imitation_weight


def test_imitation_weight_schedule():
    cfg = PPOConfig(imitation=0.5, imitation_hold=50, imitation_end=150)
    assert [imitation_weight(cfg, e) for e in (1, 50, 51, 100, 149, 150, 151)] == \
        [0.5, 0.5, pytest.approx(0.495), 0.25, pytest.approx(0.005), 0.0, 0.0]
    assert imitation_weight(PPOConfig(), 1) == 0.0


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from rtsched.rl.api import train

    out = tmp_path_factory.mktemp("rlschert") / "run"
    res = train("rlschert", "vasplike", epochs=2, out=str(out), simu_len=25, trajs_per_epoch=2, n_envs=2,
                imitation=0.5, imitation_hold=1, imitation_end=3, train_sequences=2, max_steps=400)
    return out, res


@pytest.mark.slow
def test_training_records_imitation_and_kills(tiny_model):
    out, res = tiny_model
    h = res["history"]
    assert [r["epoch"] for r in h] == [1, 2]
    assert h[0]["imitation_weight"] == 0.5 and h[1]["imitation_weight"] == pytest.approx(0.25)
    assert all(np.isfinite(r["loss_imitation"]) for r in h)
    assert (out / "checkpoint.pt").exists() and (out / "progress.json").exists()


@pytest.mark.slow
def test_model_schedules_through_the_pipeline(tiny_model):
    from heuristics.registry import make_policy
    from rtsched.generators.vasplike import generate_vasplike
    from rtsched.pipeline import RunSpec, execute
    from rtsched.rl.rlschert.core import ArrayPredictions

    out, _ = tiny_model
    q = generate_vasplike(7, )
    preds = ArrayPredictions({j.id: r for j, r in zip(q.workload.jobs, q.running)})
    for rule_kill in (False, True):
        pol = make_policy(str(out / "checkpoint.pt"), predictions=preds, rule_kill=rule_kill)
        rec = execute(RunSpec(machine="flat:20"), workload=q.workload, policy=pol)  # validated, lost work included
        assert len(rec.result.outcomes) == len(q.workload) and all(o.end > 0 for o in rec.result.outcomes)


@pytest.mark.slow
def test_shipped_model_by_name_in_simulate(tmp_path):
    from rtsched.rl.hook import pretrained_path

    if pretrained_path("rlschert-vasplike-kill") is None:
        pytest.fail("the shipped model rtsched/rl/pretrained/rlschert/rlschert-vasplike-kill.pt is missing")
    from rtsched.generators.vasplike import generate_vasplike
    from rtsched.io.swf import write_swf

    swf = tmp_path / "v.swf"
    write_swf(generate_vasplike(3).workload, str(swf))
    r = subprocess.run([sys.executable, "-m", "rtsched", "simulate", str(swf), "--machine", "flat:20", "--no-progress",
                        "--policy", "rlschert-vasplike-kill", "--json"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["all"]["n"] == len(generate_vasplike(3).workload)


@pytest.mark.parametrize("argv, msg", [
    (["--agent", "rlschert", "--trace", "vasplike", "--mode", "slotted", "--job-rate", "1.5"], "--job-rate"),
    (["--agent", "rlschert", "--trace", "x.swf", "--mode", "slotted"], "slotted"),
    (["--agent", "rlscheduler", "--trace", "vasplike", "--no-kill"], "rlschert agent only"),
])
def test_cli_usage_errors(argv, msg, tmp_path, capsys):
    from rtsched.cli import main

    try:
        rc = main(["rl", "train", *argv, "--out", str(tmp_path / "o")])
    except SystemExit as exc:  # a value the option's type refuses: argparse's error, exit status 2
        rc = exc.code
    assert rc == 2
    assert msg in capsys.readouterr().err


def test_shipped_names_resolve_without_torch():
    from rtsched.rl.hook import is_model_path, pretrained_path

    for name in ("rlschert-vasplike-kill", "rlschert-vasplike-nokill", "rlschert-vasplike-deeprm"):
        assert is_model_path(name) and pretrained_path(name).endswith(f"pretrained/rlschert/{name}.pt")
    assert not is_model_path("sjf") and pretrained_path("sjf") is None and pretrained_path("../x") is None


@pytest.mark.slow
def test_selection_keeps_the_best_greedy_epoch(tmp_path):
    """``select_every``: each scored epoch's greedy validation slowdown is recomputed here from the
    exported best model, and best.pt is the lowest-scoring epoch's policy."""
    from rtsched.rl.api import train
    from rtsched.rl.rlschert.select import BEST, SELECTION, VaspLikeSelector

    out = tmp_path / "run"
    train("rlschert", "vasplike", epochs=3, out=str(out), simu_len=25, trajs_per_epoch=2, n_envs=2,
          train_sequences=2, max_steps=400, imitation=1.0, kill_teacher="remaining", select_every=1,
          validation_sequences=2)
    doc = json.loads((out / SELECTION).read_text())
    assert [r["epoch"] for r in doc["epochs"]] == [1, 2, 3] and doc["overrides"] == {"simu_len": 25}
    best = min(doc["epochs"], key=lambda r: (r["validation"], r["epoch"]))
    assert doc["best"] == best
    again = VaspLikeSelector(str(tmp_path / "other"), n_sequences=2, overrides={"simu_len": 25}).score(str(out / BEST))
    assert again["validation"] == pytest.approx(best["validation"]) and again["kills"] == best["kills"]
    assert not (out / "snapshot.pt").exists()


@pytest.mark.parametrize("argv, msg", [
    (["--agent", "rlschert", "--trace", "x.swf", "--select-every", "2"], "--select-every"),
    (["--agent", "rlschert", "--trace", "x.swf", "--clone-sequences", "2"], "--clone-sequences"),
    (["--agent", "rlschert", "--trace", "vasplike", "--kill-teacher", "often"], "--kill-teacher"),
])
def test_cli_selection_and_kill_teacher_errors(argv, msg, tmp_path, capsys):
    from rtsched.cli import main

    try:
        rc = main(["rl", "train", *argv, "--out", str(tmp_path / "o")])
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2
    assert msg in capsys.readouterr().err
