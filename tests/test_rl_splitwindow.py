"""Deep Back-Filling's split window (seed 004): window, Eq. 2 reward, schedule cycling, training, policy."""
from __future__ import annotations

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium", reason="the rl extra (gymnasium) is not installed")
pytest.importorskip("torch", reason="the rl extra (torch) is not installed")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rtsched.jobs import Job, Workload  # noqa: E402
from rtsched.rl.splitwindow.env import SplitWindowEnv  # noqa: E402
from rtsched.rl.splitwindow.observation import SplitObservation, window_slots  # noqa: E402

from conftest import REPO  # noqa: E402

SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")


class _Info:
    def __init__(self, jid, submit, nodes=1, walltime=10):
        self.id, self.submit, self.nodes, self.walltime = jid, submit, nodes, walltime


class _JS:
    def __init__(self, jid, submit, nodes=1, walltime=10):
        self.info = _Info(jid, submit, nodes, walltime)


def _wl(rows, cores=8):
    jobs = [Job(id=i + 1, submit=s, runtime=r, walltime=r, nodes=n) for i, (s, r, n) in enumerate(rows)]
    return Workload(jobs, name="toy", max_nodes=cores)


def test_window_slots_head_then_tail_newest_first_and_whole_queue_when_short():
    q = list(range(10))
    assert window_slots(q, 3, 2) == [0, 1, 2, 9, 8]
    assert window_slots(q, 5, 0) == [0, 1, 2, 3, 4]
    assert window_slots(q, 0, 3) == [9, 8, 7]
    assert window_slots(q[:4], 3, 2) == [0, 1, 2, 3]  # L <= M: no duplicate, head first
    assert window_slots(q[:5], 3, 2) == [0, 1, 2, 3, 4]


def test_eq2_reward_by_hand_with_running_maxima():
    ob = SplitObservation(8, 2, 1, 100)
    q = [_JS(1, 0), _JS(2, 10)]
    # t = 20: eta = 4/8, L = 2 = L_max, W = 20 + 10 = 30 = W_max -> -(0.5 + 1 + 1)/3
    assert ob.reward(q, 20, 4) == pytest.approx(-(0.5 + 1.0 + 1.0) / 3)
    # t = 30, one job left (submitted at 10): L = 1 of L_max 2, W = 20 of W_max 30, idle machine
    assert ob.reward(q[1:], 30, 0) == pytest.approx(-(1.0 + 0.5 + 20 / 30) / 3)
    # empty queue, full machine: 0 (0/0 never happens once maxima are positive; 0 here)
    assert ob.reward([], 40, 8) == pytest.approx(0.0)
    assert SplitObservation(8, 1, 0, 100).reward([], 0, 8) == 0.0  # 0/0 -> 0


def test_observation_cores_and_slots_by_hand():
    ob = SplitObservation(4, 1, 1, 100)
    ob.cores.take(7, 2, 0, 50)  # lowest cores 0 and 1, until t = 50
    q = [_JS(1, 0, nodes=2, walltime=40), _JS(2, 5, nodes=1, walltime=100), _JS(3, 8, nodes=4, walltime=20)]
    obs, vis = ob.observe(q, 10)
    assert [j.info.id for j in vis] == [1, 3]  # head, then the newest
    np.testing.assert_allclose(obs[:4], [0.4, 0.4, 0, 0])  # remaining 40 s / r_max 100
    # slots: (c / N, r / r_max, W / largest wait so far (10 s))
    np.testing.assert_allclose(obs[4:], [0.5, 0.4, 1.0, 1.0, 0.2, 0.2], rtol=1e-6)


