"""The split window's warm start and fine-tuning (issue 24 §4): PPO from a clone file (``clone_from``),
the critic warm-up, the KL anchor to the clone, and DAgger rounds (resumable, scored on validation,
accounted in budget.json)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="the rl extra (gymnasium) is not installed")
torch = pytest.importorskip("torch", reason="the rl extra (torch) is not installed")

from conftest import REPO  # noqa: E402

SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")
TINY = dict(head=4, tail=2, placements=40, hidden=(16, 8), seed=1)


def _state(path: str, part: str = "actor") -> dict:
    return torch.load(path, weights_only=False)[part]


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def clone_file(tmp_path_factory) -> str:
    """A tiny clone of the window teacher (epoch 0 of a run), exported as a policy-only model file."""
    from rtsched.rl.api import train
    from rtsched.rl.modelfiles import CHECKPOINT, export_model

    out = tmp_path_factory.mktemp("clone")
    train("splitwindow", SAMPLE, epochs=0, out=str(out), clone_episodes=2, clone_epochs=3, **TINY)
    export_model(str(out / CHECKPOINT), str(out / "clone.pt"))
    return str(out / "clone.pt")


def test_clone_from_starts_with_the_files_actor_and_a_fresh_critic(tmp_path, clone_file):
    from rtsched.rl.api import train
    from rtsched.rl.modelfiles import CHECKPOINT, ModelFileError

    out = tmp_path / "from"
    train("splitwindow", SAMPLE, epochs=0, out=str(out), clone_from=clone_file, **TINY)
    assert _same(_state(str(out / CHECKPOINT)), _state(clone_file))
    fresh = _trainer(tmp_path / "fresh")  # without the option the run starts elsewhere
    assert not _same(fresh.actor.state_dict(), _state(clone_file))
    # another architecture or another agent's file: one error naming the file
    with pytest.raises(ModelFileError, match="does not match"):
        train("splitwindow", SAMPLE, epochs=0, out=str(tmp_path / "wide"), clone_from=clone_file,
              **{**TINY, "hidden": (32, 8)})
    with pytest.raises(Exception, match="not both"):
        train("splitwindow", SAMPLE, epochs=0, out=str(tmp_path / "both"), clone_from=clone_file,
              clone_episodes=1, **TINY)


def _trainer(tmp_path, **ppo):
    from rtsched.rl.api import EnvFactory, make_env
    from rtsched.rl.trace import load_trace
    from rtsched.rl.trainer import PPOConfig, PPOTrainer
    from rtsched.machines import FlatCluster

    tr = load_trace(SAMPLE)
    env_opts = dict(head=4, tail=2, placements=40)
    probe = make_env("splitwindow", tr, **env_opts)
    factory = EnvFactory("splitwindow", tr, "bsld", "none", FlatCluster(tr.max_nodes), env_opts)
    cfg = PPOConfig(hidden=(16, 8), minibatch=32, trajs_per_epoch=1, n_envs=1, seed=1, **ppo)
    return PPOTrainer("splitwindow", factory, cfg, {"agent": "splitwindow", **env_opts}, probe.norms,
                      out=str(tmp_path), first_env=probe)


def _states(seed: int):
    """The window teacher's states of one tiny episode (observations, masks)."""
    from rtsched.rl.api import make_env
    from rtsched.rl.cloning import teacher_decisions

    data = teacher_decisions(make_env("splitwindow", SAMPLE, head=4, tail=2, placements=40), [{"seed": seed}])
    return torch.as_tensor(data["obs"]), torch.as_tensor(data["mask"])


def test_critic_warmup_updates_only_the_value_network(tmp_path):
    tr = _trainer(tmp_path, critic_warmup=2)
    actor0 = {k: v.clone() for k, v in tr.actor.state_dict().items()}
    critic0 = {k: v.clone() for k, v in tr.critic.state_dict().items()}
    tr.train(2)
    assert _same(tr.actor.state_dict(), actor0)  # epochs 1 and 2: no policy pass
    assert not _same(tr.critic.state_dict(), critic0)
    assert all(h["pi_iters"] == 0 for h in tr.history)
    tr.train(3)  # epoch 3: the actor moves too
    assert not _same(tr.actor.state_dict(), actor0) and tr.history[-1]["pi_iters"] > 0


