"""The rtmix curriculum (issue 13): the "backfill" window order, the teachers, the rounds and the CLI."""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("torch", reason="the rl extra (torch) is not installed")

import torch  # noqa: E402

from heuristics.batch import schedule_batch  # noqa: E402
from heuristics.priorities import get_priority  # noqa: E402
from heuristics.realtime import batch_pass_view  # noqa: E402
from heuristics.registry import make_policy  # noqa: E402
from milp.compare import run_online  # noqa: E402
from milp.instance import table3_instance  # noqa: E402
from rtsched.checkpoint import CheckpointModel  # noqa: E402
from rtsched.jobs import Workload  # noqa: E402
from rtsched.machines import machine_from_spec  # noqa: E402
from rtsched.rl.rtmix.env import RtMixEnv  # noqa: E402
from rtsched.rl.rtmix.policy import PRETRAINED_RTMIX, RtMixPolicy  # noqa: E402
from rtsched.rl.rtmix.core import RtMixPass, RtMixSpec  # noqa: E402
from rtsched.rl.rtmix.teacher import model_teacher_episode, policy_teacher_episode  # noqa: E402
from rtsched.rl.rtmix.train import miralike_jobs  # noqa: E402
from rtsched.sim.core import Simulator  # noqa: E402
from rtsched.sim.decisions import Start  # noqa: E402


def _with_order(tmp_path, order: str) -> str:
    st = torch.load(PRETRAINED_RTMIX, map_location="cpu", weights_only=True)
    st["env"] = dict(st["env"], order=order)
    path = tmp_path / f"rtmix-{order}.pt"
    torch.save(st, path)
    return str(path)


def test_unknown_order_is_refused():
    with pytest.raises(ValueError, match="window order"):
        RtMixSpec(order="random")


def test_backfill_order_on_table3_instances_only_narrows_the_bj_starts(tmp_path):
    # at most `window` jobs wait on a Table-3 instance: every job is visible under both orders; the
    # "backfill" order leaves the RTJ starts and the candidates as they were and keeps only the BJ
    # starts of the wfp2 + first-fit pass (never a start that delays the head's reservation)
    model = _with_order(tmp_path, "backfill")
    assert RtMixPolicy(model).spec.order == "backfill"
    assert RtMixPolicy(_with_order(tmp_path, "submit")).spec.order == "submit"
    machine = machine_from_spec("mira:16")
    pol = make_policy("wcjs")
    checked = narrowed = 0
    for seed in range(950000, 950010):
        jobs = RtMixEnv("mira:16").make_jobs(seed)
        sim = Simulator(Workload(jobs, name="t3", max_nodes=machine.total_nodes), machine,
                        checkpoint=CheckpointModel.parse("jit"))
        while sim.advance():
            a, b = RtMixPass(sim.view, RtMixSpec()), RtMixPass(sim.view, RtMixSpec(order="backfill"))
            assert {js.info.id for js in a.queue} == {js.info.id for js in b.queue}
            assert [js.info.id for js in a.queue if js.info.kind == "rt"] == \
                [js.info.id for js in b.queue if js.info.kind == "rt"] == [js.info.id for js in b.queue[:len(
                    [1 for js in b.queue if js.info.kind == "rt"])]]
            ma = {js.info.id: bool(a.mask()[i]) for i, js in enumerate(a.visible())}
            mb = {js.info.id: bool(b.mask()[i]) for i, js in enumerate(b.visible())}
            for js in b.queue:
                if js.info.kind == "rt":
                    assert mb[js.info.id] == ma[js.info.id]
                else:
                    assert mb[js.info.id] == (ma[js.info.id] and js.info.id in b.backfill_alloc)
                    narrowed += ma[js.info.id] and not mb[js.info.id]
            w = RtMixSpec().window
            assert np.array_equal(a.mask()[w:], b.mask()[w:])  # the same candidates and wait
            checked += 1
            ds = pol.decide(sim.view)
            if ds:
                sim.apply(ds)
    assert checked > 20 and narrowed > 0
    r = run_online(table3_instance(950000), model)  # the model runs with the option, validated
    assert r.bj_sd_mean >= 1.0


def _long_queue_views(seed: int, machine: str, n: int = 6):
    """Views of a generated Mira-like day under WCJS where more than 8 jobs wait."""
    mach = machine_from_spec(machine)
    jobs = miralike_jobs(seed, days=1.0)
    sim = Simulator(Workload(jobs, name="day", max_nodes=mach.total_nodes), mach,
                    checkpoint=CheckpointModel.parse("jit"))
    pol = make_policy("wcjs")
    out = []
    while sim.advance() and len(out) < n:
        v = sim.view
        if len(v.queue) > 12 and v.state.free_nodes > 0:
            out.append(v)
            return out, sim, pol  # the view is live: test it before the simulation moves on
        ds = pol.decide(v)
        if ds:
            sim.apply(ds)
    return out, sim, pol


