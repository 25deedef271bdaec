"""The core's live set (issue 25): a run from a reader's columns builds no ``Job`` object; with
``forget_done`` a job's state exists only while it waits or runs; ``SimView.busy`` stays the
sorted (expected end, allocation, nodes) of the running jobs.  Each is checked against the run
it replaces: the same schedule and outcomes, job for job."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heuristics import BACKFILLS, batch_policy
from heuristics.backfill import busy_of
from heuristics.batch import BatchPolicy
from rtsched.checkpoint import CheckpointModel
from rtsched.errors import DecisionError, InfeasibleError, InputError
from rtsched.io import read_swf
from rtsched.jobs import Job, JobColumns, Workload
from rtsched.machines import AlignedMira, FlatCluster
from rtsched.pipeline import RunSpec, clear_caches, execute
from rtsched.sim import core
from rtsched.sim.core import Simulator
from rtsched.sim.decisions import Preempt, Start, WakeAt
from rtsched.sim.state import RUNNING
from rtsched.validate import validate_schedule
from test_sim_properties import ChaosPolicy, overdue_workloads, workloads


def rows(result) -> tuple[list, list]:
    outs = result.outcomes
    return (list(result.schedule.segments),
            [(o.job.id, o.first_start, o.end, o.allocated_nodes, o.t_ckpt, o.t_lost) for o in outs])


# ------------------------------------------------------------------------------ forget_done
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=st.one_of(workloads(64, max_jobs=40), overdue_workloads()),
       priority=st.sampled_from(["fcfs", "wfp3", "unicep"]), backfill=st.sampled_from(BACKFILLS),
       order=st.sampled_from(["design", "rlscheduler"]), periodic=st.booleans())
def test_forgetting_finished_jobs_changes_no_run(wl, priority, backfill, order, periodic):
    """A policy that declares ``live_jobs_only`` runs the same with and without ``forget_done``,
    and at the end of the forgetting run no job state is left."""
    machine = FlatCluster(64)
    ckpt = CheckpointModel.parse("sys:1000") if periodic else None
    kept = Simulator(wl, machine, checkpoint=ckpt, event_order=order).run(batch_policy(priority, backfill))
    policy = batch_policy(priority, backfill)
    assert policy.live_jobs_only
    sim = Simulator(wl, machine, checkpoint=ckpt, event_order=order, forget_done=True)
    lean = sim.run(policy)
    assert rows(lean) == rows(kept)
    assert all(s is core._GONE for s in sim.states) and not sim.running and not sim.busy
    validate_schedule(lean.schedule, wl, machine, sim.io, outcomes=lean.outcomes)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(4096, [512, 1024, 2048, 4096]), backfill=st.sampled_from(BACKFILLS))
def test_forgetting_on_partitions_changes_no_run(wl, backfill):
    """FCFS on Mira's partitions (``decide``, not the flat pass) with ``forget_done``."""
    machine = AlignedMira(8)
    kept = Simulator(wl, machine).run(batch_policy("fcfs", backfill))
    lean = Simulator(wl, machine, forget_done=True).run(batch_policy("fcfs", backfill))
    assert rows(lean) == rows(kept)


def test_states_are_built_on_arrival_and_let_go_at_the_end(monkeypatch):
    """States come a chunk at a time as jobs arrive; a finished job cannot be looked up, nor the
    entry log read; a running one can."""
    monkeypatch.setattr(core, "_STATE_CHUNK", 2)
    jobs = [Job(i, 10 * i, 100, 100, 1) for i in range(1, 8)]  # 7 one-node jobs, 10 s apart
    sim = Simulator(Workload(jobs), FlatCluster(4), forget_done=True)
    assert sim.states == [None] * 7
    policy = batch_policy("fcfs", "none")
    assert sim.advance() and sim.now == 10
    assert [s is not None for s in sim.states] == [True, True] + [False] * 5  # a chunk of 2
    sim.start_flat(policy.flat_starts(sim.view))
    assert sim.view.job(1).status == RUNNING and sim.state_of(3) is None  # not arrived yet
    while sim.now < 110:
        assert sim.advance()
        sim.start_flat(policy.flat_starts(sim.view))
    assert sim.now == 110 and [js.id for js in sim.view.completed] == [1]  # seen by this pass ...
    with pytest.raises(KeyError):
        sim.view.job(1)  # ... but no longer looked up
    assert sim.states[0] is core._GONE and sim.view.job(2).status == RUNNING
    with pytest.raises(RuntimeError, match="entry log"):
        sim.view.entry_log
    with pytest.raises(RuntimeError, match="forget_done"):
        sim.by_id
    with pytest.raises(DecisionError, match="job 1 is not waiting"):
        sim.apply([Start(1, None)])


def test_which_batch_policies_look_at_live_jobs_only():
    assert batch_policy("fcfs", "easy").live_jobs_only and batch_policy("wfp3", "ff").live_jobs_only
    assert not batch_policy("sjf", "easy").live_jobs_only  # its kept order reads the entry log

    class Own(BatchPolicy):
        def decide(self, view):
            return super().decide(view)

    assert not Own(batch_policy("fcfs").priority).live_jobs_only


