"""The independent schedule validator.

It re-checks a schedule from scratch, knowing only the workload, the machine and the I/O model
(never the simulator's internals):

* every job appears, on one allocation size, never before its submit time, and its own segments
  never overlap;
* run segments advance progress by exactly their duration; the job's last segment is a run that
  ends at progress == runtime;
* a checkpoint write lasts the model's write time (a shorter one is a write cut short by a
  preemption and saves nothing); a restart read lasts the read time and restores a progress that a
  *completed* write of that job saved; after a preemption the job resumes either with such a
  restart or with a run from progress 0;
* RT jobs and non-checkpointable jobs run in one piece when ``forbid_rt_preemption`` is set
  (stints ended by a ``Kill`` excepted, when ``outcomes`` say how many there were);
* lost work: given the simulator's ``outcomes``, each job's ``t_lost`` (work computed and then
  lost, by preemptions and kills) must equal what the schedule implies — at every resume, the
  progress reached minus the progress resumed from — and ``n_preemptions + n_kills`` must be at
  least the number of resumes (an interruption at the instant a stint begins leaves no segment);
* capacity: on a partitioned machine no two segments on conflicting partitions overlap in time;
  on a flat cluster the nodes in use never exceed the capacity (a segment ending at t frees its
  nodes for one starting at t).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from rtsched.checkpoint import DEFAULT_IO, IOModel
from rtsched.errors import ScheduleError
from rtsched.jobs import Workload
from rtsched.machines.base import Machine
from rtsched.schedule import CKPT, KIND_CODE, RESTART, RUN, Schedule

_RUN_CODE = KIND_CODE[RUN]


def validate_schedule(schedule: Schedule, workload: Workload, machine: Machine, io: IOModel = DEFAULT_IO, *,
                      forbid_rt_preemption: bool = True, max_preemptions: int | None = None,
                      outcomes: Iterable | None = None) -> None:
    """Raise ScheduleError naming the job and time of the first broken rule; return None if valid.

    ``outcomes``: the run's ``JobOutcome``s (``SimResult.outcomes``), to check the lost-work and
    interruption accounting against the schedule (``None``: not checked).

    One pass over the schedule's columns, sorted by (job, start, end): the jobs that ran in one
    uninterrupted run segment (nearly all of a batch run) are checked together on the columns;
    the others job by job (``_check_job``), in the order of their first segment, so the error is
    the one a job-by-job check in that order meets first.
    """
    jobs = workload.jobs
    segs = schedule.segments
    seg_job = segs.column("job_id")
    ids = np.fromiter((j.id for j in jobs), dtype=np.int64, count=len(jobs))
    job_of = _job_positions(ids, seg_job, jobs)  # segment -> position of its job in ``jobs``
    acct = _accounting(outcomes, ids) if outcomes is not None else None
    # Each job's segments by (start, end), produced order on ties; groups in job order.
    order = np.lexsort((segs.column("end"), segs.column("start"), job_of))
    count = np.bincount(job_of, minlength=len(jobs))
    first = np.full(len(jobs), len(segs), dtype=np.int64)
    np.minimum.at(first, job_of, np.arange(len(segs)))
    ok = _one_run_ok(segs, job_of, count, jobs, machine, acct)
    group_start = np.concatenate(([0], np.cumsum(count)[:-1])) if len(jobs) else count
    for pos in sorted(np.flatnonzero(~ok).tolist(), key=first.__getitem__):
        job = jobs[pos]
        lo = int(group_start[pos])
        job_segs = [segs[int(i)] for i in order[lo:lo + int(count[pos])]]
        job_acct = None if acct is None else (int(acct[0][pos]), int(acct[1][pos]), int(acct[2][pos]))
        _check_job(job.id, job_segs, job, machine, io, forbid_rt_preemption, max_preemptions, job_acct)
    if machine.partitioned:
        _check_partitions(schedule, machine)
    else:
        _check_capacity(schedule, machine.total_nodes)


def _positions(ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position in ``ids`` of each value of ``wanted``, whether it is there at all); ``ids``
    distinct.  Where it is not, the position is meaningless."""
    if not len(ids):
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
    by_id = np.argsort(ids, kind="stable")
    sorted_ids = ids[by_id]
    at = np.minimum(np.searchsorted(sorted_ids, wanted), len(ids) - 1)
    return by_id[at], sorted_ids[at] == wanted


