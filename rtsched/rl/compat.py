"""RLScheduler compatibility mode: the authors' scheduling loop as a policy of the one core simulator.

Seed 003's simulator (SchedGym) differs from a textbook batch scheduler in ways that move its
published numbers (Table V) a lot, so reproducing them needs the same *decision* semantics, not a
second simulator.  This module provides them as a policy for ``rtsched.sim.core.Simulator`` run
with ``event_order="rlscheduler"`` (events one at a time, an arrival before a completion at equal
times, a scheduling pass after each event):

* **Committed head.** At a decision the whole queue is sorted by the priority key and the head is
  *committed*: nothing else is chosen until it starts.  If it fits it starts at once and the next
  head is chosen at the same time; if not, time moves event by event until it fits.
* **Backfilling** (``backfill=``):

  - ``"none"``: nothing else starts while the head waits;
  - ``"rlscheduler"`` (the authors' rule): when the head blocks, its shadow time is computed once
    (running jobs by requested end, adding their nodes until the head fits); then at the blocking
    time and after every event a FCFS scan of the queue starts any job that fits now and ends
    (now + requested time) strictly before the shadow time; no extra-nodes rule;
  - ``"easy"``: EASY semantics on the committed head: the reservation (shadow time and extra
    nodes) is recomputed at each pass, a job may start if it ends by the shadow time or uses only
    extra nodes (on Mira: a partition that leaves the reserved one alone); FCFS scan.

* **Queue order and ties** follow the authors' code: the queue is one list, sorted in place
  (stable sort) by the priority key at each decision and by submit time before each backfilling
  scan, so equal keys keep the order earlier sorts left.
* **Priority keys** (lowest first; seed 003 Table III, seed 000 Table 3), with s = submit time,
  r = requested time, n = requested nodes, w = now − s: ``fcfs`` s; ``lcfs`` −s; ``sjf`` (r, s);
  ``smallest`` (n, s); ``saf`` (r·n, s); ``srf`` (r/n, s); ``f1`` log10(r)·n + 870·log10(s) (r or
  s ≤ 0 → 0.1); ``wfp3`` −(w/r)³·n; ``unicep`` −(w + 1e-15)/(log2(n + 1e-15)·r).  The ``-authors``
  variants of WFP3 and UNICEP reproduce the defect of the authors' code, which takes the wait of a
  queued job as its unset start time (−1) minus s, i.e. w = −(s + 1): these are the keys that
  produced the published WFP3/UNICEP numbers.

A flat cluster is a node counter; on a partitioned machine (Mira) "fits" means a free partition
exists and the shadow time comes from ``heuristics.reservation.partition_reservation``.
"""
from __future__ import annotations

import math
from bisect import insort_right
from dataclasses import dataclass
from operator import attrgetter
from typing import Callable

from rtsched.machines.flat import FLAT
from rtsched.sim.core import SimView, Simulator
from rtsched.sim.decisions import Decision, Start

PICK_BACKFILLS = ("none", "rlscheduler", "easy")


def normalize_backfill(backfill) -> str:
    """``True`` → ``"rlscheduler"``, ``False``/``None`` → ``"none"``; names are checked."""
    if backfill is True:
        return "rlscheduler"
    if backfill is False or backfill is None:
        return "none"
    b = str(backfill).lower()
    if b in ("rl", "strict"):
        b = "rlscheduler"
    if b == "off":
        b = "none"
    if b not in PICK_BACKFILLS:
        raise ValueError(f"unknown backfilling {backfill!r}; choose from {', '.join(PICK_BACKFILLS)}")
    return b


# ---------------------------------------------------------------------------------- priority keys
def _fcfs(js, now):
    return js.info.submit


def _lcfs(js, now):
    return -js.info.submit


def _sjf(js, now):
    i = js.info
    return (i.walltime, i.submit)


def _smallest(js, now):
    i = js.info
    return (i.nodes, i.submit)


def _saf(js, now):
    i = js.info
    return (i.walltime * i.nodes, i.submit)


