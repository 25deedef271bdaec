"""rtmix's BJ-for-BJ preemption action (golden, hand-worked) and DAgger with an online expert (issue 23 §3)."""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("torch")

import rtsched  # noqa: E402
from rtsched.checkpoint import CheckpointModel  # noqa: E402
from rtsched.jobs import Job, Workload  # noqa: E402
from rtsched.machines import machine_from_spec  # noqa: E402
from rtsched.rl.rtmix.core import BJ_FEATURES, N_FEATURES, RtMixPass, RtMixSpec  # noqa: E402
from rtsched.rl.rtmix.env import RtMixEnv  # noqa: E402
from rtsched.sim.decisions import Preempt, Start  # noqa: E402

SPEC = RtMixSpec(window=8, candidates=4, bj_candidates=2)
BJ0 = SPEC.bj_first  # the first BJ-preemption slot: 8 + 4 = 12
WAIT = SPEC.wait_action  # 14


def _jobs() -> list[Job]:
    """Mira:2 (two 512-node blocks; partitions 0 and 1 of 512 nodes, 2 of 1024).  A (1024 nodes, 1000 s
    of work, walltime 2000 s, checkpointable) runs from 0; B (512 nodes, 300 s, not checkpointable)
    arrives at 100 and finds nothing free."""
    return [Job(1, 0, 1000, 2000, 1024), Job(2, 100, 300, 300, 512, checkpointable=False)]


def _pass_at_100(checkpoint: str) -> RtMixPass:
    from rtsched.sim.core import Simulator

    machine = machine_from_spec("mira:2")
    sim = Simulator(Workload(_jobs(), name="bjbj", max_nodes=machine.total_nodes), machine,
                    checkpoint=CheckpointModel.parse(checkpoint))
    assert sim.advance()
    sim.apply([Start(1, 2)])  # A on the whole machine at 0
    assert sim.advance() and sim.view.now == 100
    return RtMixPass(sim.view, SPEC)


def _run(checkpoint: str):
    env = RtMixEnv("mira:2", checkpoint, bj_candidates=2)
    obs, info = env.reset(options={"jobs": _jobs()})
    # the only choice of the run: at 100, B's start is impossible; free a 512-node half (either: the same
    # victim, the same cost, the lower index first) or wait
    mask = info["action_mask"]
    assert env.sim.view.now == 100 and np.flatnonzero(mask).tolist() == [BJ0, BJ0 + 1, WAIT]
    assert env.pass_.bj_target().info.id == 2
    rows = obs.reshape(SPEC.n_actions, N_FEATURES + len(BJ_FEATURES))
    assert rows[BJ0, N_FEATURES] == 1.0 and rows[BJ0, 1] == 1.0 and rows[8, N_FEATURES] == 0.0
    _obs, _r, done, _t, info = env.step(BJ0)
    assert done  # nothing else is ever a choice: A's restart is the only legal action when B ends
    res = env.result()
    return {o.job.id: o for o in res.outcomes}, res


def test_bj_preemption_under_jit_charges_the_write_and_the_read():
    # io (DESIGN.md): 1024 nodes → bandwidth min(1024/128 · 4, 216) = 32 GB/s, write = read = 16·1024/32 = 512 s.
    # A runs [0, 100], writes its checkpoint [100, 612]; B starts when the write ends, [612, 912];
    # A restarts on the whole machine when B ends: read [912, 1424], its 900 s left [1424, 2324].
    out, res = _run("jit")
    a, b = out[1], out[2]
    assert (b.first_start, b.end) == (612, 912)
    assert a.end == 2324 and a.t_ckpt == 512 and a.t_restart == 512 and a.t_lost == 0 and a.n_preemptions == 1
    assert b.n_preemptions == 0 and b.t_ckpt == 0


def test_bj_preemption_under_sys_loses_the_work_since_the_last_checkpoint():
    # SYS every 3600 s of run: A (walltime 2000 s) has taken no checkpoint at 100, so its 100 s are lost
    # and nothing is read back; B starts at once, [100, 400]; A runs again from zero, [400, 1400].
    out, _res = _run("sys")
    a, b = out[1], out[2]
    assert (b.first_start, b.end) == (100, 400)
    assert a.end == 1400 and a.t_lost == 100 and a.t_ckpt == 0 and a.t_restart == 0