def test_kl_anchor_is_zero_at_the_anchor_and_grows_as_the_policy_moves(tmp_path):
    from rtsched.rl.trainer import _kl

    tr = _trainer(tmp_path, anchor_kl=1.0)
    tr.set_anchor()
    obs, mask = _states(0)

    def kl() -> float:
        with torch.no_grad():
            ref = torch.log_softmax(tr.anchor(obs, mask), -1)
            return float(_kl(ref, torch.log_softmax(tr.actor(obs, mask), -1), mask).mean())

    assert kl() == 0.0
    start = {k: v.clone() for k, v in tr.actor.state_dict().items()}
    gen = torch.Generator().manual_seed(0)
    noise = {k: torch.randn(v.shape, generator=gen) for k, v in start.items()}
    seen = []
    for eps in (0.01, 0.05, 0.2):
        tr.actor.load_state_dict({k: start[k] + eps * noise[k] for k in start})
        seen.append(kl())
    assert 0.0 < seen[0] < seen[1] < seen[2]
    # a hand check of KL(p ‖ q) on two actions: p = (0.5, 0.5), q = (0.9, 0.1)
    p, q = torch.log(torch.tensor([[0.5, 0.5]])), torch.log(torch.tensor([[0.9, 0.1]]))
    want = 0.5 * np.log(0.5 / 0.9) + 0.5 * np.log(0.5 / 0.1)
    assert float(_kl(p, q, torch.tensor([[True, True]]))) == pytest.approx(want, rel=1e-6)
    tr.actor.load_state_dict(start)
    tr.train(2)  # the trainer records the term's size, and the anchor stays the actor it started from
    assert [h["kl_anchor"] > 0 for h in tr.history] == [True, True]
    assert _same(tr.anchor.state_dict(), start)
    tr.save(str(tmp_path / "ck.pt"))
    again = _trainer(tmp_path / "again", anchor_kl=1.0)
    again.restore(str(tmp_path / "ck.pt"))
    assert again.anchor is not None and _same(again.anchor.state_dict(), start)


def test_a_stronger_anchor_keeps_the_policy_nearer_the_clone(tmp_path):
    from rtsched.rl.trainer import _kl

    drift = {}
    obs, mask = _states(5)
    for beta in (0.0, 50.0):
        tr = _trainer(tmp_path / str(beta), anchor_kl=beta, pi_lr=3e-3)
        tr.set_anchor()
        tr.train(2)
        with torch.no_grad():
            drift[beta] = float(_kl(torch.log_softmax(tr.anchor(obs, mask), -1),
                                    torch.log_softmax(tr.actor(obs, mask), -1), mask).mean())
    assert drift[50.0] < drift[0.0]


class _Always:
    """A learner that always picks action ``a`` (``fast.logits``, as LearnerActor)."""

    def __init__(self, a: int, n: int) -> None:
        self.fast = self
        self.a, self.n = a, n

    def logits(self, obs, mask):
        out = np.zeros(self.n, dtype=np.float32)
        out[self.a] = 1.0
        return out


def test_dagger_episodes_follow_the_learner_and_carry_the_teachers_labels():
    from rtsched.rl.api import make_env
    from rtsched.rl.cloning import teacher_decisions

    env = make_env("splitwindow", SAMPLE, head=4, tail=2, placements=40)
    plain = teacher_decisions(env, [{"seed": 3}])
    # β = 1: the teacher acts everywhere, the data are the teacher's own episode
    mixed = teacher_decisions(env, [{"seed": 3}], learner=_Always(env.fwd, env.fwd + 1), beta=1.0,
                              rng=np.random.default_rng(0))
    for k in ("obs", "mask", "act", "good"):
        assert np.array_equal(plain[k], mixed[k]), k
    # β = 0 with a learner that always moves on: no job ever starts, yet every state is labelled by the
    # teacher (it would start a job wherever one fits), and the learner was right only where Fwd is good
    lazy = teacher_decisions(env, [{"seed": 3}], learner=_Always(env.fwd, env.fwd + 1), beta=0.0)
    assert lazy["infos"][0]["placements"] == 0
    assert (lazy["act"] != env.fwd).any()
    assert lazy["learner_good"] == pytest.approx(float(lazy["good"][:, env.fwd].mean()))
    assert np.array_equal(lazy["good"][np.arange(len(lazy["act"])), lazy["act"]], np.ones(len(lazy["act"]), bool))
    with pytest.raises(ValueError, match="needs rng"):
        teacher_decisions(env, [{"seed": 3}], learner=_Always(0, env.fwd + 1), beta=0.5)


DAGGER = dict(TINY, clone_episodes=1, clone_epochs=2, dagger_episodes=1, bc_epochs=1, select_every=1,
              validation_segments=1, validation_jobs=60)


