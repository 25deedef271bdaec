"""RLScheduler's committed-head rule (seed 003's scheduling loop) as a policy of the one core.

Seed 003's simulator schedules differently from a textbook batch scheduler, in ways that move its
published numbers (Table V) a lot.  Reproducing them needs the same *decisions*, not a second
simulator, so the authors' rule is a policy here, with each of their quirks a named option:

* **Committed head.** At a decision the whole queue is sorted by the priority key and the head is
  *committed*: nothing else is chosen until it starts.  If it fits it starts at once and the next
  head is chosen at the same time; if not, time moves event by event until it fits.  Who picks
  the head is pluggable (``CommittedHead.run(view, pick)``): a priority key here, a trained agent
  in ``rtsched.rl``.
* **Backfilling** (``backfill=``, through the one kernel ``heuristics.backfill``):

  - ``"none"``: nothing else starts while the head waits;
  - ``"rlscheduler"`` (the authors' rule): when the head blocks, its reservation is computed once
    (running jobs by requested end, their stale estimates included); then at the blocking time
    and after every event a FCFS scan of the queue starts any job that fits now and ends strictly
    before the shadow time (the strict rule);
  - ``"easy"``: the EASY rule on the committed head, the reservation recomputed at each pass;
    FCFS scan.

* **Queue order and ties**: the queue is one list, sorted in place (stable sort) by the priority
  key at each pick and by submit time before each backfilling scan, so equal keys keep the order
  earlier sorts left (``heuristics.priorities`` documents the keys).
* **Event order**: run it in ``Simulator(..., event_order="rlscheduler")`` (events one at a time,
  an arrival before a completion at equal times, a pass after each event) to get seed 003's
  numbers; it runs in the design order too.

A flat cluster is a node counter here (no state copy: this loop is the RL environments' hot path);
on a partitioned machine (Mira) "fits" means a free partition exists.
"""
from __future__ import annotations

from bisect import insort_right
from operator import attrgetter

from heuristics.backfill import (Reservation, flat_reservation_sorted, normalize_backfill, partition_reservation,
                                 scan_flat, scan_partitioned)
from heuristics.priorities import Priority, get_priority
from rtsched.machines.flat import FLAT, FlatState
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Start

COMMITTED_BACKFILLS = ("none", "rlscheduler", "easy")

_submit_of = attrgetter("info.submit")  # FCFS key of a JobState (C-level getter: sorts are hot)
_cached_key = attrgetter("key")