@pytest.mark.parametrize("seed", [0, 2, 4, 8])
def test_backfill_order_shows_and_allows_the_backfilling_starts(seed):
    views, _sim, _pol = _long_queue_views(seed, "mira")
    assert views, "no long queue on this day"
    view = views[0]
    spec = RtMixSpec(order="backfill")
    ps = RtMixPass(view, spec)
    rts = sorted((js for js in view.queue if js.info.kind == "rt"), key=lambda js: (js.info.submit, js.info.id))
    ordered = get_priority("wfp2").order([js for js in view.queue if js.info.kind != "rt"], view.now,
                                         view.machine.total_nodes)
    pv = batch_pass_view(view, [], {}, True)  # as WCJS's low-priority pass sees it under JIT
    would = {d.job_id: d.alloc for d in schedule_batch(pv, ordered, "ff") if isinstance(d, Start)}
    r = len(rts)
    assert ps.queue[:r] == rts  # RTJs first, by submit time
    assert ps.queue[r] is ordered[0]  # then the wfp2 head
    k = r + 1 + sum(1 for js in ordered[1:] if js.info.id in would)
    assert {js.info.id for js in ps.queue[r + 1:k]} == {i for i in would if i != ordered[0].info.id}
    mask = ps.mask()
    for i, js in enumerate(ps.visible()):
        fits = view.state.find(js.info.nodes) is not None
        if js.info.kind == "rt":
            assert bool(mask[i]) == fits
        else:  # only the backfilling-safe BJ starts
            assert bool(mask[i]) == (fits and js.info.id in would)
    legal = [i for i in range(spec.window) if mask[i]]
    bj_legal = [i for i in legal if ps.visible()[i].info.kind != "rt"]
    if bj_legal:  # a BJ start goes on the partition the batch pass chose (free at the pass's start)
        js = ps.visible()[bj_legal[0]]
        ps.apply(bj_legal[0])
        assert ps.decisions[-1] == Start(js.info.id, would[js.info.id])
    # the submit order on the same view: BJs by submit time, starts limited by fit only
    ps2 = RtMixPass(view, RtMixSpec(order="submit"))
    assert ps2.queue[:r] == rts
    assert [js.info.submit for js in ps2.queue[r:]] == sorted(js.info.submit for js in ps2.queue[r:])


def test_self_distillation_follows_the_model_exactly():
    from rtsched.rl.rtmix.train import model_slots

    pol = RtMixPolicy(PRETRAINED_RTMIX)
    # the environment the model decides in: its window order and every optional setting it was trained with
    env = RtMixEnv("mira:16", order=pol.spec.order, **model_slots(PRETRAINED_RTMIX))
    for seed in (950010, 950011, 950012):
        ep = model_teacher_episode(env, env.make_jobs(seed), pol)
        ref = run_online(table3_instance(seed), "rtmix")
        assert ep.bj_sd_mean == pytest.approx(ref.bj_sd_mean, abs=1e-12)
        assert ep.rtj_sd_mean == pytest.approx(ref.rtj_sd_mean, abs=1e-12)
        assert len(ep.actions) == len(ep.obs) == len(ep.masks)


def test_policy_teacher_labels_are_legal_and_the_run_validates():
    env = RtMixEnv("mira", order="backfill")  # validate=True: the episode's schedule is checked at its end
    jobs = miralike_jobs(7, days=1.0)
    ep = policy_teacher_episode(env, jobs, make_policy("wcjs"))
    assert ep.mapped > 50 and len(ep.actions) > ep.mapped  # starts, preemptions and the waits ending passes
    for m, a in zip(ep.masks, ep.actions):
        assert m[a]
    assert ep.bj_sd_mean >= 1.0 and ep.rtj_sd_mean >= 1.0
    # DAgger: the same labels' machinery following a model's actions (in the environment the model was trained in)
    from rtsched.rl.rtmix.train import model_slots

    env2 = RtMixEnv("mira", order="backfill", **model_slots(PRETRAINED_RTMIX))
    ep2 = policy_teacher_episode(env2, jobs, make_policy("wcjs"), RtMixPolicy(PRETRAINED_RTMIX))
    assert all(m[a] for m, a in zip(ep2.masks, ep2.actions)) and ep2.mapped > 0


