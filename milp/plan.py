"""Plans: where and when each job runs, their exact evaluation, and conversion to segments.

A :class:`Placement` is one job's decision in the offline model (offline-model.md):

* not split: one part [start, start + p) on ``partition``;
* split at work ``split`` = w (BJs only, ceil(0.1 p) <= w <= floor(0.9 p)): part 1
  [start, start + w + o) (run, then the checkpoint write), part 2 [restart, restart + p − w + o)
  (the restart read, then the rest of the run), restart >= start + w + o, same partition.

:func:`to_schedule` is the hook the simulator's replay uses: it turns placements into
:class:`rtsched.schedule.Segment` records ("run" / "ckpt" / "restart"; nodes = 512·k_j, the
partition's nodes).  :func:`left_justify` moves every part as early as the per-block order of the
plan allows (never later), which turns a solver's (possibly fractional, possibly slack) times into
the integer left-justified schedule with the same order.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Iterable, Sequence

from rtsched.schedule import CKPT, RESTART, RUN, Schedule, Segment

from milp.instance import Instance


@dataclass(frozen=True, slots=True)
class Placement:
    job_id: int
    partition: int  # AlignedMira partition index
    start: int  # s
    split: int | None = None  # w: work of the first part, s (None: not split)
    restart: int | None = None  # start of the second part (restart read), s

    @property
    def preempted(self) -> bool:
        return self.split is not None


@dataclass(frozen=True, slots=True)
class Part:
    """One contiguous occupation of a partition by a job (a solver's or a checker's view)."""

    job_id: int
    index: int  # 0: first (or only) part, 1: second part
    partition: int
    start: int
    end: int


def parts_of(instance: Instance, pl: Placement) -> list[Part]:
    job = instance.job(pl.job_id)
    if pl.split is None:
        return [Part(job.id, 0, pl.partition, pl.start, pl.start + job.runtime)]
    o = instance.overhead(job)
    assert pl.restart is not None
    return [Part(job.id, 0, pl.partition, pl.start, pl.start + pl.split + o),
            Part(job.id, 1, pl.partition, pl.restart, pl.restart + job.runtime - pl.split + o)]


def completion(instance: Instance, pl: Placement) -> int:
    return parts_of(instance, pl)[-1].end


def to_schedule(instance: Instance, placements: Iterable[Placement], machine_name: str | None = None) -> Schedule:
    """Segments of a plan (the hook the lead's ``rtsched.replay`` replays).

    Unsplit job: run [s, s+p) progress 0→p.  Split BJ: run [s, s+w) 0→w; ckpt [s+w, s+w+o) w→w;
    restart [s', s'+o) w→w; run [s'+o, s'+o+p−w) w→p.
    """
    sched = Schedule(machine_name=machine_name or f"mira-aligned-{instance.blocks}")
    for pl in sorted(placements, key=lambda p: (p.start, p.job_id)):
        job = instance.job(pl.job_id)
        nodes = instance.alloc_nodes(job)
        p, s, q = job.runtime, pl.start, pl.partition
        if pl.split is None:
            sched.add(Segment(job.id, s, s + p, RUN, q, nodes, 0, p))
            continue
        w, o, s2 = pl.split, instance.overhead(job), pl.restart
        assert s2 is not None
        sched.add(Segment(job.id, s, s + w, RUN, q, nodes, 0, w))
        sched.add(Segment(job.id, s + w, s + w + o, CKPT, q, nodes, w, w))
        sched.add(Segment(job.id, s2, s2 + o, RESTART, q, nodes, w, w))
        sched.add(Segment(job.id, s2 + o, s2 + o + p - w, RUN, q, nodes, w, p))
    sched.segments.sort(key=lambda g: (g.start, g.job_id, g.end))
    return sched


def from_schedule(instance: Instance, schedule: Schedule) -> list[Placement]:
    """Inverse of :func:`to_schedule` for schedules of that shape."""
    out = []
    for jid, segs in sorted(schedule.by_job().items()):
        first = segs[0]
        ck = [s for s in segs if s.kind == CKPT]
        rs = [s for s in segs if s.kind == RESTART]
        if not ck:
            out.append(Placement(jid, first.partition, first.start))
        else:
            out.append(Placement(jid, first.partition, first.start, ck[0].progress_to, rs[0].start))
    return out


# ---------------------------------------------------------------------------------------------
# Exact evaluation
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evaluation:
    sd: dict[int, Fraction]  # job id -> slowdown (C - r) / p, exact
    rt_sum: Fraction
    bj_sum: Fraction
    n_rt: int
    n_bj: int

    @property
    def rt_mean(self) -> Fraction | None:
        return self.rt_sum / self.n_rt if self.n_rt else None

    @property
    def bj_mean(self) -> Fraction | None:
        return self.bj_sum / self.n_bj if self.n_bj else None


def evaluate(instance: Instance, placements: Sequence[Placement]) -> Evaluation:
    by_id = {pl.job_id: pl for pl in placements}
    sd: dict[int, Fraction] = {}
    rt = bj = Fraction(0)
    for job in instance.jobs:
        c = completion(instance, by_id[job.id])
        v = Fraction(c - job.submit, job.runtime)
        sd[job.id] = v
        if job.kind == "rt":
            rt += v
        else:
            bj += v
    return Evaluation(sd, rt, bj, len(instance.rt_jobs), len(instance.batch_jobs))


# ---------------------------------------------------------------------------------------------
# Why a plan preempts
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreemptionReason:
    """One split of a plan, read against the jobs that use the partition while the job is away.

    ``beneficiaries`` are the jobs with a part starting on a conflicting partition between the end
    of the split's run (the checkpoint write begins) and its restart.  ``for_rtj``: one of them is a
    real-time job; ``anticipatory``: the write begins before the earliest of them has even been
    submitted, so only a scheduler that knows the future could begin it then.  That is the only
    kind that needs the future (``needs_future``): preempting a checkpointable BJ for a job that is
    already waiting — an RTJ or a BJ — is an ordinary online move (``milp.replan`` makes it).
    """

    job_id: int
    write_start: int  # s: end of the first part's run, start of the checkpoint write
    restart: int  # s
    beneficiaries: tuple[int, ...]
    for_rtj: bool
    anticipatory: bool

    @property
    def needs_future(self) -> bool:
        """Whether no online scheduler could have begun this write then (``anticipatory``); whom
        the partition serves, an RTJ or BJs only, does not matter."""
        return self.anticipatory


def preemption_reasons(instance: Instance, placements: Sequence[Placement]) -> list[PreemptionReason]:
    """For each split placement of the plan, whom the freed partition serves and whether the
    preemption needed knowledge of a later arrival (what separates the offline optimum from an
    online scheduler, which can free a partition only for a job that has arrived)."""
    parts = instance.partitions
    occupations = [part for pl in placements for part in parts_of(instance, pl)]
    out = []
    for pl in placements:
        if pl.split is None:
            continue
        write_start = pl.start + pl.split
        assert pl.restart is not None
        mine = parts[pl.partition]
        users = sorted({part.job_id for part in occupations
                        if part.job_id != pl.job_id and write_start <= part.start < pl.restart
                        and parts[part.partition].conflicts(mine)})
        jobs = [instance.job(j) for j in users]
        out.append(PreemptionReason(pl.job_id, write_start, pl.restart, tuple(users),
                                    any(j.kind == "rt" for j in jobs),
                                    bool(jobs) and min(j.submit for j in jobs) > write_start))
    return out


# ---------------------------------------------------------------------------------------------
# Left-justification
# ---------------------------------------------------------------------------------------------


def left_justify(instance: Instance, placements: Sequence[Placement],
                 times: dict[tuple[int, int], float] | None = None) -> list[Placement]:
    """The left-justified plan with the same partitions, splits and per-block order.

    Parts are taken in the order of their original start times (``times[(job, part)]`` when given,
    e.g. a MILP's fractional starts; else the placements' own starts) and each starts at the
    earliest time its release (submit, or the end of the job's first part) and every earlier part
    on a conflicting partition allow.  Every part ends no later than before, so every slowdown is
    no worse.  A split whose second part would then follow its first part without a gap is
    removed (it only costs 2·o_j), and the plan is justified again.
    """
    parts_info = []  # (order key, job, part index, partition, duration)
    plan = {pl.job_id: pl for pl in placements}
    while True:
        parts_info.clear()
        for pl in plan.values():
            job = instance.job(pl.job_id)
            for part in parts_of(instance, pl):
                t0 = times.get((part.job_id, part.index), part.start) if times is not None else part.start
                parts_info.append((t0, part.index, part.end - part.start, part.job_id, part.partition))
        parts_info.sort(key=lambda x: (x[0], x[1], x[3]))
        parts = instance.partitions
        # Latest end of the parts placed so far on each block: a part starts after every earlier
        # part on a conflicting partition (one sharing a block), i.e. after the latest end over its
        # blocks (linear in the parts, where scanning every earlier part was quadratic).
        block_end = [0] * instance.blocks
        start: dict[tuple[int, int], int] = {}
        end: dict[tuple[int, int], int] = {}
        for _, idx, dur, jid, q in parts_info:
            job = instance.job(jid)
            t = job.submit if idx == 0 else end[(jid, 0)]
            blocks = parts[q].blocks
            t = max(t, max(block_end[b] for b in blocks))
            start[(jid, idx)] = t
            end[(jid, idx)] = t + dur
            for b in blocks:
                block_end[b] = max(block_end[b], t + dur)
        new_plan = {}
        merged = False
        for jid, pl in plan.items():
            if pl.split is None:
                new_plan[jid] = replace(pl, start=start[(jid, 0)])
            elif start[(jid, 1)] == end[(jid, 0)]:
                new_plan[jid] = Placement(jid, pl.partition, start[(jid, 0)])
                merged = True
            else:
                new_plan[jid] = replace(pl, start=start[(jid, 0)], restart=start[(jid, 1)])
        if not merged:
            return [new_plan[j.id] for j in instance.jobs]
        plan = new_plan
        times = {(jid, 0): float(p.start) for jid, p in plan.items()} | {
            (jid, 1): float(p.restart) for jid, p in plan.items() if p.restart is not None}