def test_bj_preemption_is_not_offered_without_checkpoints_nor_twice_nor_by_default():
    assert not _pass_at_100("no").mask()[BJ0:WAIT].any()  # NO: a preempted job would restart from zero
    ps = _pass_at_100("jit")
    assert ps.mask()[BJ0:WAIT].tolist() == [True, True]
    ps.apply(BJ0)
    assert [type(d) for d in ps.decisions] == [Preempt, Start] and ps.decisions[1].job_id == 2
    assert not ps.mask()[BJ0:WAIT].any()
    # the agents trained before the action: the same action space and observation as ever
    old = RtMixEnv("mira:16", "jit")
    assert old.action_space.n == 13 and old.observation_space.shape == (13 * N_FEATURES,)
    assert "bj_candidates" not in old.config()


def test_dagger_expert_labels_are_legal_actions_and_use_the_bj_slots():
    """replan as the expert, on the learner's states (a random learner, β = 0.5): every label is a
    masked-legal action and every "good" set lies inside the mask; replan's BJ splits show up as
    BJ-preemption labels (seeds 200004 and 200005 have one each, followed by the expert)."""
    from heuristics.registry import make_policy
    from rtsched.rl.rtmix.dagger import episode_jobs
    from rtsched.rl.rtmix.teacher import policy_teacher_episode

    env = RtMixEnv("mira:16", "jit", bj_candidates=2)

    class RandomLearner:
        def __init__(self, seed):
            self.rng = np.random.default_rng(seed)

            class Fast:
                @staticmethod
                def logits(obs, mask):
                    return np.where(mask, self.rng.random(len(mask)), -np.inf)

            self.fast = Fast()

    labels = []
    for i, seed in enumerate((200004, 200005)):
        for learner, beta in ((None, 0.0), (RandomLearner(seed), 0.5)):
            ep = policy_teacher_episode(env, episode_jobs(seed, 2 * i, env), make_policy("replan"), learner,
                                        beta=beta, rng=np.random.default_rng(seed), every_pass=True)
            assert ep.actions and env.pass_observer is None
            for a, m, g in zip(ep.actions, ep.masks, ep.goods):
                assert m[a] and g[a] and not (g & ~m).any()
            if learner is None:
                labels += ep.actions
    assert any(BJ0 <= a < WAIT for a in labels)


def test_dagger_rounds_resume_and_record_their_seeds(tmp_path):
    from rtsched.rl.modelfiles import read_model_file
    from rtsched.rl.rtmix.dagger import DAGGER_SEEDS, run_dagger

    out = str(tmp_path / "d")
    first = run_dagger(out, teacher="wcjs", rounds=1, episodes=2, bc_epochs=2)
    assert len(first["rounds"]) == 1 and first["rounds"][0]["beta"] == 1.0
    res = run_dagger(out, teacher="wcjs", rounds=2, episodes=2, bc_epochs=2)
    rounds = res["rounds"]
    assert [r["round"] for r in rounds] == [0, 1] and rounds[1]["beta"] == 0.5
    assert rounds[0] == first["rounds"][0]  # round 0 was read back, not redone
    st = read_model_file(str(tmp_path / "d" / "checkpoint.pt"))
    rec = st["history"][0]
    assert rec["recipe"] == "dagger" and rec["train_seeds"]["dagger"] == [DAGGER_SEEDS.start, DAGGER_SEEDS.start + 4]
    assert st["env"]["bj_candidates"] == 2 and st["arch"]["n_features"] == N_FEATURES + len(BJ_FEATURES)
    assert rounds[1]["samples"] == rounds[0]["decisions"] + rounds[1]["decisions"]
    # a copy of a round's model alone (for PPO fine-tuning) needs none of the rounds' data
    import shutil

    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(tmp_path / "d" / "round-1.pt", copy / "checkpoint.pt")
    again = run_dagger(str(copy), teacher="wcjs", rounds=2, episodes=2, bc_epochs=2)
    assert again["rounds"] == rounds and not list(copy.glob("dagger-data-*"))


def test_a_resumed_dagger_run_keeps_the_model_it_started_from(tmp_path):
    from rtsched.rl.modelfiles import read_model_file
    from rtsched.rl.rtmix.dagger import run_dagger

    shipped = os.path.join(os.path.dirname(rtsched.__file__), "rl", "pretrained", "rtmix", "rtmix.pt")
    out = str(tmp_path / "d")
    run_dagger(out, teacher="wcjs", rounds=1, episodes=1, bc_epochs=1, init_from=shipped)
    run_dagger(out, teacher="wcjs", rounds=2, episodes=1, bc_epochs=1)  # resumed without --init-from
    for name in ("checkpoint.pt", "round-0.pt", "round-1.pt"):
        assert read_model_file(os.path.join(out, name))["history"][0]["init_from"] == "rtmix.pt"
