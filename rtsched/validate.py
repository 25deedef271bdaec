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

from typing import Callable, Iterable

import numpy as np

from rtsched.checkpoint import DEFAULT_IO, IOModel
from rtsched.errors import ScheduleError
from rtsched.jobs import Workload
from rtsched.machines.base import Machine
from rtsched.schedule import CKPT, KIND_CODE, RESTART, RUN, SEGMENT_COLUMNS, Schedule, SegmentList
from rtsched.sim.result import Outcomes

_RUN_CODE = KIND_CODE[RUN]


def validate_schedule(schedule: Schedule, workload: Workload, machine: Machine, io: IOModel = DEFAULT_IO, *,
                      forbid_rt_preemption: bool = True, max_preemptions: int | None = None,
                      outcomes: Iterable | None = None) -> None:
    """Raise ScheduleError naming the job and time of the first broken rule; return None if valid.

    ``outcomes``: the run's outcomes (``SimResult.outcomes``, or any iterable of objects with
    ``job``, ``t_lost``, ``n_preemptions`` and ``n_kills``), to check the lost-work and
    interruption accounting against the schedule (``None``: not checked).

    One pass over the schedule's segment array, read in place (no copy of the schedule): the jobs
    that ran in one uninterrupted run segment (nearly all of a batch run) are checked together on
    the columns; the others job by job (``_check_job``) on their segments sorted by (start, end),
    in the order of their first segment, so the error is the one a job-by-job check in that order
    meets first.  Capacity: on a flat cluster the peak use at each start time from two sorted
    cumulative sums (the exact event sweep only to name a violation); on a partitioned machine a
    sweep by start time.
    """
    message = _first_error(schedule, workload, machine, io, forbid_rt_preemption, max_preemptions, outcomes)
    if message is not None:  # raised here, with no frame that holds a view of the segment array
        raise ScheduleError(message)


def _first_error(schedule: Schedule, workload: Workload, machine: Machine, io: IOModel, forbid_rt_preemption: bool,
                 max_preemptions: int | None, outcomes: Iterable | None) -> str | None:
    """``validate_schedule``'s check: the message of the first broken rule, or None."""
    segs = schedule.segments
    table = _segment_table(segs)  # a view of the segment array: (segments, 8) int64
    seg_job = table[:, _COL["job_id"]]
    columns = _job_columns(workload, outcomes)
    try:
        job_of = _job_positions(columns("id"), seg_job)  # segment -> position of its job in the workload
        count = np.bincount(job_of, minlength=len(workload))  # segments per job
        acct = _accounting(outcomes, columns("id")) if outcomes is not None else None
        ok = _one_run_ok(table, job_of, count, columns, machine, None if acct is _ALL_ZERO else acct)
        bad = np.flatnonzero(~ok[job_of])  # the segments of the jobs walked one by one, in produced order
        if len(bad):
            # each job's segments by (start, end), produced order on ties; jobs by their first segment
            order = bad[np.lexsort((table[bad, _COL["end"]], table[bad, _COL["start"]], job_of[bad]))]
            group_of = job_of[order]
            bounds = np.flatnonzero(np.diff(group_of)) + 1
            lows = np.concatenate(([0], bounds)).tolist()
            highs = bounds.tolist() + [len(order)]
            first_seg = np.minimum.reduceat(order, lows) if len(order) else order
            for k in np.argsort(first_seg, kind="stable").tolist():
                pos = int(group_of[lows[k]])
                job_acct = (None if acct is None else (0, 0, 0) if acct is _ALL_ZERO
                            else (int(acct[0][pos]), int(acct[1][pos]), int(acct[2][pos])))
                job_segs = [segs[i] for i in order[lows[k]:highs[k]].tolist()]
                job = workload[pos]  # one Job (a reader's columns build no other)
                _check_job(job.id, job_segs, job, machine, io, forbid_rt_preemption, max_preemptions, job_acct)
        if machine.partitioned:
            _check_partitions(schedule, machine)
        else:
            _check_capacity(table, machine.total_nodes)
    except ScheduleError as exc:
        return str(exc)
    return None


_COL = {name: i for i, name in enumerate(SEGMENT_COLUMNS)}


