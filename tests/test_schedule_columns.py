"""The schedule's column store (``SegmentList``) and the one-pass validator and metrics on it
(issue 25): the same segments and answers as a plain list of segments gives."""
from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtsched.errors import ScheduleError
from rtsched.jobs import Job, Workload
from rtsched.machines import AlignedMira, FlatCluster
from rtsched.metrics import segment_lost_seconds
from rtsched.schedule import CKPT, RESTART, RUN, Schedule, Segment, SegmentList
from rtsched.validate import validate_schedule

SEGS = [Segment(7, 0, 10, RUN, -1, 4, 0, 10), Segment(3, 5, 9, CKPT, 2, 512, 4, 4),
        Segment(3, 20, 25, RESTART, 0, 512, 4, 4), Segment(9, 2**40, 2**40 + 1, RUN, -1, 1, 0, 1)]


def test_segment_list_gives_back_the_segments_it_was_given():
    segs = SegmentList(SEGS)
    assert len(segs) == 4
    assert list(segs) == SEGS
    assert segs == SEGS and segs[1] == SEGS[1] and segs[-1] == SEGS[-1] and segs[1:3] == SEGS[1:3]
    assert segs[2].kind == RESTART and segs[2].duration == 5
    assert segs.column("start").tolist() == [0, 5, 20, 2**40]
    assert segs.column("kind").tolist() == [0, 1, 2, 0]  # codes: index in KINDS
    with pytest.raises(IndexError):
        segs[4]
    segs.sort(key=lambda s: (s.job_id, s.start))
    assert list(segs) == sorted(SEGS, key=lambda s: (s.job_id, s.start))
    sched = Schedule(SEGS, machine_name="m")
    assert pickle.loads(pickle.dumps(sched)) == sched
    frame = sched.to_frame()
    assert Schedule.from_frame(frame, "m") == sched
    assert list(frame["kind"]) == [RUN, CKPT, RESTART, RUN]


def test_schedule_add_drops_empty_segments():
    sched = Schedule()
    sched.add(Segment(1, 5, 5, RUN, -1, 1, 0, 0))
    sched.add(Segment(1, 5, 6, RUN, -1, 1, 0, 1))
    assert list(sched) == [Segment(1, 5, 6, RUN, -1, 1, 0, 1)]


def _two_jobs() -> Workload:
    return Workload([Job(1, 0, 10, 10, 2), Job(2, 0, 10, 10, 2)])


def test_validator_reports_the_job_whose_first_segment_comes_first():
    # Both jobs are broken (each resumes a run without a restart read); the schedule lists job 2 first.
    segs = [Segment(2, 0, 4, RUN, -1, 2, 0, 4), Segment(1, 0, 4, RUN, -1, 2, 0, 4),
            Segment(1, 6, 12, RUN, -1, 2, 4, 10), Segment(2, 6, 12, RUN, -1, 2, 4, 10)]
    with pytest.raises(ScheduleError, match=r"^job 2: resumes a run at progress 4 s"):
        validate_schedule(Schedule(segs), _two_jobs(), FlatCluster(4))
    with pytest.raises(ScheduleError, match=r"^job 1: resumes"):
        validate_schedule(Schedule(segs[1:] + segs[:1]), _two_jobs(), FlatCluster(4))


def test_validator_missing_unknown_and_capacity_messages():
    wl = _two_jobs()
    one = [Segment(1, 0, 10, RUN, -1, 2, 0, 10)]
    with pytest.raises(ScheduleError, match=r"^1 jobs never ran, e\.g\. \[2\]$"):
        validate_schedule(Schedule(one), wl, FlatCluster(4))
    with pytest.raises(ScheduleError, match=r"^segments of unknown jobs \[5\]$"):
        validate_schedule(Schedule(one + [Segment(2, 0, 10, RUN, -1, 2, 0, 10), Segment(5, 0, 1, RUN, -1, 1, 0, 1)]),
                          wl, FlatCluster(4))
    both = one + [Segment(2, 3, 13, RUN, -1, 2, 0, 10)]
    validate_schedule(Schedule(both), wl, FlatCluster(4))  # 4 processors: fits
    with pytest.raises(ScheduleError, match=r"^t=3: 4 nodes in use on a 3-node cluster \(job 2 starting\)$"):
        validate_schedule(Schedule(both), wl, FlatCluster(3))
    # a job ending at t frees its nodes for one starting at t
    validate_schedule(Schedule(one + [Segment(2, 10, 20, RUN, -1, 2, 0, 10)]), wl, FlatCluster(2))


def test_validator_one_run_path_checks_every_rule():
    wl = Workload([Job(1, 5, 10, 10, 100)])
    m = AlignedMira(4)  # 512-node blocks: a 100-node job gets 512 nodes
    p = next(i for i, part in enumerate(m.partitions) if part.nodes == 512)
    validate_schedule(Schedule([Segment(1, 5, 15, RUN, p, 512, 0, 10)]), wl, m)
    bad = [Segment(1, 4, 14, RUN, p, 512, 0, 10),  # before its submit time
           Segment(1, 5, 15, RUN, p, 100, 0, 10),  # not its allocation size
           Segment(1, 5, 14, RUN, p, 512, 0, 9),  # ends short of its runtime
           Segment(1, 5, 15, RUN, len(m.partitions), 512, 0, 10)]  # no such partition
    for seg in bad:
        with pytest.raises(ScheduleError, match=r"^job 1: "):
            validate_schedule(Schedule([seg]), wl, m)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 50), st.integers(1, 20), st.integers(0, 30),
                          st.sampled_from([RUN, CKPT, RESTART])), max_size=25))
def test_lost_seconds_on_columns_match_a_walk_of_each_job(rows):
    segs = [Segment(j, s, s + d, k, -1, 1, p, p + (d if k == RUN else 0)) for j, s, d, p, k in rows]
    expected = [0] * len(segs)
    for jid in {s.job_id for s in segs}:  # the definition, job by job, latest segment first
        idx = sorted((i for i, s in enumerate(segs) if s.job_id == jid), key=lambda i: (segs[i].start, segs[i].end))
        r_min = float("inf")
        for i in reversed(idx):
            s = segs[i]
            if len(idx) > 1 and s.kind == RUN and r_min < s.progress_to:
                expected[i] = s.progress_to - max(s.progress_from, r_min)
            r_min = min(r_min, s.progress_from)
    assert segment_lost_seconds(Schedule(segs)).tolist() == expected