# ------------------------------------------------------------------------------ SimView.busy
class _BusyChecked:
    """A policy that checks ``view.busy`` against ``busy_of`` at every pass, then defers."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.passes = 0

    def decide(self, view):
        assert view.busy == sorted(busy_of(view.running.values(), view.now, overdue_next_second=False))
        self.passes += 1
        return self.inner.decide(view)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(4096, [512, 1024, 2048, 4096], max_jobs=15), seed=st.integers(0, 10**6),
       model=st.sampled_from(["no", "sys:900", "app-10", "jit"]))
def test_busy_follows_preemptions_restarts_and_jit_hand_overs(wl, seed, model):
    ckpt = CheckpointModel.parse(model)
    policy = _BusyChecked(ChaosPolicy(seed, 0.3, ckpt))
    Simulator(wl, AlignedMira(8), checkpoint=ckpt).run(policy)
    assert policy.passes > 0


def test_busy_holds_a_job_bound_for_a_jit_hand_over():
    """An RT job bound to a partition whose holder still writes its JIT checkpoint is in
    ``running`` (PENDING) with its old estimate, and in ``busy`` the same."""
    machine = AlignedMira(8)
    jobs = [Job(1, 0, 1000, 1000, 4096), Job(2, 10, 100, 100, 4096, kind="rt")]
    sim = Simulator(Workload(jobs), machine, checkpoint=CheckpointModel.parse("jit"))
    assert sim.advance()
    sim.apply([Start(1, sim.machine_state.find(4096))])
    assert sim.advance() and sim.now == 10
    alloc = sim.view.job(1).alloc
    sim.apply([Preempt(1), Start(2, alloc)])
    assert {js.id for js in sim.running.values()} == {1, 2}
    assert sim.busy == sorted(busy_of(sim.running.values(), sim.now, overdue_next_second=False))
    sim.apply([WakeAt(sim.now + 1)])
    while sim.advance():
        assert sim.busy == sorted(busy_of(sim.running.values(), sim.now, overdue_next_second=False))
        if sim.queue:
            sim.apply([Start(js.id, None) for js in list(sim.queue) if sim.machine_state.find(js.nodes)
                       is not None][:1])


# ------------------------------------------------------------------------------ from columns
def _random_swf(path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    lines, t = ["; MaxProcs: 64"], 0
    for j in range(1, n + 1):
        t += rng.randint(0, 300)
        run = rng.randint(1, 4000)
        procs = rng.choice([1, 2, 4, 8, 16, 32, 64, rng.randint(1, 64)])
        lines.append(f"{j} {t} -1 {run} {procs} -1 -1 {procs} {run + rng.randint(0, 4000)} -1 1 "
                     f"{rng.randint(1, 9)} {rng.randint(1, 3)} -1 {rng.randint(0, 2)} -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")


def _no_jobs(*args, **kwargs):
    raise AssertionError("a Job object was built")


@pytest.mark.parametrize("policy, backfill", [("fcfs", "easy"), ("fcfs", "none"), ("sjf", "easy"),
                                              ("wfp3", "ff")])
def test_a_reader_workload_runs_validates_and_measures_without_job_objects(tmp_path, monkeypatch, policy,
                                                                           backfill):
    """``rtsched simulate``'s pipeline on an SWF trace: no ``Job`` object is built (reading, the
    run, the validator, the summary), and every number equals the run of the same jobs as objects."""
    path = tmp_path / "t.swf"
    _random_swf(path, 600, seed=7 * len(policy) + len(backfill))
    spec = RunSpec(trace=str(path), machine="flat:64", policy=policy, policy_options={"backfill": backfill})
    clear_caches()
    with monkeypatch.context() as m:
        m.setattr(JobColumns, "_build", _no_jobs)
        m.setattr(JobColumns, "row", _no_jobs)
        lean = execute(spec)
        summary = lean.summary
    assert lean.workload.table is not None  # still columns
    objects = execute(spec, workload=Workload(read_swf(str(path)).jobs))
    assert {k: v for k, v in summary.items() if k != "cleaning"} == \
        {k: v for k, v in objects.summary.items() if k != "cleaning"}
    assert list(lean.schedule.segments) == list(objects.schedule.segments)
    for name in ("first_start", "end", "allocated_nodes"):
        assert np.array_equal(lean.outcomes.column(name), objects.outcomes.column(name))
    assert [o.job for o in lean.outcomes] == objects.workload.jobs  # built on demand, equal
    clear_caches()


def test_workload_columns_and_rows_without_building_the_jobs(tmp_path):
    path = tmp_path / "t.swf"
    _random_swf(path, 50, seed=3)
    lazy, built = read_swf(str(path)), read_swf(str(path))
    jobs = built.jobs
    for name in ("id", "submit", "runtime", "walltime", "nodes", "user", "group", "is_rt", "checkpointable"):
        col = lazy.column(name)
        assert not col.flags.writeable and col.tolist() == built.column(name).tolist()
    assert [lazy[i] for i in range(len(lazy))] == jobs and lazy.table is not None
    with pytest.raises(KeyError):
        built.column("queue")


def test_a_too_large_job_of_a_reader_workload_is_named(tmp_path):
    path = tmp_path / "t.swf"
    _random_swf(path, 200, seed=5)
    big = min(j.id for j in read_swf(str(path)).jobs if j.nodes > 16)
    clear_caches()
    with pytest.raises(InfeasibleError, match=f"job {big} requests"):
        Simulator(read_swf(str(path)), FlatCluster(16))
    with pytest.raises(InputError, match=f"job {big} requests"):
        execute(RunSpec(trace=str(path), machine="flat:16", policy="fcfs"))
    clear_caches()