def _segment_table(segs: SegmentList) -> np.ndarray:
    """The segments as a (segments, 8) int64 array in ``SEGMENT_COLUMNS`` order: a view of the
    list's own storage, not a copy (the list cannot grow while the view lives)."""
    if not len(segs):
        return np.zeros((0, SegmentList.WIDTH), dtype=np.int64)
    return np.frombuffer(segs.rows, dtype=np.int64).reshape(-1, SegmentList.WIDTH)


def _job_columns(workload: Workload, outcomes) -> Callable[[str], np.ndarray]:
    """A job attribute as a column (``Outcomes.job_column``): the run's own columns, built once for
    the validator and the metrics, when ``outcomes`` are those of this very workload."""
    if isinstance(outcomes, Outcomes) and outcomes.describes(workload):
        return outcomes.job_column
    cache: dict[str, np.ndarray] = {}

    def column(name: str) -> np.ndarray:
        if name not in cache:
            cache[name] = workload.column(name)
        return cache[name]

    return column


def _positions(ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position in ``ids`` of each value of ``wanted``, whether it is there at all); ``ids``
    distinct.  Where it is not, the position is meaningless.  Workload ids are usually increasing
    (no sort) and often consecutive (no search)."""
    n = len(ids)
    if not n:
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
    if n == 1 or bool((ids[1:] > ids[:-1]).all()):
        if int(ids[-1]) - int(ids[0]) == n - 1:  # consecutive
            at = wanted - ids[0]
            known = (at >= 0) & (at < n)
            return np.where(known, at, 0), known
        at = np.minimum(np.searchsorted(ids, wanted), n - 1)
        return at, ids[at] == wanted
    by_id = np.argsort(ids, kind="stable")
    sorted_ids = ids[by_id]
    at = np.minimum(np.searchsorted(sorted_ids, wanted), n - 1)
    return by_id[at], sorted_ids[at] == wanted


def _job_positions(ids: np.ndarray, seg_job: np.ndarray) -> np.ndarray:
    """The position in ``ids`` (the workload's) of each segment's job; ScheduleError for a job
    without a segment (in workload order) or a segment of an unknown job (in order of appearance)."""
    job_of, known = _positions(ids, seg_job)
    seen = np.zeros(len(ids), dtype=bool)
    seen[job_of[known]] = True
    if not seen.all():
        missing = ids[~seen].tolist()
        raise ScheduleError(f"{len(missing)} jobs never ran, e.g. {missing[:5]}")
    if not known.all():
        extra = list(dict.fromkeys(seg_job[~known].tolist()))
        raise ScheduleError(f"segments of unknown jobs {extra[:5]}")
    return job_of


_ALL_ZERO = ()  # ``_accounting``'s answer when every job's accounting is 0 (no columns built)


def _accounting(outcomes: Iterable, ids: np.ndarray) -> tuple:
    """(t_lost, n_preemptions, n_kills) per job position from the run's outcomes (0 for a job
    without one; an outcome of a job not in the workload is ignored); ``_ALL_ZERO`` when the
    run's outcome columns say that every value is 0."""
    names = ("t_lost", "n_preemptions", "n_kills")
    if isinstance(outcomes, Outcomes) and len(outcomes) == len(ids) and (
            not len(ids) or np.array_equal(outcomes.job_column("id"), ids)):
        if not any(outcomes.has_any(name) for name in names):
            return _ALL_ZERO
        return outcomes.column("t_lost"), outcomes.column("n_preemptions"), outcomes.column("n_kills")
    outs = list(outcomes)
    pos, known = _positions(ids, np.fromiter((o.job.id for o in outs), dtype=np.int64, count=len(outs)))
    acct = []
    for values in ((o.t_lost for o in outs), (o.n_preemptions for o in outs),
                   (getattr(o, "n_kills", 0) for o in outs)):
        col = np.zeros(len(ids), dtype=np.int64)
        col[pos[known]] = np.fromiter(values, dtype=np.int64, count=len(outs))[known]
        acct.append(col)
    return acct[0], acct[1], acct[2]


