"""The simulator replays a plan exactly, and rejects plans that break the model."""
from __future__ import annotations

import pytest

from rtsched.errors import DecisionError, ScheduleError
from rtsched.jobs import Job, Workload
from rtsched.machines import AlignedMira
from rtsched.schedule import Schedule, Segment
from rtsched.replay import replay_and_compare


def test_replay_of_a_hand_made_plan_with_one_preemption():
    # 4-block toy.  BJ 1 (2048 nodes, p6, runtime 1000, o = 512 s) is split at w = 400:
    #   run [0,400) 0->400, ckpt [400,912), RT job 2 on p0 [912,1012), restart [1012,1524), run [1524,2124) 400->1000.
    m = AlignedMira(4)
    wl = Workload([Job(1, 0, 1000, 2000, 2048), Job(2, 100, 100, 100, 512, kind="rt")])
    plan = Schedule([
        Segment(1, 0, 400, "run", 6, 2048, 0, 400),
        Segment(1, 400, 912, "ckpt", 6, 2048, 400, 400),
        Segment(2, 912, 1012, "run", 0, 512, 0, 100),
        Segment(1, 1012, 1524, "restart", 6, 2048, 400, 400),
        Segment(1, 1524, 2124, "run", 6, 2048, 400, 1000),
    ])
    result = replay_and_compare(plan, wl, m)
    out = result.outcome_by_id()
    assert out[1].end == 2124 and out[1].n_preemptions == 1 and out[1].t_lost == 0
    assert out[2].first_start == 912


def test_replay_rejects_overlap_on_conflicting_partitions():
    m = AlignedMira(4)
    wl = Workload([Job(1, 0, 100, 100, 2048), Job(2, 0, 100, 100, 512)])
    plan = Schedule([Segment(1, 0, 100, "run", 6, 2048, 0, 100), Segment(2, 50, 150, "run", 0, 512, 0, 100)])
    with pytest.raises((DecisionError, ScheduleError)):
        replay_and_compare(plan, wl, m)
