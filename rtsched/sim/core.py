"""The one discrete-event core every scheduler in rtsched runs in.

Events live in a binary heap keyed by (time, class, sequence).  At equal times they are taken in
a fixed order (DESIGN.md): job completions (class 0), then checkpoint / restart / JIT-write
completions and delayed starts (class 1), then arrivals (class 2), then wake-ups (class 3); within
a class, in the order they were created.  Then the policy gets **one** scheduling pass, if any job
waits or it asked to be woken.  A job ending at t therefore frees its resources for a job starting
at t.

The policy is pulled: ``decide(view) -> list[Decision]``.  It sees the time, the queue, the
running jobs and the free resources, never the actual runtimes.  Decisions are ``Start``, ``Preempt``,
``Kill`` (the work is lost, the job re-queued with a new estimate) and ``WakeAt``.
``Simulator.advance`` / ``Simulator.apply`` expose the same loop step by step (the RL environments drive it that way).
"""
from __future__ import annotations

import heapq
import itertools
import weakref
from bisect import bisect_left, insort
from heapq import heappop as _heappop, heappush as _heappush
from operator import attrgetter
from typing import Callable, Iterable, Protocol

from rtsched.checkpoint import CheckpointKind, CheckpointModel, IOModel
from rtsched.errors import DecisionError, InfeasibleError
from rtsched.jobs import Job, Workload
from rtsched.machines.base import Machine
from rtsched.machines.flat import FLAT
from rtsched.schedule import CKPT, KIND_CODE, RESTART, RUN, Schedule, pack_row
from rtsched.sim.decisions import Decision, Kill, Preempt, Start, WakeAt
from rtsched.sim.result import Outcomes, SimResult
from rtsched.sim.source import JobSource
from rtsched.sim.state import (DONE, DRAINING, PENDING, PH_CKPT, PH_RESTART, PH_RUN, RUNNING, WAITING,
                               JobInfo, JobState)

# Event classes, in the order they are taken at equal times.
EV_COMPLETE = 0
EV_PHASE = 1  # restart read done, periodic checkpoint reached / written, JIT write done, delayed start
EV_ARRIVAL = 2
EV_WAKE = 3

NO_CKPT = CheckpointModel(CheckpointKind.NO)
RUN_CODE = KIND_CODE[RUN]


class Policy(Protocol):
    """A scheduling policy.  ``decide`` is called at each scheduling point.

    Optional attribute ``preemptive`` (bool): whether the policy ever issues ``Preempt``; the run
    pipeline uses it to refuse a JIT checkpoint model that could never take effect.  A policy
    without it is assumed to preempt.

    Optional method ``flat_starts(view) -> list[JobState]``: on a flat cluster, the waiting jobs to
    start now, in order; the same as answering ``Start(job.id, FLAT)`` for each, for a policy that
    never answers anything else there (no preemption, kill or wake-up).  ``Simulator.run`` calls it
    instead of ``decide`` on a flat cluster: no decision objects, and the queue is cut once per pass
    (the pass of every batch run of a long trace, about two per job).

    Optional attribute ``live_jobs_only`` (bool): True when the policy looks no finished job up by
    id (``view.job``) and never reads ``view.entry_log``; the run pipeline then lets the core drop
    a job's state when it finishes (``Simulator(forget_done=True)``).  Without it: False.
    """

    name: str

    def decide(self, view: "SimView") -> list[Decision]: ...


