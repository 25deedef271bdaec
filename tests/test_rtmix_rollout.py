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
