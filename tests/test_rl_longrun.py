"""Long runs in steps (issue 24 §3): the shared selection step, the imitation pre-stage, budget
accounting and the clean stop, and resuming with the same epoch count."""
from __future__ import annotations

import datetime as dt
import json
import os

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="the rl extra (gymnasium) is not installed")
torch = pytest.importorskip("torch", reason="the rl extra (torch) is not installed")

from conftest import REPO  # noqa: E402

SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")
TINY = dict(head=4, tail=2, placements=40, hidden=(16, 8), seed=1)


def _actor_digest(path: str) -> list[float]:
    from rtsched.rl.modelfiles import load_model

    return [float(p.detach().double().sum()) for p in load_model(path).actor.parameters()]


def test_selection_step_keeps_the_best_validation_score(tmp_path):
    """Scores 5, 3, 4 (lower is better) for epochs 1–3: epoch 2 is chosen, best.pt is the policy that was
    scored at epoch 2 (weights compared), and a resumed step keeps the earlier rows."""
    from rtsched.rl.api import train
    from rtsched.rl.selection import BEST, SELECTION, BestOnValidation, best_row

    out = str(tmp_path / "run")
    values, seen = iter([5.0, 3.0, 4.0]), {}

    def score(path):
        value = next(values)
        seen[value] = _actor_digest(path)
        return {"validation": value}

    step = BestOnValidation(out, score, every=1, meta={"what": "test"})
    train("splitwindow", SAMPLE, epochs=3, out=out, progress=step, **TINY)
    doc = json.loads(open(os.path.join(out, SELECTION)).read())
    assert [r["epoch"] for r in doc["epochs"]] == [1, 2, 3] and doc["what"] == "test"
    assert doc["best"]["epoch"] == 2 and doc["best"]["validation"] == 3.0
    assert _actor_digest(os.path.join(out, BEST)) == seen[3.0] != seen[4.0]
    assert not os.path.exists(os.path.join(out, "scoring.pt"))
    again = BestOnValidation(out, score, every=2)
    assert [r["epoch"] for r in again.scores] == [1, 2, 3] and again.best == doc["best"]
    # ties: the earliest epoch; every-k: only multiples of k and the last epoch are scored
    assert best_row([{"epoch": 4, "validation": 1.0}, {"epoch": 2, "validation": 1.0}])["epoch"] == 2
    assert best_row([]) is None
    calls = []
    skip = BestOnValidation(str(tmp_path / "x"), lambda p: calls.append(p) or {"validation": 0.0}, every=2)
    skip(1, 5, {})
    assert calls == []
    with pytest.raises(ValueError, match="at least 1"):
        BestOnValidation(str(tmp_path / "y"), score, every=0)


def test_rlschert_selection_uses_the_shared_step():
    from rtsched.rl.rlschert import select
    from rtsched.rl.selection import BEST, SELECTION

    assert select.BEST == BEST and select.SELECTION == SELECTION


