"""The job-picking (RLScheduler) and inspector (SchedInspector) Gymnasium environments."""
from __future__ import annotations

import dataclasses
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from conftest import shared_data
from rtsched.jobs import Job, Workload
from rtsched.machines import AlignedMira, FlatCluster
from rtsched.rl.sequences import run_sequence
from rtsched.rl.inspector.env import ACCEPT, REJECT, InspectorEnv, relative_reward
from rtsched.rl.rlscheduler.env import JobPickingEnv
from rtsched.rl.features import FEW_ROWS, HI, LO, PickObservation
from rtsched.rl.trace import read_rl_trace, trace_from_workload


@pytest.fixture(scope="module")
def lublin1():
    return read_rl_trace(str(shared_data("traces", "swf", "lublin_256.swf")))


def _quiet_check(env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, skip_render_check=True)


def _rollout(env, choose, **reset_kw):
    obs, info = env.reset(**reset_kw)
    seen = [obs]
    while True:
        obs, r, term, trunc, info = env.step(choose(env, obs))
        seen.append(obs)
        if term or trunc:
            return r, info, seen


# ----------------------------------------------------------------------------------- job picking
def test_pick_env_passes_gymnasium_checker(lublin1):
    _quiet_check(JobPickingEnv(lublin1, seq_len=64))
    _quiet_check(JobPickingEnv(lublin1, seq_len=64, backfill="rlscheduler", features="code+free", pad="authors"))


@pytest.mark.parametrize("backfill", ["none", "rlscheduler", "easy"])
def test_pick_env_fcfs_choice_reproduces_compat_fcfs(lublin1, backfill):
    # Always picking slot 0 (the oldest waiting job) is FCFS in the committed-head semantics.
    env = JobPickingEnv(lublin1, seq_len=512, backfill=backfill)
    r, info, _ = _rollout(env, lambda e, o: 0, options={"start": 2756})
    ref = run_sequence(lublin1, 2756, 512, "fcfs", backfill=backfill)["bsld"]
    assert info["bsld"] == pytest.approx(ref, rel=1e-12)
    assert r == pytest.approx(-ref)
    assert info["decisions"] <= 512


def test_pick_env_shortest_choice_reproduces_compat_sjf(lublin1):
    # Choosing the visible job with the smallest requested time (feature 1), oldest first among ties,
    # is SJF as long as the queue fits the window.
    def sjf(env, obs):
        k = int(env.action_masks().sum())
        return int(np.argmin(obs.reshape(-1, 8)[:k, 1]))

    env = JobPickingEnv(lublin1, seq_len=256, backfill="rlscheduler")
    _, info, _ = _rollout(env, sjf, options={"start": 5228})
    assert info["bsld"] == pytest.approx(run_sequence(lublin1, 5228, 256, "sjf", backfill="rlscheduler")["bsld"])


def test_pick_env_observation_and_mask(lublin1):
    env = JobPickingEnv(lublin1, seq_len=256, window=16)
    obs, _ = env.reset(options={"start": 1981})
    assert obs.shape == (16 * 8,) and obs.dtype == np.float32
    mask = env.action_masks()
    k = int(mask.sum())
    rows = obs.reshape(16, 8)
    assert k >= 1 and mask[:k].all() and not mask[k:].any()
    assert (rows[k:] == 0).all()  # zero padding
    assert set(np.unique(rows[:k, 7])) <= {np.float32(HI), np.float32(LO)}
    assert ((rows[:k] >= 0) & (rows[:k] <= 1)).all() and (rows[:k, [0, 1, 2, 7]] < 1).all()
    # Lublin has no memory/user/group/executable: the authors' "unknown" value 1.
    assert (rows[:k, 3:7] == 1).all()
    # An action on a padded slot is taken modulo the occupied slots instead of failing.
    env.step(15)
    with pytest.raises(ValueError):
        env.step(16)


def test_pick_env_window_is_fcfs_top(lublin1):
    env = JobPickingEnv(lublin1, seq_len=512, window=4)
    env.reset(options={"start": 8850})
    # Grow the queue by always picking the newest visible job, then check the window holds the oldest.
    for _ in range(40):
        k = int(env.action_masks().sum())
        _, _, done, _, _ = env.step(k - 1)
        if done:
            break
        q = env.driver.q
        if len(q) > 4:
            assert env._vis == q[:4]
            subs = [js.info.submit for js in q]
            assert subs == sorted(subs)
            return
    pytest.skip("queue never exceeded the window")


