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

from rtsched.checkpoint import DEFAULT_IO, IOModel
from rtsched.errors import ScheduleError
from rtsched.jobs import Workload
from rtsched.machines.base import Machine
from rtsched.schedule import CKPT, RESTART, RUN, Schedule


def validate_schedule(schedule: Schedule, workload: Workload, machine: Machine, io: IOModel = DEFAULT_IO, *,
                      forbid_rt_preemption: bool = True, max_preemptions: int | None = None,
                      outcomes: Iterable | None = None) -> None:
    """Raise ScheduleError naming the job and time of the first broken rule; return None if valid.

    ``outcomes``: the run's ``JobOutcome``s (``SimResult.outcomes``), to check the lost-work and
    interruption accounting against the schedule (``None``: not checked)."""
    jobs = workload.by_id()
    reported = None
    if outcomes is not None:
        reported = {o.job.id: (o.t_lost, o.n_preemptions, getattr(o, "n_kills", 0)) for o in outcomes}
    by_job = schedule.by_job()
    missing = [jid for jid in jobs if jid not in by_job]
    if missing:
        raise ScheduleError(f"{len(missing)} jobs never ran, e.g. {missing[:5]}")
    extra = [jid for jid in by_job if jid not in jobs]
    if extra:
        raise ScheduleError(f"segments of unknown jobs {extra[:5]}")
    partitions = machine.partitions if machine.partitioned else None
    for jid, segs in by_job.items():
        job = jobs[jid]
        acct = reported.get(jid, (0, 0, 0)) if reported is not None else None
        if len(segs) == 1 and (acct is None or acct == (0, 0, 0)):
            # the common case, one uninterrupted run: the rules below reduce to these
            seg = segs[0]
            need = machine.allocated_nodes(job.nodes)
            if (seg.kind == RUN and seg.progress_from == 0 and seg.progress_to == job.runtime
                    and seg.end - seg.start == job.runtime and seg.start >= job.submit and seg.nodes == need
                    and (partitions is None or (0 <= seg.partition < len(partitions)
                                                and partitions[seg.partition].nodes == need))):
                continue
        _check_job(jid, segs, job, machine, io, forbid_rt_preemption, max_preemptions, acct)
    if machine.partitioned:
        _check_partitions(schedule, machine)
    else:
        _check_capacity(schedule, machine.total_nodes)