class SimView:
    """What a policy may know at a scheduling point: read-only by convention (plan on
    ``state.copy()``), and never the actual runtimes.

    Attributes:
        now: current time, s.
        run_id: a number unique to this simulation (a policy object reused across runs resets
            its own bookkeeping when it changes).
        queue: waiting jobs (``JobState``), in the order they entered the queue.
        entered: the jobs that entered the queue (arrived or were requeued) since the previous
            scheduling pass.
        completed: the jobs that finished since the previous scheduling pass.
        woken: whether a ``WakeAt`` the policy asked for fell due at this time.
        entry_log: every queue entry of the run so far, append-only: a policy that keeps its own
            ordered structure reads it from its own cursor, so it misses nothing even when it is
            not consulted at every pass (a wrapped policy).  Not kept (RuntimeError) by a
            simulator that lets finished jobs go (``Simulator(forget_done=True)``).
        requeued: whether some job has re-entered the queue (preempted or killed) in this run; while
            False the queue is in (submit, id) order, the workload's (every entry was an arrival).
        running: jobs holding resources, by job id (running, writing a JIT checkpoint, or bound
            to an allocation and waiting for those writes).
        busy: (``expected_end``, ``alloc``, ``alloc_nodes``) of every job in ``running``, sorted
            (``heuristics.backfill.busy_of`` without its overdue rule, sorted), kept by the core.
        n_done: jobs finished so far.
        state: the machine occupancy (``MachineState``).
        machine: the machine model.
        checkpoint: the simulation's default checkpoint model; ``io`` its I/O cost model.
    """

    __slots__ = ("_sim", "run_id", "now", "queue", "entered", "completed", "_entry_log", "requeued", "running",
                 "busy", "state", "machine", "checkpoint", "io")

    def __init__(self, sim: "Simulator") -> None:
        # A weak reference: a strong one would make every simulator a reference cycle that only
        # the cyclic garbage collector frees (an RL environment builds one per episode).  A view
        # is meaningful while its simulation exists.
        self._sim = weakref.ref(sim)
        self.run_id = sim.run_id
        self.machine = sim.machine
        self.state = sim.machine_state
        self.running = sim.running
        self.busy = sim.busy
        self.checkpoint = sim.checkpoint
        self.io = sim.io
        self.now = 0
        self.queue = sim.queue
        self.entered = sim.entered
        self.completed = sim.completed
        self._entry_log = sim.entry_log
        self.requeued = False

    @property
    def woken(self) -> bool:
        return self._sim()._woken

    @property
    def n_done(self) -> int:
        return self._sim().n_done

    @property
    def entry_log(self) -> list[JobState]:
        log = self._entry_log
        if log is None:
            raise RuntimeError("this simulation keeps no entry log: it lets finished jobs go "
                               "(Simulator(forget_done=True)), for a policy that declares live_jobs_only")
        return log

    def job(self, job_id: int) -> JobState:
        """The state of job ``job_id`` (any job that has arrived; with ``Simulator(forget_done=True)``
        a job that waits or runs).  KeyError for another."""
        state = self._sim().state_of(job_id)
        if state is None:
            raise KeyError(job_id)
        return state

    def holders(self, alloc: int) -> list[JobState]:
        """Jobs holding partition ``alloc`` or a partition that conflicts with it."""
        return self._sim().blockers(alloc)


_run_ids = itertools.count(1)
_STATE_CHUNK = 4096  # job states built at a time with forget_done (about 1 MB of them)
# What a finished job's place in ``Simulator.states`` holds with forget_done: a state whose version
# no event carries (so a stale event of the job is skipped by the usual check, with no test more).
_GONE = JobState.__new__(JobState)
_GONE._version = -1
_GONE.status = DONE


