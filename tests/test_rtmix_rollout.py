"""Rollout labels (``rtsched.rl.rtmix.rollout``): the improved policy is never worse than its base model on an
episode, its labels are legal, and trying the actions leaves the environment where it was."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("torch")

from rtsched.rl.cloning import LearnerActor, greedy_action  # noqa: E402
from rtsched.rl.modelfiles import load_model  # noqa: E402
from rtsched.rl.rtmix.dagger import episode_jobs  # noqa: E402
from rtsched.rl.rtmix.env import episode_reward  # noqa: E402
from rtsched.rl.rtmix.policy import PRETRAINED_RTMIX  # noqa: E402
from rtsched.rl.rtmix.rollout import action_values, model_env, rollout_labels  # noqa: E402

SEEDS = range(259_990, 260_000)  # the end of ROLLOUT_SEEDS


def test_rollout_labels_are_legal_and_the_improved_policy_is_never_worse():
    data, stats = rollout_labels(PRETRAINED_RTMIX, SEEDS)
    n = stats["decisions"]
    assert n == len(data["act"]) > 0 and data["good"].shape == data["mask"].shape
    assert not (data["good"] & ~data["mask"]).any()  # every good action is legal
    assert data["good"][np.arange(n), data["act"]].all()  # the action taken is among the best
    assert (data["mask"].sum(1) > 1).all()  # only states with a choice (the environment takes forced ones)
    assert stats["improved_reward_mean"] >= stats["base_reward_mean"] - 1e-12


def test_action_values_leave_the_environment_as_it_was_and_match_a_replay():
    env = model_env(PRETRAINED_RTMIX)
    learner = LearnerActor(load_model(PRETRAINED_RTMIX).actor)

    def policy(obs, mask):
        return greedy_action(learner, obs, mask)

    for i, seed in enumerate(SEEDS):
        jobs = episode_jobs(seed, i, env)
        obs, info = env.reset(options={"jobs": jobs})
        if env.finished:
            continue
        values = action_values(env, policy, np.flatnonzero(info["action_mask"]))
        assert np.array_equal(env.pass_.observe(), obs)  # the trials ran on copies
        # the value of the model's own first action is the reward of the episode it plays from the start
        first = policy(obs, info["action_mask"])
        done = False
        while not done:
            obs, _r, term, trunc, info = env.step(policy(obs, info["action_mask"]))
            done = term or trunc
        assert values[first] == pytest.approx(episode_reward(info["bj_sd_mean"], info["rtj_sd_mean"], env.theta,
                                                             env.penalty))
        return
    pytest.fail("no instance of SEEDS had a decision")


def test_improve_by_rollouts_writes_a_model_that_records_its_recipe(tmp_path):
    from rtsched.errors import OptionError
    from rtsched.rl.modelfiles import read_model_file
    from rtsched.rl.rtmix.rollout import improve_by_rollouts
    from rtsched.rl.rtmix.train import _save_data

    out = str(tmp_path / "improved.pt")
    with pytest.raises(OptionError, match="data-0.npz: file not found"):
        improve_by_rollouts(PRETRAINED_RTMIX, out, curriculum=str(tmp_path), weeks_rounds=0, seeds=SEEDS)
    # a stand-in for a curriculum round's data: labelled states with the model's observation layout
    states, _ = rollout_labels(PRETRAINED_RTMIX, range(259_980, 259_985))
    _save_data(str(tmp_path / "data-0.npz"), {**states, "parts": {"small": {"episodes": 0, "decisions": 0}}})
    res = improve_by_rollouts(PRETRAINED_RTMIX, out, curriculum=str(tmp_path), weeks_rounds=0, seeds=SEEDS, epochs=1)
    st = read_model_file(out)
    row = st["history"][-1]
    assert row["recipe"] == "rollout-improvement" and row["weeks_states"] == len(states["act"])
    assert res["rollout"]["decisions"] > 0 and (tmp_path / "improved-rollout.npz").exists()
    assert st["env"] == read_model_file(PRETRAINED_RTMIX)["env"]  # the base model's settings, unchanged


def test_the_rollout_recipe_on_the_command_line(tmp_path, capsys):
    from rtsched.cli import main
    from rtsched.rl.rtmix.train import _save_data

    cur = tmp_path / "cur"
    cur.mkdir()
    states, _ = rollout_labels(PRETRAINED_RTMIX, range(259_980, 259_985))
    _save_data(str(cur / "data-0.npz"), {**states, "parts": {"small": {"episodes": 0, "decisions": 0}}})
    base = ["rl", "train", "--agent", "rtmix", "--recipe", "rollout", "--no-progress"]
    out = str(tmp_path / "out")
    # wrong uses: one line each, exit 2, nothing written
    assert main(base + ["--rollout-weeks-rounds", "0", "--out", out]) == 2
    assert "needs --rollout-curriculum" in capsys.readouterr().err
    assert main(["rl", "train", "--agent", "rtmix", "--rollout-episodes", "5", "--out", out]) == 2
    assert "options of --recipe rollout" in capsys.readouterr().err
    assert main(base + ["--rollout-curriculum", str(cur), "--rollout-weeks-rounds", "0", "--rollout-seed", "5",
                        "--out", out]) == 2
    assert "leave the rollout range" in capsys.readouterr().err
    assert main(base + ["--rollout-curriculum", str(cur), "--rollout-weeks-rounds", "0", "--shield", "risk",
                        "--out", out]) == 2
    assert "--shield: not options of --recipe rollout" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    rc = main(base + ["--rollout-curriculum", str(cur), "--rollout-weeks-rounds", "0", "--rollout-seed", "259990",
                      "--rollout-episodes", "10", "--bc-epochs", "1", "--out", out])
    assert rc == 0 and (tmp_path / "out" / "model.pt").exists()
    assert "model" in capsys.readouterr().out
    # the model is written once: a second call into the same folder is refused
    assert main(base + ["--rollout-curriculum", str(cur), "--rollout-weeks-rounds", "0", "--rollout-seed", "259990",
                        "--rollout-episodes", "10", "--out", out]) == 2