def test_clone_prestage_reduces_the_imitation_loss_on_a_tiny_case():
    """The imitation loss (−log P(an action as good as the teacher's)) falls and the greedy choice
    agrees with the teacher more often after cloning."""
    from rtsched.rl.api import make_env
    from rtsched.rl.cloning import teacher_decisions
    from rtsched.rl.nets import build_networks
    from rtsched.rl.splitwindow.recipe import clone_teacher
    from rtsched.rl.trainer import PPOConfig

    env = make_env("splitwindow", SAMPLE, head=4, tail=2, placements=40)
    data = teacher_decisions(env, ({"seed": s} for s in range(3)))
    # the decisions are the teacher's own: replaying them reaches the same episode ends
    assert len(data["act"]) == len(data["obs"]) == len(data["mask"]) > 40
    obs, good = torch.as_tensor(data["obs"]), torch.as_tensor(data["good"])
    mask = torch.as_tensor(data["mask"])
    assert good[torch.arange(len(good)), torch.as_tensor(data["act"])].all()  # the teacher's own action is good

    torch.manual_seed(0)
    actor, _critic = build_networks("splitwindow", *env.network_shape, "", "", (32, 16))

    def loss_and_agreement():
        with torch.no_grad():
            logits = actor(obs, mask)
            loss = torch.logsumexp(logits, -1) - torch.logsumexp(logits.masked_fill(~good, -1e9), -1)
            return float(loss.mean()), float(good[torch.arange(len(good)), logits.argmax(-1)].float().mean())

    before = loss_and_agreement()

    class _Trainer:  # what clone_teacher uses of a PPOTrainer
        config = PPOConfig(seed=0)
        out = None

    _Trainer.actor = actor
    record = clone_teacher(_Trainer(), env, 3, 30, 3e-3)
    after = loss_and_agreement()
    assert record["samples"] == len(data["act"])  # the same episodes (reset seeds 0, 1, 2)
    assert after[0] < 0.75 * before[0] and after[1] > before[1] + 0.1


def test_deadline_is_the_next_utc_time_and_bad_text_names_until():
    from rtsched.errors import OptionError
    from rtsched.rl.budget import deadline_at

    now = dt.datetime(2026, 11, 28, 2, 30, 15, tzinfo=dt.timezone.utc)
    assert deadline_at("03:45", now) == dt.datetime(2026, 11, 28, 3, 45, tzinfo=dt.timezone.utc)
    assert deadline_at("01:00", now) == dt.datetime(2026, 11, 29, 1, 0, tzinfo=dt.timezone.utc)
    for bad in ("25:00", "3:4", "x", "0345"):
        with pytest.raises(OptionError, match="--until"):
            deadline_at(bad, now)