def _one_run_ok(table: np.ndarray, job_of: np.ndarray, count: np.ndarray, columns, machine: Machine,
                acct) -> np.ndarray:
    """Per job position: True when the job ran in one uninterrupted run segment that keeps every
    rule (from progress 0 to its runtime, not before its submit time, on an allocation of its
    size) and its accounting is all zero; the rules of ``_check_job`` reduce to these then.
    On every segment at once (a segment of another job is simply not good)."""
    single = count == 1
    if acct is not None:
        single &= (acct[0] == 0) & (acct[1] == 0) & (acct[2] == 0)
    start, end = table[:, _COL["start"]], table[:, _COL["end"]]
    runtime = columns("runtime")[job_of]
    good = single[job_of]
    good &= table[:, _COL["kind"]] == _RUN_CODE
    good &= table[:, _COL["progress_from"]] == 0
    good &= table[:, _COL["progress_to"]] == runtime
    good &= end - start == runtime
    del runtime
    good &= start >= columns("submit")[job_of]
    need = _allocation_sizes(columns("nodes"), machine)[job_of]
    good &= (table[:, _COL["nodes"]] == need) & (need >= 1)
    if machine.partitioned:
        part = table[:, _COL["partition"]]
        sizes = np.array([p.nodes for p in machine.partitions], dtype=np.int64)
        inside = (part >= 0) & (part < len(sizes))
        good &= inside & (sizes[np.where(inside, part, 0)] == need)
    ok = np.zeros(len(count), dtype=bool)
    ok[job_of[good]] = True
    return ok


def _allocation_sizes(nodes: np.ndarray, machine: Machine) -> np.ndarray:
    """``machine.allocated_nodes`` of each job's size (-1 where the machine has none: such a job
    goes to ``_check_job``, which reports it), asked once per distinct size."""
    if not len(nodes):
        return nodes
    low, high = int(nodes.min()), int(nodes.max())
    if low >= 0 and high <= 4 * len(nodes) + (1 << 16):  # sizes are node counts: a table, no sort
        sizes = np.flatnonzero(np.bincount(nodes))
        table = np.full(high + 1, -1, dtype=np.int64)
        table[sizes] = [_allocated(machine, s) for s in sizes.tolist()]
        return table[nodes]
    sizes, inverse = np.unique(nodes, return_inverse=True)
    return np.array([_allocated(machine, s) for s in sizes.tolist()], dtype=np.int64)[inverse]


def _allocated(machine: Machine, size: int) -> int:
    try:
        return machine.allocated_nodes(size)
    except (ValueError, KeyError, IndexError):
        return -1


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


def _check_capacity(table: np.ndarray, capacity: int) -> None:
    """The nodes in use never exceed ``capacity`` (a segment ending at t frees its nodes for one
    starting at t).  The use is highest just after some start time s: the nodes of the segments
    started by s (a cumulative sum over the segments sorted by start) minus those of the segments
    ended by s (a cumulative sum over the segments sorted by end; the core records them in that
    order already).  Only when that peak is over the capacity, ``_name_overload`` finds the event."""
    if not len(table):
        return
    start, end, nodes = table[:, _COL["start"]], table[:, _COL["end"]], table[:, _COL["nodes"]]
    by_start = np.argsort(start)
    started = np.cumsum(nodes[by_start])
    start_sorted = start[by_start]
    del by_start
    if len(end) > 1 and not bool((end[1:] >= end[:-1]).all()):
        by_end = np.argsort(end)
        end_sorted, ended = end[by_end], np.cumsum(nodes[by_end])
        del by_end
    else:
        end_sorted, ended = end, np.cumsum(nodes)
    k = np.searchsorted(end_sorted, start_sorted, side="right")  # segments ended by each start time
    in_use = started - np.where(k > 0, ended[np.maximum(k - 1, 0)], 0)
    if int(in_use.max()) > capacity:
        _name_overload(table, capacity)


def _name_overload(table: np.ndarray, capacity: int) -> None:
    """ScheduleError at the first event after which the nodes in use exceed ``capacity``: every
    start and end as an event, ends first at equal times (then by nodes, job id), a running sum."""
    n = len(table)
    nodes, jid = table[:, _COL["nodes"]], table[:, _COL["job_id"]]
    time = np.concatenate((table[:, _COL["start"]], table[:, _COL["end"]]))
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
