"""``JobState``'s copies of ``info`` fields for the hot paths (issue 25): ``walltime`` follows
``info.walltime`` through a Kill with a new estimate, and the scans plan with it."""
from __future__ import annotations

from rtsched.jobs import Job, Workload
from rtsched.machines import FlatCluster
from rtsched.sim.core import Simulator
from rtsched.sim.decisions import Kill, Start
from rtsched.sim.state import JobInfo, JobState


def test_state_copies_id_nodes_walltime_of_its_info():
    js = JobState(5, JobInfo(7, 30, 80, 3, "rt", 2, 4, "q", False))
    assert (js.idx, js.id, js.nodes, js.walltime, js.queued_since) == (5, 7, 3, 80, 30)
    assert repr(js) == "JobState(id=7, status=future, alloc=-2)"


def test_kill_with_estimate_changes_info_and_walltime_together():
    wl = Workload([Job(1, 0, 100, 100, 4), Job(2, 10, 20, 20, 2)], name="toy")
    sim = Simulator(wl, FlatCluster(4))
    assert sim.advance()
    sim.apply([Start(1)])
    assert sim.advance()
    sim.apply([Kill(1, estimate=150)])
    js = sim.view.job(1)
    assert js.walltime == js.info.walltime == 150 and wl.jobs[0].walltime == 100
    sim.apply([Start(2)])
    assert sim.advance() and sim.now == 30
    sim.apply([Start(1)])
    assert js.expected_end == 30 + 150  # the stint is planned with the new estimate