def test_stop_then_resume_continues_the_same_epochs_and_accounts_each_step(tmp_path):
    """A step stopped by OUT/STOP after epoch 1, resumed to epoch 3: the epochs continue 1, 2, 3, the
    weights equal an uninterrupted run's, budget.json has one row per step, and the clone is not redone."""
    from rtsched.rl.api import train
    from rtsched.rl.budget import BUDGET, STOP_FILE
    from rtsched.rl.modelfiles import CHECKPOINT

    opts = dict(TINY, clone_episodes=2, clone_epochs=2, select_every=1, validation_segments=1,
                validation_jobs=60, imitation=1.0, imitation_end=3)
    out = tmp_path / "steps"
    out.mkdir()
    (out / STOP_FILE).write_text("")
    r1 = train("splitwindow", SAMPLE, epochs=3, out=str(out), budget=True, **opts)
    assert r1["stopped"] and [h["epoch"] for h in r1["history"]] == [1]
    clone = (out / "clone.json").read_text()
    (out / STOP_FILE).unlink()
    r2 = train("splitwindow", SAMPLE, epochs=3, out=str(out), until="23:59", resume=True, **opts)
    assert not r2["stopped"] and r2["epochs_run"] == 2 and [h["epoch"] for h in r2["history"]] == [1, 2, 3]
    assert (out / "clone.json").read_text() == clone
    budget = json.loads((out / BUDGET).read_text())
    assert [(s["first_epoch"], s["last_epoch"]) for s in budget["steps"]] == [(1, 1), (2, 3)]
    assert budget["cpu_s"] == pytest.approx(sum(s["cpu_s"] for s in budget["steps"]), abs=0.11)
    sel = json.loads((out / "selection.json").read_text())
    assert [r["epoch"] for r in sel["epochs"]] == [0, 1, 2, 3]  # epoch 0: the clone
    assert set(sel["references"]) == {"fcfs+easy", "sjf+easy", "teacher-sjf"}

    whole = tmp_path / "whole"
    train("splitwindow", SAMPLE, epochs=3, out=str(whole), **opts)
    a = torch.load(out / CHECKPOINT, weights_only=False)["actor"]
    b = torch.load(whole / CHECKPOINT, weights_only=False)["actor"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_teacher_policy_runs_in_the_pipeline_and_its_clone_scores_near_it(tmp_path):
    """WindowTeacherPolicy is a valid core policy; evaluate_online scores it like any policy."""
    from rtsched.rl.evaluate import evaluate_online
    from rtsched.rl.splitwindow.policy import WindowTeacherPolicy

    teach = WindowTeacherPolicy(4, 2, "sjf")
    rows = evaluate_online([teach, "fcfs+easy"], SAMPLE, [0, 200], 100)
    waits = {r["policy"]: r["avg_wait"] for r in rows}
    assert set(waits) == {teach.name, "fcfs+easy"} and all(w >= 0 for w in waits.values())
    assert np.isfinite(list(waits.values())).all()


def test_cli_long_run_options(tmp_path, capsys):
    from rtsched.cli import main

    base = ["rl", "train", "--agent", "splitwindow", "--trace", SAMPLE, "--no-progress", "--head", "4", "--tail",
            "2", "--placements", "30", "--hidden", "8"]
    assert main([*base, "--out", str(tmp_path / "a"), "--until", "25:99"]) == 2
    assert "--until: expected a UTC time HH:MM" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "b"), "--validation-jobs", "50"]) == 2
    assert "--validation-jobs: an option of --select-every" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "c"), "--clone-lr", "0.1"]) == 2
    assert "--clone-lr: an option of --clone-episodes" in capsys.readouterr().err
    out = str(tmp_path / "d")
    assert main([*base, "--out", out, "--epochs", "2", "--select-every", "1", "--validation-segments", "1",
                 "--validation-jobs", "50", "--clone-episodes", "1", "--clone-epochs", "1", "--until", "23:59",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["epochs"] == 2
    for name in ("best.pt", "selection.json", "budget.json", "clone.json", "checkpoint.pt"):
        assert os.path.exists(os.path.join(out, name)), name
    assert main(["rl", "train", "--agent", "rlscheduler", "--trace", SAMPLE, "--until", "03:00",
                 "--out", str(tmp_path / "e")]) == 2
    assert "--until does not apply to the rlscheduler agent" in capsys.readouterr().err


def test_teacher_good_sets_by_hand():
    """Fwd's set holds every slot that would end the cycle too; a start's set holds its ties."""
    from rtsched.jobs import Job, Workload
    from rtsched.rl.splitwindow.env import SplitWindowEnv

    def wl(rows, cores):
        return Workload([Job(id=i + 1, submit=s, runtime=r, walltime=r, nodes=n) for i, (s, r, n) in enumerate(rows)],
                        name="toy", max_nodes=cores)

    # 4 cores; job 1 (4 cores) at t=0; job 2 (2 cores, 50 s) at t=10; job 3 (1 core, 30 s) at t=20
    env = SplitWindowEnv(wl([(0, 100, 4), (10, 50, 2), (20, 30, 1)], 4), head=1, tail=1, placements=3)
    env.reset(options={"start": 0})
    assert env.teacher_good().tolist() == [True, False, False]  # job 1 only
    env.step(0)
    assert env.teacher_good().tolist() == [True, True, True]  # job 2 does not fit, slot 1 empty, Fwd
    # at t = 100 jobs 2 and 3 (50 s) tie for SJF; job 4 fits too but asks 60 s
    env = SplitWindowEnv(wl([(0, 100, 4), (10, 50, 2), (11, 50, 1), (12, 60, 4)], 4), head=2, tail=1, placements=4)
    env.reset(options={"start": 0})
    env.step(0)
    while env.sim.now < 100:  # job 1 holds every core
        assert env.teacher_action() == env.fwd
        env.step(env.fwd)
    assert env.visible_ids() == [2, 3, 4]
    assert env.teacher_action() == 0 and env.teacher_good().tolist() == [True, True, False, False]
