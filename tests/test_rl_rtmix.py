"""rtsched/RtMix-v0, its expert extraction from optimal plans, cloning + PPO, and the shipped rtmix policy."""
from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium", reason="the rl extra (gymnasium) is not installed")
pytest.importorskip("torch", reason="the rl extra (torch) is not installed")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import rtsched.rl.registration  # noqa: E402,F401
from conftest import REPO  # noqa: E402
from heuristics.registry import make_policy  # noqa: E402
from rtsched.experiments.rtmix import expert_dataset, plan_jobs, plan_schedule  # noqa: E402
from rtsched.generators.smallmix import random_jobs  # noqa: E402
from rtsched.rl.rtmix.env import RtMixEnv, episode_reward  # noqa: E402
from rtsched.rl.rtmix.core import N_FEATURES, RtMixPass  # noqa: E402
from rtsched.rl.rtmix.expert import expert_episode  # noqa: E402
from rtsched.rl.rtmix.train import train_rtmix  # noqa: E402
from rtsched.sim.state import RUNNING  # noqa: E402

PLANS = REPO / "tests" / "data" / "rtmix_plans"


def _plan(seed: int) -> dict:
    return json.loads((PLANS / f"{seed}.json").read_text())


# ------------------------------------------------------------------------------------- environment
def test_gymnasium_make_and_check_env():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("rtsched/RtMix-v0")
    assert env.unwrapped.observation_space.shape == (13 * N_FEATURES,)
    assert env.action_space.n == 13
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=1)
    assert info["action_mask"].any() and obs.shape == (13 * N_FEATURES,)


def test_episode_reward_mirrors_the_offline_objective():
    assert episode_reward(1.5, 1.1, 1.2, 10.0) == -1.5
    assert episode_reward(1.5, 1.5, 1.2, 10.0) == pytest.approx(-1.5 - 3.0)


def test_same_seed_same_instance_as_the_offline_generator():
    from milp.instance import table3_instance

    env = RtMixEnv()
    env.reset(options={"seed": 7})
    assert env.jobs == table3_instance(7).jobs


def _contended(seed: int, noncp_every: int) -> list:
    """A crowded mix (3 RTJs, 6 BJs submitted within 20 min); every ``noncp_every``-th BJ is not
    checkpointable."""
    jobs = random_jobs(seed, 6, 3, 16, submit_window=1200, sizes=(2048, 4096, 8192))
    out = []
    for j in jobs:
        if j.kind == "batch" and noncp_every and j.id % noncp_every == 0:
            j = dataclasses.replace(j, checkpointable=False)
        out.append(j)
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), noncp=st.sampled_from([0, 2, 3]), ckpt=st.sampled_from(["jit", "no", "sys", "app-5"]),
       pick=st.integers(0, 2**31 - 1), order=st.sampled_from(["submit", "backfill"]))
def test_masks_never_preempt_protected_jobs_nor_start_what_does_not_fit(seed, noncp, ckpt, pick, order):
    env = RtMixEnv(checkpoint=ckpt, order=order)  # 9 jobs: the backfill order's long-queue rule applies
    rng = np.random.default_rng(pick)
    obs, info = env.reset(options={"jobs": _contended(seed, noncp)})
    done = env._done
    sim_machine = env.machine
    while not done:
        ps: RtMixPass = env.pass_
        mask = info["action_mask"]
        spec = ps.spec
        vis = ps.visible()
        for i in range(spec.window):
            if mask[i]:
                js = vis[i]
                p = ps.plan.find(js.info.nodes)
                assert p is not None and sim_machine.partitions[p].nodes >= js.info.nodes
        for c, (p, victims, _cost) in enumerate(ps.candidates()):
            assert mask[spec.window + c]
            target = ps.target()
            assert target is not None and target.info.kind == "rt"
            assert sim_machine.partitions[p].nodes == sim_machine.allocated_nodes(target.info.nodes)
            for v in victims:
                assert v.info.kind == "batch" and v.info.checkpointable and v.status == RUNNING
            # nothing that must stay is on p or a conflicting partition
            for holder in ps.view.holders(p):
                if holder.status == RUNNING and (holder.info.kind == "rt" or not holder.info.checkpointable):
                    pytest.fail(f"candidate {p} conflicts with protected job {holder.info.id}")
        assert not mask[spec.window + len(ps.candidates()):spec.wait_action].any()
        a = int(rng.choice(np.flatnonzero(mask)))
        obs, _r, done, _t, info = env.step(a)
    res = env.result()  # validated (RTJs never preempted)
    for o in res.outcomes:
        if o.job.kind == "rt" or not o.job.checkpointable:
            assert o.n_preemptions == 0


def test_preemption_actions_occur_and_free_the_rtj():
    """On crowded mixes the agent is offered candidates, and taking one preempts BJs for the RTJ."""
    env = RtMixEnv(checkpoint="jit")
    seen = 0
    for seed in range(40):
        obs, info = env.reset(options={"jobs": _contended(seed, 0)})
        done = env._done
        while not done:
            mask = info["action_mask"]
            cand = np.flatnonzero(mask[env.spec_.window:env.spec_.wait_action])
            if len(cand):
                seen += 1
                a = env.spec_.window + int(cand[0])
            else:
                a = int(np.flatnonzero(mask)[0])
            obs, _r, done, _t, info = env.step(a)
        if seen:
            res = env.result()
            assert sum(o.n_preemptions for o in res.outcomes) >= 1
            break
    assert seen


