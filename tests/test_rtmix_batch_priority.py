"""rtmix's batch pass (``RtMixSpec.batch_priority`` / ``batch_backfill``, issue 23, seventh session): the
backfill window and its batch pass follow WCJS's wfp2 order and first-fit backfilling by default, or
another priority / backfilling (the curriculum's ``--curriculum-priority`` / ``--curriculum-backfill``,
with the WCJS teacher run under the same settings)."""
from __future__ import annotations

import pytest

pytest.importorskip("gymnasium")

from rtsched.checkpoint import CheckpointModel  # noqa: E402
from rtsched.jobs import Job, Workload  # noqa: E402
from rtsched.machines import machine_from_spec  # noqa: E402
from rtsched.rl.rtmix.core import RtMixPass, RtMixSpec  # noqa: E402
from rtsched.sim.decisions import Start  # noqa: E402


def _pass_at_400(waiting: list[Job], window: int, machine: str = "mira:2", **spec) -> RtMixPass:
    """The backfill-order pass at 400 s on ``machine`` (Mira:2: two 512-node halves; Mira:4: four 512-node
    blocks): job 1 (512 nodes, walltime 1,000 s) runs on block 0 from 0, and the ``waiting`` jobs have been
    submitted by 400 (one of them at 400, so that a pass happens then)."""
    from rtsched.sim.core import Simulator

    machine = machine_from_spec(machine)
    sim = Simulator(Workload([Job(1, 0, 1000, 1000, 512), *waiting], name="batch", max_nodes=machine.total_nodes),
                    machine, checkpoint=CheckpointModel.parse("jit"))
    assert sim.advance()
    sim.apply([Start(1, 0)])
    while sim.view.now < 400:
        assert sim.advance()
    assert sim.view.now == 400
    return RtMixPass(sim.view, RtMixSpec(window=window, order="backfill", **spec))


def _short_jobs_waiting(**spec) -> RtMixPass:
    """Waiting at 400: job 2 (1024 nodes, walltime 5,000 s, submitted at 0), 512-node jobs 3, 4, 5
    submitted at 300 with walltimes 3,000, 200 and 100 s, and job 6 (512 nodes, 50 s) submitted at 400."""
    return _pass_at_400([Job(2, 0, 5000, 5000, 1024), Job(3, 300, 3000, 3000, 512), Job(4, 300, 200, 200, 512),
                         Job(5, 300, 100, 100, 512), Job(6, 400, 50, 50, 512)], 3, **spec)


def _bj_ids(ps: RtMixPass) -> list[int]:
    return [js.info.id for js in ps.queue if js.info.kind != "rt"]


def test_the_backfill_window_follows_the_batch_priority():
    wfp2 = _short_jobs_waiting()
    sjf = _short_jobs_waiting(batch_priority="sjf")
    # wfp2 (Cobalt's, the default): wait² / walltime³ × nodes / 1024 at 400 s, highest first —
    # job 5: 100² / 100³ × 0.5 = 5e-3, 4: 100² / 200³ × 0.5 = 6.25e-4, 2: 400² / 5000³ × 1 = 1.28e-6,
    # 3: 100² / 3000³ × 0.5 = 1.9e-7, 6: 0 (just arrived); the head (5) takes the free half
    assert _bj_ids(wfp2) == [5, 4, 2, 3, 6] and set(wfp2.backfill_alloc) == {5}
    # SJF: shortest walltime first (6: 50 s, 5: 100 s, 4: 200 s, 3, then 2); the head (6) takes the free half
    assert _bj_ids(sjf) == [6, 5, 4, 3, 2] and set(sjf.backfill_alloc) == {6}
    assert sjf.mask()[0] and not sjf.mask()[1]  # only the batch pass's start is legal among the BJs


def test_an_unknown_batch_priority_or_backfill_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="unknown priority 'nope'; choose from .*sjf"):
        RtMixSpec(batch_priority="nope")
    with pytest.raises(ValueError, match="unknown backfill 'nope'; choose from none, easy, ff"):
        RtMixSpec(batch_backfill="nope")


def _pass_with_head_reservation(**spec) -> RtMixPass:
    """Waiting at 400: job 2 (1024 nodes, 5,000 s, submitted at 0), 512-node jobs 3 (3,000 s) and 4
    (2,000 s) submitted at 300, 6 (590 s) at 395 and 5 (500 s) at 400.  wfp2 keys (wait² / walltime³ ×
    nodes / 1024): 2: 1.28e-6, 4: 6.3e-7, 3: 1.9e-7, 6: 6.1e-8, 5: 0 — so job 2 heads the order and does
    not fit; it is reserved at 1000 (job 1's walltime end) on the whole machine, so only a job ending by
    1000 may use the free half: 6 (ends 990) and 5 (900) both could, and only one fits."""
    return _pass_at_400([Job(2, 0, 5000, 5000, 1024), Job(3, 300, 3000, 3000, 512), Job(4, 300, 2000, 2000, 512),
                         Job(6, 395, 590, 590, 512), Job(5, 400, 500, 500, 512)], 4, **spec)


