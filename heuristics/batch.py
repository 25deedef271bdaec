"""Textbook batch policies: a queue priority plus a backfilling rule, on any machine.

At each scheduling pass the queue is ordered by the priority (``heuristics.priorities``, ties by
submit time then job id); jobs start in that order while each fits, and the first that does not
is the head.  With backfilling (``backfill=``, see ``heuristics.backfill``) the rest are offered
to the one backfilling kernel against the head's reservation:

* ``none``: nothing passes the head;
* ``easy`` / ``ff`` (first-fit, Qsim): the EASY rule, candidates in priority order;
* ``bf`` (best-fit, Qsim): the EASY rule, each time the eligible job using the most nodes;
* ``sjf`` (Qsim SJF backfilling): the EASY rule, candidates by walltime, shortest first;
* ``rlscheduler``: RLScheduler's strict rule (ends strictly before the shadow time, no extra
  nodes), candidates in priority order.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter

from heuristics.backfill import (best_fit, busy_of, flat_shadow, normalize_backfill, reserve, rule_of, scan_flat,
                                scan_flat_at, scan_partitioned)
from heuristics.priorities import Priority, get_priority
from rtsched.machines.flat import FLAT
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Start
from rtsched.sim.state import WAITING, JobState


@dataclass
class BatchPolicy:
    """Priority order + backfilling; never preempts."""

    priority: Priority
    backfill: str = "easy"
    preemptive = False  # class attribute, not a field (the core's Policy protocol)

    def __post_init__(self) -> None:
        self.backfill = normalize_backfill(self.backfill)
        self.name = f"{self.priority.name}+{self.backfill}"
        self._ordered = StaticOrder(self.priority)

    @property
    def live_jobs_only(self) -> bool:
        """The core's ``Policy.live_jobs_only``: True unless the order is kept across passes
        (``StaticOrder`` reads ``view.entry_log`` and looks started jobs up by id) or a subclass
        decides its own way.  FCFS takes the queue as it is, in arrival order while no job
        re-entered it, and this policy never requeues one."""
        return type(self).decide is BatchPolicy.decide and (self.priority.arrival_order or not self.priority.static)

    @property
    def flat_starts(self):
        """The core's ``Policy.flat_starts`` where this policy's pass on a flat cluster is the
        in-order one (``_FLAT_SCANS``); None otherwise, and for a subclass that decides its own way."""
        if self.backfill in _FLAT_SCANS and type(self).decide is BatchPolicy.decide:
            return self._flat_starts
        return None

    def _flat_starts(self, view: SimView) -> list[JobState]:
        """``decide``'s starts on a flat cluster as job states (``flat_pass``).  FCFS takes the
        queue as it is while no job re-entered it (``SimView.requeued``): it is in (submit, id)
        order, so the sorted copy would be the same list."""
        queue = view.queue
        if not queue:
            return []
        priority = self.priority
        if priority.arrival_order and not view.requeued:
            return flat_pass(queue, view.state.free_nodes, view.now, view.busy, self.backfill)
        if priority.static:
            order = self._ordered.update(view)
        else:
            order = priority.order(queue, view.now, view.machine.total_nodes)
        states = flat_pass(order, view.state.free_nodes, view.now, view.busy, self.backfill)
        if priority.static:
            self._ordered.will_start([js.info.id for js in states])
        return states

    def decide(self, view: SimView) -> list[Decision]:
        if not view.queue:
            return []
        if self.priority.arrival_order and not view.requeued:  # the queue is in order (_flat_starts)
            return schedule_batch(view, view.queue, self.backfill)
        if self.priority.static:
            order = self._ordered.update(view)
        else:
            order = self.priority.order(view.queue, view.now, view.machine.total_nodes)
        decisions = schedule_batch(view, order, self.backfill)
        if self.priority.static:
            self._ordered.will_start([d.job_id for d in decisions if type(d) is Start])
        return decisions


class StaticOrder:
    """The queue kept sorted by a static priority key across passes (no re-sort per pass).

    New and requeued jobs (read from ``view.entry_log`` past this structure's cursor, so passes the
    policy was not consulted at are caught up) are inserted by bisection; jobs that left the queue
    are removed the same way.  Rebuilt from scratch when a new simulation starts.
    """

    def __init__(self, priority: Priority) -> None:
        self.priority = priority
        self.run_id = None
        self.items: list = []
        self.keys: list = []
        self.started: list[int] = []
        self.cursor = 0

    def update(self, view: SimView) -> list:
        key = self.priority.textbook_key
        total = view.machine.total_nodes
        log = view.entry_log
        if view.run_id != self.run_id:
            self.run_id = view.run_id
            self.items, self.keys, self.started = [], [], []
            fresh = view.queue
        else:
            fresh = log[self.cursor:]
            for jid in self.started:
                js = view.job(jid)
                if js.status != WAITING:
                    i = bisect_left(self.keys, js.key)
                    if i < len(self.items) and self.items[i] is js:
                        del self.items[i]
                        del self.keys[i]
                        js.key = None  # a static key is recomputed the same if the job ever waits again
                        # (a tuple less per started job: 64 bytes a job on a long trace)
            self.started = []
            if len(self.items) > 2 * len(view.queue) + 64:  # jobs started by someone else: compact
                keep = [(k, js) for k, js in zip(self.keys, self.items) if js.status == WAITING]
                self.keys = [k for k, _ in keep]
                self.items = [js for _, js in keep]
        self.cursor = len(log)
        for js in fresh:
            if js.status != WAITING:
                continue
            if js.key is None:
                js.key = key(js, view.now, total)
            i = bisect_left(self.keys, js.key)
            if i < len(self.items) and self.items[i] is js:
                continue
            self.keys.insert(i, js.key)
            self.items.insert(i, js)
        return self.items

    def will_start(self, job_ids: list[int]) -> None:
        """The jobs this pass starts (dropped from the order at the next ``update``)."""
        self.started = job_ids


def schedule_batch(view: SimView, order: list, backfill: str, state=None) -> list[Decision]:
    """Start jobs of ``order`` (JobStates, highest priority first) with the given backfilling.

    Jobs start in order while each fits; the first that does not is the head, and the rest are
    offered to the backfilling kernel (``heuristics.backfill``) against its reservation.
    ``state`` is a machine-state copy to plan on (a fresh copy of the view's when None).
    """
    machine = view.machine
    if state is None and not machine.partitioned and backfill in _FLAT_SCANS:
        return _schedule_flat(view, order, backfill)
    state = state if state is not None else view.state.copy()
    now = view.now
    decisions: list[Decision] = []
    started: list[tuple[int, int, int]] = []
    alloc_nodes = machine.allocated_nodes
    blocked = -1
    for pos, js in enumerate(order):
        if js.status != WAITING:
            continue
        info = js.info
        alloc = state.find(info.nodes)
        if alloc is None:
            blocked = pos
            break
        n = alloc_nodes(info.nodes)
        state.allocate(alloc, n)
        decisions.append(Start(info.id, alloc))
        started.append((now + info.walltime, alloc, n))
    if blocked < 0 or backfill == "none" or blocked == len(order) - 1:
        return decisions
    if not machine.partitioned and state.free_nodes <= 0:  # nothing can pass the head: no reservation needed
        return decisions
    head = order[blocked].info
    busy = busy_of(view.running.values(), now, overdue_next_second=True)
    busy.extend(started)
    res = reserve(machine, head.nodes, state.free_nodes, busy, now)
    rest = order[blocked + 1:]
    if backfill == "bf":
        starts = best_fit(rest, state, machine, now, res)
    else:
        if backfill == "sjf":
            rest = sorted(rest, key=lambda js: (js.info.walltime, js.info.submit, js.info.id))
        strict = rule_of(backfill) == "strict"
        if machine.partitioned:
            starts = scan_partitioned(rest, state, machine, now, res, strict)
        else:
            jobs, free, _ = scan_flat(rest, state.free_nodes, now, res, strict)
            state.free_nodes = free
            starts = [(js, FLAT) for js in jobs]
    decisions.extend(Start(js.info.id, alloc) for js, alloc in starts)
    return decisions


_FLAT_SCANS = ("none", "easy", "ff", "rlscheduler")  # the backfillings _schedule_flat does


def _schedule_flat(view: SimView, order: list, backfill: str) -> list[Decision]:
    """``schedule_batch`` on a flat cluster for the in-order scans (``_FLAT_SCANS``): ``flat_pass``
    as decisions."""
    return [Start(js.info.id, FLAT) for js in flat_pass(order, view.state.free_nodes, view.now,
                                                         _sorted_busy(view.running), backfill)]


def flat_pass(order: list, free: int, now: int, busy: list[tuple[int, int, int]], backfill: str) -> list[JobState]:
    """The jobs of ``order`` to start now on a flat cluster with ``free`` processors, in order, for
    the in-order scans (``_FLAT_SCANS``), planning on the free processor count alone: no plan
    object, no copy of the queue.  ``busy``: (expected end, allocation, nodes) of the running
    jobs, sorted (``SimView.busy``; ``busy_of`` without its overdue rule).  It is the pass of every
    batch run on the RL papers' flat traces, once per event time (about two per job), hence the
    separate piece."""
    started: list[JobState] = []
    blocked = -1
    for pos, js in enumerate(order):
        if js.status != WAITING:
            continue
        n = js.nodes
        if n > free:
            blocked = pos
            break
        free -= n
        started.append(js)
    if blocked < 0 or backfill == "none" or blocked == len(order) - 1 or free <= 0:
        return started
    if started:  # this pass's starts join the running jobs
        busy = busy + [(now + js.walltime, FLAT, js.nodes) for js in started]
        busy.sort()
    # busy_of's overdue rule (an estimate already passed ends at now + 1; this pass's starts end
    # later) changes the list only when its earliest end is <= now
    if busy and busy[0][0] <= now:
        busy = sorted([(end if end > now else now + 1, alloc, n) for end, alloc, n in busy])
    shadow, extra = flat_shadow(order[blocked].nodes, free, busy, now)
    jobs, _, _ = scan_flat_at(islice(order, blocked + 1, None), free, now, shadow, extra, backfill == "rlscheduler")
    started.extend(jobs)
    return started


_busy_triple = attrgetter("expected_end", "alloc", "alloc_nodes")


def _sorted_busy(running: dict[int, JobState]) -> list[tuple[int, int, int]]:
    """``flat_pass``'s ``busy`` of a view's ``running`` (a view other than the core's own: a
    planning view has no ``busy``)."""
    return sorted(map(_busy_triple, running.values()))


def batch_policy(priority: str = "fcfs", backfill: str = "easy") -> BatchPolicy:
    """``batch_policy("wfp2", "ff")`` — the Mira baseline of seed 002's sweeps."""
    return BatchPolicy(get_priority(priority), backfill)