class Simulator:
    """Simulate ``workload`` on ``machine``.

    Args:
        checkpoint: the default checkpoint model: periodic checkpoints of batch jobs (SYS, APP) and
            the mode of a ``Preempt`` that names none.
        record_schedule: keep every segment (needed by the validator and the metrics' utilization).
        progress: called as ``progress(done_jobs, total_jobs)`` every ``progress_every`` completions.
        job_infos: the ``JobInfo`` of ``workload.jobs``, in order, when the caller has them already
            (an RL trace reuses them in every episode); built here when None.
        event_order: ``"design"`` (DESIGN.md: all events at t, completions before arrivals, then one
            scheduling pass) or ``"rlscheduler"`` (seed 003's simulator, for its compatibility mode:
            events are taken one at a time, an arrival before a completion at the same time, and
            a scheduling pass follows each event).
        forget_done: keep the state of the jobs that wait or run only: a job's ``JobState`` is
            built when it arrives and let go when it finishes (its outcome is in ``outcomes``), so
            that a long trace's live set is its queue and running jobs.  For a policy that looks
            no finished job up by id and reads no ``entry_log`` (``Policy.live_jobs_only``):
            ``by_id`` and ``view.entry_log`` are refused, ``view.job`` finds waiting and running
            jobs only.

    A workload a reader left as columns (``Workload.table``) is read from them (``JobSource``):
    the run builds no ``Job`` object.
    """

    def __init__(self, workload: Workload, machine: Machine, *, checkpoint: CheckpointModel | None = None,
                 io: IOModel | None = None, record_schedule: bool = True,
                 progress: Callable[[int, int], None] | None = None, progress_every: int = 500,
                 event_order: str = "design", job_infos: list[JobInfo] | None = None,
                 forget_done: bool = False) -> None:
        if event_order not in ("design", "rlscheduler"):
            raise ValueError(f"unknown event order {event_order!r}; use 'design' or 'rlscheduler'")
        self.one_at_a_time = event_order == "rlscheduler"
        self.workload = workload
        self.machine = machine
        self.checkpoint = checkpoint or NO_CKPT
        self._periodic = self.checkpoint.periodic  # cached: read at every start
        self.io = io or self.checkpoint.io
        self.record_schedule = record_schedule
        self.progress = progress
        self.progress_every = max(1, progress_every)
        source = self._source = JobSource(workload, machine, job_infos)
        n = self._n = source.n
        self._runtime = source.runtime
        self._submit = source.submit  # read at every event time
        self._alloc_nodes = source.alloc_nodes
        self.forget_done = forget_done
        if forget_done:  # built a chunk at a time as jobs arrive (_build_states)
            self.states: list[JobState | None] = [None] * n
            self._built = 0
        else:
            self.states = list(map(JobState, range(n), source.infos(0, n)))
            self._built = n
        self._by_id: dict[int, JobState] | None = None  # built on first use (by_id)
        self.outcomes = Outcomes(workload, self._alloc_nodes)
        self._first_start = self.outcomes.first_start  # columns the hot paths write
        self._end = self.outcomes.end
        self.machine_state = machine.new_state()
        self.partitioned = machine.partitioned
        self.heap: list[tuple[int, int, int, int, int, int]] = []
        self.seq = 0
        self.queue: list[JobState] = []
        self.entered: list[JobState] = []
        self.completed: list[JobState] = []
        self.entry_log: list[JobState] | None = None if forget_done else []
        self.running: dict[int, JobState] = {}
        # (expected end s, allocation, nodes) of every job in ``running``, sorted: kept as jobs
        # start and end, so that a backfilling pass does not build and sort them (SimView.busy).
        self.busy: list[tuple[int, int, int]] = []
        self.owners: dict[int, list[JobState]] = {}
        self.now = self._submit[0] if n else 0
        self.start_time = self.now
        self.next_arrival = 0
        self.n_done = 0
        self.schedule = Schedule(machine_name=machine.name)
        self.run_id = next(_run_ids)
        self.view = SimView(self)
        self._woken = False

    @property
    def jobs(self) -> list[Job]:
        """The workload's jobs (a reader's workload builds its ``Job`` objects here: the run does not)."""
        return self.workload.jobs

    @property
    def by_id(self) -> dict[int, JobState]:
        """Job id -> state; built on first use: a run through ``Policy.flat_starts`` never looks a
        job up by id (the dict is 0.1 s and about 25 MB at 500,000 jobs).  Not with ``forget_done``
        (``state_of`` finds the jobs that wait or run)."""
        if self.forget_done:
            raise RuntimeError("this simulator lets finished jobs go (forget_done): it has no state of every job; "
                               "look a waiting or running job up with state_of (SimView.job)")
        by_id = self._by_id
        if by_id is None:
            by_id = self._by_id = dict(zip(self._source.ids(), self.states))
        return by_id

    def state_of(self, job_id: int) -> JobState | None:
        """The state of job ``job_id``; None for an unknown job, and with ``forget_done`` for one
        that has finished or whose state is not built yet (a job due to arrive within the chunk
        built ahead (``_STATE_CHUNK``) gives its pending state, as every job does without it)."""
        if not self.forget_done:
            return self.by_id.get(job_id)
        idx = self._source.index_of(job_id)
        state = None if idx is None else self.states[idx]
        return None if state is _GONE else state

    def work_done(self, state: JobState) -> int:
        """The work (s of its runtime) job ``state`` has done by now: what it has saved, plus the run
        since its current run phase began for a running job (what an online scheduler may know about
        a job that has not finished: its runtime is longer)."""
        if state.status == RUNNING and state._phase == PH_RUN:
            return state._progress_at_phase_start + (self.now - state._phase_start)
        if state.status == RUNNING and state._phase == PH_CKPT:
            return state._progress_at_phase_start
        return state.saved

    def _build_states(self, upto: int) -> None:
        """With ``forget_done``: the states of the jobs up to ``upto`` (exclusive) and a chunk more
        (``_STATE_CHUNK``), built in one C-level loop each."""
        lo = self._built
        hi = min(self._n, max(upto, lo + _STATE_CHUNK))
        self.states[lo:hi] = map(JobState, range(lo, hi), self._source.infos(lo, hi))
        self._built = hi

    # ------------------------------------------------------------------ driving the loop
    def run(self, policy: Policy) -> SimResult:
        """Run to the end with ``policy`` and return the result."""
        view = self.view
        flat_starts = None if self.partitioned else getattr(policy, "flat_starts", None)
        if flat_starts is not None:  # the Policy protocol's optional flat pass
            start_flat = self.start_flat
            while self.advance():
                states = flat_starts(view)
                if states:
                    start_flat(states)
        else:
            decide = policy.decide
            while self.advance():
                decisions = decide(view)
                if decisions:
                    self.apply(decisions)
        return self.result(getattr(policy, "name", type(policy).__name__))

    def advance(self) -> bool:
        """Process events up to the next scheduling point; False when the run is over.

        In the rlscheduler order events are taken one at a time (an arrival first at equal
        times) and it returns at the first event after which a pass is due.  One piece on purpose
        (89 lines): both loops are written out here, not in helpers, because they are the hot
        paths, one call per event: the rlscheduler order's for the RL environments, the design
        order's (stale check and arrivals inlined) for every batch run of a long trace."""
        self.entered.clear()  # the policy has seen them
        self.completed.clear()
        heap = self.heap
        n = self._n
        states = self.states
        submit = self._submit
        if self.one_at_a_time:
            while True:
                nxt = self.next_arrival
                if nxt < n and (not heap or submit[nxt] <= heap[0][0]):
                    t = submit[nxt]
                    self.now = self.view.now = t
                    self._woken = False
                    if nxt >= self._built:
                        self._build_states(nxt + 1)
                    state = states[nxt]  # _enqueue, inlined
                    state.status = WAITING
                    state.queued_since = t
                    self.queue.append(state)
                    self.entered.append(state)
                    if self.entry_log is not None:
                        self.entry_log.append(state)
                    self.next_arrival = nxt + 1
                    return True
                if not heap:
                    return self._finished()
                t, cls, _, _, idx, version = _heappop(heap)
                self.now = self.view.now = t
                if cls == EV_WAKE:
                    self._woken = True
                    return True
                self._woken = False
                state = states[idx]
                if state._version != version:  # stale (_fire, inlined)
                    continue
                if cls == EV_COMPLETE:
                    self._complete(state, t)
                else:
                    self._phase_done(state, t)
                if self.queue:
                    return True
        queue = self.queue
        while True:
            nxt = self.next_arrival
            if not heap and nxt >= n:
                return self._finished()
            t = heap[0][0] if heap else 1 << 62
            if nxt < n and submit[nxt] < t:
                t = submit[nxt]
            self.now = t
            self.view.now = t
            woken = False
            fired = False  # whether anything happens at t: a stale event alone is no scheduling point
            while heap and heap[0][0] == t and heap[0][1] < EV_ARRIVAL:
                _, cls, _, _, idx, version = _heappop(heap)
                state = states[idx]
                if state._version != version:  # stale (_fire, inlined: once per event)
                    continue
                fired = True
                if cls == EV_COMPLETE:
                    self._complete(state, t)
                else:
                    self._phase_done(state, t)
            if nxt < n and submit[nxt] == t:
                fired = True
                entered, log = self.entered, self.entry_log
                while nxt < n and submit[nxt] == t:  # arrivals (_enqueue, inlined: once per job)
                    if nxt >= self._built:
                        self._build_states(nxt + 1)
                    state = states[nxt]
                    state.status = WAITING
                    state.queued_since = t
                    queue.append(state)
                    entered.append(state)
                    if log is not None:
                        log.append(state)
                    nxt += 1
                self.next_arrival = nxt
            while heap and heap[0][0] == t:
                _heappop(heap)  # wake-ups (and nothing else can be left at t)
                woken = True
            self._woken = woken
            # A preempted or restarted job's stale event must not wake the policy: a pass at the time it would
            # have ended tells an online scheduler its runtime.
            if (queue and fired) or woken:
                return True

    def _fire(self, cls: int, idx: int, version: int, t: int) -> bool:
        """Carry out a completion or phase event of job ``idx``; False if it is stale (the job was
        preempted or restarted since it was scheduled)."""
        state = self.states[idx]
        if state._version != version:
            return False
        if cls == EV_COMPLETE:
            self._complete(state, t)
        else:
            self._phase_done(state, t)
        return True

    def _finished(self) -> bool:
        """No event is left: False (the run is over), or an error if jobs still wait."""
        if self.queue:
            waiting = ", ".join(str(s.info.id) for s in self.queue[:10])
            raise DecisionError(
                f"t={self.now}: jobs wait ({waiting}{'...' if len(self.queue) > 10 else ''}) but nothing runs "
                "and the policy started nothing and asked for no wake-up: the run cannot finish")
        return False

    def apply(self, decisions: Iterable[Decision]) -> None:
        """Carry out a policy's decisions at the current time, in order."""
        for d in decisions:
            if type(d) is Start:
                self._start(d.job_id, d.alloc)
            elif type(d) is Preempt:
                self._preempt(d.job_id, d.checkpoint)
            elif type(d) is Kill:
                self._kill(d.job_id, d.estimate)
            elif type(d) is WakeAt:
                if d.time <= self.now:
                    raise DecisionError(f"t={self.now}: wake-up at {d.time} is not in the future")
                self._push(d.time, EV_WAKE, -1, 0)
            else:
                raise DecisionError(f"t={self.now}: unknown decision {d!r}")

    def result(self, policy_name: str = "") -> SimResult:
        ends = self._end
        if self.n_done < len(ends):
            ids = self._source.ids()
            unfinished = [ids[i] for i, e in enumerate(ends) if e < 0]
            raise DecisionError(f"the run ended with {len(unfinished)} unfinished jobs, e.g. {unfinished[:5]}")
        end = max(ends, default=self.start_time)
        return SimResult(self.outcomes, self.schedule, self.machine.total_nodes, self.machine.name, policy_name,
                         self.checkpoint.label, self.start_time, end)

    # ------------------------------------------------------------------ helpers
    def _push(self, time: int, cls: int, idx: int, version: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, cls, self.seq, cls, idx, version))

    def blockers(self, alloc: int) -> list[JobState]:
        """Jobs whose allocation overlaps ``alloc`` (partitioned) or every holder (flat)."""
        if not self.partitioned:
            return list(self.running.values())
        mask = self.machine.conflict_mask[alloc]
        out = []
        for p, holders in self.owners.items():
            if (mask >> p) & 1:
                out.extend(holders)
        return out

    def _bind(self, state: JobState, alloc: int, force: bool) -> None:
        nodes = self._alloc_nodes[state.idx]
        ms = self.machine_state
        if force:
            ms.force_allocate(alloc, nodes)
        else:
            ms.allocate(alloc, nodes)
        state.alloc = alloc
        state.alloc_nodes = nodes
        self.running[state.id] = state
        insort(self.busy, (state.expected_end, alloc, nodes))
        if self.partitioned:
            self.owners.setdefault(alloc, []).append(state)

    def _unbind(self, state: JobState) -> None:
        self.machine_state.release(state.alloc, state.alloc_nodes)
        del self.running[state.id]
        self._busy_remove(state)
        if self.partitioned:
            holders = self.owners[state.alloc]
            holders.remove(state)
            if not holders:
                del self.owners[state.alloc]
        state.alloc = -2

    def _busy_remove(self, state: JobState) -> None:
        """Take running ``state``'s (expected end, allocation, nodes) out of ``busy``."""
        busy = self.busy
        del busy[bisect_left(busy, (state.expected_end, state.alloc, state.alloc_nodes))]

    def _record(self, state: JobState, start: int, end: int, kind: str, p_from: int, p_to: int) -> None:
        if self.record_schedule and end > start:
            self.schedule.segments.add(state.info.id, start, end, KIND_CODE[kind],
                                       state.alloc if self.partitioned else -1, state.alloc_nodes, p_from, p_to)

    # ------------------------------------------------------------------ decisions
    def _start(self, job_id: int, alloc: int | None) -> None:
        state = self.state_of(job_id)
        if state is None or state.status != WAITING:
            raise DecisionError(f"t={self.now}: job {job_id} is not waiting, it cannot start")
        info = state.info
        ms = self.machine_state
        if alloc is None:
            alloc = ms.find(info.nodes)
            if alloc is None:
                raise DecisionError(f"t={self.now}: no free allocation for job {job_id} ({info.nodes} nodes)")
        partitioned = self.partitioned
        if partitioned:
            if alloc < 0 or alloc >= len(self.machine.partitions):
                raise DecisionError(f"t={self.now}: job {job_id}: no partition {alloc}")
            if self.machine.partitions[alloc].nodes < info.nodes:
                raise DecisionError(f"t={self.now}: job {job_id} needs {info.nodes} nodes; partition "
                                    f"{self.machine.partitions[alloc].name} has {self.machine.partitions[alloc].nodes}")
        # a flat cluster's state is a node counter (FlatState): its is_free, inlined
        if ms.is_free(alloc, info.nodes) if partitioned else info.nodes <= ms.free_nodes:
            self.queue.remove(state)  # C-level identity scan: cheaper than a rebuild per pass
            self._run_now(state, alloc)
            return
        # Not free: allowed only when every job in the way is writing a JIT checkpoint.
        blockers = self.blockers(alloc)
        if self.partitioned:
            ok = bool(blockers) and all(b.status == DRAINING for b in blockers)
        else:
            draining = sum(b.alloc_nodes for b in blockers if b.status == DRAINING)
            promised = sum(b.alloc_nodes for b in blockers if b.status == PENDING)
            ok = self._alloc_nodes[state.idx] <= ms.free_nodes + draining - promised
            blockers = [b for b in blockers if b.status == DRAINING]
        if not ok:
            raise DecisionError(f"t={self.now}: allocation {alloc} is busy, job {job_id} cannot start")
        self.queue.remove(state)
        self._bind(state, alloc, force=True)
        state.status = PENDING
        state._pending_since = self.now
        start_at = max(b._phase_start + self.io.write_seconds(b.alloc_nodes) for b in blockers) if blockers else self.now
        state._version += 1
        self._push(start_at, EV_PHASE, state.idx, state._version)

    def start_flat(self, states: list[JobState]) -> None:
        """Start ``states`` on a flat cluster, in order: the same as ``apply`` with a
        ``Start(job.id, FLAT)`` each (``Policy.flat_starts``), the queue cut once when they are its
        head (no decision objects, no look-up by id)."""
        ms = self.machine_state
        run_now = self._run_now
        pos = 0
        for state in states:
            if state.status != WAITING or state.nodes > ms.free_nodes:  # a JIT hand-over, or the error
                break
            run_now(state, FLAT)
            pos += 1
        started = states if pos == len(states) else states[:pos]
        queue = self.queue
        if queue[:pos] == started:  # identity first: C-level; the usual case (FCFS starts its head)
            del queue[:pos]
        else:
            for state in started:
                queue.remove(state)
        for state in states[pos:]:
            self._start(state.id, FLAT)

    def _run_now(self, state: JobState, alloc: int) -> None:
        """Bind waiting ``state`` (already out of the queue) to free ``alloc`` and start it now."""
        state.status = RUNNING
        idx = state.idx
        nodes = self._alloc_nodes[idx]  # _bind, inlined (once per started job)
        if self.partitioned:
            self.machine_state.allocate(alloc, nodes)
            self.owners.setdefault(alloc, []).append(state)
        else:  # a flat cluster's state is a node counter (FlatState): its allocate, inlined
            self.machine_state.free_nodes -= nodes
        state.alloc = alloc
        state.alloc_nodes = nodes
        self.running[state.id] = state
        if self._periodic or state.saved > 0:
            insort(self.busy, (state.expected_end, alloc, nodes))  # as _bind: _begin re-files it
            self._begin(state, self.now)
            return
        # _begin without checkpoints or a restart, inlined (the hot path of every batch run):
        # one stint from progress 0, one completion event, expected end = now + walltime.
        t = self.now
        state.run_start = t
        if state.first_start < 0:
            state.first_start = t
            state.last_ckpt_time = t
            self._first_start[idx] = t
        version = state._version = state._version + 1
        state._ckpt_interval = 0
        state._phase = PH_RUN
        state._phase_start = t
        state._progress_at_phase_start = 0
        seq = self.seq = self.seq + 1
        _heappush(self.heap, (t + self._runtime[idx], EV_COMPLETE, seq, EV_COMPLETE, idx, version))
        w = state.walltime
        end = state.expected_end = t + (w if w > 1 else 1)
        insort(self.busy, (end, alloc, nodes))

    def _begin(self, state: JobState, t: int) -> None:
        """Start a stint of ``state`` on its (already bound) allocation at time ``t``."""
        state.status = RUNNING
        state.run_start = t
        if state.first_start < 0:
            state.first_start = t
            state.last_ckpt_time = t
            self._first_start[state.idx] = t
        state._version += 1
        info = state.info
        # the periodic checkpoint model applies to batch, checkpointable jobs only
        model = self.checkpoint if self._periodic and info.checkpointable and info.kind == "batch" else None
        if model is not None:
            state._ckpt_interval = model.checkpoint_interval(info.walltime, state.alloc_nodes)
            state._ckpt_limit = model.checkpoint_limit(info.walltime, state.alloc_nodes)
        else:
            state._ckpt_interval = 0
        read = 0
        if state.saved > 0:
            read = self.io.read_seconds(state.alloc_nodes)
            state._phase = PH_RESTART
            state._phase_start = t
            state._progress_at_phase_start = state.saved
            self._push(t + read, EV_PHASE, state.idx, state._version)
        else:
            self._enter_run(state, t, state.saved)
        # Walltime-based estimate of the stint's end (what a policy may plan with).
        remaining = max(info.walltime - state.saved, 1)
        writes = 0
        if state._ckpt_interval > 0:
            interval = state._ckpt_interval
            k0 = state.saved // interval
            k1 = (info.walltime - 1) // interval
            writes = max(0, min(k1, state._ckpt_limit) - k0) * self.io.write_seconds(state.alloc_nodes)
        self._busy_remove(state)  # (a state in ``running`` is in ``busy`` by its estimate)
        state.expected_end = t + read + remaining + writes
        insort(self.busy, (state.expected_end, state.alloc, state.alloc_nodes))

    def _enter_run(self, state: JobState, t: int, progress: int) -> None:
        state._phase = PH_RUN
        state._phase_start = t
        state._progress_at_phase_start = progress
        runtime = self._runtime[state.idx]
        interval = state._ckpt_interval
        if interval > 0:
            k = progress // interval + 1
            point = k * interval
            if k <= state._ckpt_limit and point < runtime:
                self._push(t + point - progress, EV_PHASE, state.idx, state._version)
                return
        self.seq += 1  # _push, inlined: once per started job
        heapq.heappush(self.heap, (t + runtime - progress, EV_COMPLETE, self.seq, EV_COMPLETE, state.idx,
                                   state._version))

    def _preempt(self, job_id: int, model: CheckpointModel | None) -> None:
        state = self.state_of(job_id)
        if state is None or state.status != RUNNING:
            raise DecisionError(f"t={self.now}: job {job_id} is not running, it cannot be preempted")
        if not state.info.checkpointable:
            raise DecisionError(f"t={self.now}: job {job_id} cannot be checkpointed and must not be preempted")
        model = model or self.checkpoint
        t = self.now
        out = self.outcomes[state.idx]
        progress = self._cut(state, t, out)
        state.n_preemptions += 1
        out.n_preemptions += 1
        if model.kind is CheckpointKind.JIT:
            if progress > state.saved:
                write = self.io.write_seconds(state.alloc_nodes)
                state.status = DRAINING
                state._phase = PH_CKPT
                state._phase_start = t
                state._progress_at_phase_start = progress
                self._push(t + write, EV_PHASE, state.idx, state._version)
                return
        elif model.kind is CheckpointKind.NO:
            out.t_lost += progress
            state.saved = 0
        else:
            out.t_lost += progress - state.saved
        self._requeue(state, t)

    def _cut(self, state: JobState, t: int, out) -> int:
        """End the current phase of a running job at ``t`` (preemption or kill): record its segment,
        charge a cut-short write or read, invalidate its pending event; the progress reached, s."""
        state._version += 1  # invalidates the job's pending event
        phase = state._phase
        if phase == PH_RUN:
            progress = state._progress_at_phase_start + (t - state._phase_start)
            self._record(state, state._phase_start, t, RUN, state._progress_at_phase_start, progress)
        elif phase == PH_CKPT:  # a periodic write cut short: its time is spent, its data useless
            progress = state._progress_at_phase_start
            self._record(state, state._phase_start, t, CKPT, progress, progress)
            out.t_ckpt += t - state._phase_start
        else:  # restart read cut short
            progress = state.saved
            self._record(state, state._phase_start, t, RESTART, progress, progress)
            out.t_restart += t - state._phase_start
        return progress

    def _kill(self, job_id: int, estimate: int | None) -> None:
        """Kill a running job: its stint's work is lost (whatever it saved), it is re-queued now,
        with ``estimate`` s as its new requested time when given."""
        state = self.state_of(job_id)
        if state is None or state.status != RUNNING:
            raise DecisionError(f"t={self.now}: job {job_id} is not running, it cannot be killed")
        if estimate is not None:
            try:
                ok = not isinstance(estimate, bool) and int(estimate) == estimate and estimate >= 1
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise DecisionError(f"t={self.now}: kill of job {job_id}: the new estimate must be an integer "
                                    f">= 1 s, got {estimate!r}")
            estimate = int(estimate)
        t = self.now
        out = self.outcomes[state.idx]
        out.t_lost += self._cut(state, t, out)
        out.n_kills += 1
        state.saved = 0
        state.n_kills += 1
        if estimate is not None:
            state.info = state.info._replace(walltime=estimate)
            state.walltime = estimate
        state.key = None  # a cached priority key may depend on the estimate
        self._requeue(state, t)

    def _requeue(self, state: JobState, t: int) -> None:
        self.view.requeued = True
        self._unbind(state)
        state.run_start = -1
        state.expected_end = -1
        self._enqueue(state, t)

    def _enqueue(self, state: JobState, t: int) -> None:
        """``state`` enters the queue at ``t`` (an arrival or a requeue after preemption)."""
        state.status = WAITING
        state.queued_since = t
        self.queue.append(state)
        self.entered.append(state)
        if self.entry_log is not None:
            self.entry_log.append(state)

    # ------------------------------------------------------------------ events
    def _complete(self, state: JobState, t: int) -> None:
        runtime = self._runtime[state.idx]
        if self.record_schedule and t > state._phase_start:  # _record, inlined (once per job)
            self.schedule.segments.rows.frombytes(pack_row(state.id, state._phase_start, t, RUN_CODE,
                                                           state.alloc if self.partitioned else -1,
                                                           state.alloc_nodes, state._progress_at_phase_start, runtime))
        if self.partitioned:
            self._unbind(state)
        else:  # _unbind on a flat cluster (its state a node counter: FlatState.release), inlined
            self.machine_state.free_nodes += state.alloc_nodes
            del self.running[state.id]
            busy = self.busy
            del busy[bisect_left(busy, (state.expected_end, state.alloc, state.alloc_nodes))]
            state.alloc = -2
        state.status = DONE
        state.saved = runtime
        self.completed.append(state)
        self._end[state.idx] = t
        if self.forget_done:
            self.states[state.idx] = _GONE
        self.n_done += 1
        if self.progress is not None and self.n_done % self.progress_every == 0:
            self.progress(self.n_done, self._n)

    def _phase_done(self, state: JobState, t: int) -> None:
        out = self.outcomes[state.idx]
        status = state.status
        if status == PENDING:  # the JIT writes in its way are done: start now
            out.jit_delay += t - state._pending_since
            self._begin(state, t)
            return
        phase = state._phase
        p0 = state._progress_at_phase_start
        if status == DRAINING:  # JIT write at preemption finished
            self._record(state, state._phase_start, t, CKPT, p0, p0)
            out.t_ckpt += t - state._phase_start
            state.saved = p0
            state.last_ckpt_time = t
            self._requeue(state, t)
            return
        if phase == PH_RESTART:
            self._record(state, state._phase_start, t, RESTART, p0, p0)
            out.t_restart += t - state._phase_start
            self._enter_run(state, t, p0)
        elif phase == PH_RUN:  # a periodic checkpoint point is reached: write it
            progress = p0 + (t - state._phase_start)
            self._record(state, state._phase_start, t, RUN, p0, progress)
            state._phase = PH_CKPT
            state._phase_start = t
            state._progress_at_phase_start = progress
            self._push(t + self.io.write_seconds(state.alloc_nodes), EV_PHASE, state.idx, state._version)
        else:  # periodic write done
            self._record(state, state._phase_start, t, CKPT, p0, p0)
            out.t_ckpt += t - state._phase_start
            state.saved = p0
            state.last_ckpt_time = t
            self._enter_run(state, t, p0)


def simulate(workload: Workload, machine: Machine, policy: Policy, **options) -> SimResult:
    """Convenience: ``Simulator(workload, machine, **options).run(policy)``."""
    return Simulator(workload, machine, **options).run(policy)