def _job_positions(ids: np.ndarray, seg_job: np.ndarray, jobs) -> np.ndarray:
    """The position in ``jobs`` of each segment's job; ScheduleError for a job without a segment
    (in workload order) or a segment of an unknown job (in order of appearance)."""
    job_of, known = _positions(ids, seg_job)
    seen = np.zeros(len(ids), dtype=bool)
    seen[job_of[known]] = True
    if not seen.all():
        missing = [jobs[i].id for i in np.flatnonzero(~seen).tolist()]
        raise ScheduleError(f"{len(missing)} jobs never ran, e.g. {missing[:5]}")
    if not known.all():
        extra = list(dict.fromkeys(seg_job[~known].tolist()))
        raise ScheduleError(f"segments of unknown jobs {extra[:5]}")
    return job_of


def _accounting(outcomes: Iterable, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_lost, n_preemptions, n_kills) per job position from the run's outcomes (0 for a job
    without one; an outcome of a job not in the workload is ignored)."""
    outs = list(outcomes)
    pos, known = _positions(ids, np.fromiter((o.job.id for o in outs), dtype=np.int64, count=len(outs)))
    acct = []
    for values in ((o.t_lost for o in outs), (o.n_preemptions for o in outs),
                   (getattr(o, "n_kills", 0) for o in outs)):
        col = np.zeros(len(ids), dtype=np.int64)
        col[pos[known]] = np.fromiter(values, dtype=np.int64, count=len(outs))[known]
        acct.append(col)
    return acct[0], acct[1], acct[2]


def _one_run_ok(segs, job_of: np.ndarray, count: np.ndarray, jobs, machine: Machine, acct) -> np.ndarray:
    """Per job position: True when the job ran in one uninterrupted run segment that keeps every
    rule (from progress 0 to its runtime, not before its submit time, on an allocation of its
    size) and its accounting is all zero; the rules of ``_check_job`` reduce to these then."""
    n = len(jobs)
    single = count == 1
    if acct is not None:
        single &= (acct[0] == 0) & (acct[1] == 0) & (acct[2] == 0)
    one = np.flatnonzero(single[job_of])  # the segments of those jobs
    pos = job_of[one]
    submit = np.fromiter((j.submit for j in jobs), dtype=np.int64, count=n)[pos]
    runtime = np.fromiter((j.runtime for j in jobs), dtype=np.int64, count=n)[pos]
    need = _allocation_sizes(jobs, machine)[pos]
    start, end = segs.column("start")[one], segs.column("end")[one]
    good = ((segs.column("kind")[one] == _RUN_CODE) & (segs.column("progress_from")[one] == 0)
            & (segs.column("progress_to")[one] == runtime) & (end - start == runtime) & (start >= submit)
            & (segs.column("nodes")[one] == need))
    if machine.partitioned:
        part = segs.column("partition")[one]
        sizes = np.array([p.nodes for p in machine.partitions], dtype=np.int64)
        inside = (part >= 0) & (part < len(sizes))
        good &= inside & (sizes[np.where(inside, part, 0)] == need)
    ok = np.zeros(n, dtype=bool)
    ok[pos[good]] = True
    return ok


def _allocation_sizes(jobs, machine: Machine) -> np.ndarray:
    """``machine.allocated_nodes`` of each job's size (-1 where the machine has none: such a job
    goes to ``_check_job``, which reports it)."""
    nodes = np.fromiter((j.nodes for j in jobs), dtype=np.int64, count=len(jobs))
    sizes, inverse = np.unique(nodes, return_inverse=True)
    need = []
    for size in sizes.tolist():
        try:
            need.append(machine.allocated_nodes(size))
        except (ValueError, KeyError, IndexError):
            need.append(-1)
    return np.array(need, dtype=np.int64)[inverse] if len(sizes) else nodes


class _JobCheck:
    """The rules of one job's segments (module docstring), walked in (start, end) order."""

    def __init__(self, jid: int, job, machine: Machine, io: IOModel) -> None:
        self.jid = jid
        self.job = job
        self.machine = machine
        self.need = machine.allocated_nodes(job.nodes)
        self.write = io.write_seconds(self.need)
        self.read = io.read_seconds(self.need)
        self.saved: set[int] = {0}  # progress points a completed write saved, s
        self.progress = 0  # work done and not yet lost, s
        self.stints = 1
        self.lost = 0  # work s computed and later lost (the progress given up at each resume)

    def fail(self, msg: str, seg=None) -> None:
        at = f" (segment {seg.kind} [{seg.start}, {seg.end}))" if seg is not None else ""
        raise ScheduleError(f"job {self.jid}: {msg}{at}")

    def placement(self, seg) -> None:
        """A non-empty segment on an allocation of the job's size."""
        fail, need, machine = self.fail, self.need, self.machine
        if seg.end <= seg.start:
            fail("empty or negative segment", seg)
        if seg.nodes != need:
            fail(f"occupies {seg.nodes} nodes, its allocation size is {need}", seg)
        if machine.partitioned:
            if not (0 <= seg.partition < len(machine.partitions)):
                fail(f"unknown partition {seg.partition}", seg)
            if machine.partitions[seg.partition].nodes != need:
                fail(f"partition {seg.partition} has {machine.partitions[seg.partition].nodes} nodes, not {need}", seg)

    def follows(self, prev, seg) -> None:
        """``seg`` after ``prev``: no overlap; a resume (a new stint) restarts from a saved point or 0."""
        fail = self.fail
        if seg.start < prev.end:
            fail("overlaps its own previous segment", seg)
        contiguous = seg.start == prev.end and seg.partition == prev.partition
        cut_write = prev.kind == CKPT and prev.end - prev.start < self.write
        cut_read = prev.kind == RESTART and prev.end - prev.start < self.read
        resumed = (not contiguous or cut_write or cut_read
                   or (prev.kind in (RUN, CKPT) and seg.kind == RESTART)
                   or (prev.kind == RUN and seg.kind == RUN))
        if not resumed:
            return
        self.stints += 1
        if seg.kind == RESTART:
            if seg.progress_from not in self.saved:
                fail(f"restarts from progress {seg.progress_from} s, which no completed write saved", seg)
            self.lost += self.progress - seg.progress_from
            self.progress = seg.progress_from
        elif seg.kind == RUN:
            if seg.progress_from != 0:
                fail(f"resumes a run at progress {seg.progress_from} s without a restart read", seg)
            self.lost += self.progress
            self.progress = 0
        else:
            fail("resumes with a checkpoint write", seg)

    def work(self, seg) -> None:
        """What the segment does to the job's progress (run, write, read)."""
        fail, progress = self.fail, self.progress
        if seg.kind == RUN:
            if seg.progress_from != progress:
                fail(f"run starts at progress {seg.progress_from} s, the job is at {progress} s", seg)
            if seg.progress_to - seg.progress_from != seg.end - seg.start:
                fail("run segment's progress does not match its duration", seg)
            self.progress = seg.progress_to
        elif seg.kind == CKPT:
            if seg.progress_to != progress or seg.progress_from != progress:
                fail(f"checkpoint of progress {seg.progress_to} s while the job is at {progress} s", seg)
            if seg.end - seg.start > self.write:
                fail(f"checkpoint write lasts {seg.end - seg.start} s, the model says {self.write} s", seg)
            if seg.end - seg.start == self.write:
                self.saved.add(progress)
        elif seg.kind == RESTART:
            if seg.end - seg.start > self.read:
                fail(f"restart read lasts {seg.end - seg.start} s, the model says {self.read} s", seg)
            if seg.progress_from != progress or seg.progress_to != progress:
                fail("restart segment does not keep the restored progress", seg)
        else:
            fail(f"unknown segment kind {seg.kind!r}", seg)

    def interruptions(self, acct, forbid_rt_preemption: bool, max_preemptions: int | None) -> None:
        """The accounting (lost work, interruptions) and the preemption limits, after the last segment."""
        job, fail = self.job, self.fail
        preemptions = self.stints - 1
        if acct is not None:
            t_lost, n_pre, n_kills = acct
            if t_lost != self.lost:
                fail(f"the simulator reports {t_lost} s of lost work, the schedule implies {self.lost} s")
            # An interruption at the very start of a stint leaves no segment: the schedule may show fewer.
            if n_pre + n_kills < preemptions:
                fail(f"the simulator reports {n_pre} preemptions and {n_kills} kills, the schedule has "
                     f"{preemptions} interruptions")
            preemptions = max(0, preemptions - n_kills)  # kills need no checkpoint: allowed for any job
        if forbid_rt_preemption and preemptions and (job.kind == "rt" or not job.checkpointable):
            fail(f"was preempted {preemptions} times but is "
                 f"{'real-time' if job.kind == 'rt' else 'not checkpointable'}")
        if max_preemptions is not None and preemptions > max_preemptions:
            fail(f"was preempted {preemptions} times, at most {max_preemptions} allowed")