# ------------------------------------------------------------------------------------- expert
EXPECTED = {100000: "same_times", 100047: "exact", 100020: "same_times", 100017: "partition",
            100013: "forced", 100023: "preemption"}


@pytest.mark.parametrize("seed", sorted(EXPECTED))
def test_expert_replay_reproduces_the_plan_or_names_the_mismatch(seed):
    rec = _plan(seed)
    assert rec["status"] == "optimal"
    ep = expert_episode(RtMixEnv(), plan_jobs(rec), plan_schedule(rec))
    assert ep.outcome == EXPECTED[seed]
    if ep.reproduced:  # the same completion times: the optimum's slowdowns exactly
        assert ep.bj_sd_mean == pytest.approx(rec["bj_sd_mean"], abs=1e-12)
        assert ep.rtj_sd_mean == pytest.approx(rec["rtj_sd_mean"], abs=1e-12)
        assert all(ep.on_plan)
    else:
        assert ep.bj_sd_mean != pytest.approx(rec["bj_sd_mean"]) or ep.rtj_sd_mean != pytest.approx(rec["rtj_sd_mean"])


def test_partition_mismatch_is_the_best_fit_rule():
    """Seed 100017: the plan puts a 512-node BJ on block 8 so that a 2,048-node BJ fits when it ends;
    best fit packs it on block 0 and the wide job waits for another to finish."""
    rec = _plan(100017)
    env = RtMixEnv()
    expert_episode(env, plan_jobs(rec), plan_schedule(rec))
    res = env.result()
    names = env.machine.partition_names()
    assert [names[s.partition] for s in res.schedule if s.job_id == 1] == ["B00-00-512"]
    starts = {o.job.id: o.first_start for o in res.outcomes}
    assert starts[5] == 4050 and rec["segments"] and min(s[1] for s in rec["segments"] if s[0] == 5) == 3546


def test_forced_mismatch_is_an_idle_machine_in_the_plan():
    rec = _plan(100013)
    env = RtMixEnv()
    ep = expert_episode(env, plan_jobs(rec), plan_schedule(rec))
    assert ep.outcome == "forced" and not ep.reasons
    res = env.result()
    planned = {s[0]: s[1] for s in sorted(rec["segments"], key=lambda s: -s[1])}  # first start per job
    early = [o.job.id for o in res.outcomes if o.first_start < planned[o.job.id]]
    assert early
    # at the early start nothing else was running in the plan: the optimum kept the machine idle
    t = min(o.first_start for o in res.outcomes if o.job.id in early)
    assert not any(s[1] <= t < s[2] for s in rec["segments"])


def test_expert_dataset_counts_classes_and_masks_hold_the_expert_action():
    plans = [_plan(s) for s in sorted(EXPECTED)]
    data = expert_dataset(plans, RtMixEnv())
    assert data["classes"] == {"same_times": 2, "exact": 1, "partition": 1, "forced": 1, "preemption": 1}
    assert len(data["act"]) == data["decisions"] > 0
    assert data["mask"][np.arange(len(data["act"])), data["act"]].all()


def test_solve_plan_end_to_end_on_a_quick_instance():
    from rtsched.experiments.rtmix import solve_plan

    rec = solve_plan(100001, time_limit=30.0)
    assert rec["status"] == "optimal"
    ep = expert_episode(RtMixEnv(), plan_jobs(rec), plan_schedule(rec))
    assert ep.reproduced and ep.bj_sd_mean == pytest.approx(rec["bj_sd_mean"])


# ------------------------------------------------------------------------------------- training and policy
@pytest.mark.slow
def test_maskable_ppo_runs():
    sb3c = pytest.importorskip("sb3_contrib")
    env = RtMixEnv()
    model = sb3c.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, verbose=0)
    model.learn(total_timesteps=128)
    obs, info = env.reset(seed=3)
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(action)]


@pytest.mark.slow
def test_clone_then_finetune_resumes_and_loads_as_policy(tmp_path):
    from milp.compare import run_online
    from milp.instance import table3_instance
    from rtsched.rl.modelfiles import read_model_file

    data = expert_dataset([_plan(s) for s in sorted(EXPECTED)], RtMixEnv())
    out = str(tmp_path / "run")
    opts = dict(trajs_per_epoch=4, n_envs=2, train_pi_iters=2, train_v_iters=2)
    res = train_rtmix(data, out, bc_epochs=30, epochs=1, **opts)
    assert res["history"][0]["phase"] == "bc" and res["history"][0]["accuracy"] > 0.6
    assert len(res["history"]) == 2
    res2 = train_rtmix(None, out, bc_epochs=30, epochs=2, **opts)  # resumes: no cloning again
    assert len(res2["history"]) == 3 and read_model_file(out)["epoch"] == 2
    run = run_online(table3_instance(3), os.path.join(out, "checkpoint.pt"))  # validated by the pipeline
    assert run.bj_sd_mean >= 1.0 and run.rtj_sd_mean >= 1.0