def _srf(js, now):
    i = js.info
    return (i.walltime / i.nodes, i.submit)


def _f1(js, now):
    i = js.info
    r = i.walltime if i.walltime > 0 else 0.1
    s = i.submit if i.submit > 0 else 0.1
    return math.log10(r) * i.nodes + 870 * math.log10(s)


def _wfp3(js, now):
    i = js.info
    return -((float(now - i.submit) / i.walltime) ** 3) * i.nodes


def _wfp3_authors(js, now):
    i = js.info
    return -((float(-1 - i.submit) / i.walltime) ** 3) * i.nodes


def _unicep(js, now):
    i = js.info
    return -(now - i.submit + 1e-15) / (math.log2(i.nodes + 1e-15) * i.walltime)


def _unicep_authors(js, now):
    i = js.info
    return -(-1 - i.submit + 1e-15) / (math.log2(i.nodes + 1e-15) * i.walltime)


@dataclass(frozen=True)
class CompatPriority:
    """A priority for the compatibility mode: ``key(job_state, now)``, lowest first; ``static`` keys
    do not depend on ``now`` and are computed once per job."""

    name: str
    key: Callable
    static: bool


COMPAT_PRIORITIES: dict[str, CompatPriority] = {p.name: p for p in (
    CompatPriority("fcfs", _fcfs, True),
    CompatPriority("lcfs", _lcfs, True),
    CompatPriority("sjf", _sjf, True),
    CompatPriority("smallest", _smallest, True),
    CompatPriority("saf", _saf, True),
    CompatPriority("srf", _srf, True),
    CompatPriority("f1", _f1, True),
    CompatPriority("wfp3", _wfp3, False),
    CompatPriority("unicep", _unicep, False),
    CompatPriority("wfp3-authors", _wfp3_authors, True),
    CompatPriority("unicep-authors", _unicep_authors, True),
)}


def get_compat_priority(priority) -> CompatPriority:
    """A CompatPriority from a name, a CompatPriority, or a ``heuristics`` Priority (any rtsched
    priority policy: its key gets the machine size as third argument)."""
    if isinstance(priority, CompatPriority):
        return priority
    if isinstance(priority, str):
        name = priority.lower().replace("_", "-")
        if name in COMPAT_PRIORITIES:
            return COMPAT_PRIORITIES[name]
        from heuristics.priorities import get_priority  # other rtsched priorities (Cobalt utilities, ...)

        try:
            priority = get_priority(name)
        except ValueError:
            raise ValueError(f"unknown priority {priority!r}; choose from {', '.join(COMPAT_PRIORITIES)} or a "
                             "heuristics priority name") from None
    key = getattr(priority, "key", None)
    if key is None or not hasattr(priority, "static"):
        raise TypeError(f"not a priority: {priority!r}")
    total_holder: list[int] = [0]

    def wrapped(js, now, _key=key):
        return _key(js, now, total_holder[0])

    cp = CompatPriority(priority.name, wrapped, bool(priority.static))
    object.__setattr__(cp, "_total_holder", total_holder)
    return cp