def test_pick_env_is_seeded_and_deterministic(lublin1):
    def run(seed):
        env = JobPickingEnv(lublin1, seq_len=64, backfill="rlscheduler")
        rng = np.random.default_rng(7)
        r, info, obs = _rollout(env, lambda e, o: int(rng.integers(int(e.action_masks().sum()))), seed=seed)
        return info["start"], r, np.stack(obs)

    a, b, c = run(11), run(11), run(12)
    assert a[0] == b[0] and a[1] == b[1] and np.array_equal(a[2], b[2])
    assert a[0] != c[0]


def test_pick_env_start_range_and_filter(lublin1):
    env = JobPickingEnv(lublin1, seq_len=64, start_range=(0.0, 0.2))
    lo, hi = env.bounds
    assert lo == 0 and hi == 2000 - 64
    starts = {env.reset(seed=s)[1]["start"] for s in range(20)}
    assert all(0 <= s <= hi for s in starts)
    env = JobPickingEnv(lublin1, seq_len=64, start_range=(0, 2000), sjf_filter=(5.0, 200.0))
    for s in range(5):
        start = env.reset(seed=s)[1]["start"]
        v = run_sequence(lublin1, start, 64, "sjf")["bsld"]
        assert 5.0 < v < 200.0


@pytest.mark.parametrize("goal", ["wait", "turnaround", "slowdown", "utilization", "fairness"])
def test_pick_env_goals(lublin1, goal):
    env = JobPickingEnv(lublin1, seq_len=64, goal=goal)
    r, info, _ = _rollout(env, lambda e, o: 0, options={"start": 300})
    assert r == pytest.approx(info[goal] if goal == "utilization" else -info[goal])
    if goal == "utilization":
        assert 0 < r <= 1


def test_pick_env_sync_vector(lublin1):
    venv = gym.vector.SyncVectorEnv([lambda: JobPickingEnv(lublin1, seq_len=32) for _ in range(3)])
    obs, _ = venv.reset(seed=5)
    assert obs.shape == (3, 1024)
    finished = 0
    for _ in range(120):
        masks = np.stack(venv.call("action_masks"))
        obs, r, term, trunc, _ = venv.step(np.array([int(np.flatnonzero(m)[0]) for m in masks]))
        finished += int(term.sum())
    assert finished >= 3
    venv.close()


def _mira_workload(n=60, seed=0):
    rng = np.random.default_rng(seed)
    t = 0
    jobs = []
    for i in range(n):
        t += int(rng.integers(0, 300))
        run = int(rng.integers(60, 3000))
        jobs.append(Job(i + 1, t, run, run + int(rng.integers(0, 600)), int(rng.choice([300, 512, 1024, 2048]))))
    return Workload(jobs, name="mira-toy")


@pytest.mark.parametrize("backfill", ["none", "rlscheduler", "easy"])
def test_pick_env_on_mira_partitions(backfill):
    machine = AlignedMira(4)
    tr = trace_from_workload(_mira_workload(), machine_nodes=machine.total_nodes)
    env = JobPickingEnv(tr, machine=machine, seq_len=40, window=16, backfill=backfill)
    _quiet_check(env)
    r, info, _ = _rollout(env, lambda e, o: 0, options={"start": 10})
    assert info["bsld"] == pytest.approx(run_sequence(tr, 10, 40, "fcfs", machine, backfill=backfill)["bsld"])


def test_pick_env_step_after_end_fails(lublin1):
    env = JobPickingEnv(lublin1, seq_len=16)
    _rollout(env, lambda e, o: 0, options={"start": 100})
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


@pytest.mark.slow
def test_maskable_ppo_trains_on_pick_env(lublin1):
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = JobPickingEnv(lublin1, seq_len=32)
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, verbose=0)
    model.learn(total_timesteps=128)
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(action)]


