"""The Kill decision (RLSchert, seed 001 §1.8): golden values by hand, work conservation, the
validator's lost-work accounting."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_validated
from rtsched.errors import DecisionError, ScheduleError
from rtsched.jobs import Job, Workload
from rtsched.machines import FlatCluster
from rtsched.metrics import job_columns, utilization
from rtsched.sim.core import Simulator
from rtsched.sim.decisions import Kill, Start
from rtsched.sim.script import ScriptPolicy, at
from rtsched.sim.state import RUNNING, WAITING
from rtsched.validate import validate_schedule


def _toy():
    # A: 4 nodes, 100 s (estimate 100 s); B: 2 nodes, 20 s, arrives at 10 s.  4-node cluster.
    return Workload([Job(1, 0, 100, 100, 4), Job(2, 10, 20, 20, 2)], name="toy")


def test_kill_golden_by_hand():
    wl, m = _toy(), FlatCluster(4)
    plan = dict([at(0, Start(1)), at(10, Kill(1, estimate=150), Start(2)), at(30, Start(1))])
    r = run_validated(wl, m, ScriptPolicy(plan))
    o = r.outcome_by_id()
    # A ran [0, 10) (lost), waited [10, 30), ran [30, 130): turnaround 130, wait 30, SD 1.3.
    assert (o[1].first_start, o[1].end, o[1].t_lost, o[1].n_kills, o[1].n_preemptions) == (0, 130, 10, 1, 0)
    assert (o[2].first_start, o[2].end, o[2].t_lost, o[2].n_kills) == (10, 30, 0, 0)
    cols = job_columns(r)
    row = {k: v[0] for k, v in cols.items()}  # job 1 (submit order)
    assert (row["turnaround"], row["wait"], row["sd"]) == (130, 30, pytest.approx(1.3))
    assert (row["t_lost"], row["lost_node_seconds"], row["n_kills"]) == (10, 40, 1)
    assert cols["wait"].tolist() == [30, 0] and cols["sd"].tolist() == [pytest.approx(1.3), 1.0]
    u = utilization(r)
    assert u["lost_node_seconds"] == 40 and u["busy_node_seconds"] == 10 * 4 + 20 * 2 + 100 * 4
    assert u["useful_node_seconds"] == 100 * 4 + 20 * 2


def test_kill_sets_the_new_estimate_and_requeues_now():
    wl, m = _toy(), FlatCluster(4)
    sim = Simulator(wl, m)
    assert sim.advance()
    sim.apply([Start(1)])
    assert sim.advance() and sim.now == 10
    sim.apply([Kill(1, estimate=150)])
    js = sim.view.job(1)
    assert js.status == WAITING and js.info.walltime == 150 and js.queued_since == 10 and js.n_kills == 1
    assert js.key is None and sim.view.state.free_nodes == 4 and js in sim.view.entered
    sim.apply([Start(2)])
    assert sim.advance() and sim.now == 30
    sim.apply([Start(1)])
    assert js.status == RUNNING and js.expected_end == 30 + 150  # plans with the new estimate
    assert wl.jobs[0].walltime == 100  # the workload's request is unchanged


def test_kill_without_estimate_keeps_it_and_works_for_non_checkpointable_jobs():
    wl = Workload([Job(1, 0, 50, 60, 2, checkpointable=False), Job(2, 5, 10, 10, 2, kind="rt")])
    plan = dict([at(0, Start(1)), at(5, Kill(1), Start(2)), at(6, Start(1))])
    r = run_validated(wl, FlatCluster(4), ScriptPolicy(plan))
    o = r.outcome_by_id()
    assert (o[1].t_lost, o[1].end, o[1].n_kills) == (5, 56, 1)


@pytest.mark.parametrize("decision, msg", [(Kill(2), "not running"), (Kill(1, estimate=0), "integer >= 1"),
                                          (Kill(1, estimate=2.5), "integer >= 1")])
def test_bad_kills_are_decision_errors(decision, msg):
    sim = Simulator(_toy(), FlatCluster(4))
    sim.advance()
    sim.apply([Start(1)])
    sim.advance()
    with pytest.raises(DecisionError, match=msg):
        sim.apply([decision])


def test_validator_catches_misreported_lost_work():
    wl, m = _toy(), FlatCluster(4)
    plan = dict([at(0, Start(1)), at(10, Kill(1), Start(2)), at(30, Start(1))])
    r = Simulator(wl, m).run(ScriptPolicy(plan))
    validate_schedule(r.schedule, wl, m, outcomes=r.outcomes)
    r.outcomes[0].t_lost = 9
    with pytest.raises(ScheduleError, match="reports 9 s of lost work, the schedule implies 10 s"):
        validate_schedule(r.schedule, wl, m, outcomes=r.outcomes)
    r.outcomes[0].t_lost, r.outcomes[0].n_kills = 10, 0
    with pytest.raises(ScheduleError, match="0 preemptions and 0 kills, the schedule has 1 interruptions"):
        validate_schedule(r.schedule, wl, m, outcomes=r.outcomes)


class _RandomKiller:
    """Starts queued jobs first-fit; kills random running jobs (each at most twice) with random estimates."""

    name = "random-killer"

    def __init__(self, seed: int, p_kill: float) -> None:
        self.rng = random.Random(seed)
        self.p_kill = p_kill

    def decide(self, view):
        out = []
        for js in list(view.running.values()):
            if js.n_kills < 2 and self.rng.random() < self.p_kill:
                out.append(Kill(js.id, estimate=self.rng.randint(1, 500)))
        free = view.state.free_nodes + sum(view.job(d.job_id).alloc_nodes for d in out)
        for js in view.queue:
            if js.info.nodes <= free:
                out.append(Start(js.id))
                free -= js.info.nodes
        return out


jobs_st = st.lists(st.tuples(st.integers(0, 300), st.integers(1, 200), st.integers(1, 4)), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(jobs_st, st.integers(0, 10**6), st.floats(0.0, 0.6))
def test_kills_conserve_work(spec, seed, p_kill):
    wl = Workload([Job(i + 1, s, rt, rt, n) for i, (s, rt, n) in enumerate(spec)])
    m = FlatCluster(4)
    r = run_validated(wl, m, _RandomKiller(seed, p_kill))  # validated with the lost-work check
    run_ns = sum(seg.duration * seg.nodes for seg in r.schedule.segments)
    useful = sum(j.runtime * j.nodes for j in wl.jobs)
    lost = sum(o.t_lost * o.allocated_nodes for o in r.outcomes)
    assert run_ns == useful + lost
    assert utilization(r)["lost_node_seconds"] == lost
    assert int(job_columns(r)["lost_node_seconds"].sum()) == lost
    for o in r.outcomes:
        assert o.end - o.job.submit >= o.job.runtime + o.t_lost