# ---------------------------------------------------------------------------------- the mechanism
class CommittedHead:
    """The committed-head scheduling loop with optional backfilling, independent of who picks the
    head (a priority key, an RL agent, an inspected priority).

    Use: after each ``Simulator.advance()`` call ``sync(view)`` once, then ``run(view, pick)`` (any
    number of times at the same time point).  ``pick(queue, view)`` returns the job to commit, or
    None to stop and return control (an agent's turn; see ``needs_pick``).

    ``q`` mirrors the simulator's queue in the authors' list order.  With ``fcfs_queue=True`` the
    list is kept in arrival (FCFS) order and never re-sorted (the RL environments).
    """

    __slots__ = ("backfill", "fcfs_queue", "sim", "q", "head", "shadow", "n_started", "partitioned",
                 "machine", "on_start", "_scanned_free", "_new", "_fcfs_sorted")

    def __init__(self, backfill="none", *, fcfs_queue: bool = False) -> None:
        self.backfill = normalize_backfill(backfill)
        self.fcfs_queue = fcfs_queue
        self.sim = None
        self.q: list = []
        self.head = None
        self.shadow = None
        self.n_started = 0
        self.machine = None
        self.partitioned = False
        self.on_start = None  # optional callback(js, now, backfilled: bool)
        # Incremental backfilling scans (strict rule, flat): the free nodes left after the last scan
        # for the current head, and the jobs that entered since.  While no job ended, free nodes
        # can only have shrunk and time only grown, so the older jobs still cannot start.
        self._scanned_free = -1
        self._new: list = []
        # Whether q is known to be in submit order (then the stable FCFS sort is the identity:
        # arrivals are appended in submit order and removals keep the order).
        self._fcfs_sorted = fcfs_queue

    def sync(self, view: SimView) -> bool:
        """Take in the jobs that entered the queue; True when a new simulation started."""
        if view.sim is not self.sim:
            self.sim = view.sim
            self.machine = view.machine
            self.partitioned = view.machine.partitioned
            self.q = list(view.queue)
            self.head = None
            self.shadow = None
            self.n_started = 0
            self._scanned_free = -1
            self._new = []
            self._fcfs_sorted = self.fcfs_queue
            return True
        if view.entered:
            self.q.extend(view.entered)
            if self._scanned_free >= 0:
                self._new.extend(view.entered)
        return False

    @property
    def needs_pick(self) -> bool:
        """True when no head is committed and jobs wait: the next ``run`` would call ``pick``."""
        return self.head is None and bool(self.q)

    def commit(self, js) -> None:
        """Commit ``js`` (a waiting job in ``q``) as the head; the next ``run`` starts or waits for it."""
        self.head = js
        self.shadow = None
        self._scanned_free = -1

    def release_head(self) -> None:
        """Un-commit the head (SchedInspector's reject): it stays queued."""
        self.head = None
        self.shadow = None
        self._scanned_free = -1

    # ------------------------------------------------------------------------------ one pass
    def _pick_head(self, view: SimView, pick):
        """Ask ``pick`` for a head and commit it; None when the queue is empty or ``pick`` passes."""
        if not self.q:
            return None
        head = pick(self.q, view)
        self._fcfs_sorted = self.fcfs_queue  # a priority pick may have re-sorted q
        if head is not None:
            self.commit(head)
        return head

    def run(self, view: SimView, pick) -> list[Decision]:
        if self.partitioned:
            return self._run_partitioned(view, pick)
        out: list[Decision] = []
        q = self.q
        now = view.now
        free = view.state.free_nodes
        started: list[tuple[int, int, int]] = []
        on_start = self.on_start
        while True:
            head = self.head or self._pick_head(view, pick)
            if head is None:
                break
            info = head.info
            n = info.nodes
            if n <= free:
                free -= n
                out.append(Start(info.id, FLAT))
                q.remove(head)
                self.head = None
                self._scanned_free = -1
                self.n_started += 1
                started.append((now + info.walltime, FLAT, n))
                if on_start is not None:
                    on_start(head, now, False)
                continue
            if self.backfill != "none":
                self._backfill_flat(view, head, free, started, out)
            break
        return out

    def _busy(self, view: SimView, started) -> list[tuple[int, int, int]]:
        busy = [(js.expected_end, js.alloc, js.alloc_nodes) for js in view.running.values()]
        if started:
            busy.extend(started)
        return busy

    def _backfill_flat(self, view: SimView, head, free: int, started, out: list) -> None:
        now = view.now
        need = head.info.nodes
        extra = 0
        if self.backfill == "rlscheduler":
            shadow = self.shadow
            if shadow is None:
                busy = self._busy(view, started)
                busy.sort()
                shadow = now
                acc = free
                for end, _a, n in busy:
                    acc += n
                    shadow = end
                    if acc >= need:
                        break
                self.shadow = shadow
            strict = True
        else:  # easy: recomputed at every pass
            from heuristics.reservation import flat_reservation

            res = flat_reservation(need, free, self._busy(view, started), now)
            shadow, extra = res.shadow, res.extra
            strict = False
        q = self.q
        if not self._fcfs_sorted:
            q.sort(key=_submit_of)
            self._fcfs_sorted = True
        if strict and 0 <= free <= self._scanned_free:
            # No job ended since the last scan for this head: only the newcomers can start.
            cands = self._new
            self._new = []
            if free > 0 and cands:
                started_now = self._scan(cands, head, now, free, shadow, True, 0, out)
                if started_now:
                    free -= self._drop(started_now)
            self._scanned_free = free
            return
        self._new = []
        if free <= 0:
            self._scanned_free = free if strict else -1
            return
        started_now = self._scan(q, head, now, free, shadow, strict, extra, out)
        if started_now:
            free -= self._drop(started_now)
        self._scanned_free = free if strict else -1

    def _drop(self, started: list) -> int:
        """Take the backfilled jobs out of ``q``; returns the nodes they took."""
        q = self.q
        if len(started) <= 8:  # list.remove is a C-level identity scan: cheaper than a rebuild
            for js in started:
                q.remove(js)
        else:
            gone = set(map(id, started))
            self.q = [js for js in q if id(js) not in gone]
        return sum(js.info.nodes for js in started)

    def _scan(self, cands, head, now, free, shadow, strict, extra, out) -> list:
        """FCFS backfilling scan of ``cands``; appends Starts to ``out``, returns the started jobs."""
        started = []
        on_start = self.on_start
        for js in cands:
            info = js.info
            n = info.nodes
            if n > free or js is head:
                continue
            end = now + info.walltime
            if strict:
                if end >= shadow:
                    continue
            elif end > shadow:
                if n > extra:
                    continue
                extra -= n
            free -= n
            out.append(Start(info.id, FLAT))
            started.append(js)
            self.n_started += 1
            if on_start is not None:
                on_start(js, now, True)
            if free <= 0:
                break
        return started

    # ------------------------------------------------------------------------------ Mira
    def _run_partitioned(self, view: SimView, pick) -> list[Decision]:
        machine = view.machine
        plan = view.state.copy()
        out: list[Decision] = []
        q = self.q
        now = view.now
        started: list[tuple[int, int, int]] = []
        on_start = self.on_start
        while True:
            head = self.head or self._pick_head(view, pick)
            if head is None:
                break
            info = head.info
            alloc = plan.find(info.nodes)
            if alloc is not None:
                n = machine.allocated_nodes(info.nodes)
                plan.allocate(alloc, n)
                out.append(Start(info.id, alloc))
                q.remove(head)
                self.head = None
                self.n_started += 1
                started.append((now + info.walltime, alloc, n))
                if on_start is not None:
                    on_start(head, now, False)
                continue
            if self.backfill != "none":
                self._backfill_partitioned(view, head, plan, started, out)
            break
        return out

    def _backfill_partitioned(self, view: SimView, head, plan, started, out: list) -> None:
        from heuristics.reservation import partition_reservation

        machine = view.machine
        now = view.now
        if self.backfill == "rlscheduler":
            if self.shadow is None:
                res = partition_reservation(machine, head.info.nodes, self._busy(view, started), now)
                self.shadow = (res.shadow, res.alloc)
            shadow, reserved = self.shadow
            strict = True
        else:
            res = partition_reservation(machine, head.info.nodes, self._busy(view, started), now)
            shadow, reserved = res.shadow, res.alloc
            strict = False
        q = self.q
        if not self._fcfs_sorted:
            q.sort(key=_submit_of)
            self._fcfs_sorted = True
        conflict = machine.conflict_mask
        keep = []
        on_start = self.on_start
        for js in q:
            info = js.info
            if js is head or info.nodes > plan.free_nodes:
                keep.append(js)
                continue
            end = now + info.walltime
            if strict:
                alloc = plan.find(info.nodes) if end < shadow else None
            elif end <= shadow:
                alloc = plan.find(info.nodes)
            else:
                cands = [p for p in machine.candidates_for(info.nodes) if not (conflict[reserved] >> p) & 1]
                alloc = plan.find_among(cands) if cands else None
            if alloc is None:
                keep.append(js)
                continue
            plan.allocate(alloc, machine.allocated_nodes(info.nodes))
            out.append(Start(info.id, alloc))
            self.n_started += 1
            if on_start is not None:
                on_start(js, now, True)
        self.q = keep