class CommittedHead:
    """The committed-head loop with optional backfilling, independent of who picks the head.

    Use: after each ``Simulator.advance()`` call ``sync(view)`` once, then ``run(view, pick)`` (any
    number of times at the same time point).  ``pick(queue, view)`` returns the job to commit, or
    None to stop and return control (an agent's turn).

    ``q`` mirrors the simulator's queue in the authors' list order.  With ``fcfs_queue=True`` the
    list is kept in arrival (FCFS) order and never re-sorted (the RL environments).
    """

    __slots__ = ("backfill", "fcfs_queue", "run_id", "q", "head", "reservation", "n_started", "partitioned",
                 "machine", "_scanned_free", "_new", "_low", "_fcfs_sorted", "_strict", "_pass")

    def __init__(self, backfill="none", *, fcfs_queue: bool = False) -> None:
        self.backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS)
        self._strict = self.backfill == "rlscheduler"
        self.fcfs_queue = fcfs_queue
        self.run_id = None
        self.q: list = []
        self.head = None
        self.reservation: Reservation | None = None  # the strict rule's, fixed while the head waits
        self.n_started = 0
        self.machine = None
        self.partitioned = False
        # Incremental strict scans (flat): the free nodes left after the last scan for the current
        # head, and the jobs that entered since.  While no job ended, free nodes can only have
        # shrunk and time only grown, so the older jobs still cannot start.
        self._scanned_free = -1
        self._new: list = []
        # The fewest processors a job that did not fit at the scans for the current head asks for
        # (``scan_flat``'s ``low``; 0: unknown): with fewer free and no newcomer, the strict rule
        # starts nothing, and the scan is skipped.
        self._low = 0
        # Whether q is known to be in submit order (then the stable FCFS sort is the identity:
        # arrivals are appended in submit order and removals keep the order).
        self._fcfs_sorted = fcfs_queue
        # (free nodes, partition plan) of the pass in progress, for ``state_now`` during a pick
        self._pass = None

    def state_now(self, view: SimView):
        """The machine state a ``pick`` called from ``run`` must see: the view's state less the jobs
        this pass has started already (their ``Start`` decisions reach the simulator only when
        ``run`` returns).  A trained agent's "can run now" and free-node features read it, so
        that a second pick in the same pass sees what a fresh scheduling point would show (the
        environments' agents always decide after the earlier starts were applied)."""
        p = self._pass
        st = view.state
        if p is None:
            return st
        free, plan = p
        if plan is not None:
            return plan
        return st if free == st.free_nodes else FlatState(st.total, free)

    def sync(self, view: SimView) -> bool:
        """Take in the jobs that entered the queue; True when a new simulation started."""
        if view.run_id != self.run_id:
            self.run_id = view.run_id
            self.machine = view.machine
            self.partitioned = view.machine.partitioned
            self.q = list(view.queue)
            self.head = None
            self.reservation = None
            self.n_started = 0
            self._scanned_free = -1
            self._new = []
            self._low = 0
            self._fcfs_sorted = self.fcfs_queue
            return True
        if view.entered:
            self.q.extend(view.entered)
            if self._scanned_free >= 0:
                self._new.extend(view.entered)
        return False

    def commit(self, js) -> None:
        """Commit ``js`` (a waiting job in ``q``) as the head; the next ``run`` starts or waits for it."""
        self.head = js
        self.reservation = None
        self._scanned_free = -1
        self._low = 0

    # ------------------------------------------------------------------------------ one pass
    def run(self, view: SimView, pick) -> list[Decision]:
        """Start the committed head (and the next ones) while they fit, then backfill around the
        one that does not; ``pick`` chooses each new head.

        One piece on purpose (about 100 lines, above the 80-line rule of thumb): it runs once per event in
        the RL environments, and writing the head pick and the flat backfilling pass out here
        instead of calling helpers was part of the envspeed gain (docs/benchmarks.md, "Picking
        environment with backfilling past 10x": about 1 us of 14.7 us per step together with the
        driver loop's other inlining).  Its stages, in order: the skippable strict-rule pass, the
        head pick and the starts while they fit, the reservation, the backfilling scan."""
        if self._scanned_free >= 0:  # the head waits under the strict rule on a flat cluster
            free = view.state.free_nodes
            if 0 <= free <= self._scanned_free:
                # No job ended since the last scan for this head (free nodes only shrank, time only
                # grew): the head still does not fit and the older jobs still cannot start; only
                # the newcomers can.  (The RL environments' hot path: most passes follow an arrival.)
                out: list[Decision] = []
                cands = self._new
                if cands:
                    self._new = []
                    jobs, free, low = scan_flat(cands, free, view.now, self.reservation, True, self.head)
                    if low < self._low:
                        self._low = low
                    if jobs:
                        self._start_flat(jobs, out)
                self._scanned_free = free
                return out
            if free < self._low and free < self.head.info.nodes and not self._new:
                # A job ended, but the head still does not fit and the scan would start nothing
                # (see the full pass below: most passes after a completion).
                self._scanned_free = free
                return []
        partitioned = self.partitioned
        plan = view.state.copy() if partitioned else None  # flat: a node counter is enough
        free = view.state.free_nodes
        out: list[Decision] = []
        q = self.q
        now = view.now
        started: list[tuple[int, int, int]] = []
        while True:
            head = self.head
            if head is None:  # ask ``pick`` for a head and commit it (None: empty queue, or it passes)
                if not q:
                    return out
                self._pass = (free, plan)
                head = pick(q, view)
                self._pass = None
                self._fcfs_sorted = self.fcfs_queue  # a priority pick may have re-sorted q
                if head is None:
                    return out
                self.commit(head)
            info = head.info
            if partitioned:
                alloc = plan.find(info.nodes)
                if alloc is None:
                    break
                n = view.machine.allocated_nodes(info.nodes)
                plan.allocate(alloc, n)
            else:
                n = info.nodes
                if n > free:
                    break
                alloc = FLAT
                free -= n
            out.append(Start(info.id, alloc))
            q.remove(head)
            self.head = None
            self._scanned_free = -1
            self.n_started += 1
            started.append((now + info.walltime, alloc, n))
        if self.backfill == "none":
            return out
        if partitioned:
            self._backfill_partitioned(view, head, plan, started, out)
            return out
        # backfilling on a flat cluster: the strict rule's reservation is kept while the head waits,
        # EASY's recomputed at every pass
        strict = self._strict
        res = self.reservation if strict else None
        if res is None:
            res = flat_reservation_sorted(info.nodes, free, self._busy(view, started), now)
            if strict:
                self.reservation = res
        if free < self._low and not self._new:  # (strict only: else _low stays 0)
            # Every job in q either ends after the (fixed) shadow time, or did not fit at an earlier
            # scan for this head and asks for more than is free now: the scan would start nothing.
            self._scanned_free = free
            return out
        if not self._fcfs_sorted:
            self._sort_fcfs()
        self._new = []  # a full scan (the incremental one is at the top)
        if free > 0:
            jobs, free, low = scan_flat(self.q, free, now, res, strict, head)
            if jobs:
                self._start_flat(jobs, out)
        else:
            low = 0
        if strict:
            self._scanned_free = free
            self._low = low
        else:
            self._scanned_free = -1
        return out

    def _busy(self, view: SimView, started) -> list[tuple[int, int, int]]:
        """(expected end, allocation, nodes) of the running jobs and of this pass's ``started``,
        sorted: the core's ``view.busy`` itself (read only) when nothing started."""
        if not started:
            return view.busy
        busy = view.busy + started
        busy.sort()
        return busy

    def _sort_fcfs(self) -> None:
        if not self._fcfs_sorted:
            self.q.sort(key=_submit_of)
            self._fcfs_sorted = True

    def _start_flat(self, jobs: list, out: list) -> None:
        """Carry out a flat scan's starts (decisions, queue)."""
        q = self.q
        if len(jobs) <= 8:  # list.remove is a C-level identity scan: cheaper than a rebuild
            for js in jobs:
                q.remove(js)
                out.append(Start(js.info.id, FLAT))
        else:
            gone = set(map(id, jobs))
            self.q = [js for js in q if id(js) not in gone]
            out += [Start(js.info.id, FLAT) for js in jobs]
        self.n_started += len(jobs)

    def _backfill_partitioned(self, view: SimView, head, plan, started, out: list) -> None:
        machine = view.machine
        now = view.now
        strict = self.backfill == "rlscheduler"
        res = self.reservation if strict else None
        if res is None:
            res = partition_reservation(machine, head.info.nodes, self._busy(view, started), now)
            if strict:
                self.reservation = res
        self._sort_fcfs()
        starts = scan_partitioned(self.q, plan, machine, now, res, strict, head)
        if starts:
            gone = set(id(js) for js, _ in starts)
            self.q = [js for js in self.q if id(js) not in gone]
            out.extend(Start(js.info.id, alloc) for js, alloc in starts)
            self.n_started += len(starts)


