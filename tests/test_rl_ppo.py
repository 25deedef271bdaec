"""Networks, PPO, checkpoints, trained models as policies, and the train/evaluate entry points."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import torch

from conftest import shared_data
from rtsched.machines import FlatCluster
from rtsched.rl.api import train
from rtsched.rl.evaluate import evaluate
from rtsched.rl.sequences import run_sequence
from rtsched.rl.nets import InspectActor, InspectCritic, PickActor, PickCritic, n_params
from rtsched.rl.inspector.policy import InspectedPolicy
from rtsched.rl.policies import policy_from_model
from rtsched.rl.rlscheduler.policy import RLSchedulerPolicy
from rtsched.rl.modelfiles import ModelFileError, export_model, load_model
from rtsched.rl.trainer import discount_cumsum
from rtsched.rl.trace import read_rl_trace
from rtsched.sim.core import Simulator

TINY = dict(seq_len=48, trajs_per_epoch=4, n_envs=2, train_pi_iters=4, train_v_iters=4, seed=5)


@pytest.fixture(scope="module")
def lublin1():
    return read_rl_trace(str(shared_data("traces", "swf", "lublin_256.swf")))


def test_parameter_counts():
    assert n_params(PickActor(8, 128)) == 961  # seed 003: "fewer than 1,000"
    assert n_params(InspectActor(7)) == 938  # seed 000: 938 with the code's 7 inputs
    assert n_params(InspectCritic(7)) == 929
    assert n_params(PickCritic(8, 128)) == 1024 * 64 + 64 + 64 * 32 + 32 + 32 * 8 + 8 + 9


def test_kernel_policy_is_order_equivariant_and_masked():
    torch.manual_seed(0)
    actor = PickActor(8, 16)
    obs = torch.rand(1, 16, 8)
    mask = torch.ones(1, 16, dtype=torch.bool)
    mask[0, 12:] = False
    perm = torch.randperm(12)
    full = torch.cat([perm, torch.arange(12, 16)])
    with torch.no_grad():
        p1 = torch.softmax(actor(obs.view(1, -1), mask), -1)[0]
        p2 = torch.softmax(actor(obs[:, full].reshape(1, -1), mask), -1)[0]
    assert torch.allclose(p1[full], p2, atol=1e-6)
    assert (p1[12:] == 0).all() and float(p1.sum()) == pytest.approx(1.0)


def test_gae_with_terminal_reward():
    # gamma = 1: every step's return is the terminal reward.
    assert discount_cumsum(np.array([0.0, 0.0, 5.0]), 1.0).tolist() == [5.0, 5.0, 5.0]
    assert discount_cumsum(np.array([1.0, 1.0]), 0.5).tolist() == [1.5, 1.0]


def _weights(path):
    return torch.load(os.path.join(path, "checkpoint.pt"), weights_only=True)


def test_train_checkpoints_and_resume_is_exact(lublin1, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    seen = []
    res = train("rlscheduler", lublin1, epochs=2, out=a, progress=lambda e, n, s: seen.append((e, n)), **TINY)
    assert seen == [(1, 2), (2, 2)] and res["epochs_run"] == 2
    assert os.path.exists(os.path.join(a, "progress.json"))
    train("rlscheduler", lublin1, epochs=1, out=b, **TINY)
    res_b = train("rlscheduler", lublin1, epochs=2, out=b, **TINY)  # resumes at epoch 2
    assert res_b["epochs_run"] == 1
    wa, wb = _weights(a), _weights(b)
    for part in ("actor", "critic"):
        for k in wa[part]:
            assert torch.equal(wa[part][k], wb[part][k]), (part, k)
    assert wa["history"][1]["mean_return"] == wb["history"][1]["mean_return"]
    # Resuming with other settings is refused, naming the file.
    with pytest.raises(ModelFileError, match="checkpoint.pt.*differs"):
        train("rlscheduler", lublin1, epochs=3, out=b, **{**TINY, "seed": 6})


def test_corrupt_and_mismatched_model_files(lublin1, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(ModelFileError, match="bad.pt"):
        load_model(str(bad))
    other = tmp_path / "other.pt"
    torch.save({"something": 1}, other)
    with pytest.raises(ModelFileError, match="other.pt.*not an rtsched RL model"):
        load_model(str(other))
    out = str(tmp_path / "m")
    train("rlscheduler", lublin1, epochs=1, out=out, **TINY)
    st = torch.load(os.path.join(out, "checkpoint.pt"), weights_only=True)
    st["arch"]["window"] = 64  # weights for 128 slots no longer match the critic
    wrong = tmp_path / "wrong.pt"
    torch.save(st, wrong)
    with pytest.raises(ModelFileError, match="wrong.pt.*do not match"):
        load_model(str(wrong))
    with pytest.raises(ModelFileError, match="missing.pt"):
        evaluate([str(tmp_path / "missing.pt")], lublin1, starts=[100], seq_len=32)


def test_trained_picker_is_a_core_policy(lublin1, tmp_path):
    out = str(tmp_path / "pick")
    train("rlscheduler", lublin1, epochs=1, out=out, backfill="rlscheduler", **TINY)
    pol = policy_from_model(out, extras=lublin1.extras(1981, 256))
    assert isinstance(pol, RLSchedulerPolicy) and pol.backfill == "rlscheduler"
    wl = lublin1.window(1981, 256)
    res = Simulator(wl, FlatCluster(256), event_order="rlscheduler").run(pol)
    assert all(o.first_start >= o.job.submit for o in res.outcomes)
    assert 0 < pol.n_decisions <= 256
    # The policy in the simulator and the environment agree when the environment follows the policy.
    from rtsched.rl.rlscheduler.env import JobPickingEnv

    env = JobPickingEnv(lublin1, seq_len=256, backfill="rlscheduler")
    obs, _ = env.reset(options={"start": 1981})
    model = load_model(out)
    done = False
    while not done:
        with torch.no_grad():
            logits = model.actor(torch.from_numpy(obs)[None], torch.from_numpy(env.action_masks())[None])
        obs, r, done, _, info = env.step(int(torch.argmax(logits)))
    assert info["bsld"] == pytest.approx(run_sequence(lublin1, 1981, 256, RLSchedulerPolicy(model))["bsld"])


def test_inspector_training_and_policy(lublin1, tmp_path):
    out = str(tmp_path / "insp")
    res = train("inspector", lublin1, epochs=1, out=out, base="f1", seq_len=32, trajs_per_epoch=3, n_envs=2,
                train_pi_iters=2, train_v_iters=2)
    assert 0.0 <= res["history"][0]["rejection_ratio"] <= 1.0
    pol = policy_from_model(out)
    assert isinstance(pol, InspectedPolicy) and pol.base.priority.name == "f1"
    r = run_sequence(lublin1, 3316, 128, pol)
    assert r["bsld"] >= 1.0 and pol.n_inspections >= 128
    slim = str(tmp_path / "insp.pt")
    export_model(out, slim)
    again = policy_from_model(slim)
    r2 = run_sequence(lublin1, 3316, 128, again)
    assert {k: v for k, v in r2.items() if k != "policy"} == {k: v for k, v in r.items() if k != "policy"}
    assert again.n_inspections == pol.n_inspections and again.n_rejections == pol.n_rejections


def test_exported_model_decides_like_its_checkpoint(lublin1, tmp_path):
    import io
    import json
    from contextlib import redirect_stdout

    from rtsched.cli import main as rtsched_main

    out = str(tmp_path / "run")
    train("rlscheduler", lublin1, epochs=1, out=out, **TINY)
    slim = str(tmp_path / "models" / "picker.pt")
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert rtsched_main(["rl", "export", out, slim, "--json"]) == 0
    info = json.loads(buf.getvalue())
    assert info["path"] == slim and info["agent"] == "rlscheduler" and info["epoch"] == 1
    # the optimisers and the critic (which sees the whole window) are most of a checkpoint
    assert info["bytes"] == os.path.getsize(slim) < os.path.getsize(os.path.join(out, "checkpoint.pt")) / 10
    assert sorted(os.listdir(tmp_path / "models")) == ["picker.pt"]  # no temporary file left
    assert load_model(slim).env["trace_path"] == "lublin_256.swf"
    full = evaluate([out], lublin1, starts=[1981, 2756], seq_len=256, backfill=True)
    exported = evaluate([slim], lublin1, starts=[1981, 2756], seq_len=256, backfill=True)
    assert [(r["avg_bsld"], r["avg_wait"]) for r in exported] == [(r["avg_bsld"], r["avg_wait"]) for r in full]
    resume_dir = tmp_path / "resume"
    resume_dir.mkdir()
    shutil.copy(slim, resume_dir / "checkpoint.pt")
    with pytest.raises(ModelFileError, match="policy-only.*cannot resume training"):
        train("rlscheduler", lublin1, epochs=2, out=str(resume_dir), **TINY)
    with pytest.raises(ModelFileError, match="policy-only.*cannot initialise a run"):
        train("rlscheduler", lublin1, epochs=1, out=str(tmp_path / "warm"), init_from=slim, **TINY)


def test_evaluate_rows(lublin1, tmp_path):
    out = str(tmp_path / "e")
    train("rlscheduler", lublin1, epochs=1, out=out, **TINY)
    rows = evaluate(["sjf", "fcfs", out], lublin1, starts=[1981, 2756], seq_len=256, backfill=True)
    assert len(rows) == 6
    assert set(rows[0]) >= {"policy", "backfill", "start", "avg_bsld", "avg_wait"}
    assert rows[0]["backfill"] == "rlscheduler"
    assert rows[0]["avg_bsld"] == pytest.approx(run_sequence(lublin1, 1981, 256, "sjf", backfill="rlscheduler")["bsld"])
    drawn = evaluate(["sjf"], lublin1, n_sequences=3, seq_len=128, seed=1)
    assert len(drawn) == 3 and all(128 <= r["start"] <= 10000 - 128 - 2 for r in drawn)
    assert drawn == evaluate(["sjf"], lublin1, n_sequences=3, seq_len=128, seed=1)


def test_trajectory_filtering_two_stages(lublin1, tmp_path):
    from rtsched.rl.sequences import filter_range

    lo, hi = filter_range(lublin1, 48, n_samples=40, start_range=(0, 3000))
    assert 1.0 <= lo < hi
    stage1 = str(tmp_path / "s1")
    train("rlscheduler", lublin1, epochs=1, out=stage1, sjf_filter=(lo, hi), start_range=(0, 3000), **TINY)
    stage2 = str(tmp_path / "s2")
    res = train("rlscheduler", lublin1, epochs=1, out=stage2, init_from=stage1, start_range=(0, 3000), **TINY)
    assert res["epochs_run"] == 1
    with pytest.raises(ModelFileError, match="s1"):
        train("rlscheduler", lublin1, epochs=1, out=str(tmp_path / "s3"), init_from=stage1, actor="mlp_v2", **TINY)


def test_numpy_inference_matches_torch_actor():
    """Policies decide with NumpyActor; its logits are the PyTorch actor's to float32 rounding."""
    from rtsched.rl.nets import InspectActor, NumpyActor, PickActor

    gen = torch.Generator().manual_seed(5)
    for actor, width, n_act in ((PickActor(8, 128), 1024, 128), (PickActor(8, 16, "mlp_v2"), 128, 16),
                                (InspectActor(7), 7, 2)):
        fast = NumpyActor(actor)
        for k in (1, 5, n_act):
            obs = torch.rand(width, generator=gen)
            mask = torch.zeros(n_act, dtype=torch.bool)
            mask[:k] = True
            with torch.no_grad():
                ref = actor(obs[None], mask[None])[0].numpy()
            got = fast.logits(obs.numpy(), mask.numpy())
            assert got.dtype == np.float32
            np.testing.assert_allclose(got[:k], ref[:k], rtol=1e-5, atol=1e-6)
            assert (got[k:] == ref[k:]).all()  # masked slots: exactly −1e9
            assert int(np.argmax(got)) == int(torch.argmax(torch.from_numpy(ref)))
