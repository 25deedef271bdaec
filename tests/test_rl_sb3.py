"""Models trained with stable-baselines3 / sb3-contrib on rtsched's Gymnasium environments are
rtsched models: ``rtsched rl evaluate`` and ``rtsched simulate --policy MODEL.zip`` use them.

Each model is trained in the test (a few hundred steps on 32-job sequences of the shipped Lublin
sample, 16-slot window), so the file needs no data beyond the repository.
"""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

pytest.importorskip("torch", reason="the rl extra (torch) is not installed")
gymnasium = pytest.importorskip("gymnasium", reason="the rl extra (gymnasium) is not installed")
sb3 = pytest.importorskip("stable_baselines3", reason="the rl-ecosystem extra (stable-baselines3) is not installed")
sb3_contrib = pytest.importorskip("sb3_contrib", reason="the rl-ecosystem extra (sb3-contrib) is not installed")

import rtsched.rl.registration  # noqa: E402,F401
from rtsched.cli import main  # noqa: E402
from rtsched.rl.hook import is_model_path  # noqa: E402
from rtsched.rl.modelfiles import load_sb3_model  # noqa: E402
from rtsched.rl.sb3 import attach_env, save_model  # noqa: E402

from conftest import REPO  # noqa: E402

SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")
ENV_KW = dict(trace=SAMPLE, seq_len=32, window=16, backfill="rlscheduler")


def _learn(model_cls, env_id, steps=256, **env_kw):
    env = gymnasium.make(env_id, **env_kw)
    model = model_cls("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, verbose=0, device="cpu",
                      policy_kwargs=dict(net_arch=[16]))
    model.learn(steps)
    return model, env


@pytest.fixture(scope="module")
def maskable(tmp_path_factory):
    """A MaskablePPO job picker saved twice: with rtsched.json (save_model) and bare (model.save)."""
    d = tmp_path_factory.mktemp("sb3")
    model, env = _learn(sb3_contrib.MaskablePPO, "rtsched/JobPicking-v0", **ENV_KW)
    described = save_model(model, str(d / "picker.zip"), env)
    model.save(str(d / "bare.zip"))
    return {"model": model, "env": env, "described": described, "bare": str(d / "bare.zip"), "dir": d}


def test_zip_is_a_model_path_and_loads_with_its_description(maskable):
    path = maskable["described"]
    assert is_model_path(path) and is_model_path("x.zip")
    with zipfile.ZipFile(path) as z:
        meta = json.loads(z.read("rtsched.json"))
    assert meta["agent"] == "rlscheduler" and meta["algorithm"] == "MaskablePPO"
    assert meta["env"]["window"] == 16 and meta["env"]["backfill"] == "rlscheduler"
    m = load_sb3_model(path)
    assert m.agent == "rlscheduler" and m.arch["window"] == 16 and m.norms == maskable["env"].unwrapped.norms
    assert m.epoch == maskable["model"].num_timesteps >= 256
    # The bare zip: agent, window and features inferred from the spaces; no norms.
    bare = load_sb3_model(maskable["bare"])
    assert bare.agent == "rlscheduler" and bare.env["window"] == 16 and bare.env["features"] == "code"
    assert bare.norms == {}


def test_greedy_choice_is_the_models_masked_deterministic_action(maskable):
    """The scorer's argmax equals ``MaskablePPO.predict(obs, action_masks=..., deterministic=True)``
    on observations of a whole episode (several occupied-slot counts)."""
    model, env = maskable["model"], maskable["env"]
    scorer = load_sb3_model(maskable["described"]).scorer
    u = env.unwrapped
    obs, _ = env.reset(seed=5)
    seen = 0
    done = False
    while not done:
        mask = u.action_masks()
        want, _ = model.predict(obs, action_masks=mask, deterministic=True)
        logits = scorer.logits(obs, mask)
        assert int(np.argmax(logits)) == int(want)
        assert (logits[~mask] < -1e8).all()
        obs, _r, done, _t, _i = env.step(int(want))
        seen += 1
    assert seen >= 10