# ----------------------------------------------------------------------------------- inspector
def test_inspector_env_passes_gymnasium_checker(lublin1):
    _quiet_check(InspectorEnv(lublin1, seq_len=32))
    _quiet_check(InspectorEnv(lublin1, seq_len=32, base="f1", backfill="rlscheduler", features="code"))


@pytest.mark.parametrize("base,backfill", [("sjf", "none"), ("f1", "rlscheduler"), ("fcfs", "easy")])
def test_inspector_accept_all_equals_base(lublin1, base, backfill):
    env = InspectorEnv(lublin1, base=base, backfill=backfill, seq_len=128)
    r, info, _ = _rollout(env, lambda e, o: ACCEPT, options={"start": 4022})
    assert info["bsld"] == pytest.approx(info["base"]) and r == 0.0
    assert info["base"] == pytest.approx(run_sequence(lublin1, 4022, 128, base, backfill=backfill)["bsld"])
    assert info["rejections"] == 0


def test_inspector_reject_moves_to_next_event_or_600s(lublin1):
    env = InspectorEnv(lublin1, seq_len=64)
    env.reset(options={"start": 7085})
    sim = env.sim
    for _ in range(30):
        t0 = sim.view.now
        next_arrival = sim.jobs[sim.next_arrival].submit if sim.next_arrival < len(sim.jobs) else None
        next_end = min((js.run_start + sim._runtime[js.idx] for js in sim.running.values()), default=None)
        cands = [t for t in (t0 + 600, next_arrival, next_end) if t is not None]
        _, _, done, _, _ = env.step(REJECT)
        if done:
            break
        assert sim.view.now == min(cands)


def test_inspector_rejection_cap(lublin1):
    env = InspectorEnv(lublin1, seq_len=16, max_rejections=3)
    r, info, _ = _rollout(env, lambda e, o: REJECT, options={"start": 500})
    assert info["rejections"] == 3 * 16  # every job rejected exactly 3 times, then forced
    assert info["forced"] == 16
    obs, _ = env.reset(options={"start": 500})
    assert obs[5] == 0.0  # rejections feature
    env.step(REJECT)
    assert env.action_masks().tolist() == [True, True]


def test_inspector_features(lublin1):
    env = InspectorEnv(lublin1, seq_len=64, backfill="rlscheduler")
    obs, _ = env.reset(options={"start": 2714})
    assert obs.shape == (8,) and ((obs >= 0) & (obs <= 1)).all()
    c = env._cand
    view = env.sim.view
    assert obs[0] == pytest.approx(min((view.now - c.info.submit) / 43200, HI))
    assert obs[1] == pytest.approx(min(c.info.walltime / lublin1.max_runtime, HI))
    assert obs[3] == pytest.approx(min(view.state.free_nodes / 256, HI))
    qd = sum(600 / max(js.info.walltime, 10) for js in env.driver.q) / 7680
    assert obs[6] == pytest.approx(min(qd, HI), rel=1e-6)
    assert InspectorEnv(lublin1, seq_len=64, features="code").reset(options={"start": 2714})[0].shape == (7,)


def test_inspector_rewards():
    assert relative_reward("percentage", 200.0, 150.0, "bsld") == pytest.approx(0.25)
    assert relative_reward("authors", 100.0, 150.0, "bsld") == pytest.approx(-50 / 150)
    assert relative_reward("native", 100.0, 90.0, "wait") == pytest.approx(10.0)
    assert relative_reward("winloss", 100.0, 90.0, "bsld") == 1.0
    assert relative_reward("percentage", 0.5, 0.6, "utilization") == pytest.approx(0.2)


def test_inspector_sync_vector_and_determinism(lublin1):
    venv = gym.vector.SyncVectorEnv([lambda: InspectorEnv(lublin1, seq_len=16) for _ in range(2)])
    obs, info = venv.reset(seed=3)
    assert obs.shape == (2, 8)
    for _ in range(50):
        venv.step(np.array([REJECT, ACCEPT]))
    venv.close()

    def run():
        env = InspectorEnv(lublin1, seq_len=32)
        rng = np.random.default_rng(0)
        return _rollout(env, lambda e, o: int(rng.random() < 0.4), seed=9)[:2]

    assert run() == run()


