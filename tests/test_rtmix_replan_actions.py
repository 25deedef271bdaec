"""rtmix's options that let it express ``replan`` (issue 23 §3): RTJ candidates under replan's
eligibility (``eligibility="any"``) and scheduling points where a running BJ becomes splittable
(``wake``).  Golden values worked by hand on Mira:2."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from rtsched.checkpoint import CheckpointModel  # noqa: E402
from rtsched.jobs import Job, Workload  # noqa: E402
from rtsched.machines import machine_from_spec  # noqa: E402
from rtsched.rl.rtmix.core import RtMixPass, RtMixSpec  # noqa: E402
from rtsched.rl.rtmix.env import RtMixEnv  # noqa: E402
from rtsched.sim.decisions import Preempt, Start, WakeAt  # noqa: E402

CAND0 = 8  # the first RTJ candidate slot (window 8)
WAIT = 8 + 4  # no BJ-preemption slots


def _jobs() -> list[Job]:
    """Mira:2 (partitions 0 and 1 of 512 nodes, 2 of 1024).  A (BJ, 1024 nodes, 1000 s of work,
    walltime 2000 s, checkpointable) starts at 0 on the whole machine; B (RTJ, 512 nodes, 300 s,
    walltime 300 s) arrives at 50 and finds nothing free."""
    return [Job(1, 0, 1000, 2000, 1024), Job(2, 50, 300, 300, 512, kind="rt")]


def _pass_at_50(checkpoint: str = "jit", **spec) -> RtMixPass:
    from rtsched.sim.core import Simulator

    machine = machine_from_spec("mira:2")
    sim = Simulator(Workload(_jobs(), name="wake", max_nodes=machine.total_nodes), machine,
                    checkpoint=CheckpointModel.parse(checkpoint))
    assert sim.advance()
    sim.apply([Start(1, 2)])
    assert sim.advance() and sim.view.now == 50
    return RtMixPass(sim.view, RtMixSpec(**spec))


def test_eligibility_any_offers_a_victim_larger_than_the_rtj():
    # WCJS's criterion 2 rejects A (1024 nodes) as a victim of B (512): no candidate, waiting is all
    assert _pass_at_50(eligibility="wcjs").candidates() == []
    assert not _pass_at_50().has_choice()  # the default is WCJS's rule
    # replan's rule: either 512-node half (each conflicts with A's partition 2), the same cost, lower index first
    ps = _pass_at_50(eligibility="any")
    assert [(p, [v.info.id for v in vs]) for p, vs, _c in ps.candidates()] == [(0, [1]), (1, [1])]
    assert np.flatnonzero(ps.mask()).tolist() == [CAND0, CAND0 + 1, WAIT]
    ps.apply(CAND0)
    assert ps.decisions == [Preempt(1), Start(2, 0)]
    with pytest.raises(ValueError, match="eligibility"):
        RtMixSpec(eligibility="all")


def test_wake_asks_for_the_point_where_a_running_bj_becomes_splittable():
    # A started at 0 with walltime 2000 s: splittable after ceil(2000 / 10) = 200 s of work, at 200
    ps = _pass_at_50(eligibility="any", wake=True)
    assert ps.split_wake() == 200 and ps.final_decisions() == [WakeAt(200)]
    assert _pass_at_50(eligibility="any").final_decisions() == []  # off by default
    assert _pass_at_50("no", eligibility="any", wake=True).split_wake() is None  # NO keeps no work
    ps.apply(CAND0)  # A is preempted in this pass and nothing waits: no wake-up
    assert ps.split_wake() is None and ps.final_decisions() == [Preempt(1), Start(2, 0)]


def test_wake_gives_the_agent_a_decision_at_the_split_point():
    env = RtMixEnv("mira:2", "jit", eligibility="any", wake=True)
    assert env.config()["eligibility"] == "any" and env.config()["wake"] is True
    _obs, info = env.reset(options={"jobs": _jobs()})
    assert env.sim.view.now == 50 and np.flatnonzero(info["action_mask"]).tolist() == [CAND0, CAND0 + 1, WAIT]
    _obs, _r, done, _t, info = env.step(WAIT)
    assert not done and env.sim.view.now == 200  # the wake-up, not A's completion at 1000
    _obs, _r, done, _t, _info = env.step(CAND0)
    assert done
    out = {o.job.id: o for o in env.result().outcomes}
    # io (DESIGN.md): 1024 nodes → 32 GB/s, write = read = 512 s.  A writes [200, 712]; B runs
    # [712, 1012]; A reads [1012, 1524] and does its 800 s left: [1524, 2324]
    assert (out[2].first_start, out[2].end) == (712, 1012)
    assert out[1].end == 2324 and out[1].n_preemptions == 1
    # without the wake-up the next point after waiting is A's completion: B runs [1000, 1300]
    env = RtMixEnv("mira:2", "jit", eligibility="any")
    env.reset(options={"jobs": _jobs()})
    _obs, _r, done, _t, _info = env.step(WAIT)
    assert done and {o.job.id: o.first_start for o in env.result().outcomes}[2] == 1000
    assert "wake" not in env.config()
    default = RtMixEnv("mira:16", "jit").config()  # the settings of the agents before the options
    assert "wake" not in default and "eligibility" not in default


def test_cli_options_reach_dagger_and_are_refused_elsewhere(tmp_path, capsys, monkeypatch):
    """``rl train --agent rtmix --eligibility any --wake`` passes both to the DAgger run (the model
    file's settings); the clone recipe refuses them; a bad value names the option."""
    from rtsched.cli import main
    from rtsched.rl.rtmix import dagger

    seen = {}

    def fake_run_dagger(out, **kw):  # the CLI's call, not a training run
        seen.update(kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(dagger, "run_dagger", fake_run_dagger)
    assert main(["rl", "train", "--agent", "rtmix", "--eligibility", "any", "--wake", "--out", str(tmp_path / "d"),
                 "--no-progress"]) != 0  # interrupted by the fake
    assert seen["eligibility"] == "any" and seen["wake"] is True and seen["bj_candidates"] == 2
    seen.clear()
    assert main(["rl", "train", "--agent", "rtmix", "--out", str(tmp_path / "e"), "--no-progress"]) != 0
    assert seen["eligibility"] == "wcjs" and seen["wake"] is False  # the recipe's defaults are unchanged
    capsys.readouterr()
    assert main(["rl", "train", "--agent", "rtmix", "--recipe", "clone", "--wake", "--out", str(tmp_path / "f")]) == 2
    assert "--wake" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["rl", "train", "--agent", "rtmix", "--eligibility", "all", "--out", str(tmp_path / "g")])
    assert exc.value.code == 2 and "--eligibility" in capsys.readouterr().err


def test_a_model_trained_with_the_options_decides_with_them_and_its_schedules_validate():
    """The DAgger candidate of training/rtmix-dagger-wake keeps its options in the model file; as a
    policy it uses them (at 50 on the tiny instance its answer is one of the two preemptions only
    ``any`` offers, or waiting with the wake-up at 200) and its schedules pass the validator
    (``execute`` validates every run)."""
    import os

    from milp.compare import run_online
    from milp.instance import table3_instance
    from rtsched.rl.rtmix.policy import RtMixPolicy

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "training",
                        "rtmix-dagger-wake", "round-6.pt")
    pol = RtMixPolicy(path)
    assert pol.spec.eligibility == "any" and pol.spec.wake and pol.spec.bj_candidates == 2
    ps = _pass_at_50(eligibility="any", wake=True, bj_candidates=2)
    out = pol.decide(ps.view)
    assert out in ([WakeAt(200)], [Preempt(1), Start(2, 0)], [Preempt(1), Start(2, 1)])
    for seed in (0, 1):
        r = run_online(table3_instance(seed), path)
        assert r.bj_sd_mean >= 1.0 and r.rtj_sd_mean >= 1.0