def test_dagger_rounds_resume_as_one_run_and_are_scored_and_accounted(tmp_path):
    """Two rounds in two steps (stopped by OUT/STOP after round 1) end with the same actor and labelled
    states as two rounds in one step; each round is a validation row (epoch 0, stage dagger-R) and
    budget.json's steps name their rounds."""
    from rtsched.rl.api import train
    from rtsched.rl.budget import BUDGET, STOP_FILE
    from rtsched.rl.modelfiles import CHECKPOINT
    from rtsched.rl.selection import SELECTION

    whole = tmp_path / "whole"
    train("splitwindow", SAMPLE, epochs=0, out=str(whole), dagger_rounds=2, budget=True, **DAGGER)
    steps = tmp_path / "steps"
    steps.mkdir()
    (steps / STOP_FILE).write_text("")
    r1 = train("splitwindow", SAMPLE, epochs=0, out=str(steps), dagger_rounds=2, budget=True, **DAGGER)
    assert r1["stopped"]
    assert [r["round"] for r in json.loads((steps / "dagger.json").read_text())["rounds"]] == [1]
    (steps / STOP_FILE).unlink()
    train("splitwindow", SAMPLE, epochs=0, out=str(steps), dagger_rounds=2, budget=True, resume=True, **DAGGER)
    assert _same(_state(str(whole / CHECKPOINT)), _state(str(steps / CHECKPOINT)))
    for r in (1, 2):
        with np.load(whole / f"dagger-data-{r}.npz") as a, np.load(steps / f"dagger-data-{r}.npz") as b:
            assert np.array_equal(a["obs"], b["obs"]) and np.array_equal(a["good"], b["good"])
    rounds = json.loads((steps / "dagger.json").read_text())["rounds"]
    assert [r["round"] for r in rounds] == [1, 2]
    assert rounds[1]["samples"] == rounds[0]["samples"] + rounds[1]["decisions"]  # the aggregate grows
    assert all(r["validation"] > 0 and r["cpu_s"] >= 0 and 0 <= r["learner_good"] <= 1 for r in rounds)
    sel = json.loads((steps / SELECTION).read_text())
    assert [(r["epoch"], r.get("stage")) for r in sel["epochs"]] == [(0, None), (0, "dagger-1"), (0, "dagger-2")]
    assert [r["validation"] for r in sel["epochs"][1:]] == [r["validation"] for r in rounds]
    budget = json.loads((steps / BUDGET).read_text())
    assert [s.get("dagger_rounds") for s in budget["steps"]] == [[1, 1], [2, 2]]
    # more rounds after PPO epochs would discard them; other settings on resume are refused
    train("splitwindow", SAMPLE, epochs=1, out=str(whole), dagger_rounds=2, resume=True, **DAGGER)
    from rtsched.errors import OptionError

    with pytest.raises(OptionError, match="went on with PPO"):
        train("splitwindow", SAMPLE, epochs=1, out=str(whole), dagger_rounds=3, resume=True, **DAGGER)
    with pytest.raises(OptionError, match="was run with"):
        train("splitwindow", SAMPLE, epochs=0, out=str(steps), dagger_rounds=3, resume=True,
              **{**DAGGER, "bc_epochs": 2})


def test_dagger_moves_the_learner_towards_the_teacher_on_its_own_states(tmp_path):
    """From a weak clone, rounds of DAgger raise the share of the learner's own states where its
    greedy choice is one the teacher counts as good."""
    from rtsched.rl.api import train

    out = tmp_path / "d"
    opts = {k: v for k, v in DAGGER.items() if k not in ("select_every", "validation_segments", "validation_jobs")}
    train("splitwindow", SAMPLE, epochs=0, out=str(out), dagger_rounds=4, **{**opts, "bc_epochs": 4})
    rounds = json.loads((out / "dagger.json").read_text())["rounds"]
    shares = [r["learner_good"] for r in rounds]
    assert shares[-1] > shares[0]


def _cli(*extra: str) -> int:
    """``rtsched rl train`` of a tiny split window with ``extra`` options."""
    from rtsched.cli import main

    return main(["rl", "train", "--agent", "splitwindow", "--trace", SAMPLE, "--no-progress", "--head", "4",
                 "--tail", "2", "--placements", "30", "--hidden", "8", *extra])


def test_cli_dagger_options(tmp_path, capsys):
    """DAgger's flags need --dagger-rounds; --epochs 0 needs a pre-stage; a run records β₀."""
    assert _cli("--out", str(tmp_path / "a"), "--dagger-episodes", "2") == 2
    assert "--dagger-episodes: an option of --dagger-rounds" in capsys.readouterr().err
    assert _cli("--out", str(tmp_path / "b"), "--epochs", "0") == 2
    assert "--epochs: must be at least 1" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "b")
    out = str(tmp_path / "c")
    assert _cli("--out", out, "--epochs", "0", "--dagger-rounds", "1", "--dagger-episodes", "1", "--bc-epochs", "1",
                "--beta0", "0.5", "--json") == 0
    rec = json.loads(open(os.path.join(out, "dagger.json")).read())
    assert rec["settings"]["beta0"] == 0.5 and rec["rounds"][0]["beta"] == 0.5