@pytest.mark.slow
def test_curriculum_cli_rounds_resume_and_the_model_runs(tmp_path, capsys):
    import json

    from rtsched.cli import main

    out = tmp_path / "cur"
    args = ["rl", "train", "--agent", "rtmix", "--curriculum-rounds", "1", "--curriculum-weeks", "1",
            "--curriculum-machines", "mira:16", "--small-episodes", "4", "--bc-epochs", "2", "--out", str(out),
            "--json"]
    assert main(args) == 0
    res = json.loads(capsys.readouterr().out)
    assert [r["round"] for r in res["rounds"]] == [0, 1]
    assert res["model"] == str(out / "round-1.pt")
    assert res["rounds"][0]["parts"]["small"]["episodes"] == 4 and res["rounds"][1]["parts"]["small"]["episodes"] == 0
    stamp = {p: os.stat(out / p).st_mtime_ns for p in ("round-0.pt", "round-1.pt", "data-0.npz", "data-1.npz")}
    assert main(args) == 0  # resumes: every round is read back, nothing is redone
    capsys.readouterr()
    assert {p: os.stat(out / p).st_mtime_ns for p in stamp} == stamp
    pol = RtMixPolicy(str(out / "round-1.pt"))
    assert pol.spec.order == "backfill" and pol.model.history[-1]["phase"] == "curriculum"
    r = run_online(table3_instance(950020), str(out / "round-1.pt"))
    assert r.bj_sd_mean >= 1.0
    # usage errors name the option
    assert main(["rl", "train", "--agent", "rtmix", "--curriculum-weeks", "2", "--out", str(tmp_path / "x")]) == 2
    assert "--curriculum-rounds" in capsys.readouterr().err
    assert main(["rl", "train", "--agent", "rtmix", "--curriculum-rounds", "1", "--small-repeat", "0",
                 "--out", str(tmp_path / "y")]) == 2
    assert "--small-repeat" in capsys.readouterr().err
    assert main(["rl", "train", "--agent", "rlscheduler", "--curriculum-rounds", "1", "--trace", "x.swf",
                 "--out", str(tmp_path / "z")]) == 2
    assert "rtmix agent only" in capsys.readouterr().err


def test_curriculum_data_arrays_line_up():
    from rtsched.rl.rtmix.train import curriculum_data

    d = curriculum_data(PRETRAINED_RTMIX, small_episodes=3, weeks=0)
    n = d["parts"]["small"]["decisions"]
    assert d["obs"].shape[0] == d["mask"].shape[0] == len(d["act"]) == n > 0
    assert np.all(d["mask"][np.arange(n), d["act"]])


@pytest.mark.parametrize("seed", [5, 6])
def test_the_wcjs_teacher_reproduces_wcjs_without_rtjs(seed):
    # no RTJ: WCJS is its wfp2 + first-fit batch pass, which the "backfill" window expresses exactly
    # (same jobs, same partitions), so the teacher's episode is WCJS's own schedule
    env = RtMixEnv("mira", order="backfill")
    jobs = miralike_jobs(seed, days=1.0, rt_percent=0.0)
    ep = policy_teacher_episode(env, jobs, make_policy("wcjs"))
    assert ep.mapped > 20
    mine = {o.job.id: (o.first_start, o.end) for o in env.result().outcomes}
    ref = Simulator(env.workload, env.machine, checkpoint=env.checkpoint).run(make_policy("wcjs"))
    assert mine == {o.job.id: (o.first_start, o.end) for o in ref.outcomes}


def test_the_curriculum_keeps_a_dagger_models_bj_slots(tmp_path):
    # a DAgger model (BJ slots, any eligibility, wake-ups) as the curriculum's start: the data have its
    # observation width (the default environment's is narrower), and the round's model keeps its options
    from rtsched.rl.modelfiles import read_model_file
    from rtsched.rl.rtmix.dagger import run_dagger
    from rtsched.rl.rtmix.train import curriculum_data, model_slots, run_curriculum

    dag = str(tmp_path / "dagger")
    run_dagger(dag, teacher="wcjs", rounds=1, episodes=1, bc_epochs=1, eligibility="any", wake=True)
    init = str(tmp_path / "dagger" / "round-0.pt")
    st = read_model_file(init)
    assert model_slots(init) == {"bj_candidates": 2, "eligibility": "any", "wake": True}
    # the shipped model (tenth session) was trained with every optional setting it records, among them its
    # batch order; a model written without them (the DAgger run's) reads back only what it has
    assert model_slots(PRETRAINED_RTMIX)["batch_priority"] == "wsept-sqrt"
    d = curriculum_data(init, small_episodes=2, weeks=0)
    window, n_features = st["arch"]["window"], st["arch"]["n_features"]
    assert d["obs"].shape[1] == window * n_features and len(d["act"]) > 0
    assert np.all(d["mask"][np.arange(len(d["act"])), d["act"]])
    res = run_curriculum(str(tmp_path / "cur"), init, rounds=0, weeks=1, small_episodes=2, epochs=1,
                         progress=None, days=0.5)
    out = read_model_file(res["model"])
    assert {k: out["env"][k] for k in ("bj_candidates", "eligibility", "wake")} == model_slots(init)
    assert out["arch"] == st["arch"]