# ---------------------------------------------------------------------------------- the policy
class CommittedHeadPolicy:
    """A priority scheduler in the authors' committed-head rule (a core ``Policy``).

    Run it in ``Simulator(..., event_order="rlscheduler")`` to get seed 003's numbers, e.g.
    ``CommittedHeadPolicy("sjf", backfill="rlscheduler")``.  ``priority`` is a name or a
    ``Priority`` of ``heuristics.priorities``.
    """

    preemptive = False

    def __init__(self, priority: "str | Priority" = "fcfs", backfill="none") -> None:
        self.priority = get_priority(priority)
        self.driver = CommittedHead(backfill)
        self.backfill = self.driver.backfill
        self.name = f"{self.priority.name}+{self.backfill}@committed"
        self._key = self.priority.key
        self._total = 0  # machine nodes, for keys that use it (Cobalt's wfp2)
        # Static keys, own driver: q stays sorted by key between picks except for the jobs appended
        # since the last pick (``_tail``) or after a backfilling pass re-sorted it by submit time.
        self._key_sorted = False
        self._tail = 0

    def decide(self, view: SimView) -> list[Decision]:
        d = self.driver
        if d.sync(view):
            self.prepare(view)
            fresh = view.queue
            self._key_sorted = False
        else:
            fresh = view.entered
        if self.priority.static:
            self.cache_keys(fresh)
            self._tail += len(fresh)
            pick = self._pick_tracked
        else:
            pick = self.pick
        if not d.q and d.head is None:
            return []
        return d.run(view, pick)

    def prepare(self, view: SimView) -> None:
        """Per-simulation set-up (called on the first pass of a new simulation)."""
        self._total = view.machine.total_nodes

    def cache_keys(self, jobs) -> None:
        """Compute the static keys of ``jobs`` (for users that drive ``pick`` themselves)."""
        if self.priority.static:
            key = self._key
            total = self._total
            for js in jobs:
                js.key = key(js, 0, total)  # the job state's free slot for a policy's cached key

    def pick(self, q: list, view: SimView):
        """Sort ``q`` in place (stable) by the priority and return its first job."""
        if len(q) < 2:  # nothing to order
            return q[0]
        if self.priority.static:
            q.sort(key=_cached_key)
        else:
            key = self._key
            now = view.now
            total = self._total
            q.sort(key=lambda js: key(js, now, total))
        return q[0]

    def _pick_tracked(self, q: list, view: SimView):
        """``pick`` with a static key for this policy's own driver, without re-sorting what is
        sorted already: the jobs appended since the last pick are inserted after their equal keys
        (``insort_right``), which is exactly where the authors' stable full sort puts them."""
        tail = self._tail
        self._tail = 0
        if not self._key_sorted or self.driver._fcfs_sorted or tail * 4 > len(q):
            q.sort(key=_cached_key)
            self._key_sorted = True
        elif tail:
            new = q[-tail:]
            del q[-tail:]
            for js in new:
                insort_right(q, js, key=_cached_key)
        return q[0]


__all__ = ["COMMITTED_BACKFILLS", "CommittedHead", "CommittedHeadPolicy"]