def test_schedule_cycling_valid_pick_keeps_time_invalid_pick_ends_cycle():
    # 4 cores; job 1 (4 cores, 100 s) at t=0; job 2 (2 cores) at t=10; job 3 (1 core) at t=20
    env = SplitWindowEnv(_wl([(0, 100, 4), (10, 50, 2), (20, 30, 1)], cores=4), head=1, tail=1, placements=3)
    obs, _ = env.reset(options={"start": 0})
    assert env.sim.now == 0 and env.visible_ids() == [1]
    obs, r, term, trunc, _ = env.step(0)  # valid: job 1 starts, reward 0; queue empty -> next arrival
    assert (r, term, trunc) == (0.0, False, False) and env.sim.now == 10 and env.visible_ids() == [2]
    obs, r, term, trunc, _ = env.step(0)  # invalid (2 cores, 0 free): ends the cycle like Fwd
    # full machine (eta = 1), L = 1 = L_max, W = 0 (job 2 just arrived; W_max = 0, 0/0 = 0)
    assert r == pytest.approx(-(0.0 + 1.0 + 0.0) / 3) and env.sim.now == 20
    assert env.visible_ids() == [2, 3]
    obs, r, *_ = env.step(2)  # Fwd
    assert env.sim.now == 100  # job 1 ends
    assert env.step(1)[1] == 0.0 and env.sim.now == 100  # job 3 (slot 1, the tail) placed, same time
    obs, r, term, trunc, info = env.step(0)  # job 2: the third placement ends the episode
    assert term and not trunc and info["placements"] == 3


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 200), st.integers(1, 8)), min_size=1, max_size=25),
       head=st.integers(0, 3), tail=st.integers(1, 3), actions=st.lists(st.integers(0, 6), min_size=1, max_size=50))
def test_every_arriving_job_is_shown_at_least_once(rows, head, tail, actions):
    t = 0
    timed = []
    for gap, r, n in rows:
        t += gap
        timed.append((t, r, n))
    env = SplitWindowEnv(_wl(timed), head=head, tail=tail, placements=len(timed))
    env.reset(options={"start": 0})
    k = 0
    done = False
    while not done:
        a = actions[k % len(actions)] % (env.window + 1)
        k += 1
        *_, term, trunc, _ = env.step(a)
        done = term or trunc
        assert k < 10_000
    arrived = {js.info.id for js in env.sim.states[:env.sim.next_arrival]}
    assert arrived == {j.id for j in env.sim.jobs}  # the episode ran through the whole workload
    assert arrived <= env.seen


def test_head_only_window_can_hide_an_arrival():
    # job 1 fills the machine; 2 and 3 wait; a head-only window of 1 shows job 2 only
    env = SplitWindowEnv(_wl([(0, 100, 4), (1, 10, 4), (2, 10, 1)], cores=4), head=1, tail=0, placements=3)
    env.reset(options={"start": 0})
    env.step(0)  # job 1 starts
    env.step(1)  # Fwd at job 2's arrival
    assert env.sim.now == 2 and env.visible_ids() == [2] and 3 not in env.seen
    split = SplitWindowEnv(_wl([(0, 100, 4), (1, 10, 4), (2, 10, 1)], cores=4), head=0, tail=1, placements=3)
    split.reset(options={"start": 0})
    split.step(0)
    split.step(1)
    assert split.visible_ids() == [3]


def test_gymnasium_make_and_check_env():
    from gymnasium.utils.env_checker import check_env

    import rtsched.rl.registration  # noqa: F401

    env = gymnasium.make("rtsched/SplitWindow-v0", trace=SAMPLE, head=5, tail=3, placements=50)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=2)
    assert obs.shape == (256 + 3 * 8,)
    assert env.action_space.n == 9


def test_train_resume_and_policy_in_the_pipeline(tmp_path):
    from rtsched.pipeline import RunSpec, execute
    from rtsched.rl.api import train
    from rtsched.rl.nets import n_params
    from rtsched.rl.policies import load_policy
    from rtsched.rl.splitwindow.policy import SplitWindowPolicy
    from rtsched.rl.modelfiles import load_model
    from rtsched.rl.trace import load_trace

    out = str(tmp_path / "run")
    opts = dict(head=4, tail=2, placements=40, hidden=(32, 16), seed=3)
    r1 = train("splitwindow", trace=SAMPLE, epochs=2, out=out, **opts)
    assert r1["epochs_run"] == 2 and all(h["steps"] > 40 for h in r1["history"])
    r2 = train("splitwindow", trace=SAMPLE, epochs=3, out=out, **opts)  # resumes
    assert r2["epochs_run"] == 1 and len(r2["history"]) == 3
    m = load_model(out)
    assert m.agent == "splitwindow" and m.env["head"] == 4 and m.env["tail"] == 2
    assert n_params(m.actor) == (256 + 18) * 32 + 32 + 32 * 16 + 16 + 16 * 7 + 7
    pol = load_policy(out)
    assert isinstance(pol, SplitWindowPolicy)
    tr = load_trace(SAMPLE)
    rec = execute(RunSpec(trace=tr.path, machine="flat:256", event_order="rlscheduler"),
                  workload=tr.window(0, 120), policy=pol)  # validated by the pipeline
    assert all(o.first_start >= o.job.submit for o in rec.outcomes)
    assert pol.n_decisions >= 120