def test_the_backfill_window_follows_the_batch_backfilling():
    ff = _pass_with_head_reservation()
    sjf = _pass_with_head_reservation(batch_backfill="sjf")
    # first-fit (WCJS's, the default) backfills in wfp2 order: 4 and 3 end too late, 6 is the first that fits
    assert set(ff.backfill_alloc) == {6} and _bj_ids(ff) == [2, 6, 4, 3, 5]
    # SJF backfilling offers the shortest first: 5
    assert set(sjf.backfill_alloc) == {5} and _bj_ids(sjf) == [2, 5, 4, 3, 6]
    assert list(sjf.mask()[:4]) == [False, True, False, False]  # the head does not fit; only 5 may start


def test_the_backfill_window_lists_the_batch_pass_starts_in_the_order_that_pass_starts_them():
    """On Mira:4 (four 512-node blocks), job 1 (512 nodes, walltime 1,000 s) runs from 0.  Waiting at 400:
    job 2 (2,048 nodes, walltime 1,000 s, submitted at 0), 512-node jobs 3 (590 s, submitted at 200) and 4
    (300 s, submitted at 400).  wfp2 keys (q² / r³ · n / N): 2: 400² / 1000³ · 1 = 1.6e-4, 3: 200² / 590³ ·
    0.25 = 4.9e-5, 4: 0 (no wait yet).  Job 2 heads the order, does not fit and is reserved at
    1,000 s; 3 (ends 990) and 4 (ends 700) both backfill: first-fit starts 3 then 4 (wfp2 order), SJF
    backfilling 4 then 3 (shortest first), and the window shows them in that order."""
    waiting = [Job(2, 0, 1000, 1000, 2048), Job(3, 200, 590, 590, 512), Job(4, 400, 300, 300, 512)]
    ff = _pass_at_400(waiting, 4, "mira:4")
    sjf = _pass_at_400(waiting, 4, "mira:4", batch_backfill="sjf")
    assert set(ff.backfill_alloc) == set(sjf.backfill_alloc) == {3, 4}
    assert _bj_ids(ff) == [2, 3, 4] and _bj_ids(sjf) == [2, 4, 3]
    assert list(sjf.mask()[:3]) == [False, True, True]


def test_the_environment_records_the_priority_only_when_it_is_not_wfp2_and_the_policy_reads_it():
    from rtsched.rl.rtmix.env import RtMixEnv

    assert "batch_priority" not in RtMixEnv("mira:16").config()  # the models before the option stay as they were
    assert RtMixEnv("mira:16", batch_priority="sjf").config()["batch_priority"] == "sjf"
    assert RtMixEnv("mira:16", batch_backfill="sjf").config()["batch_backfill"] == "sjf"
    assert "batch_backfill" not in RtMixEnv("mira:16", batch_priority="sjf").config()
    with pytest.raises(ValueError, match="unknown priority"):
        RtMixEnv("mira:16", batch_priority="nope")


def test_the_curriculum_writes_the_priority_and_its_policy_uses_it(tmp_path):
    from rtsched.rl.modelfiles import read_model_file
    from rtsched.rl.rtmix.dagger import run_dagger
    from rtsched.rl.rtmix.policy import RtMixPolicy
    from rtsched.rl.rtmix.train import run_curriculum

    run_dagger(str(tmp_path / "dagger"), teacher="wcjs", rounds=1, episodes=1, bc_epochs=1, eligibility="any")
    init = str(tmp_path / "dagger" / "round-0.pt")
    assert (RtMixPolicy(init).spec.batch_priority, RtMixPolicy(init).spec.batch_backfill) == ("wfp2", "ff")
    res = run_curriculum(str(tmp_path / "cur"), init, rounds=1, weeks=1, small_episodes=2, epochs=1,
                         progress=None, days=0.5, order="load",
                         spec_settings={"batch_priority": "sjf", "batch_backfill": "sjf", "rt_wake": True,
                                        "refit_window": True, "low_rt_batch": True})
    for row in res["rounds"]:
        out = read_model_file(row["model"])
        assert out["env"]["batch_priority"] == "sjf" and out["history"][-1]["batch_priority"] == "sjf"
        assert out["env"]["batch_backfill"] == "sjf"
        assert out["env"]["rt_wake"] is True and out["env"]["refit_window"] is True  # the environments' only
        assert out["env"]["low_rt_batch"] is True
        spec = RtMixPolicy(row["model"]).spec
        assert (spec.batch_priority, spec.batch_backfill) == ("sjf", "sjf") and spec.rt_wake and spec.refit_window
        assert spec.low_rt_batch