def test_shipped_rtmix_loads_by_name_and_its_schedules_validate():
    from milp.compare import run_online
    from milp.instance import table3_instance
    from rtsched.rl.rtmix.policy import PRETRAINED_RTMIX

    assert os.path.exists(PRETRAINED_RTMIX)
    pol = make_policy("rtmix")
    assert pol.name == "rtmix"
    for seed in (0, 1):
        r = run_online(table3_instance(seed), "rtmix")
        assert r.bj_sd_mean >= 1.0 and r.rtj_sd_mean >= 1.0 and r.decision_seconds >= 0
        assert r.extra["checkpoint"] == "JIT-CKPT"


def test_rtmix_policy_under_other_checkpoint_models_and_machine_sizes():
    """The shipped agent decides under another checkpoint model and on another Mira size."""
    from rtsched.pipeline import RunSpec, execute
    from rtsched.jobs import Workload

    jobs = _contended(5, 3)
    for machine, ckpt in (("mira:16", "sys"), ("mira:32", "app-5")):
        rec = execute(RunSpec(machine=machine, policy="rtmix", checkpoint=ckpt), workload=Workload(jobs, name="c"))
        assert rec.summary["unfinished"] == 0


def test_cli_train_rtmix_and_trace_errors(tmp_path, capsys):
    from rtsched.cli import main

    cache = tmp_path / "plans"
    cache.mkdir()
    for i, p in enumerate(sorted(PLANS.glob("*.json"))):  # the CLI takes seeds 100000.., one file per seed
        rec = json.loads(p.read_text())
        rec["seed"] = 100000 + i
        (cache / f"{100000 + i}.json").write_text(json.dumps(rec))
    out = tmp_path / "run"
    rc = main(["rl", "train", "--agent", "rtmix", "--recipe", "clone", "--experts", "6", "--expert-cache", str(cache), "--bc-epochs", "5",
               "--epochs", "1", "--trajs-per-epoch", "4", "--n-envs", "2", "--train-pi-iters", "2",
               "--train-v-iters", "2", "--out", str(out), "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["agent"] == "rtmix" and summary["epochs"] == 1 and sum(summary["expert_classes"].values()) == 6
    assert (out / "checkpoint.pt").exists()
    assert main(["rl", "train", "--agent", "rtmix", "--trace", "x.swf", "--out", str(tmp_path / "r2")]) == 2
    assert main(["rl", "train", "--agent", "rlscheduler", "--out", str(tmp_path / "r3")]) == 2
    assert "--trace is required" in capsys.readouterr().err


def test_compare_cli_with_rtmix_gives_gaps_times_and_table(tmp_path, capsys):
    from milp.instance import random_instance, save_instance
    from rtsched.cli import main

    path = tmp_path / "quick.json"
    save_instance(random_instance(100001, 5, 2, 16, name="quick"), path)  # solves in well under a second
    rc = main(["compare", str(path), "--policies", "wcjs-jit,baseline,highpq,rtmix", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    runs = {r["policy"]: r for r in doc["runs"]}
    assert set(runs) == {"optimum", "wcjs-jit", "baseline", "highpq", "rtmix", "replan"}  # replan: the yardstick
    for name, r in runs.items():
        for key in ("bj_sd_mean", "rtj_sd_mean", "bj_gap", "rtj_gap", "decision_seconds", "matches_optimum"):
            assert key in r
        if name != "optimum":
            assert r["bj_gap"] == pytest.approx(r["bj_sd_mean"] / runs["optimum"]["bj_sd_mean"] - 1)
            assert r["decision_seconds"] >= 0
    table = {row["algorithm"]: row for row in doc["table"]}
    for key in ("bj_sd", "rtj_sd", "bj_gap_mean", "rtj_gap_mean", "bj_gap_worst", "rtj_gap_worst", "matches_optimum"):
        assert key in table["rtmix"]


def test_environment_and_policy_on_the_real_mira_partition_file():
    from conftest import shared_data
    from rtsched.jobs import Workload
    from rtsched.pipeline import RunSpec, execute

    xml = str(shared_data("mira", "mira-partitions.xml"))
    env = RtMixEnv(machine=xml)
    obs, info = env.reset(seed=0)
    done = env._done
    while not done:
        obs, _r, done, _t, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert env.result().machine_name == env.machine.name
    rec = execute(RunSpec(machine=xml, policy="rtmix", checkpoint="jit"), workload=Workload(_contended(2, 0), name="c"))
    assert rec.summary["unfinished"] == 0


def test_rtmix_runs_under_the_checkpoint_model_it_was_trained_under_unless_told_otherwise(capsys):
    import json

    from rtsched.cli import main

    assert main(["simulate", "--policy", "rtmix", "--first-n", "120", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checkpoint"] == "JIT-CKPT"  # the shipped model's env: jit
    assert main(["simulate", "--policy", "rtmix", "--checkpoint", "no", "--first-n", "120", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checkpoint"] == "NO-CKPT"
