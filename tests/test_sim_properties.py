"""Property tests (hypothesis) of the event core's invariants over random workloads and policies."""
from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import heuristics.committed as committed
from heuristics import BACKFILLS, batch_policy
from heuristics.batch import schedule_batch
from heuristics.committed import CommittedHeadPolicy
from heuristics.priorities import PRIORITIES
from rtsched.checkpoint import CheckpointModel
from rtsched.jobs import Job, Workload
from rtsched.machines import AlignedMira, FlatCluster
from rtsched.sim.core import Simulator
from rtsched.sim.decisions import Preempt, WakeAt
from rtsched.sim.state import RUNNING
from rtsched.validate import validate_schedule

PRIORITY_NAMES = sorted(PRIORITIES)


@st.composite
def workloads(draw, max_nodes: int, partition_sizes: list[int] | None = None, max_jobs: int = 25):
    n = draw(st.integers(1, max_jobs))
    jobs = []
    t = 0
    for i in range(n):
        t += draw(st.integers(0, 400))
        runtime = draw(st.integers(1, 3000))
        walltime = runtime + draw(st.integers(0, 3000))
        if partition_sizes:
            nodes = draw(st.sampled_from(partition_sizes)) - draw(st.integers(0, 100))
        else:
            nodes = draw(st.integers(1, max_nodes))
        kind = draw(st.sampled_from(["batch", "batch", "rt"]))
        jobs.append(Job(i + 1, t, runtime, walltime, max(nodes, 1), kind=kind))
    return Workload(jobs)


def run_and_check(wl, machine, policy, **options):
    sim = Simulator(wl, machine, **options)
    result = sim.run(policy)
    validate_schedule(result.schedule, wl, machine, sim.io)
    for o in result.outcomes:
        assert o.first_start >= o.job.submit
        run_work = sum(s.progress_to - s.progress_from for s in result.schedule if s.job_id == o.job.id
                       and s.kind == "run")
        assert run_work == o.job.runtime + o.t_lost  # useful work = runtime; the rest was lost
    return result


def fingerprint(result):
    return [(s.job_id, s.start, s.end, s.kind, s.partition, s.progress_to) for s in result.schedule]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(64), priority=st.sampled_from(PRIORITY_NAMES), backfill=st.sampled_from(BACKFILLS))
def test_flat_cluster_every_policy_valid_and_deterministic(wl, priority, backfill):
    machine = FlatCluster(64)
    a = run_and_check(wl, machine, batch_policy(priority, backfill))
    b = run_and_check(wl, machine, batch_policy(priority, backfill))
    assert fingerprint(a) == fingerprint(b)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(4096, [512, 1024, 2048, 4096]), priority=st.sampled_from(PRIORITY_NAMES),
       backfill=st.sampled_from(BACKFILLS))
def test_mira_every_policy_valid_and_deterministic(wl, priority, backfill):
    machine = AlignedMira(8)
    a = run_and_check(wl, machine, batch_policy(priority, backfill))
    b = run_and_check(wl, machine, batch_policy(priority, backfill))
    assert fingerprint(a) == fingerprint(b)


class ChaosPolicy:
    """FCFS+EASY that also preempts a random running batch job now and then (seeded)."""

    name = "chaos"

    def __init__(self, seed: int, rate: float, model: CheckpointModel) -> None:
        self.rng = random.Random(seed)
        self.rate = rate
        self.model = model
        self.inner = batch_policy("fcfs", "easy")

    def decide(self, view):
        victims = [js for js in view.running.values() if js.status == RUNNING and js.info.kind == "batch"]
        if victims and self.rng.random() < self.rate:
            victim = self.rng.choice(sorted(victims, key=lambda js: js.info.id))
            # Wake up a bit later to restart it (the queue seen now is stale after the preemption).
            return [Preempt(victim.info.id, self.model), WakeAt(view.now + 1)]
        return self.inner.decide(view)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(4096, [512, 1024, 2048, 4096], max_jobs=15), seed=st.integers(0, 10**6),
       model=st.sampled_from(["no", "sys:900", "app-10", "app-5", "jit"]))
def test_random_preemptions_keep_every_invariant(wl, seed, model):
    machine = AlignedMira(8)
    ckpt = CheckpointModel.parse(model)
    a = run_and_check(wl, machine, ChaosPolicy(seed, 0.3, ckpt), checkpoint=ckpt)
    b = run_and_check(wl, machine, ChaosPolicy(seed, 0.3, ckpt), checkpoint=ckpt)
    assert fingerprint(a) == fingerprint(b)
    for o in a.outcomes:
        if ckpt.kind.value == "jit":
            assert o.t_lost == 0  # JIT never loses work
        if o.job.kind == "rt":
            assert o.n_preemptions == 0


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(64, max_jobs=40), priority=st.sampled_from(PRIORITY_NAMES))
def test_committed_strict_scan_skip_changes_nothing(wl, priority):
    """The committed-head driver skips a strict-rule scan that provably starts nothing (fewer
    processors free than the kernel's ``low``): with ``low`` forced to 0 (no skip ever) the
    schedules are the same."""
    machine = FlatCluster(64)
    a = run_and_check(wl, machine, CommittedHeadPolicy(priority, backfill="rlscheduler"),
                      event_order="rlscheduler")
    real = committed.scan_flat
    committed.scan_flat = lambda *args: real(*args)[:2] + (0,)
    try:
        b = run_and_check(wl, machine, CommittedHeadPolicy(priority, backfill="rlscheduler"),
                          event_order="rlscheduler")
    finally:
        committed.scan_flat = real
    assert fingerprint(a) == fingerprint(b)