def test_the_command_line_refuses_a_bad_priority_or_one_without_the_curriculum(tmp_path, capsys):
    from rtsched.cli import main as cli_main

    for argv, message in ((["--curriculum-rounds", "0", "--curriculum-priority", "nope"],
                           "--curriculum-priority: unknown priority 'nope'; choose from"),
                          (["--curriculum-rounds", "0", "--curriculum-backfill", "nope"],
                           "--curriculum-backfill: unknown backfill 'nope'; choose from"),
                          (["--curriculum-priority", "sjf"], "--curriculum-priority: options of the curriculum"),
                          (["--curriculum-backfill", "sjf"], "--curriculum-backfill: options of the curriculum"),
                          (["--curriculum-rt-wake"], "--curriculum-rt-wake: options of the curriculum"),
                          (["--curriculum-refit-window"], "--curriculum-refit-window: options of the curriculum"),
                          (["--curriculum-low-rt-batch"], "--curriculum-low-rt-batch: options of the curriculum")):
        assert cli_main(["rl", "train", "--agent", "rtmix", "--out", str(tmp_path / "x"), *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_stored_settings_round_trip_and_old_model_files_read_as_the_agents_before_each_option():
    from rtsched.rl.rtmix.core import OPTIONAL_SETTINGS

    # a model file from before every option records the three always-stored settings only
    old = RtMixSpec.from_settings({"window": "8", "candidates": 4, "order": "submit", "machine": "mira:16"})
    assert old == RtMixSpec() and old.optional_settings() == {}
    # every option set: each read with its type and written back as set, in OPTIONAL_SETTINGS's order
    stored = {"bj_candidates": 2, "eligibility": "any", "wake": True, "shield": "risk", "conserve": 0,
              "shield_theta": 1.5, "batch_priority": "sjf", "batch_backfill": "sjf", "rt_wake": True,
              "refit_window": True, "low_rt_batch": True, "horizon_features": True, "defer_weight": 7.5}
    spec = RtMixSpec.from_settings({"window": 6, "candidates": 3, "order": "load", **stored})
    assert (spec.window, spec.candidates, spec.order) == (6, 3, "load")
    assert spec.optional_settings() == stored and list(spec.optional_settings()) == list(OPTIONAL_SETTINGS)
    assert isinstance(spec.conserve, float) and spec.n_actions == 6 + 3 + 2 + 1
    # None is "not set" (an environment's conserve=None); a bad value fails as the constructor does
    assert RtMixSpec.from_settings({"conserve": None}).conserve is None
    with pytest.raises(ValueError, match="unknown rtmix shield 'x'"):
        RtMixSpec.from_settings({"shield": "x"})


def test_the_environment_records_only_the_options_that_differ_from_the_agents_before_them():
    from rtsched.rl.rtmix.env import RtMixEnv

    assert not set(RtMixEnv("mira:16").config()) & {"bj_candidates", "shield", "batch_priority", "conserve"}
    cfg = RtMixEnv("mira:16", batch_priority="sjf", shield="risk", shield_theta=1.5).config()
    assert (cfg["batch_priority"], cfg["shield"], cfg["shield_theta"]) == ("sjf", "risk", 1.5)
    assert "batch_backfill" not in cfg and "wake" not in cfg


def _mira4_pass_at_400(jobs: list[Job], **spec) -> RtMixPass:
    """``_pass_at_400`` on Mira:4 with a 4-slot window and SJF backfilling."""
    return _pass_at_400(jobs, 4, "mira:4", batch_backfill="sjf", **spec)


def test_refit_window_orders_the_window_by_the_batch_pass_planned_again_after_an_rt_start():
    """Waiting at 400: head job 2 (2,048 nodes, reserved at 1,000), job 3 (512 nodes, 590 s), job 4 (1,024
    nodes, 300 s) and RTJ 5 (1,024 nodes).  Before the RTJ starts, SJF backfilling starts 4 (on blocks
    2-3) then 3 (block 1): the window is [5, 2, 4, 3].  RTJ 5 takes blocks 2-3 (the only free 1,024-node
    partition); planned again, the pass starts only 3.  Without ``refit_window`` the window keeps the old
    order [2, 4, 3] (3 at slot 2); with it the new plan's [2, 3, 4] (3 at slot 1)."""
    jobs = [Job(2, 0, 1000, 1000, 2048), Job(3, 200, 590, 590, 512), Job(4, 400, 300, 300, 1024),
            Job(5, 400, 100, 100, 1024, kind="rt")]
    for refit, after in ((False, [2, 4, 3]), (True, [2, 3, 4])):
        ps = _mira4_pass_at_400(jobs, refit_window=refit)
        assert [js.info.id for js in ps.queue] == [5, 2, 4, 3] and set(ps.backfill_alloc) == {3, 4}
        ps.apply(0)  # start RTJ 5
        assert set(ps.backfill_alloc) == {3}
        assert [js.info.id for js in ps.queue] == after
        assert list(ps.mask()[:3]) == [False, after[1] == 3, after[2] == 3]


def test_rt_wake_asks_for_a_pass_when_a_waiting_rtj_crosses_the_wcjs_threshold():
    """RTJ 5 (2,048 nodes: the whole machine, walltime 1,000 s, submitted at 300) waits at 400 beside job 1:
    WCJS's threshold for a narrow (below its wide size) short RTJ is 1.1, crossed when (t − 300 + 1,000) /
    1,000 > 1.1, i.e. at t = 401."""
    from rtsched.sim.decisions import WakeAt

    jobs = [Job(5, 300, 1000, 1000, 2048, kind="rt"), Job(6, 400, 50, 50, 512)]
    assert _mira4_pass_at_400(jobs).final_decisions() == []
    ps = _mira4_pass_at_400(jobs, rt_wake=True)
    assert ps.final_decisions() == [WakeAt(401)]
    ps.apply(1)  # start BJ 6; the RTJ still waits
    assert ps.final_decisions() == [Start(6, ps.final_decisions()[0].alloc), WakeAt(401)]


def test_low_rt_batch_starts_a_low_priority_rtj_where_wcjs_batch_pass_places_it():
    """Waiting at 400 on Mira:4 (block 0 busy until 1,000): head job 2 (2,048 nodes, reserved at 1,000), job 4
    (512 nodes, 100 s) and RTJ 5 (512 nodes, 500 s, submitted at 400: estimated slowdown 1.0, below WCJS's
    threshold, so WCJS serves it in its batch pass).  SJF backfilling starts 4 (100 s) on block 1, the best fit,
    then 5 (500 s) on block 2.  Without ``low_rt_batch`` the RTJ starts best fit on block 1 and the pass is
    planned again (4 moves to block 2); with it the RTJ takes block 2, as WCJS's pass, and the plan stays."""
    jobs = [Job(2, 0, 1000, 1000, 2048), Job(4, 300, 100, 100, 512), Job(5, 400, 500, 500, 512, kind="rt")]
    before = _mira4_pass_at_400(jobs)
    assert before.backfill_alloc == {4: 1} and before.plan.find(512) == 1
    before.apply(0)  # start RTJ 5
    assert before.decisions == [Start(5, 1)] and before.backfill_alloc == {4: 2}
    ps = _mira4_pass_at_400(jobs, low_rt_batch=True)
    assert [js.info.id for js in ps.queue] == [5, 4, 2]  # RTJs first, as always; the BJs as before
    assert ps.backfill_alloc == {4: 1, 5: 2}
    ps.apply(0)
    assert ps.decisions == [Start(5, 2)] and ps.backfill_alloc == {4: 1, 5: 2}
    assert ps.mask()[0] and [js.info.id for js in ps.queue] == [4, 2]  # 4 still starts on block 1
    ps.apply(0)
    assert ps.decisions == [Start(5, 2), Start(4, 1)]


def test_low_rt_batch_leaves_the_low_priority_rtjs_out_while_a_high_priority_one_waits():
    """RTJ 7 (2,048 nodes, submitted at 0, walltime 1,000 s: estimated slowdown 1.4 at 400, above the 1.1
    threshold) cannot start beside job 1: WCJS (``blocking="rt-only"``) then keeps its low-priority RTJs out of
    the batch pass, so RTJ 5 is not planned; job 4 is, as without the option."""
    jobs = [Job(2, 0, 1000, 1000, 2048), Job(4, 300, 100, 100, 512), Job(5, 400, 500, 500, 512, kind="rt"),
            Job(7, 0, 1000, 1000, 2048, kind="rt")]
    ps = _mira4_pass_at_400(jobs, low_rt_batch=True)
    assert [js.info.id for js in ps.queue] == [7, 5, 4, 2] and ps.backfill_alloc == {4: 1}
    assert ps.mask()[1]  # RTJ 5 may still start (legality is unchanged), best fit then
    ps.apply(1)
    assert ps.decisions == [Start(5, 1)]
