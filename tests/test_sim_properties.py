"""Property tests (hypothesis) of the event core's invariants over random workloads and policies."""
from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import heuristics.committed as committed
from heuristics import BACKFILLS, batch_policy
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
