"""Batch policies: a queue priority plus a backfilling rule, on any machine.

Backfilling rules (``backfill=``):

* ``none``: start jobs in priority order while the head fits; stop at the first that does not.
* ``easy`` / ``ff`` (first-fit, Qsim): reserve the earliest start for the blocked head job
  (walltime estimates), then scan the rest in priority order and start any job that fits now and
  does not delay the reservation: it ends (now + walltime) by the shadow time, or it uses
  processors the head will not need (flat: ``extra`` nodes; Mira: a partition that does not
  conflict with the reserved one).  ``easy`` and ``ff`` are the same rule.
* ``bf`` (best-fit, Qsim): like ``ff`` but each time picks, among the eligible jobs, the one that
  uses the most nodes (then longest walltime), filling the hole best.
* ``sjf`` (Qsim SJF backfilling): like ``ff`` but candidates are scanned by walltime, shortest first.
* ``rlscheduler``: RLScheduler's rule (seed 003): FCFS scan, a job starts iff it fits now and
  now + walltime < shadow time (strict), no extra-nodes rule.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from heuristics.priorities import Priority, get_priority
from heuristics.reservation import flat_reservation, partition_reservation
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Start
from rtsched.sim.state import WAITING

BACKFILLS = ("none", "easy", "ff", "bf", "sjf", "rlscheduler")


@dataclass
class BatchPolicy:
    """Priority order + backfilling; never preempts."""

    priority: Priority
    backfill: str = "easy"

    def __post_init__(self) -> None:
        if self.backfill not in BACKFILLS:
            raise ValueError(f"unknown backfilling {self.backfill!r}; choose from {', '.join(BACKFILLS)}")
        self.name = f"{self.priority.name}+{self.backfill}"
        self._ordered = StaticOrder(self.priority)

    def decide(self, view: SimView) -> list[Decision]:
        if not view.queue:
            return []
        if self.priority.static:
            order = self._ordered.update(view)
        else:
            order = self.priority.order(view.queue, view.now, view.machine.total_nodes)
        decisions = schedule_batch(view, order, self.backfill)
        if self.priority.static:
            self._ordered.will_start(decisions)
        return decisions


class StaticOrder:
    """The queue kept sorted by a static priority key across passes (no re-sort per pass).

    New and requeued jobs (read from ``view.entry_log`` past this structure's cursor, so passes the
    policy was not consulted at are caught up) are inserted by bisection; jobs that left the queue
    are removed the same way.  Rebuilt from scratch when a new simulation starts.
    """

    def __init__(self, priority: Priority) -> None:
        self.priority = priority
        self.sim = None
        self.items: list = []
        self.keys: list = []
        self.started: list[int] = []
        self.cursor = 0

    def update(self, view: SimView) -> list:
        key = self.priority.key
        total = view.machine.total_nodes
        log = view.entry_log
        if view.sim is not self.sim:
            self.sim = view.sim
            self.items, self.keys, self.started = [], [], []
            fresh = view.queue
        else:
            fresh = log[self.cursor:]
            by_id = view.sim.by_id
            for jid in self.started:
                js = by_id[jid]
                if js.status != WAITING:
                    i = bisect_left(self.keys, js.key)
                    if i < len(self.items) and self.items[i] is js:
                        del self.items[i]
                        del self.keys[i]
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

    def will_start(self, decisions: list[Decision]) -> None:
        self.started = [d.job_id for d in decisions if type(d) is Start]


def busy_list(view: SimView) -> list[tuple[int, int, int]]:
    """(expected end s, alloc, nodes) of every job holding resources."""
    now = view.now
    out = []
    for js in view.running.values():
        end = js.expected_end if js.expected_end > now else now + 1
        out.append((end, js.alloc, js.alloc_nodes))
    return out


def schedule_batch(view: SimView, order: list, backfill: str, state=None) -> list[Decision]:
    """Start jobs of ``order`` (JobStates, highest priority first) with the given backfilling.

    ``state`` is a machine-state copy to plan on (a fresh copy of the view's when None).
    """
    machine = view.machine
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
    head = order[blocked].info
    busy = busy_list(view)
    busy.extend(started)
    partitioned = machine.partitioned
    if partitioned:
        res = partition_reservation(machine, head.nodes, busy, now)
    else:
        res = flat_reservation(head.nodes, state.free_nodes, busy, now)
    shadow, extra = res.shadow, res.extra
    rest = order[blocked + 1:]
    if backfill == "sjf":
        rest = sorted(rest, key=lambda js: (js.info.walltime, js.info.submit, js.info.id))
    strict = backfill == "rlscheduler"
    if backfill == "bf":
        return decisions + _best_fit(view, rest, state, res)
    conflict = machine.conflict_mask if partitioned else None
    for js in rest:
        info = js.info
        if info.nodes > state.free_nodes or js.status != WAITING:
            continue
        end = now + info.walltime
        if strict:
            if end >= shadow:
                continue
            alloc = state.find(info.nodes)
        elif end <= shadow:
            alloc = state.find(info.nodes)
        elif partitioned:
            # Ends after the shadow time: only on a partition that leaves the reserved one alone.
            cands = [p for p in machine.candidates_for(info.nodes) if not (conflict[res.alloc] >> p) & 1]
            alloc = state.find_among(cands) if cands else None
        else:
            if info.nodes > extra:
                continue
            alloc = state.find(info.nodes)
            if alloc is not None:
                extra -= info.nodes
        if alloc is None:
            continue
        state.allocate(alloc, alloc_nodes(info.nodes))
        decisions.append(Start(info.id, alloc))
        if state.free_nodes <= 0:
            break
    return decisions


def _best_fit(view: SimView, rest: list, state, res) -> list[Decision]:
    machine = view.machine
    now = view.now
    conflict = machine.conflict_mask if machine.partitioned else None
    extra = res.extra
    out: list[Decision] = []
    remaining = list(rest)
    while remaining and state.free_nodes > 0:
        best = None
        best_key = None
        for js in remaining:
            info = js.info
            if info.nodes > state.free_nodes:
                continue
            end = now + info.walltime
            if end <= res.shadow:
                alloc = state.find(info.nodes)
            elif machine.partitioned:
                cands = [p for p in machine.candidates_for(info.nodes) if not (conflict[res.alloc] >> p) & 1]
                alloc = state.find_among(cands) if cands else None
            else:
                alloc = state.find(info.nodes) if info.nodes <= extra else None
            if alloc is None:
                continue
            key = (machine.allocated_nodes(info.nodes), info.walltime)
            if best_key is None or key > best_key:
                best, best_key = (js, alloc, end), key
        if best is None:
            break
        js, alloc, end = best
        if not machine.partitioned and end > res.shadow:
            extra -= js.info.nodes
        state.allocate(alloc, machine.allocated_nodes(js.info.nodes))
        out.append(Start(js.info.id, alloc))
        remaining.remove(js)
    return out


def batch_policy(priority: str = "fcfs", backfill: str = "easy") -> BatchPolicy:
    """``batch_policy("wfp2", "ff")`` — the Mira baseline of seed 002's sweeps."""
    return BatchPolicy(get_priority(priority), backfill)