def _check_job(jid, segs, job, machine, io, forbid_rt_preemption, max_preemptions, acct=None) -> None:
    """Every rule of the module docstring on one job's segments (sorted by start, end)."""
    check = _JobCheck(jid, job, machine, io)
    if segs[0].start < job.submit:
        check.fail(f"starts at {segs[0].start}, before its submit time {job.submit}", segs[0])
    prev = None
    for seg in segs:
        check.placement(seg)
        if prev is not None:
            check.follows(prev, seg)
        elif seg.kind != RUN or seg.progress_from != 0:
            check.fail("the first segment must be a run from progress 0", seg)
        check.work(seg)
        prev = seg
    if prev.kind != RUN or check.progress != job.runtime:
        check.fail(f"ends at progress {check.progress} s, its runtime is {job.runtime} s", prev)
    check.interruptions(acct, forbid_rt_preemption, max_preemptions)


def _check_partitions(schedule: Schedule, machine) -> None:
    """No two segments of different jobs overlap in time on conflicting partitions: a sweep by
    (start, end), keeping the segments still running (the segments built one at a time)."""
    segs = schedule.segments
    order = np.lexsort((segs.column("end"), segs.column("start"))).tolist()
    active: list = []  # segments still running at the current start time
    conflict = machine.conflict_mask
    for i in order:
        seg = segs[i]
        active = [a for a in active if a.end > seg.start]
        for a in active:
            if a.job_id != seg.job_id and (conflict[seg.partition] >> a.partition) & 1:
                raise ScheduleError(
                    f"jobs {a.job_id} and {seg.job_id} overlap on conflicting partitions "
                    f"{machine.partitions[a.partition].name} / {machine.partitions[seg.partition].name} "
                    f"during [{seg.start}, {min(a.end, seg.end)})")
        active.append(seg)


def _check_capacity(schedule: Schedule, capacity: int) -> None:
    """The nodes in use never exceed ``capacity``: every start and end as an event, ends first at
    equal times (then by nodes, job id), a running sum (on the columns)."""
    segs = schedule.segments
    n = len(segs)
    if not n:
        return
    nodes, jid = segs.column("nodes"), segs.column("job_id")
    time = np.concatenate((segs.column("start"), segs.column("end")))
    is_start = np.concatenate((np.ones(n, dtype=np.int8), np.zeros(n, dtype=np.int8)))
    delta = np.concatenate((nodes, -nodes))
    who = np.concatenate((jid, jid))
    order = np.lexsort((who, delta, is_start, time))
    used = np.cumsum(delta[order])
    over = np.flatnonzero(used > capacity)
    if len(over):
        k = order[over[0]]
        raise ScheduleError(f"t={int(time[k])}: {int(used[over[0]])} nodes in use on a {capacity}-node cluster "
                            f"(job {int(who[k])} starting)")
