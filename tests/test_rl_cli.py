"""``rtsched rl train`` / ``rtsched rl evaluate`` and trained models as simulator policies.

Everything runs through ``rtsched.cli.main`` (the integration hook ``add_rl_commands``), with tiny
training settings (sequences of 32 jobs, 4 trajectories, 2 PPO iterations) so the file stays fast.
"""
from __future__ import annotations

import json
import os

import pytest

torch = pytest.importorskip("torch")

from rtsched.cli import main  # noqa: E402
from conftest import shared_data  # noqa: E402

TINY = ["--seq-len", "32", "--trajs-per-epoch", "4", "--n-envs", "2", "--train-pi-iters", "2",
        "--train-v-iters", "2", "--no-progress"]
TABLE_V_STARTS = "1981,2756,4299,8850,3316,2714,5228,7762,4022,7085"


@pytest.fixture(scope="module")
def lublin():
    return str(shared_data("traces", "swf", "lublin_256.swf"))


def _train(trace, out, epochs, *extra):
    return main(["rl", "train", "--agent", "rlscheduler", "--trace", trace, "--goal", "bsld", "--backfill",
                 "rlscheduler", "--epochs", str(epochs), "--out", out, "--seed", "3", *TINY, *extra])


def _ckpt(out):
    return torch.load(os.path.join(out, "checkpoint.pt"), weights_only=True)


def _assert_same_state(a, b):
    for part in ("actor", "critic"):
        for k in a[part]:
            assert torch.equal(a[part][k], b[part][k]), (part, k)
    for opt in ("pi_opt", "v_opt"):
        for sid, st in a[opt]["state"].items():
            for k, v in st.items():
                assert torch.equal(v, b[opt]["state"][sid][k]), (opt, sid, k)
    assert torch.equal(a["rng"]["torch_gen"], b["rng"]["torch_gen"])
    assert [h["mean_return"] for h in a["history"]] == [h["mean_return"] for h in b["history"]]