_submit_of = attrgetter("info.submit")  # FCFS key of a JobState (C-level getter: sorts are hot)


# ---------------------------------------------------------------------------------- the policy
class CommittedHeadPolicy:
    """A priority scheduler in the authors' committed-head semantics (a core ``Policy``).

    Run it in ``Simulator(..., event_order="rlscheduler")`` to get seed 003's numbers, e.g.
    ``CommittedHeadPolicy("sjf", backfill="rlscheduler")``.
    """

    def __init__(self, priority="fcfs", backfill="none") -> None:
        self.priority = get_compat_priority(priority)
        self.driver = CommittedHead(backfill)
        self.backfill = self.driver.backfill
        self.name = f"{self.priority.name}+{self.backfill}@committed"
        self._key = self.priority.key
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
            key = self._key
            for js in fresh:
                js.key = key(js, 0)  # the job state's free slot for a policy's cached key
            self._tail += len(fresh)
            pick = self._pick_tracked
        else:
            pick = self._pick
        if not d.q and d.head is None:
            return []
        return d.run(view, pick)

    def prepare(self, view: SimView) -> None:
        """Per-simulation set-up (called on the first pass of a new simulation)."""
        holder = getattr(self.priority, "_total_holder", None)
        if holder is not None:
            holder[0] = view.machine.total_nodes

    def cache_keys(self, jobs) -> None:
        """Compute the static keys of ``jobs`` (for users that drive ``_pick`` themselves)."""
        if self.priority.static:
            key = self._key
            for js in jobs:
                js.key = key(js, 0)

    def _pick(self, q: list, view: SimView):
        if len(q) < 2:  # nothing to order
            return q[0]
        if self.priority.static:
            q.sort(key=_cached_key)
        else:
            key = self._key
            now = view.now
            q.sort(key=lambda js: key(js, now))
        return q[0]

    def _pick_tracked(self, q: list, view: SimView):
        """``_pick`` with a static key for this policy's own driver, without re-sorting what is
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


_cached_key = attrgetter("key")


# ---------------------------------------------------------------------------------- helpers
def compat_simulator(workload, machine, job_infos=None) -> Simulator:
    """A core simulator in the compatibility event order, without the schedule record (speed);
    ``job_infos`` as in ``Simulator``."""
    return Simulator(workload, machine, event_order="rlscheduler", record_schedule=False, job_infos=job_infos)


def run_sequence(trace, start: int, length: int, policy, machine=None, *, backfill="none",
                 goals=("bsld", "wait"), util_window: str = "last_end") -> dict:
    """Schedule jobs [start, start + length) of ``trace`` (an RLTrace) in compatibility mode.

    ``policy`` is a priority name / priority (wrapped in ``CommittedHeadPolicy`` with ``backfill``)
    or any core policy.  Returns ``{goal: value, "start": start, "first_start": [...]}``.
    """
    from rtsched.machines import FlatCluster
    from rtsched.metrics import sequence_metric

    machine = machine or FlatCluster(trace.max_nodes)
    if not hasattr(policy, "decide"):
        policy = CommittedHeadPolicy(policy, backfill)
    res = trace.simulator(start, length, machine).run(policy)
    outs = res.outcomes
    first = [o.first_start for o in outs]
    out = {"start": start, "first_start": first, "policy": getattr(policy, "name", type(policy).__name__)}
    jobs = [o.job for o in outs]
    columns = ([j.submit for j in jobs], [j.runtime for j in jobs], first, [j.nodes for j in jobs],
               machine.total_nodes, [j.user for j in jobs])
    for g in goals:
        out[g] = sequence_metric(g, *columns, util_window=util_window)
    return out
