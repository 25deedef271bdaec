"""``replan`` (milp.replan): receding-horizon re-planning on the exact model.

* On a clairvoyant instance (every job at time 0, walltime = runtime) the first plan is the offline
  optimum and every later plan its continuation, so the simulated run reaches the optimum's BJ
  mean (and, with the tie-break, its RTJ mean) exactly.
* Non-anticipation (hypothesis): changing or removing a job submitted at t leaves every decision
  before t identical (deterministic CP-SAT: one worker, a fixed seed, deterministic time).
* It is a registry policy (``--policy replan``, options in its name), runs through the pipeline
  (which validates every schedule), and refuses bad options with a one-line error.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heuristics.registry import make_policy
from milp.compare import optimum_run, run_online
from milp.instance import Instance, random_instance
from milp.replan import ReplanPolicy, parse_replan_name, replan_name
from rtsched.checkpoint import CheckpointModel
from rtsched.errors import OptionError
from rtsched.jobs import BATCH, RT, Job
from rtsched.sim.core import Simulator
from rtsched.sim.decisions import Start


def clairvoyant(seed: int) -> Instance:
    return random_instance(seed, 3, 2, 8, submit_window=0, walltime_factor=(1.0, 1.0), runtime_min=600,
                           runtime_max=3600, runtime_step=600, name=f"clairvoyant-{seed}")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_replan_reaches_the_clairvoyant_optimum_when_everything_is_known_at_time_zero(seed):
    inst = clairvoyant(seed)
    opt, res = optimum_run(inst, rtj_tiebreak=True)
    assert res.status == "optimal"
    run = run_online(inst, "replan:ms=none")  # the pipeline validates the schedule
    assert run.bj_sd_mean == pytest.approx(opt.bj_sd_mean, abs=1e-9)
    assert run.rtj_sd_mean == pytest.approx(opt.rtj_sd_mean, abs=1e-9)


def decisions(inst: Instance, policy: str = "replan:ms=200") -> list[tuple[int, tuple]]:
    pol = make_policy(policy)
    sim = Simulator(inst.workload(), inst.machine(), checkpoint=CheckpointModel.parse("jit"), io=inst.io)
    sim.run(pol)
    return pol.log


job_st = st.tuples(st.integers(0, 3000), st.integers(10, 40), st.sampled_from([512, 1024, 2048]),
                   st.floats(1.0, 1.5), st.booleans())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(job_st, min_size=3, max_size=5), st.data())
def test_decisions_before_a_later_arrival_do_not_depend_on_it(raw, data):
    jobs = [Job(i + 1, sub, rt * 60, int(rt * 60 * f), nodes, kind=RT if is_rt else BATCH)
            for i, (sub, rt, nodes, f, is_rt) in enumerate(sorted(raw))]
    inst = Instance(4, jobs, name="na")
    target = data.draw(st.sampled_from(jobs))
    t = target.submit
    if data.draw(st.booleans()):  # remove it
        other = Instance(4, [j for j in jobs if j.id != target.id], name="na")
    else:  # or change what it is
        changed = replace(target, runtime=target.runtime + 600, walltime=target.walltime + 900,
                          nodes=512 if target.nodes != 512 else 2048, kind=BATCH if target.kind == RT else RT)
        other = Instance(4, [changed if j.id == target.id else j for j in jobs], name="na")
    before = [d for d in decisions(inst) if d[0] < t]
    assert before == [d for d in decisions(other) if d[0] < t]


def test_the_log_records_what_the_policy_decided():
    # A full-machine RTJ arriving while a checkpointable BJ runs: replan preempts the BJ (at the
    # earliest point its first part reaches 10 % of its walltime) and restarts it on its partition.
    jobs = [Job(1, 0, 3000, 3000, 512, kind=BATCH), Job(2, 100, 600, 600, 2048, kind=RT)]
    inst = Instance(4, jobs, name="preempt")
    log = decisions(inst, "replan:ms=none")
    kinds = [type(d).__name__ for _, ds in log for d in ds]
    assert "Preempt" in kinds
    run = run_online(inst, "replan:ms=none")
    assert run.extra["preemptions"] == 1
    # By hand: the BJ's first part must reach ⌈0.1·3000⌉ = 300 s of work, so the write begins at 300,
    # lasts o (512 nodes), and the RTJ starts when it ends (waiting for the BJ would give SD 5.83).
    o = inst.overhead(jobs[0])
    assert run.rtj_sd_mean == pytest.approx((300 + o + 600 - 100) / 600)


def _up_to_equal_partitions(log, machine) -> list:
    """The decisions with each start's partition replaced by its size: two exact models break ties
    between equal partitions differently (a start on block 9 or 11 of a 16-block machine)."""
    return [(t, [(type(d).__name__, getattr(d, "job_id", None), getattr(d, "time", None),
                  machine.partitions[d.alloc].nodes if isinstance(d, Start) else None) for d in ds]) for t, ds in log]


def _policy_run(inst: Instance, policy: str) -> ReplanPolicy:
    pol = make_policy(policy)
    Simulator(inst.workload(), inst.machine(), checkpoint=CheckpointModel.parse("jit"), io=inst.io).run(pol)
    return pol


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_the_disjunctive_milp_makes_the_decisions_cpsat_makes_where_both_prove_optimality(seed):
    # Arrivals spread over time, walltimes above runtimes: re-plans at arrivals and early ends,
    # preemptions (seed 0 preempts two BJs at t = 5141); both models prove every stage optimal.
    inst = random_instance(seed, 3, 2, 8, name=f"methods-{seed}")
    cp, mi = _policy_run(inst, "replan:ms=none"), _policy_run(inst, "replan:ms=none,method=milp")
    assert {s.status for s in cp.stats} == {s.status for s in mi.stats} == {"optimal"}
    assert len(cp.stats) == len(mi.stats) >= 5
    machine = inst.machine()
    assert _up_to_equal_partitions(cp.log, machine) == _up_to_equal_partitions(mi.log, machine)
    a, b = run_online(inst, "replan:ms=none"), run_online(inst, "replan:ms=none,method=milp")
    assert (a.bj_sd_mean, a.rtj_sd_mean) == pytest.approx((b.bj_sd_mean, b.rtj_sd_mean), abs=1e-12)


def test_the_milp_method_reaches_the_clairvoyant_optimum():
    inst = clairvoyant(1)
    opt, _ = optimum_run(inst, rtj_tiebreak=True)
    run = run_online(inst, "replan:ms=none,method=milp")
    assert run.bj_sd_mean == pytest.approx(opt.bj_sd_mean, abs=1e-9)
    assert run.rtj_sd_mean == pytest.approx(opt.rtj_sd_mean, abs=1e-9)


def test_the_milp_method_takes_only_limits_it_can_reproduce_or_wall_time():
    with pytest.raises(OptionError, match="method=milp has no deterministic clock"):
        make_policy("replan:method=milp")  # the default: 200 ms of deterministic time
    pol = make_policy("replan:method=milp,clock=wall")
    assert (pol.method, pol.clock, pol.time_limit_ms) == ("milp", "wall", 200)
    assert make_policy(pol.name).options() == pol.options()
    assert make_policy("replan:method=milp,ms=none").time_limit_ms is None


def test_following_the_plan_skips_solves_where_nothing_unplanned_happened():
    # Everything at time 0 with walltime = runtime: every later pass (each job ending at its
    # walltime) is one the first plan assumed, so exactly one solve is made.
    inst = clairvoyant(2)
    pol = _policy_run(inst, "replan:ms=none")
    assert len(pol.stats) == 1 and pol.skipped >= 1
    # Walltimes above runtimes: a job ending early makes the next pass solve again.
    early = random_instance(0, 3, 2, 8, submit_window=0, walltime_factor=(1.5, 1.5), runtime_min=600,
                            runtime_max=3600, runtime_step=600, name="early")
    assert len(_policy_run(early, "replan:ms=none").stats) > 1


def test_names_and_options():
    pol = make_policy("replan")
    assert isinstance(pol, ReplanPolicy) and pol.name == "replan"
    pol = make_policy("replan:ms=50,k=3,theta=1.5,clock=wall")
    assert (pol.time_limit_ms, pol.window, str(pol.theta), pol.clock) == (50, 3, "3/2", "wall")
    assert parse_replan_name(pol.name) == {"time_limit_ms": 50, "clock": "wall", "window": 3, "theta": "3/2"}
    assert make_policy(pol.name).options() == pol.options()
    assert replan_name(ReplanPolicy().options()) == "replan"
    assert make_policy("replan", window=5).window == 5  # keyword options (the API)
    for bad in ("replan:ms=0", "replan:k=-1", "replan:theta=0.5", "replan:method=cbc", "replan:foo=1",
                "replan:ms=abc", "replan:clock=cpu"):
        with pytest.raises(OptionError):
            make_policy(bad)
    for bad, named in (("replan:ms=abc", "option ms "), ("replan:k=two", "option k "),
                       ("replan:time_limit_ms=abc", "option time_limit_ms ")):
        with pytest.raises(OptionError, match=named):  # the option as the user wrote it
            make_policy(bad)


def test_the_api_runs_replan_with_validation():
    import rtsched
    from milp.instance import table3_instance

    inst = table3_instance(1)
    run = rtsched.simulate(inst.workload(), machine="mira:16", policy="replan", checkpoint="jit", time_limit_ms=100)
    assert run.record.summary["unfinished"] == 0 and run.summary["all"]["n"] == len(inst.jobs)
    assert run.record.policy_name == "replan:ms=100"


def test_a_flat_machine_is_refused():
    import rtsched
    from milp.instance import table3_instance

    with pytest.raises(OptionError, match="partitioned"):
        rtsched.simulate(table3_instance(1).workload(), machine="flat:8192", policy="replan")


def test_replan_runs_under_jit_unless_told_otherwise():
    import rtsched
    from milp.instance import table3_instance

    run = rtsched.simulate(table3_instance(2).workload(), machine="mira:16", policy="replan:ms=50")
    assert run.record.checkpoint.label == "JIT-CKPT"


def test_without_a_plan_in_its_budget_it_starts_what_fits(monkeypatch):
    import milp.replan as replan_module

    pol = ReplanPolicy(time_limit_ms=50)
    inst = random_instance(3, 3, 1, 4, name="fallback")
    monkeypatch.setattr(replan_module, "solve_problem", lambda *a, **k: (None, "no_solution"))  # every budget runs out
    sim = Simulator(inst.workload(), inst.machine(), checkpoint=CheckpointModel.parse("jit"), io=inst.io)
    result = sim.run(pol)
    assert pol.log  # it decided
    assert all(o.end >= 0 for o in result.outcomes)  # every job ran to the end
    assert all(isinstance(d, Start) for _, ds in pol.log for d in ds)


def _view_with_queue(jobs, busy, now=0):
    """A scheduling view (the fields ``problem`` reads) on the 4-block machine: partitions 0..3 the
    512-node blocks, 4 = blocks 0-1, 5 = blocks 2-3 (1024), 6 = all four (2048); ``busy``
    partitions held."""
    from types import SimpleNamespace

    from rtsched.checkpoint import DEFAULT_IO
    from rtsched.sim.state import JobInfo, JobState

    machine = Instance(4, jobs, name="window").machine()
    state = machine.new_state()
    for q in busy:
        state.allocate(q, machine.partitions[q].nodes)
    queue = [JobState(i, JobInfo.of(j)) for i, j in enumerate(jobs)]
    return SimpleNamespace(now=now, machine=machine, state=state, queue=queue, running={}, io=DEFAULT_IO,
                           checkpoint=CheckpointModel.parse("jit"))


def test_the_bounded_window_takes_every_waiting_job_that_fits_the_free_partitions():
    # Worked by hand. Block 0 busy: free are 1, 2, 3 (512) and 5 (1024 on blocks 2-3). K = 1.
    # Queue order: a BJ 2048 (the first K: in, though it fits nothing now), b BJ 1024 (fits 5: in;
    # 1 alone stays free), c RTJ 512 (every RTJ: in), d BJ 1024 (no 1024 free after b: out),
    # e BJ 512 (fits 1: in; nothing free now), f BJ 512 (out).
    from milp.replan import bounded_window

    nodes = {1: (BATCH, 2048), 2: (BATCH, 1024), 3: (RT, 512), 4: (BATCH, 1024), 5: (BATCH, 512), 6: (BATCH, 512)}
    jobs = [Job(i, 0, 600, 600, n, kind=k) for i, (k, n) in nodes.items()]
    view = _view_with_queue(jobs, busy=[0])
    window, fitting = bounded_window(view, 1, {})
    assert [js.info.id for js in window] == [1, 2, 3, 5]
    assert fitting == {2, 5}
    # the plan offers a job taken for fitting only the partitions free now; the first K keep all
    pol = ReplanPolicy(window=1)
    cands = {j.id: j.candidates for j in pol.problem(view).jobs}
    assert cands == {1: [6], 2: [5], 3: [0, 1, 2, 3], 5: [1, 2, 3]}
    # with nothing free, the window is the RTJs and the first K
    full = _view_with_queue(jobs, busy=[6])
    window, fitting = bounded_window(full, 1, {})
    assert [js.info.id for js in window] == [1, 3] and fitting == set()
    # a preempted job fits only on its own partition: e's block 0 is busy (out), f's block 1 is
    # free (in); b took partition 5 as before
    window, fitting = bounded_window(view, 1, {5: 0, 6: 1})
    assert [js.info.id for js in window] == [1, 2, 3, 6] and fitting == {2, 6}


def test_list_plan_places_each_job_at_its_earliest_start_in_the_last_plans_order():
    # Worked by hand on the 4-block machine (0..3 blocks, 4 = 0-1, 5 = 2-3, 6 = all); block 0 held
    # until t = 100.  Problem order A (1024, 50 s), B (2048, 30 s), C (512, 20 s).
    from milp.replan import Blocker, PlanJob, PlannedJob, Problem, list_plan, unit_classes

    machine = Instance(4, [Job(1, 0, 60, 60, 512)], name="list").machine()
    jobs = [PlanJob(1, BATCH, 0, 50, 0, 50, [4, 5]), PlanJob(2, BATCH, 0, 30, 0, 30, [6]),
            PlanJob(3, BATCH, 0, 20, 0, 20, [0, 1, 2, 3])]
    problem = Problem(0, jobs, [Blocker(0, 100)], 0, 0)
    cls = unit_classes(machine)
    got = {i: (p.partition, p.start, p.end) for i, p in list_plan(problem, cls, None).items()}
    # no last plan: problem order. A: 4 waits for block 0 (100), 5 is free -> (5, 0, 50); B needs
    # every block: after the blocker (100); C: block 0 busy, block 1 free at 0 -> (1, 0, 20)
    assert got == {1: (5, 0, 50), 2: (6, 100, 130), 3: (1, 0, 20)}
    # the last plan started C first, on block 3: C keeps block 3 (free at 0 like 1 and 2), A then
    # waits for it on 5 (20) rather than for block 0 on 4 (100), B still at 100
    got = {i: (p.partition, p.start, p.end) for i, p in list_plan(problem, cls, {3: PlannedJob(3, 0, end=20)}).items()}
    assert got == {1: (5, 20, 70), 2: (6, 100, 130), 3: (3, 0, 20)}