def test_train_two_epochs_equals_one_plus_resume(lublin, tmp_path, capsys):
    full, part = str(tmp_path / "full"), str(tmp_path / "part")
    assert _train(lublin, full, 2) == 0
    assert _train(lublin, part, 1) == 0
    assert _ckpt(part)["epoch"] == 1
    capsys.readouterr()
    assert _train(lublin, part, 2, "--resume", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["epochs"] == 2 and summary["epochs_run"] == 1
    assert summary["last_score"] == pytest.approx(-summary["history"][-1]["mean_return"])
    a, b = _ckpt(full), _ckpt(part)
    assert a["epoch"] == b["epoch"] == 2
    _assert_same_state(a, b)


def test_resume_after_interruption_mid_epoch(lublin, tmp_path, monkeypatch, capsys):
    """Ctrl-C during epoch 2's update: exit 130, the checkpoint holds epoch 1, and --resume ends with
    the weights of an uninterrupted run."""
    from rtsched.rl import trainer

    ref, cut = str(tmp_path / "ref"), str(tmp_path / "cut")
    assert _train(lublin, ref, 2) == 0
    real_update = trainer.PPOTrainer.update
    calls = []

    def update_then_interrupt(self, batch):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_update(self, batch)

    monkeypatch.setattr(trainer.PPOTrainer, "update", update_then_interrupt)
    assert _train(lublin, cut, 2) == 130
    assert "--resume" in capsys.readouterr().err
    assert _ckpt(cut)["epoch"] == 1
    monkeypatch.setattr(trainer.PPOTrainer, "update", real_update)
    assert _train(lublin, cut, 2, "--resume") == 0
    _assert_same_state(_ckpt(ref), _ckpt(cut))


def test_train_refuses_to_overwrite_or_mix_settings(lublin, tmp_path, capsys):
    out = str(tmp_path / "m")
    assert _train(lublin, out, 1) == 0
    capsys.readouterr()
    assert _train(lublin, out, 2) == 2  # no --resume (a usage error): the checkpoint is kept
    err = capsys.readouterr().err
    assert "checkpoint.pt" in err and "--resume" in err
    assert _ckpt(out)["epoch"] == 1
    rc = main(["rl", "train", "--trace", lublin, "--backfill", "rlscheduler", "--epochs", "2", "--out", out,
               "--seed", "4", "--resume", *TINY])
    assert rc == 1
    err = capsys.readouterr().err
    assert os.path.join(out, "checkpoint.pt") in err and "seed" in err
    assert main(["rl", "train", "--trace", str(tmp_path / "nope.swf"), "--epochs", "1", "--out", out]) == 1
    assert "nope.swf" in capsys.readouterr().err


def test_train_progress_bar_shows_running_score(lublin, tmp_path, capsys):
    out = str(tmp_path / "bar")
    args = [a for a in TINY if a != "--no-progress"]
    assert main(["rl", "train", "--trace", lublin, "--epochs", "1", "--out", out, *args]) == 0
    text = capsys.readouterr().out
    assert "running avg bsld" in text and "epoch 1/1: avg bsld" in text
    assert f"model {os.path.join(out, 'checkpoint.pt')}" in text


def test_inspector_train_reports_rejections(lublin, tmp_path, capsys):
    out = str(tmp_path / "insp")
    rc = main(["rl", "train", "--agent", "inspector", "--trace", lublin, "--base", "f1", "--epochs", "1",
               "--out", out, *TINY, "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["score_label"] == "gain over base"
    assert 0.0 <= summary["history"][0]["rejection_ratio"] <= 1.0
    assert _ckpt(out)["env"]["base"] == "f1"


def test_evaluate_json_reproduces_table_v_heuristics(lublin, capsys):
    """The CLI's means over the paper's ten sequences are seed 003's Table V numbers."""
    rc = main(["rl", "evaluate", "--trace", lublin, "--policies", "fcfs,sjf,f1", "--starts", TABLE_V_STARTS,
               "--backfill", "none,rlscheduler", "--json"])
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert len(rows) == 3 * 10 * 2
    assert all(set(r) == {"policy", "backfill", "start", "avg_bsld", "avg_wait"} for r in rows)
    assert [r["start"] for r in rows[:10]] == [int(s) for s in TABLE_V_STARTS.split(",")]

    def mean(policy, backfill):
        v = [r["avg_bsld"] for r in rows if r["policy"] == policy and r["backfill"] == backfill]
        assert len(v) == 10
        return round(sum(v) / 10, 2)

    assert mean("fcfs", "none") == pytest.approx(7273.8, abs=0.05)
    assert mean("sjf", "none") == 277.35
    assert mean("f1", "none") == 258.37
    assert mean("fcfs", "rlscheduler") == 235.82
    assert mean("sjf", "rlscheduler") == 73.31
    assert mean("f1", "rlscheduler") == 75.07


def test_evaluate_models_and_bad_model_files(lublin, tmp_path, capsys):
    from rtsched.rl.sequences import run_sequence
    from rtsched.rl.rlscheduler.policy import RLSchedulerPolicy
    from rtsched.rl.trace import read_rl_trace

    out = str(tmp_path / "m")
    assert _train(lublin, out, 1) == 0
    capsys.readouterr()
    assert main(["rl", "evaluate", "--trace", lublin, "--policies", f"sjf,{out}", "--starts", "1981,2756",
                 "--seq-len", "128", "--backfill", "rlscheduler", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert [(r["policy"], r["start"]) for r in rows] == [("sjf", 1981), ("sjf", 2756), (out, 1981), (out, 2756)]
    tr = read_rl_trace(lublin)
    pol = RLSchedulerPolicy(out, backfill="rlscheduler", norms=tr.norms(), extras=tr.extras(2756, 128))
    assert rows[3]["avg_bsld"] == pytest.approx(run_sequence(tr, 2756, 128, pol, backfill="rlscheduler")["bsld"])
    # Without --json: a table of means per (policy, backfilling).
    assert main(["rl", "evaluate", "--trace", lublin, "--policies", "sjf", "--starts", "1981", "--seq-len", "64"]) == 0
    assert "sjf" in capsys.readouterr().out
    # Corrupt, foreign and mismatched model files: exit 1 with the file named.
    bad = tmp_path / "corrupt.pt"
    bad.write_bytes(b"\x80\x02 definitely not a model")
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    st = _ckpt(out)
    st["actor"] = {k: v[..., :-1] for k, v in st["actor"].items()}
    shrunk = tmp_path / "shrunk.pt"
    torch.save(st, shrunk)
    for path, why in ((bad, "not a readable model file"), (foreign, "not an rtsched RL model"),
                      (shrunk, "do not match"), (tmp_path / "absent.pt", "not found")):
        rc = main(["rl", "evaluate", "--trace", lublin, "--policies", f"sjf,{path}", "--starts", "1981",
                   "--seq-len", "64", "--json"])
        assert rc == 1
        err = capsys.readouterr().err
        assert str(path) in err and why in err, err
    # Bad options are usage errors (exit 2), naming the option.
    assert main(["rl", "evaluate", "--trace", lublin, "--policies", "nosuch", "--starts", "1981"]) == 2
    assert "nosuch" in capsys.readouterr().err
    assert main(["rl", "evaluate", "--trace", lublin, "--starts", "19x81"]) == 2
    assert "--starts" in capsys.readouterr().err
    assert main(["rl", "evaluate", "--trace", lublin, "--backfill", "ff", "--starts", "1981"]) == 2
    assert "--backfill" in capsys.readouterr().err


def test_model_is_a_policy_of_the_generic_simulator(lublin, tmp_path):
    """``load_policy`` (the registry's entry for model paths) in the default event order, on a flat
    cluster and on Mira partitions, validated; its backfilling defaults to the training setting."""
    from rtsched.io import read_workload
    from rtsched.machines import machine_from_spec
    from rtsched.rl.hook import is_model_path
    from rtsched.rl.policies import load_policy
    from conftest import run_validated

    out = str(tmp_path / "m")
    assert _train(lublin, out, 1) == 0
    assert is_model_path(out) and is_model_path(os.path.join(out, "checkpoint.pt")) and is_model_path("x.pt")
    assert not is_model_path("sjf") and not is_model_path("wfp2")
    wl = read_workload(lublin, "swf", first_n=200)
    assert load_policy(out).backfill == "rlscheduler"
    for spec in ("flat:256", "mira"):
        for backfill in ("none", "easy"):
            pol = load_policy(out, backfill=backfill)
            res = run_validated(wl, machine_from_spec(spec), pol)
            assert len(res.outcomes) == 200 and pol.n_decisions >= 1
            if backfill == "none":  # every job is an agent decision without backfilling
                assert pol.n_decisions == 200
    with pytest.raises(ValueError, match="checkpoint.pt|m: a trained model.*'ff'"):
        load_policy(out, backfill="ff")


def test_simulate_cli_accepts_a_model_path(lublin, tmp_path, capsys):
    """``rtsched simulate --policy MODEL_PATH``: the registry routes model paths to ``load_policy``;
    without ``--backfill`` the model keeps its training backfilling."""
    out = str(tmp_path / "m")
    assert _train(lublin, out, 1) == 0
    capsys.readouterr()
    common = [lublin, "--machine", "flat:256", "--policy", out, "--first-n", "150", "--tau", "10", "--bsld-form", "rl",
              "--json"]
    assert main(["simulate", *common, "--backfill", "none"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["jobs"] == 150 and summary["policy"] == f"rl:{out}+none"
    assert main(["simulate", *common]) == 0
    assert json.loads(capsys.readouterr().out)["policy"] == f"rl:{out}+rlscheduler"
    assert main(["simulate", *common, "--backfill", "ff"]) == 2
    err = capsys.readouterr().err
    assert out in err and "'ff'" in err


def test_train_help_states_each_agents_ppo_defaults():
    """``rl train --help`` states the PPO defaults the library uses for each agent (the parser keeps
    a copy so that building it imports no PyTorch)."""
    from rtsched.cli import rl as rl_cli
    from rtsched.rl.rlschert.recipe import PPO_DEFAULTS as RLSCHERT_PPO_DEFAULTS
    from rtsched.rl.splitwindow.recipe import PPO_DEFAULTS as SPLIT_PPO_DEFAULTS
    from rtsched.rl.trainer import PPOConfig
    from rtsched.rl.rtmix.train import FINE_TUNE

    library = {"": PPOConfig(), "splitwindow": SPLIT_PPO_DEFAULTS, "rlschert": RLSCHERT_PPO_DEFAULTS,
               "rtmix": FINE_TUNE}
    for name, per_agent in rl_cli.PPO_HELP_DEFAULTS.items():
        for agent, value in per_agent.items():
            lib = library[agent]
            assert (getattr(lib, name) if agent == "" else lib[name]) == value, (name, agent)
    out = _help_text(["rl", "train", "--help"])
    assert "trajectories per epoch (default 100; splitwindow 1, rlschert 16, rtmix 64)" in out


def _help_text(argv):
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        main(argv)
    return " ".join(buf.getvalue().split())