def test_evaluate_cli_scores_the_sb3_model_like_the_policy_object(maskable, capsys):
    from rtsched.rl.rlscheduler.policy import RLSchedulerPolicy
    from rtsched.rl.sequences import run_sequence
    from rtsched.rl.trace import read_rl_trace

    path = maskable["described"]
    capsys.readouterr()
    assert main(["rl", "evaluate", "--trace", SAMPLE, "--policies", f"sjf,{path},{maskable['bare']}",
                 "--starts", "300,900", "--seq-len", "64", "--backfill", "rlscheduler", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert [r["policy"] for r in rows] == ["sjf", "sjf", path, path, maskable["bare"], maskable["bare"]]
    assert all(np.isfinite(r["avg_bsld"]) and r["avg_bsld"] >= 1.0 for r in rows)
    tr = read_rl_trace(SAMPLE)
    pol = RLSchedulerPolicy(path, backfill="rlscheduler", norms=tr.norms(), extras=tr.extras(900, 64))
    assert rows[3]["avg_bsld"] == pytest.approx(run_sequence(tr, 900, 64, pol, backfill="rlscheduler")["bsld"])
    # Same network, same (trace) norms: the bare zip scores exactly as the described one.
    assert [r["avg_bsld"] for r in rows[4:]] == [r["avg_bsld"] for r in rows[2:4]]


def test_simulate_policy_zip_runs_validated(maskable, capsys):
    """``rtsched simulate --policy MODEL.zip`` (the pipeline validates every schedule); the model's
    training backfilling is the default; a bare zip is refused in one line (no norms)."""
    path = maskable["described"]
    common = [SAMPLE, "--machine", "flat:256", "--policy", path, "--first-n", "120", "--json"]
    capsys.readouterr()
    assert main(["simulate", *common]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jobs"] == 120 and out["policy"] == f"rl:{path}+rlscheduler"
    assert main(["simulate", *common, "--backfill", "easy"]) == 0
    assert json.loads(capsys.readouterr().out)["policy"] == f"rl:{path}+easy"
    rc = main(["simulate", SAMPLE, "--machine", "flat:256", "--policy", maskable["bare"], "--first-n", "50"])
    err = capsys.readouterr().err
    assert rc == 1 and maskable["bare"] in err and "normalisation" in err and len(err.strip().splitlines()) == 1
    # attach_env makes the bare zip complete.
    attach_env(maskable["bare"], maskable["env"], "MaskablePPO")
    assert main(["simulate", SAMPLE, "--machine", "flat:256", "--policy", maskable["bare"], "--first-n", "50",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 50


def test_run_validated_in_the_default_event_order(maskable):
    from rtsched.io import read_workload
    from rtsched.machines import machine_from_spec
    from rtsched.rl.policies import load_policy
    from conftest import run_validated

    wl = read_workload(SAMPLE, "swf", first_n=100)
    pol = load_policy(maskable["described"], backfill="none")
    res = run_validated(wl, machine_from_spec("flat:256"), pol)
    assert len(res.outcomes) == 100 and pol.n_decisions == 100


def test_ppo_inspector_model(tmp_path, capsys):
    """A plain SB3 PPO trained on rtsched/Inspector-v0 inspects its base policy in a simulation."""
    model, env = _learn(sb3.PPO, "rtsched/Inspector-v0", steps=128, trace=SAMPLE, seq_len=32, base="sjf")
    path = save_model(model, str(tmp_path / "insp"), env)
    assert path.endswith("insp.zip")
    m = load_sb3_model(path)
    assert m.agent == "inspector" and m.env["base"] == "sjf" and m.arch["n_features"] == 8
    capsys.readouterr()
    assert main(["simulate", SAMPLE, "--machine", "flat:256", "--policy", path, "--first-n", "80", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jobs"] == 80 and out["policy"].startswith("inspected:sjf:")


def test_corrupt_and_foreign_zips_are_refused_in_one_line(tmp_path, maskable, capsys):
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(b"PK\x03\x04 not really a zip")
    foreign = tmp_path / "foreign.zip"
    with zipfile.ZipFile(foreign, "w") as z:
        z.writestr("hello.txt", "hi")
    damaged = tmp_path / "damaged.zip"
    with zipfile.ZipFile(maskable["described"]) as zin, zipfile.ZipFile(damaged, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            zout.writestr(info, data[: len(data) // 3] if info.filename == "policy.pth" else data)
    for path, why in ((garbage, "not a readable"), (foreign, "not a stable-baselines3 model zip"),
                      (damaged, "could not load"), (tmp_path / "absent.zip", "not found")):
        for argv in (["rl", "evaluate", "--trace", SAMPLE, "--policies", str(path), "--starts", "300",
                      "--seq-len", "32", "--json"],
                     ["simulate", SAMPLE, "--policy", str(path), "--first-n", "20"]):
            rc = main(argv)
            err = capsys.readouterr().err
            assert rc == 1, (path, argv[0], err)
            assert str(path) in err and why in err and len(err.strip().splitlines()) == 1, err