def test_flat_machine_default_size(lublin1):
    env = JobPickingEnv(lublin1, seq_len=16)
    assert isinstance(env.machine, FlatCluster) and env.machine.total_nodes == 256


def _episode_digest(trace, backfill: str, features: str, window: int, episodes: int = 6) -> str:
    """sha256 of everything a seeded random-action run shows the agent: every observation and
    mask, reward, done flag and info, and the first-start times at each episode's end."""
    import hashlib

    env = JobPickingEnv(trace, seq_len=256, window=window, backfill=backfill, features=features)
    h = hashlib.sha256()
    rng = np.random.default_rng(7)
    env.reset(seed=3)
    for ep in range(episodes):
        obs, info = env.reset() if ep % 2 else env.reset(options={"start": int(rng.integers(0, 9000))})
        h.update(obs.tobytes())
        h.update(repr(sorted(info.items())).encode())
        done = False
        while not done:
            h.update(env.action_masks().tobytes())
            obs, r, done, trunc, info = env.step(int(rng.integers(window)))
            h.update(obs.tobytes())
            h.update(repr((r, done, trunc, sorted(info.items()))).encode())
        h.update(env.first_starts().tobytes())
    return h.hexdigest()


# Recorded on main at 93a4e54 (before the environment speed work of 2026-11-26): any change to the
# event core, the committed-head driver or the observation that alters an episode changes these.
_EPISODE_DIGESTS = {
    ("none", "code", 128): "7516c01682a62f9ed7696725839c85941f88941e8d6744d05ce1f2267bf993de",
    ("rlscheduler", "code", 128): "fc3e1df6aa4d752aedc1387fcc5dfa3b23d9ed4dc838c42a0a925578aa8fa9cd",
    ("rlscheduler", "code+free", 16): "4f8c301dd1ec1203cc97193869ff4476ddb4e07222a0a67b48fc860aa74a628f",
    ("easy", "code+free", 16): "f4bafaebe2bc97a6e74db057ebd598623b2c2024fc6eec95d4892c7b58d7cd09",
}


@pytest.mark.parametrize("backfill,features,window", sorted(_EPISODE_DIGESTS))
def test_pick_env_episodes_unchanged(lublin1, backfill, features, window):
    """Seeded random-action episodes are bit for bit those of the recorded version."""
    assert _episode_digest(lublin1, backfill, features, window) == _EPISODE_DIGESTS[backfill, features, window]


@pytest.mark.parametrize("features", ["code", "code+free"])
def test_pick_observation_few_jobs_path_equals_build(features):
    """``PickObservation.build_few`` (the scalar path for up to ``FEW_ROWS`` waiting jobs) is bit
    for bit ``build`` of the same jobs, across waits around the 12 h cap and fitting / not
    fitting jobs."""
    rng = np.random.default_rng(5)
    ob = PickObservation(FEW_ROWS + 4, features, "zeros")
    n = 50
    ob.set_rows(rng.random((n, 6), dtype=np.float32), rng.integers(0, 10**7, n).astype(np.float64),
                rng.integers(1, 257, n))
    for _ in range(400):
        ids = rng.choice(n, size=int(rng.integers(1, FEW_ROWS + 1)), replace=False).tolist()
        now = int(ob.submit[ids].max()) + int(rng.choice([0, 1, 7, 43199, 43200, 43201,
                                                          int(rng.integers(0, 10**5))]))
        free = int(rng.integers(0, 257))
        a = ob.build(np.array(ids, dtype=np.intp), now, free, 256)
        b = ob.build_few(ids, now, free, 256)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_trace_windows_skip_only_checks_that_hold(lublin1):
    """An in-order trace's windows are built without Workload's order checks (``in_order=True``):
    they equal the checked construction; a trace with a repeated job id is not "in order"."""
    assert lublin1.in_order()
    for start in (0, 777, len(lublin1) - 300):
        w = lublin1.window(start, 300)
        checked = Workload(list(w.jobs), name=w.name, max_nodes=w.max_nodes)
        assert w.jobs == checked.jobs
    a, b = lublin1.jobs[:2]
    twin = dataclasses.replace(b, id=a.id, submit=a.submit + 1)
    dup = dataclasses.replace(lublin1, jobs=[a, twin], cache={})
    assert not dup.in_order()
