"""Rollout labels (``rtsched.rl.rtmix.rollout``): the improved policy is never worse than its base model on an
episode, its labels are legal, and trying the actions leaves the environment where it was."""
from __future__ import annotations

import json

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
    capsys.readouterr()
    # drawn futures, a penalty, two workers: recorded in the summary
    with pytest.raises(SystemExit) as exc:  # argparse's own one-line error
        main(base + ["--rollout-curriculum", str(cur), "--rollout-weeks-rounds", "0", "--rollout-futures", "-1",
                     "--out", out + "2"])
    assert exc.value.code == 2 and "--rollout-futures: must be >= 0" in capsys.readouterr().err
    rc = main(base + ["--rollout-curriculum", str(cur), "--rollout-weeks-rounds", "0", "--rollout-seed", "259994",
                      "--rollout-episodes", "4", "--rollout-futures", "2", "--rollout-workers", "2",
                      "--rollout-penalty", "2", "--bc-epochs", "1", "--json", "--out", out + "2"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rollout"]["futures"] == 2 and summary["rollout"]["penalty"] == 2.0
    assert summary["rollout"]["fallback_states"] == 0
    assert summary["rollout"]["future_samples"] == 2 * summary["rollout"]["decisions"]
    # the labels fitted again, repeated 3 times, without rolling out: their statistics come along
    labels = str(tmp_path / "out2" / "model-rollout.npz")
    assert main(base + ["--rollout-curriculum", str(cur), "--rollout-weeks-rounds", "0", "--rollout-labels", labels,
                        "--rollout-futures", "2", "--out", out + "3"]) == 2
    assert "--rollout-futures: options of the rollouts, which --rollout-labels reuses" in capsys.readouterr().err
    bad = tmp_path / "bad-rollout.npz"
    bad.write_bytes(b"not a zip file")
    assert main(base + ["--rollout-curriculum", str(cur), "--rollout-weeks-rounds", "0", "--rollout-labels", str(bad),
                        "--out", out + "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert "bad-rollout.npz: not a rollout-labels file" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out3" / "model.pt").exists()
    assert main(base + ["--rollout-curriculum", str(cur), "--rollout-weeks-rounds", "0", "--rollout-labels", labels,
                        "--rollout-repeat", "3", "--bc-epochs", "1", "--json", "--out", out + "3"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["rollout"]["labels_from"] == labels and again["rollout"]["futures"] == 2
    assert again["rollout"]["decisions"] == summary["rollout"]["decisions"]
    # a labels file of the eleventh session (no statistics in it)
    old = tmp_path / "old-rollout.npz"
    with np.load(labels) as z:
        np.savez_compressed(old, **{k: z[k] for k in ("obs", "mask", "act", "good")})
    assert main(base + ["--rollout-curriculum", str(cur), "--rollout-weeks-rounds", "0", "--rollout-labels", str(old),
                        "--bc-epochs", "1", "--out", out + "4"]) == 0
    assert f"{summary['rollout']['decisions']} Table-3 states labelled," in capsys.readouterr().out


def test_drawn_futures_give_the_same_labels_with_any_number_of_workers():
    one, s1 = rollout_labels(PRETRAINED_RTMIX, range(259_994, 260_000), futures=2, workers=1)
    two, s2 = rollout_labels(PRETRAINED_RTMIX, range(259_994, 260_000), futures=2, workers=2)
    assert s1 == s2 and s1["decisions"] > 0
    for k in one:
        assert np.array_equal(one[k], two[k])


# ------------------------------------------------------------------ non-anticipative labels (futures drawn)
def test_runtime_posterior_by_hand():
    from rtsched.generators.smallmix import runtime_posterior
    grid = {"runtime_min": 60, "runtime_max": 600, "runtime_step": 60}
    # walltime 500 = ceil(r·f), f ~ U(1, 2): f in (499/r, 500/r] has width 1/r when that lies inside [1, 2]:
    # r = 300, 360, 420, 480 (r = 240 needs f > 2; r = 540 > 500); so P(r | 500) ∝ 1/r on those four
    r, p = runtime_posterior(500, **grid)
    assert list(r) == [300, 360, 420, 480]
    inv = np.array([1 / 300, 1 / 360, 1 / 420, 1 / 480])
    assert p == pytest.approx(inv / inv.sum())
    # walltime 480: r = 240 (f in (479/240, 2]: width 1/240), 300, 360, 420; r = 480 needs f = 1 exactly (width 0)
    r, p = runtime_posterior(480, **grid)
    assert list(r) == [240, 300, 360, 420]
    # a job known to have run 400 s is longer than that
    r, p = runtime_posterior(500, above=400, **grid)
    assert list(r) == [420, 480] and p.sum() == pytest.approx(1.0)
    # walltime = runtime: the walltime itself, or nothing off the grid
    assert list(runtime_posterior(3000, walltime_factor=(1.0, 1.0))[0]) == [3000]
    assert len(runtime_posterior(3001, walltime_factor=(1.0, 1.0))[0]) == 0


def test_runtime_posterior_holds_every_runtime_the_generator_draws():
    from rtsched.generators.smallmix import random_jobs, runtime_posterior
    for seed in range(300):
        for factor in ((1.0, 2.0), (1.0, 1.0)):
            for j in random_jobs(seed, 5, 2, 16, walltime_factor=factor):
                r, p = runtime_posterior(j.walltime, walltime_factor=factor)
                assert j.runtime in set(r[p > 0].tolist()), (seed, factor, j)


def test_redraw_unseen_keeps_the_seen_past_and_redraws_the_rest():
    from rtsched.generators.smallmix import random_jobs, redraw_unseen
    jobs = random_jobs(11, 5, 2, 16)
    now = sorted(j.submit for j in jobs)[3]  # four jobs seen
    seen = {j.id: j for j in jobs if j.submit <= now}
    first = min(seen)
    rng = np.random.default_rng(0)
    for _ in range(50):
        drawn = redraw_unseen(jobs, now, 2, rng, finished={first}, above={i: 100 for i in seen if i != first})
        assert len(drawn) == len(jobs) and sorted(j.id for j in drawn) == sorted(j.id for j in jobs)
        assert sum(j.kind == "rt" for j in drawn) == 2
        by_id = {j.id: j for j in drawn}
        assert by_id[first] == seen[first]  # finished: its runtime is known
        for i, j in seen.items():
            d = by_id[i]
            assert (d.submit, d.walltime, d.nodes, d.kind) == (j.submit, j.walltime, j.nodes, j.kind)
            assert d.runtime > 100 or i == first
            assert d.runtime <= d.walltime <= 2 * d.runtime
        for d in drawn:
            if d.id not in seen:
                assert now < d.submit <= 3600 and d.runtime <= d.walltime <= 2 * d.runtime


def test_labels_drawn_over_futures_never_depend_on_a_later_job():
    """With futures drawn given the observed past, changing the last job to arrive (its runtime, walltime and
    size) leaves every label before its submit time as it was: the labels are non-anticipative."""
    from rtsched.jobs import Job
    from rtsched.rl.rtmix.dagger import episode_generator
    from rtsched.rl.rtmix.rollout import improved_episode

    env = model_env(PRETRAINED_RTMIX)
    learner = LearnerActor(load_model(PRETRAINED_RTMIX).actor)

    def policy(obs, mask):
        return greedy_action(learner, obs, mask)

    compared = 0
    for i, seed in enumerate(SEEDS):
        gen = episode_generator(i, env)
        jobs = episode_jobs(seed, i, env)
        last = max(jobs, key=lambda j: (j.submit, j.id))
        runtime = 7200 if last.runtime < 7200 else 600
        other = Job(last.id, last.submit, runtime, runtime, 8192 if last.nodes < 8192 else 512, last.kind)
        changed = [other if j is last else j for j in jobs]
        a = improved_episode(env, jobs, policy, futures=2, generator=gen, rng=np.random.default_rng(seed))
        b = improved_episode(env, changed, policy, futures=2, generator=gen, rng=np.random.default_rng(seed))
        assert a["fallbacks"] == b["fallbacks"] == 0 and a["samples"] == 2 * len(a["act"])
        before = [k for k, t in enumerate(a["times"]) if t < last.submit]
        assert [b["times"][k] for k in before] == [a["times"][k] for k in before]
        for k in before:
            assert np.array_equal(a["obs"][k], b["obs"][k]) and np.array_equal(a["good"][k], b["good"][k])
            assert a["act"][k] == b["act"][k]
        compared += len(before)
    assert compared > 0