def test_permuted_copy_by_hand():
    from rtsched.rl.splitwindow.dagger import permuted_copy

    # 2 cores, a 3-slot window: slots A (c .5, r .1), B (c 1, r .9), C empty; the teacher picks A (slot 0),
    # B does not fit (mask False); a second state where the teacher moves on (Fwd = 3)
    obs = np.array([[0.0, 0.3, 0.5, 0.1, 0.2, 1.0, 0.9, 0.4, 0, 0, 0],
                    [0.2, 0.3, 1.0, 0.5, 0.7, 0, 0, 0, 0, 0, 0]], dtype=np.float32)
    data = {"obs": obs, "mask": np.array([[1, 0, 0, 1], [0, 0, 0, 1]], bool), "act": np.array([0, 3]),
            "good": np.array([[1, 0, 0, 0], [1, 1, 1, 1]], bool)}
    seen = set()
    for seed in range(20):
        cp = permuted_copy(data, 2, 3, np.random.default_rng(seed))
        np.testing.assert_array_equal(cp["obs"][:, :2], obs[:, :2])  # the cores stay
        np.testing.assert_array_equal(cp["obs"][1], obs[1])  # one occupied slot: nothing to shuffle
        assert cp["act"][1] == 3 and cp["good"][1].tolist() == [True] * 4
        a = int(cp["act"][0])
        slots = cp["obs"][0, 2:].reshape(3, 3)
        np.testing.assert_array_equal(slots[a], obs[0, 2:5])  # the action follows job A
        np.testing.assert_array_equal(slots[2], [0, 0, 0])  # the empty slot stays last
        assert cp["mask"][0].tolist() == [i == a for i in range(3)] + [True]
        assert cp["good"][0].tolist() == [i == a for i in range(3)] + [False]
        seen.add(a)
    assert seen == {0, 1}  # both orders occur


def test_permuted_copy_keeps_every_teacher_label_on_real_states():
    from rtsched.rl.api import make_env
    from rtsched.rl.cloning import teacher_decisions
    from rtsched.rl.splitwindow.dagger import permuted_copy

    env = make_env("splitwindow", SAMPLE, head=4, tail=2, placements=40, mask_invalid=True)
    data = teacher_decisions(env, [{"seed": 3}, {"seed": 4}])
    cp = permuted_copy(data, env.obsb.n, env.window, np.random.default_rng(1))
    n, m = env.obsb.n, env.window
    for k in range(len(data["act"])):
        old, new = data["obs"][k, n:].reshape(m, 3), cp["obs"][k, n:].reshape(m, 3)
        # the same jobs, the same number of good and allowed slots, the action on a good, allowed slot
        assert sorted(map(tuple, old.tolist())) == sorted(map(tuple, new.tolist()))
        assert data["good"][k].sum() == cp["good"][k].sum() and data["mask"][k].sum() == cp["mask"][k].sum()
        a = int(cp["act"][k])
        assert cp["good"][k, a] and cp["mask"][k, a]
        if a < m:  # the job the teacher picks: its features moved with it
            np.testing.assert_array_equal(new[a], old[int(data["act"][k])])


def test_dagger_with_permuted_copies_runs_resumes_and_records_the_setting(tmp_path):
    from rtsched.rl.api import train
    from rtsched.rl.splitwindow.dagger import read_record

    out = str(tmp_path / "p")
    opts = dict(DAGGER, mask_invalid=True, bc_permute=2)
    train("splitwindow", trace=SAMPLE, epochs=0, out=out, dagger_rounds=1, **opts)
    rec = read_record(out)
    assert rec["settings"]["permute"] == 2 and len(rec["rounds"]) == 1
    # three times the aggregate (itself plus two shuffled copies) was fitted
    assert rec["rounds"][0]["samples"] % 3 == 0
    train("splitwindow", trace=SAMPLE, epochs=0, out=out, dagger_rounds=2, resume=True, **opts)
    assert len(read_record(out)["rounds"]) == 2
    with pytest.raises(Exception, match="permute"):
        train("splitwindow", trace=SAMPLE, epochs=0, out=out, dagger_rounds=3, resume=True, **dict(opts, bc_permute=1))
