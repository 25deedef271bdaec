"""Parallel RL rollouts (``rtsched.rl.rollouts``): workers change the speed of PPO training, never
its results.

Tiny settings on the shipped Lublin sample (32-job sequences, 6 trajectories, 2 PPO iterations).
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the rl extra (torch) is not installed")
pytest.importorskip("gymnasium", reason="the rl extra (gymnasium) is not installed")

from rtsched.cli import main  # noqa: E402
from rtsched.rl.agents import EnvFactory
from rtsched.rl.rollouts import LocalEnvs, ProcessEnvs, WorkerError, make_pool  # noqa: E402
from rtsched.rl.trace import load_trace  # noqa: E402

from conftest import REPO, FailsInASubprocess  # noqa: E402

SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")
TINY = ["--seq-len", "32", "--trajs-per-epoch", "6", "--n-envs", "3", "--train-pi-iters", "2",
        "--train-v-iters", "2", "--no-progress", "--json"]


def _train(out, *extra):
    return main(["rl", "train", "--agent", "rlscheduler", "--trace", SAMPLE, "--backfill", "rlscheduler",
                 "--epochs", "2", "--out", out, "--seed", "7", *TINY, *extra])


def _weights(out):
    st = torch.load(os.path.join(out, "checkpoint.pt"), weights_only=True)
    return st


def _same(a, b):
    for part in ("actor", "critic"):
        assert a[part].keys() == b[part].keys()
        for k in a[part]:
            assert torch.equal(a[part][k], b[part][k]), (part, k)
    assert torch.equal(a["rng"]["torch_gen"], b["rng"]["torch_gen"])
    strip = ("collect_s", "update_s")
    assert [{k: v for k, v in h.items() if k not in strip} for h in a["history"]] == \
           [{k: v for k, v in h.items() if k not in strip} for h in b["history"]]


@pytest.mark.slow  # two trainings, each starting two worker interpreters: about 6 s on the loaded 2-core machine
def test_same_seed_and_workers_give_identical_weights_and_histories(tmp_path, capsys):
    """Two runs with the same seed and 2 workers end with the same weights, generator state and
    history (timings aside)."""
    runs = {}
    for name in ("a", "b"):
        out = str(tmp_path / name)
        assert _train(out, "--workers", "2") == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["epochs"] == 2 and len(summary["history"]) == 2
        runs[name] = _weights(out)
    _same(runs["a"], runs["b"])
    assert runs["a"]["ppo"]["workers"] == 2
    assert all(0 < h["steps"] <= 6 * 32 and h["trajectories"] == 6 for h in runs["a"]["history"])


@pytest.mark.slow  # three trainings: 3 to 7 s on the loaded 2-core machine
def test_resume_with_another_worker_count(tmp_path, capsys):
    """Workers are speed only: a run checkpointed after one epoch with 2 workers resumes with 1 and
    ends exactly as an uninterrupted run in one process."""
    full, part = str(tmp_path / "full"), str(tmp_path / "part")
    assert _train(full) == 0
    assert main(["rl", "train", "--agent", "rlscheduler", "--trace", SAMPLE, "--backfill", "rlscheduler",
                 "--epochs", "1", "--out", part, "--seed", "7", *TINY, "--workers", "2"]) == 0
    assert _train(part, "--resume") == 0
    capsys.readouterr()
    _same(_weights(full), _weights(part))


def test_process_pool_steps_like_the_local_one():
    tr = load_trace(SAMPLE)
    factory = EnvFactory("inspector", tr, "bsld", "none", None, {"seq_len": 32})
    local = make_pool(factory, 3, 1)
    assert isinstance(local, LocalEnvs)
    remote = make_pool(factory, 3, 2)
    try:
        assert isinstance(remote, ProcessEnvs) and remote.n_workers == 2 and len(remote) == 3
        assert len(remote.procs) == 1 and sorted(remote.local) == [0, 2]  # this process steps worker 0's share
        items = [(0, 11), (1, 12), (2, 13)]
        for (o1, m1), (o2, m2) in zip(local.reset_many(items), remote.reset_many(items)):
            assert np.array_equal(o1, o2) and np.array_equal(m1, m2)
        rng = np.random.default_rng(0)
        active = [0, 1, 2]
        n = 0
        while active:
            acts = [(i, int(rng.integers(2))) for i in active]
            a, b = local.step_many(acts), remote.step_many(acts)
            assert len(a) == len(b) == len(acts)
            for ra, rb in zip(a, b):
                assert np.array_equal(ra[0], rb[0]) and ra[2:5] == rb[2:5]
            active = [i for (i, _), r in zip(acts, a) if not (r[3] or r[4])]
            n += 1
        assert n >= 32
    finally:
        remote.close()
        local.close()
    assert remote.procs == [] and remote.local == {}


def test_a_failing_worker_is_reported_not_hung():
    with pytest.raises(WorkerError, match="boom in a rollout worker"):
        ProcessEnvs(FailsInASubprocess(), 2, 2)


def _exit_code(*args):
    """The exit status of a command that may stop in argparse (SystemExit) or return it."""
    try:
        return _train(*args)
    except SystemExit as stop:
        return stop.code


def test_bad_worker_options_are_usage_errors(tmp_path, capsys):
    assert _exit_code(str(tmp_path / "a"), "--workers", "0") == 2
    assert "--workers" in capsys.readouterr().err
    assert _train(str(tmp_path / "b"), "--address", "auto") == 2
    assert "--address" in capsys.readouterr().err


@pytest.mark.slow
def test_ray_actors_give_the_same_weights(tmp_path, capsys):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    a, b = str(tmp_path / "local"), str(tmp_path / "ray")
    assert _train(a) == 0
    assert _train(b, "--workers", "2", "--backend", "ray") == 0
    capsys.readouterr()
    _same(_weights(a), _weights(b))


# ------------------------------------------------------------------------------ rollout="trajectories"
def _forward(agent_window=16):
    from rtsched.rl.nets import NumpyActor, PickActor

    torch.manual_seed(0)
    return NumpyActor(PickActor(8, agent_window)).plain()


def test_sampled_trajectory_is_legal_and_depends_only_on_its_stream():
    """Trajectory k of an epoch: only legal (masked-in) actions, the environment's own terminal
    reward, and the same trajectory from another environment instance; another k or epoch differs."""
    from rtsched.rl.rollouts import sample_trajectory

    tr = load_trace(SAMPLE)
    factory = EnvFactory("rlscheduler", tr, options={"seq_len": 32, "window": 16})
    fwd = _forward()
    a = sample_trajectory(factory(), fwd, 3, 1, 5)
    b = sample_trajectory(factory(), fwd, 3, 1, 5)
    assert a["k"] == 5 and a["discarded"] == 0
    assert np.array_equal(a["act"], b["act"]) and np.array_equal(a["obs"], b["obs"]) and a["ret"] == b["ret"]
    assert all(m[x] for m, x in zip(a["mask"], a["act"]))
    assert len(a["act"]) == 32 and a["ret"] == -a["info"]["bsld"]  # no backfilling: every job is a decision
    others = [sample_trajectory(factory(), fwd, 3, e, k)["act"] for e, k in ((1, 6), (2, 5))]
    assert not any(np.array_equal(a["act"], o) for o in others)
    # A length cap below the sequence length discards every try of the slot: a clear error.
    with pytest.raises(RuntimeError, match="max_traj_len"):
        sample_trajectory(factory(), fwd, 3, 1, 5, max_len=10)


def test_process_pool_samples_the_same_trajectories_as_one_process():
    tr = load_trace(SAMPLE)
    factory = EnvFactory("rlscheduler", tr, "bsld", "rlscheduler", None, {"seq_len": 32, "window": 16})
    fwd = _forward()
    local = make_pool(factory, 2, 1)
    remote = make_pool(factory, 3, 3)
    try:
        a = local.trajectories(fwd, 9, 4, 5)
        b = remote.trajectories(fwd, 9, 4, 5)
    finally:
        remote.close()
    assert [t["k"] for t in a] == [t["k"] for t in b] == [0, 1, 2, 3, 4]
    for x, y in zip(a, b):
        assert np.array_equal(x["act"], y["act"]) and np.array_equal(x["obs"], y["obs"]) and x["ret"] == y["ret"]


@pytest.mark.slow  # two trainings with workers: about 5 s on the loaded 2-core machine
def test_trajectory_rollouts_train_the_same_with_any_worker_count(tmp_path, capsys):
    a, b = str(tmp_path / "w1"), str(tmp_path / "w2")
    assert _train(a, "--rollout", "trajectories") == 0
    assert _train(b, "--rollout", "trajectories", "--workers", "2") == 0
    capsys.readouterr()
    wa, wb = _weights(a), _weights(b)
    _same(wa, wb)
    assert wa["ppo"]["rollout"] == "trajectories"
    # The mode is part of the settings: resuming in the lock-step mode is refused, naming it.
    assert _train(a, "--resume") == 1
    assert "rollout" in capsys.readouterr().err
    # It is another random stream than the lock-step mode's: a lock-step run differs.
    c = str(tmp_path / "lockstep")
    assert _train(c) == 0
    capsys.readouterr()
    assert [h["mean_return"] for h in _weights(c)["history"]] != [h["mean_return"] for h in wa["history"]]