def test_paper_network_sizes():
    from rtsched.rl.nets import SPLIT_HIDDEN, build_networks

    actor, critic = build_networks("splitwindow", 256 + 60, 20, "", "", SPLIT_HIDDEN)
    import torch

    x = torch.zeros(3, 316)
    assert actor(x, torch.ones(3, 21, dtype=torch.bool)).shape == (3, 21)
    assert critic(x).shape == (3,)
    assert [m.out_features for m in actor.net if isinstance(m, torch.nn.Linear)] == [1024, 512, 256, 21]


def test_cli_train_and_evaluate_splitwindow(tmp_path, capsys):
    from rtsched.cli import main
    from rtsched.cli import rl as cli_rl
    from rtsched.rl import api

    assert tuple(cli_rl.AGENTS) == tuple(api.AGENTS)
    out = str(tmp_path / "sw")
    rc = main(["rl", "train", "--agent", "splitwindow", "--trace", SAMPLE, "--epochs", "1", "--out", out, "--head", "3",
               "--tail", "1", "--placements", "30", "--hidden", "16,8", "--no-progress", "--json"])
    assert rc == 0
    import json

    summary = json.loads(capsys.readouterr().out)
    assert summary["agent"] == "splitwindow" and summary["last_score"] < 0  # Eq. 2 rewards are <= 0
    rc = main(["rl", "evaluate", "--trace", SAMPLE, "--policies", f"fcfs,{out}", "--starts", "100", "--seq-len", "80",
               "--json"])
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert [r["policy"] for r in rows] == ["fcfs", out] and all(r["avg_wait"] >= 0 for r in rows)
    # options of other agents are refused with a one-line usage error
    assert main(["rl", "train", "--agent", "splitwindow", "--trace", SAMPLE, "--goal", "wait", "--out", out]) == 2
    assert main(["rl", "train", "--agent", "rlscheduler", "--trace", SAMPLE, "--tail", "2",
                 "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--tail applies to the splitwindow agent only" in err and "Traceback" not in err


def test_queue_length_metrics_by_hand():
    from rtsched.metrics import mean_queue_length, queue_length_series

    # jobs wait on [0, 10), [5, 5) (never) and [5, 20)
    times, lengths = queue_length_series([0, 5, 5], [10, 5, 20])
    assert times.tolist() == [0, 5, 10, 20] and lengths.tolist() == [1, 2, 1, 0]
    assert mean_queue_length([0, 5, 5], [10, 5, 20]) == 1.0  # default window: [first, last submit) = [0, 5)
    assert mean_queue_length([0, 5, 5], [10, 5, 20], (0, 20)) == 25 / 20
    assert mean_queue_length([], []) == 0.0


def test_shipped_models_are_the_masked_paper_networks_and_beat_fcfs_easy_on_held_out_segments():
    from conftest import shared_data

    from rtsched.rl.evaluate import evaluate_online
    from rtsched.rl.modelfiles import load_model
    from rtsched.rl.nets import n_params
    from rtsched.rl.splitwindow.observation import pretrained_splitwindow_models

    models = pretrained_splitwindow_models()
    assert set(models) == {(20, 0), (10, 10)}
    for path in models.values():
        m = load_model(path)
        assert m.env["mask_invalid"] is True and m.env["placements"] == 1000
        assert n_params(m.actor) == (256 + 60) * 1024 + 1024 + 1024 * 512 + 512 + 512 * 256 + 256 + 256 * 21 + 21
    lublin = shared_data("traces", "swf", "lublin_256.swf")
    rows = evaluate_online(["fcfs+easy", models[(20, 0)], models[(10, 10)]], str(lublin), [8000, 9000], 300)
    wait = {}
    for r in rows:
        wait.setdefault(r["policy"], []).append(r["avg_wait"])
        assert r["forced"] == 0  # the masked agents never leave an idle machine idle
    # held-out part (the last 20 %): both agents wait far less than FCFS + EASY on each segment
    for path in models.values():
        assert all(w < 0.8 * e for w, e in zip(wait[path], wait["fcfs+easy"]))


def test_trajectory_rollouts_keep_the_per_cycle_rewards():
    from rtsched.rl.nets import NumpyActor, build_networks
    from rtsched.rl.rollouts import sample_trajectory

    env = SplitWindowEnv(SAMPLE, head=4, tail=2, placements=25)
    actor, _ = build_networks("splitwindow", env.obsb.dim, env.window, "", "", (16, 8))
    t = sample_trajectory(env, NumpyActor(actor).plain(), seed=1, epoch=1, k=0)
    assert len(t["rew"]) == len(t["act"]) and min(t["rew"]) < 0 and max(t["rew"]) <= 0
    assert t["ret"] == pytest.approx(sum(t["rew"]))
    assert t["info"]["placements"] == 25


def test_teacher_picks_the_shortest_window_job_that_fits_or_fwd():
    from rtsched.rl.splitwindow.observation import teacher_slot

    # slots: (cores, walltime); 4 cores free
    vis = [_JS(1, 0, nodes=8, walltime=5), _JS(2, 1, nodes=4, walltime=300), _JS(3, 2, nodes=2, walltime=60),
           _JS(4, 3, nodes=1, walltime=60)]
    assert teacher_slot(vis, 4, "sjf") == 2  # job 1 is shorter but needs 8 cores; 3 and 4 tie: the earlier slot
    assert teacher_slot(vis, 4, "fcfs") == 1  # the first slot that fits
    assert teacher_slot(vis, 0, "sjf") == teacher_slot(vis, 0, "fcfs") == -1  # nothing fits: Fwd
    assert teacher_slot([], 4) == -1


def test_env_teacher_action_follows_the_window_and_free_cores():
    # 4 cores; job 1 (4 cores) at t=0; job 2 (2 cores, 50 s) at t=10; job 3 (1 core, 30 s) at t=20
    env = SplitWindowEnv(_wl([(0, 100, 4), (10, 50, 2), (20, 30, 1)], cores=4), head=1, tail=1, placements=3)
    env.reset(options={"start": 0})
    assert env.teacher_action() == 0  # job 1 fits the empty machine
    env.step(0)
    assert env.teacher_action() == env.fwd  # job 2 needs 2 cores, none free
    env.step(env.fwd)
    env.step(env.fwd)  # t = 100: job 1 ends; window [2, 3]
    assert env.visible_ids() == [2, 3] and env.teacher_action() == 1  # job 3: 30 s < 50 s
    with pytest.raises(ValueError, match="teacher"):
        SplitWindowEnv(_wl([(0, 100, 4)], cores=4), teacher="nosuch")


def test_imitation_term_trains_the_split_window_towards_its_teacher(tmp_path):
    from rtsched.rl.api import train

    res = train("splitwindow", SAMPLE, epochs=2, out=str(tmp_path / "r"), head=4, tail=2, placements=60,
                hidden=(16,), imitation=1.0, imitation_hold=2, teacher="sjf", seed=0)
    hist = res["history"]
    assert [h["imitation_weight"] for h in hist] == [1.0, 1.0]
    assert all(h["loss_imitation"] > 0 for h in hist)  # −log π(teacher's action): positive below certainty
    trainer = res["trainer"]
    assert trainer.env_config["teacher"] == "sjf"


def test_cli_imitation_options_for_the_split_window(tmp_path, capsys):
    from rtsched.cli import main

    base = ["rl", "train", "--agent", "splitwindow", "--trace", SAMPLE, "--out", str(tmp_path / "r"), "--no-progress"]
    assert main([*base, "--imitation", "0.5"]) == 2
    assert "--imitation: give --imitation-hold and/or --imitation-end" in capsys.readouterr().err
    assert main([*base, "--imitation", "0.5", "--imitation-end", "-1"]) == 2
    assert "--imitation-end: must be at least 0" in capsys.readouterr().err
    assert main([*base, "--teacher", "nosuch", "--imitation", "0.5", "--imitation-end", "2", "--placements", "20",
                 "--epochs", "1"]) == 2
    assert "teacher" in capsys.readouterr().err
    assert main(["rl", "train", "--agent", "inspector", "--trace", SAMPLE, "--imitation", "0.5",
                 "--out", str(tmp_path / "i")]) == 2
    assert "--imitation does not apply to the inspector agent" in capsys.readouterr().err


def test_mask_invalid_allows_only_fwd_and_the_jobs_that_fit_now():
    # 4 cores; job 1 (3 cores, 100 s) at t=0; job 2 (2 cores) and job 3 (1 core) at t=10
    wl = _wl([(0, 100, 3), (10, 50, 2), (10, 30, 1)], cores=4)
    plain = SplitWindowEnv(wl, head=2, tail=1, placements=3)
    masked = SplitWindowEnv(wl, head=2, tail=1, placements=3, mask_invalid=True)
    for env in (plain, masked):
        env.reset(options={"start": 0})
        env.step(0)  # job 1 starts; the queue is empty, time moves to t = 10 (job 2 arrives)
    assert masked.sim.now == 10 and masked.visible_ids() == [2]
    assert plain.action_masks().tolist() == [True, True, True, True]  # the paper: no masking
    # 1 core free: job 2 (2 cores) does not fit, slots 1 and 2 are empty: only Fwd
    assert masked.action_masks().tolist() == [False, False, False, True]
    masked.step(3)  # Fwd: each arrival is its own scheduling point, job 3 arrives at the same time
    assert masked.sim.now == 10 and masked.visible_ids() == [2, 3]
    # job 3 (1 core) fits, job 2 still does not, slot 2 is empty, Fwd allowed
    assert masked.action_masks().tolist() == [False, True, False, True]
    masked.step(1)  # job 3 starts at the same time; nothing fits any more
    assert masked.sim.now == 10 and masked.action_masks().tolist() == [False, False, False, True]


def test_mask_invalid_is_kept_in_the_model_and_the_policy_never_picks_a_job_that_does_not_fit(tmp_path):
    from rtsched.pipeline import RunSpec, execute
    from rtsched.rl.api import train
    from rtsched.rl.modelfiles import load_model
    from rtsched.rl.policies import load_policy
    from rtsched.rl.splitwindow.observation import valid_slots
    from rtsched.rl.trace import load_trace

    out = str(tmp_path / "run")
    train("splitwindow", trace=SAMPLE, epochs=1, out=out, head=4, tail=2, placements=40, hidden=(16, 8), seed=3,
          mask_invalid=True)
    assert load_model(out).env["mask_invalid"] is True
    pol = load_policy(out)
    assert pol.mask_invalid
    # the network's raw preference for slots that are invalid: make every job look invalid-favoured by
    # recording which slot it picks and checking it against the mask at that moment
    picks = []
    inner = pol.fast.logits

    def spy(obs, mask):
        logits = inner(obs, mask)
        picks.append((mask.copy(), int(np.argmax(logits))))
        return logits

    pol.fast.logits = spy
    tr = load_trace(SAMPLE)
    execute(RunSpec(trace=tr.path, machine="flat:256", event_order="rlscheduler"), workload=tr.window(0, 120),
            policy=pol)
    assert picks and all(m[a] for m, a in picks)
    assert any(not m.all() for m, _ in picks)  # the mask did bite somewhere
    assert valid_slots([], 5, 3).tolist() == [False, False, False, True]


def test_mask_invalid_on_the_command_line(tmp_path, capsys):
    from rtsched.cli import main
    from rtsched.rl.modelfiles import load_model

    out = str(tmp_path / "m")
    rc = main(["rl", "train", "--agent", "splitwindow", "--trace", SAMPLE, "--head", "4", "--tail", "2",
               "--placements", "40", "--hidden", "16,8", "--epochs", "1", "--out", out, "--mask-invalid",
               "--no-progress"])
    assert rc == 0 and load_model(out).env["mask_invalid"] is True
    rc = main(["rl", "train", "--agent", "rlscheduler", "--trace", SAMPLE, "--mask-invalid", "--epochs", "1"])
    assert rc == 2 and "--mask-invalid applies to the splitwindow agent only" in capsys.readouterr().err


def test_observation_in_log_time_scale_by_hand():
    # r_max = e^2 − 1, so log(1 + x) / log(1 + r_max) = ln(1 + x) / 2
    r_max = float(np.e ** 2 - 1)
    ob = SplitObservation(4, 1, 1, r_max, time_scale="log")
    ob.cores.take(7, 2, 0, np.e - 1 + 10)  # remaining at t = 10: e − 1 s → ln(e) / 2 = 0.5
    q = [_JS(1, 0, nodes=2, walltime=np.e - 1), _JS(2, 5, nodes=1, walltime=100), _JS(3, 8, nodes=4, walltime=1000)]
    obs, vis = ob.observe(q, 10)
    assert [j.info.id for j in vis] == [1, 3]
    np.testing.assert_allclose(obs[:4], [0.5, 0.5, 0, 0], rtol=1e-6)
    # slot 0: c/N 0.5, ln(e)/2 = 0.5, wait 10/10; slot 1: 1.0, 1000 s is beyond r_max: clipped to 1, wait 2/10
    np.testing.assert_allclose(obs[4:], [0.5, 0.5, 1.0, 1.0, 1.0, 0.2], rtol=1e-6)
    with pytest.raises(ValueError, match="unknown time scale 'sqrt'"):
        SplitObservation(4, 1, 1, 100, time_scale="sqrt")


def test_time_scale_is_kept_in_the_model_and_used_by_the_policy(tmp_path, capsys):
    from rtsched.cli import main
    from rtsched.rl.modelfiles import load_model
    from rtsched.rl.policies import load_policy

    out = str(tmp_path / "m")
    rc = main(["rl", "train", "--agent", "splitwindow", "--trace", SAMPLE, "--head", "4", "--tail", "2",
               "--placements", "40", "--hidden", "16,8", "--epochs", "1", "--out", out, "--time-scale", "log",
               "--no-progress"])
    assert rc == 0 and load_model(out).env["time_scale"] == "log"
    pol = load_policy(out)
    from rtsched.pipeline import RunSpec, execute
    from rtsched.rl.trace import load_trace

    tr = load_trace(SAMPLE)
    execute(RunSpec(trace=tr.path, machine="flat:256", event_order="rlscheduler"), workload=tr.window(0, 60), policy=pol)
    assert pol.time_scale == "log" and pol.obsb.time_scale == "log" and pol.n_decisions > 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["rl", "train", "--agent", "splitwindow", "--trace", SAMPLE, "--time-scale", "sqrt", "--epochs", "1"])
    assert exc.value.code == 2 and "--time-scale" in capsys.readouterr().err


def test_a_checkpoint_written_before_the_mask_and_time_scale_options_still_resumes(tmp_path):
    import torch

    from rtsched.errors import RtschedError
    from rtsched.rl.api import train

    out = str(tmp_path / "old")
    opts = dict(head=4, tail=2, placements=40, hidden=(16, 8), seed=3)
    train("splitwindow", trace=SAMPLE, epochs=1, out=out, **opts)
    path = tmp_path / "old" / "checkpoint.pt"
    st = torch.load(path, weights_only=False)
    for key in ("mask_invalid", "time_scale"):  # as the runs committed before 2026-11-28 wrote it
        del st["env"][key]
    torch.save(st, path)
    assert train("splitwindow", trace=SAMPLE, epochs=2, out=out, resume=True, **opts)["epochs_run"] == 1
    with pytest.raises(RtschedError, match="mask_invalid"):  # a real change of setting is still refused
        train("splitwindow", trace=SAMPLE, epochs=3, out=out, resume=True, mask_invalid=True, **opts)
