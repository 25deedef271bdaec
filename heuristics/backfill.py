"""The one backfilling kernel: the blocked head's reservation and the rule that lets others pass it.

Every backfilling policy in rtsched goes through here: the textbook batch policies
(``heuristics.batch``), the low-priority pass of the real-time schemes, RLScheduler's
committed-head rule (``heuristics.committed``) and the inspector's backfilling feature.  All of it
works from walltime estimates only.  Times in s, sizes in nodes (processors on a flat cluster).

**Reservation** (EASY's "shadow time"): the earliest time the blocked head can start, from the
expected ends of the jobs holding resources (``busy``: (expected end, allocation, nodes) triples).

* Flat cluster: running jobs are walked by expected end until enough processors are free; the
  shadow time is that job's end (never before ``now``) and ``extra`` the processors free then
  beyond the head's need.
* Partitioned machine (Mira): a candidate partition of the head is free once every busy
  partition conflicting with it has ended; the shadow time is the earliest such time over the
  candidates, and the lowest-index candidate reaching it is the reserved partition.

**Rules** (``rule``):

* ``"easy"`` — a job may start now if it fits and ends (now + walltime) by the shadow time, or
  uses only what the head will not need: on a flat cluster the ``extra`` processors, on Mira a
  partition that does not conflict with the reserved one.  Qsim's first-fit ``ff`` is this rule.
* ``"strict"`` — RLScheduler's rule (seed 003): a job may start iff it fits and ends strictly
  before the shadow time; no extra-nodes rule.

Backfilling names (``BACKFILLS``): ``none``; ``easy`` and ``ff`` (the EASY rule, candidates in
priority order); ``bf`` (Qsim best fit: repeatedly the eligible job that uses the most nodes, then
the longest walltime); ``sjf`` (Qsim SJF backfilling: candidates by walltime); ``rlscheduler``
(the strict rule, candidates in the policy's order).  ``normalize_backfill`` is the one place
that turns user spellings into these names.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from rtsched.machines.flat import FLAT
from rtsched.sim.state import WAITING, JobState

BACKFILLS = ("none", "easy", "ff", "bf", "sjf", "rlscheduler")
# Each name in words, for what a run prints about itself (`rtsched simulate`'s header).
BACKFILL_WORDS = {"none": "no backfilling", "easy": "EASY backfilling", "ff": "first-fit backfilling",
                  "bf": "best-fit backfilling", "sjf": "SJF backfilling",
                  "rlscheduler": "RLScheduler's strict backfilling"}
# Spellings accepted for the names above (command lines, model files, older grids).
_ALIASES = {"off": "none", "no": "none", "false": "none", "rl": "rlscheduler", "strict": "rlscheduler",
            "first-fit": "ff", "best-fit": "bf"}
NEVER = 1 << 62  # s: a shadow time no job can reach


def normalize_backfill(value, allowed: Sequence[str] = BACKFILLS, *, option: str = "backfill") -> str:
    """The backfilling name for ``value``: ``True`` → ``"rlscheduler"``, ``False``/``None`` →
    ``"none"``, a name or alias (``off``, ``rl``, ``strict``, ...) → its name.  Raises ValueError
    naming ``option`` and the ``allowed`` names for anything else."""
    if value is True:
        name = "rlscheduler"
    elif value is False or value is None:
        name = "none"
    else:
        name = str(value).strip().lower()
        name = _ALIASES.get(name, name)
    if name not in allowed:
        raise ValueError(f"unknown {option} {value!r}; choose from {', '.join(allowed)}")
    return name


def rule_of(backfill: str) -> str:
    """The rule (``"easy"`` or ``"strict"``) a backfilling name applies."""
    return "strict" if backfill == "rlscheduler" else "easy"


# ---------------------------------------------------------------------------------- reservation
@dataclass(slots=True)
class Reservation:
    shadow: int  # s: earliest time the head job can start
    extra: int  # flat: processors free at the shadow time beyond the head's need
    alloc: int  # partitioned: the partition reserved for the head (FLAT on a flat cluster)


def busy_of(running: Iterable[JobState], now: int, *, overdue_next_second: bool) -> list[tuple[int, int, int]]:
    """(expected end s, allocation, nodes) of every job holding resources.

    A job past its walltime estimate (it can be, when a trace keeps runtime > walltime) is taken
    to end at ``now + 1`` when ``overdue_next_second`` (textbook EASY: it ends any moment), else
    at its stale estimate (the committed-head rule, as RLScheduler computes it).
    """
    if overdue_next_second:
        return [(js.expected_end if js.expected_end > now else now + 1, js.alloc, js.alloc_nodes) for js in running]
    return [(js.expected_end, js.alloc, js.alloc_nodes) for js in running]


def flat_reservation(nodes: int, free_now: int, busy: list[tuple[int, int, int]], now: int) -> Reservation:
    """Walk the busy jobs by expected end until ``nodes`` processors are free."""
    return flat_reservation_sorted(nodes, free_now, sorted(busy), now)


def flat_reservation_sorted(nodes: int, free_now: int, busy: list[tuple[int, int, int]], now: int) -> Reservation:
    """``flat_reservation`` of ``busy`` sorted already."""
    shadow, extra = flat_shadow(nodes, free_now, busy, now)
    return Reservation(shadow, extra, FLAT)


def flat_shadow(nodes: int, free_now: int, busy: list[tuple[int, int, int]], now: int) -> tuple[int, int]:
    """(shadow time s, extra processors) of ``flat_reservation_sorted``, as a plain pair (the
    flat pass's, once per backfilling pass: no ``Reservation`` object)."""
    free = free_now
    for end, _alloc, n in busy:
        free += n
        if free >= nodes:
            return (end if end > now else now), free - nodes
    return NEVER, 0  # more than the machine: rejected at load, never reached


def partition_reservation(machine, nodes: int, busy: list[tuple[int, int, int]], now: int) -> Reservation:
    """Earliest-free candidate partition for a head of ``nodes`` nodes on a partitioned machine.

    Sweeping the busy jobs by *descending* end, the first hit of a candidate gives the latest end
    among the jobs in its way; the smallest such time is the shadow time.
    """
    remaining = machine.candidate_mask(nodes)
    conflict = machine.conflict_mask
    last_end = now
    last_hit = 0
    for end, alloc, _n in sorted(busy, reverse=True):
        hit = conflict[alloc] & remaining
        if hit:
            remaining &= ~hit
            last_end, last_hit = end, hit
    if remaining:  # some candidate has no busy job in its way: free now (e.g. hand-overs)
        return Reservation(now, 0, (remaining & -remaining).bit_length() - 1)
    return Reservation(max(last_end, now), 0, (last_hit & -last_hit).bit_length() - 1)


def reserve(machine, nodes: int, free_now: int, busy: list[tuple[int, int, int]], now: int) -> Reservation:
    """The head's reservation on ``machine`` (flat or partitioned)."""
    if machine.partitioned:
        return partition_reservation(machine, nodes, busy, now)
    return flat_reservation(nodes, free_now, busy, now)


def reserve_sorted(machine, nodes: int, free_now: int, busy: list[tuple[int, int, int]], now: int) -> Reservation:
    """``reserve`` of ``busy`` sorted already (``SimView.busy``, read only: never changed here)."""
    if machine.partitioned:
        return partition_reservation(machine, nodes, busy, now)
    return flat_reservation_sorted(nodes, free_now, busy, now)


# ---------------------------------------------------------------------------------- the rule
def scan_flat(candidates: Iterable[JobState], free: int, now: int, res: Reservation, strict: bool,
              skip: JobState | None = None) -> tuple[list[JobState], int, int]:
    """Backfill on a flat cluster: the candidates, in order, that the rule lets start now.

    Returns (started jobs, processors still free, ``low``).  ``skip`` (the head) is never started.
    ``low`` is the fewest processors any candidate that did not fit asks for (0 when some were
    not examined, the processors having run out): under the strict rule the shadow time stays
    while the head waits and time only grows, so a later scan of the same candidates against
    the same reservation with fewer than ``low`` processors free starts nothing.
    """
    return scan_flat_at(candidates, free, now, res.shadow, res.extra, strict, skip)


def scan_flat_at(candidates: Iterable[JobState], free: int, now: int, shadow: int, extra: int, strict: bool,
                 skip: JobState | None = None) -> tuple[list[JobState], int, int]:
    """``scan_flat`` against the reservation's shadow time (s) and extra processors given apart."""
    started: list[JobState] = []
    if free <= 0:
        return started, free, 0
    low = NEVER
    for js in candidates:
        n = js.nodes
        if n > free:  # most candidates: the fewest opcodes first
            if n < low:
                low = n
            continue
        if js is skip or js.status != WAITING:
            continue
        end = now + js.walltime
        if strict:
            if end >= shadow:
                continue
        elif end > shadow:
            if n > extra:
                continue
            extra -= n
        free -= n
        started.append(js)
        if free <= 0:
            return started, free, 0
    return started, free, low


def scan_partitioned(candidates: Iterable[JobState], plan, machine, now: int, res: Reservation, strict: bool,
                     skip: JobState | None = None) -> list[tuple[JobState, int]]:
    """Backfill on a partitioned machine, planning on ``plan`` (a ``PartitionState`` copy, updated).

    Returns the (job, partition) starts the rule allows, in candidate order.
    """
    shadow = res.shadow
    conflict = machine.conflict_mask[res.alloc]
    alloc_nodes = machine.allocated_nodes
    started: list[tuple[JobState, int]] = []
    for js in candidates:
        info = js.info
        if info.nodes > plan.free_nodes or js is skip or js.status != WAITING:
            continue
        end = now + info.walltime
        if strict:
            alloc = plan.find(info.nodes) if end < shadow else None
        elif end <= shadow:
            alloc = plan.find(info.nodes)
        else:  # ends after the shadow time: only on a partition that leaves the reserved one alone
            cands = [p for p in machine.candidates_for(info.nodes) if not (conflict >> p) & 1]
            alloc = plan.find_among(cands) if cands else None
        if alloc is None:
            continue
        plan.allocate(alloc, alloc_nodes(info.nodes))
        started.append((js, alloc))
    return started


def best_fit(candidates: Sequence[JobState], plan, machine, now: int, res: Reservation) -> list[tuple[JobState, int]]:
    """Qsim's best-fit backfilling under the EASY rule: repeatedly start the eligible job that uses
    the most nodes (then the longest walltime).  ``plan`` is updated."""
    partitioned = machine.partitioned
    conflict = machine.conflict_mask[res.alloc] if partitioned else 0
    extra = res.extra
    out: list[tuple[JobState, int]] = []
    remaining = list(candidates)
    while remaining and plan.free_nodes > 0:
        best = None
        best_key = None
        for js in remaining:
            info = js.info
            if info.nodes > plan.free_nodes or js.status != WAITING:
                continue
            end = now + info.walltime
            if end <= res.shadow:
                alloc = plan.find(info.nodes)
            elif partitioned:
                cands = [p for p in machine.candidates_for(info.nodes) if not (conflict >> p) & 1]
                alloc = plan.find_among(cands) if cands else None
            else:
                alloc = plan.find(info.nodes) if info.nodes <= extra else None
            if alloc is None:
                continue
            key = (machine.allocated_nodes(info.nodes), info.walltime)
            if best_key is None or key > best_key:
                best, best_key = (js, alloc, end), key
        if best is None:
            break
        js, alloc, end = best
        if not partitioned and end > res.shadow:
            extra -= js.info.nodes
        plan.allocate(alloc, machine.allocated_nodes(js.info.nodes))
        out.append((js, alloc))
        remaining.remove(js)
    return out


def count_strict_backfillable(candidates: Iterable[JobState], head: JobState, free: int, now: int,
                              shadow: int) -> int:
    """How many candidates (other than ``head``) fit in ``free`` now and end strictly before
    ``shadow``, each judged alone (SchedInspector's backfilling-contribution feature)."""
    count = 0
    for js in candidates:
        i = js.info
        if js is not head and i.nodes <= free and now + i.walltime < shadow:
            count += 1
    return count


__all__ = ["BACKFILLS", "BACKFILL_WORDS", "NEVER", "Reservation", "normalize_backfill", "rule_of", "busy_of", "flat_reservation", "flat_reservation_sorted", "reserve_sorted", "flat_shadow",
           "partition_reservation", "reserve", "scan_flat", "scan_flat_at", "scan_partitioned", "best_fit",
           "count_strict_backfillable"]