class _Reference:
    """A batch policy the long way: the queue sorted afresh at each pass, ``schedule_batch``'s general
    pass on a copy of the machine state (no ``flat_pass``), decisions applied one by one (no
    ``flat_starts``)."""

    def __init__(self, priority: str, backfill: str) -> None:
        self.policy = batch_policy(priority, backfill)
        self.name = self.policy.name

    def decide(self, view):
        p = self.policy
        order = p.priority.order(view.queue, view.now, view.machine.total_nodes)
        return schedule_batch(view, order, p.backfill, state=view.state.copy())


def _outcome_rows(result):
    return [(o.job.id, o.first_start, o.end, o.allocated_nodes, o.t_ckpt, o.t_lost) for o in result.outcomes]


@st.composite
def overdue_workloads(draw):
    """Flat workloads where some runtimes exceed their walltime (the overdue-estimate rule)."""
    wl = draw(workloads(64, max_jobs=40))
    jobs = [Job(j.id, j.submit, j.runtime, draw(st.integers(1, max(1, j.runtime // 4))), j.nodes)
            if draw(st.booleans()) else j for j in wl.jobs]
    return Workload(jobs)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=st.one_of(workloads(64, max_jobs=40), overdue_workloads()), priority=st.sampled_from(PRIORITY_NAMES),
       backfill=st.sampled_from(BACKFILLS), periodic=st.booleans())
def test_flat_starts_path_equals_the_decide_path(wl, priority, backfill, periodic):
    """``Simulator.run`` with a batch policy's ``flat_starts`` (no decision objects; FCFS on the
    queue as it is; ``flat_pass``) gives the schedule and outcomes of the same policy the long way."""
    machine = FlatCluster(64)
    ckpt = CheckpointModel.parse("sys:1000") if periodic else None
    policy = batch_policy(priority, backfill)
    fast = run_and_check(wl, machine, policy, checkpoint=ckpt)
    general = run_and_check(wl, machine, _Reference(priority, backfill), checkpoint=ckpt)
    assert (policy.flat_starts is not None) == (backfill in ("none", "easy", "ff", "rlscheduler"))
    assert list(fast.schedule.segments) == list(general.schedule.segments)
    assert _outcome_rows(fast) == _outcome_rows(general)


def test_flat_starts_after_a_requeue_orders_like_decide():
    """Once a job re-entered the queue (``SimView.requeued``), FCFS's ``flat_starts`` sorts again:
    the preempted job (submitted first) goes before the later arrivals, as ``decide`` has it."""
    jobs = [Job(1, 0, 100, 100, 4), Job(2, 10, 50, 50, 4), Job(3, 20, 50, 50, 4)]
    sim = Simulator(Workload(jobs), FlatCluster(4))
    policy = batch_policy("fcfs", "easy")
    assert sim.advance()  # t = 0: job 1 arrives
    sim.start_flat(policy.flat_starts(sim.view))
    assert sim.advance() and sim.now == 10
    assert policy.flat_starts(sim.view) == []  # job 2 waits behind job 1
    sim.apply([Preempt(1)])
    assert sim.view.requeued and [js.id for js in sim.view.queue] == [2, 1]
    starts = policy.flat_starts(sim.view)
    assert [js.id for js in starts] == [1] == [d.job_id for d in batch_policy("fcfs", "easy").decide(sim.view)]


def test_flat_starts_overdue_estimate_ends_next_second():
    """Job 1 (3 of 4 processors) outlives its 10 s estimate; at t = 20 head job 2 (4 processors)
    waits.  EASY takes job 1 to end at t = 21 (an overdue estimate ends any moment), so job 3
    (1 processor, 1 s) ends by the shadow time and starts at 20, on both paths."""
    jobs = [Job(1, 0, 100, 10, 3), Job(2, 20, 50, 50, 4), Job(3, 20, 1, 1, 1)]
    for policy in (batch_policy("fcfs", "easy"), _Reference("fcfs", "easy")):
        result = run_and_check(Workload(jobs), FlatCluster(4), policy)
        assert [(o.job.id, o.first_start) for o in result.outcomes] == [(1, 0), (2, 100), (3, 20)]