def _check_job(jid, segs, job, machine, io, forbid_rt_preemption, max_preemptions, acct=None) -> None:
    def fail(msg: str, seg=None) -> None:
        at = f" (segment {seg.kind} [{seg.start}, {seg.end}))" if seg is not None else ""
        raise ScheduleError(f"job {jid}: {msg}{at}")

    need = machine.allocated_nodes(job.nodes)
    write = io.write_seconds(need)
    read = io.read_seconds(need)
    if segs[0].start < job.submit:
        fail(f"starts at {segs[0].start}, before its submit time {job.submit}", segs[0])
    saved: set[int] = {0}
    progress = 0  # work done and not yet lost, s
    prev = None
    stints = 1
    lost = 0  # work s computed and later lost (the progress given up at each resume)
    for seg in segs:
        if seg.end <= seg.start:
            fail("empty or negative segment", seg)
        if seg.nodes != need:
            fail(f"occupies {seg.nodes} nodes, its allocation size is {need}", seg)
        if machine.partitioned:
            if not (0 <= seg.partition < len(machine.partitions)):
                fail(f"unknown partition {seg.partition}", seg)
            if machine.partitions[seg.partition].nodes != need:
                fail(f"partition {seg.partition} has {machine.partitions[seg.partition].nodes} nodes, not {need}", seg)
        if prev is not None:
            if seg.start < prev.end:
                fail("overlaps its own previous segment", seg)
            contiguous = seg.start == prev.end and seg.partition == prev.partition
            cut_write = prev.kind == CKPT and prev.end - prev.start < write
            cut_read = prev.kind == RESTART and prev.end - prev.start < read
            resumed = (not contiguous or cut_write or cut_read
                       or (prev.kind in (RUN, CKPT) and seg.kind == RESTART)
                       or (prev.kind == RUN and seg.kind == RUN))
            if resumed:
                stints += 1
                if seg.kind == RESTART:
                    if seg.progress_from not in saved:
                        fail(f"restarts from progress {seg.progress_from} s, which no completed write saved", seg)
                    lost += progress - seg.progress_from
                    progress = seg.progress_from
                elif seg.kind == RUN:
                    if seg.progress_from != 0:
                        fail(f"resumes a run at progress {seg.progress_from} s without a restart read", seg)
                    lost += progress
                    progress = 0
                else:
                    fail("resumes with a checkpoint write", seg)
        elif seg.kind != RUN or seg.progress_from != 0:
            fail("the first segment must be a run from progress 0", seg)
        if seg.kind == RUN:
            if seg.progress_from != progress:
                fail(f"run starts at progress {seg.progress_from} s, the job is at {progress} s", seg)
            if seg.progress_to - seg.progress_from != seg.end - seg.start:
                fail("run segment's progress does not match its duration", seg)
            progress = seg.progress_to
        elif seg.kind == CKPT:
            if seg.progress_to != progress or seg.progress_from != progress:
                fail(f"checkpoint of progress {seg.progress_to} s while the job is at {progress} s", seg)
            if seg.end - seg.start > write:
                fail(f"checkpoint write lasts {seg.end - seg.start} s, the model says {write} s", seg)
            if seg.end - seg.start == write:
                saved.add(progress)
        elif seg.kind == RESTART:
            if seg.end - seg.start > read:
                fail(f"restart read lasts {seg.end - seg.start} s, the model says {read} s", seg)
            if seg.progress_from != progress or seg.progress_to != progress:
                fail("restart segment does not keep the restored progress", seg)
        else:
            fail(f"unknown segment kind {seg.kind!r}", seg)
        prev = seg
    if prev.kind != RUN or progress != job.runtime:
        fail(f"ends at progress {progress} s, its runtime is {job.runtime} s", prev)
    preemptions = stints - 1
    if acct is not None:
        t_lost, n_pre, n_kills = acct
        if t_lost != lost:
            fail(f"the simulator reports {t_lost} s of lost work, the schedule implies {lost} s")
        # An interruption at the very start of a stint leaves no segment: the schedule may show fewer.
        if n_pre + n_kills < preemptions:
            fail(f"the simulator reports {n_pre} preemptions and {n_kills} kills, the schedule has "
                 f"{preemptions} interruptions")
        preemptions = max(0, preemptions - n_kills)  # kills need no checkpoint: allowed for any job
    if forbid_rt_preemption and preemptions and (job.kind == "rt" or not job.checkpointable):
        fail(f"was preempted {preemptions} times but is {'real-time' if job.kind == 'rt' else 'not checkpointable'}")
    if max_preemptions is not None and preemptions > max_preemptions:
        fail(f"was preempted {preemptions} times, at most {max_preemptions} allowed")


def _check_partitions(schedule: Schedule, machine) -> None:
    segs = sorted(schedule.segments, key=lambda s: (s.start, s.end))
    active: list = []  # segments still running at the current start time
    conflict = machine.conflict_mask
    for seg in segs:
        active = [a for a in active if a.end > seg.start]
        for a in active:
            if a.job_id != seg.job_id and (conflict[seg.partition] >> a.partition) & 1:
                raise ScheduleError(
                    f"jobs {a.job_id} and {seg.job_id} overlap on conflicting partitions "
                    f"{machine.partitions[a.partition].name} / {machine.partitions[seg.partition].name} "
                    f"during [{seg.start}, {min(a.end, seg.end)})")
        active.append(seg)


def _check_capacity(schedule: Schedule, capacity: int) -> None:
    events = []
    for seg in schedule.segments:
        events.append((seg.start, 1, seg.nodes, seg.job_id))
        events.append((seg.end, 0, -seg.nodes, seg.job_id))  # ends first at equal times
    events.sort()
    used = 0
    for t, _, delta, jid in events:
        used += delta
        if used > capacity:
            raise ScheduleError(f"t={t}: {used} nodes in use on a {capacity}-node cluster (job {jid} starting)")
