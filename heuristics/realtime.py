"""Real-time scheduling policies of seed 002 (§4 and §6), all running in rtsched's one core.

* ``baseline_policy()`` — every job as a BJ under the Mira batch policy (Cobalt ``wfp2`` utility
  with first-fit backfilling, the authors' sweeps); it ignores the job kind.
* ``HighPriorityQueuePolicy`` (§4.1) — RTJs wait in a high-priority queue (FCFS or by estimated
  slowdown) served first; while an RTJ waits (cannot start), no BJ starts (``blocking="block"``, the
  paper's rule), BJs may only backfill around the first waiting RTJ (``blocking="backfill"``), or
  only the low-priority RTJs wait (``blocking="rt-only"``).
* ``PreemptivePolicy`` (§4.2) — as above, but an RTJ that finds no free partition takes the candidate
  partition whose preemption costs the fewest busy BJ nodes (ties: lowest partition index) and
  preempts every BJ holding it or a conflicting (parent/child) partition; they are re-queued.
* ``WcjsPolicy`` (§6, Alg. 1-2) — only RTJs past their estimated-slowdown threshold are high
  priority and may preempt, choosing the eligible partition of lowest weighted cost
  (``heuristics.wcjs``); everything else goes through the batch policy and never preempts.  While
  a high-priority RTJ waits, BJs still start and only low-priority RTJs wait (``blocking="rt-only"``,
  the authors' simulator: blocking every BJ, Alg. 1's text, stalls the machine; docs/realtime.md).

Common rules.  RTJs are never preempted; non-checkpointable jobs are never preempted; a candidate
partition that conflicts with a partition held by one of them (or by an RTJ bound and waiting for JIT
writes) is skipped.  Jobs already writing a JIT checkpoint are leaving: they cost nothing and block
nothing; an RTJ bound on their hardware starts when the slowest write ends (the core's JIT hand-over).
The checkpoint model of a preemption is the policy's ``checkpoint`` when given, else the simulation's
(``view.checkpoint``); periodic SYS/APP checkpoints are the core's business.  Low-priority jobs are
scheduled in the same pass once every high-priority job has started (Alg. 1 runs its two branches in
consecutive passes at the same instant).  Preemption needs a partitioned machine (Mira).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from typing import Any, Callable

from heuristics.backfill import normalize_backfill
from heuristics.batch import BatchPolicy, schedule_batch
from heuristics.priorities import get_priority
from heuristics.wcjs import (WcjsConfig, estimated_slowdown, is_high_priority, next_rt_threshold_crossing,
                             preemption_cost, slowdown_after_preemption)
from rtsched.checkpoint import CheckpointKind, CheckpointModel
from rtsched.errors import OptionError
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Preempt, Start, WakeAt
from rtsched.sim.state import DRAINING, RUNNING, JobState

RT_ORDERS = ("fcfs", "slowdown")
BLOCKING = ("block", "backfill", "rt-only")


def require_partitioned(name: str, machine) -> None:
    """Refuse a flat machine to a policy that preempts or places RTJs by partition (an
    ``OptionError`` naming ``--machine``): the preemption model is Mira's partitions."""
    if not machine.partitioned:
        raise OptionError(f"{name}: preemption needs a partitioned machine (--machine mira, mira:BLOCKS or a "
                          f"partition .xml), not {machine.describe()}")


def baseline_policy(priority: str = "wfp2", backfill: str = "ff") -> BatchPolicy:
    """Every job as a BJ under the Mira batch policy (default: Cobalt wfp2 + first-fit backfilling)."""
    policy = BatchPolicy(get_priority(priority), backfill)
    policy.name = f"baseline({policy.name})"
    return policy


def _bits(mask: int):
    """Indices of the set bits of ``mask``, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class _Stub:
    """A holder as the batch pass's reservation sees it (expected end, allocation, nodes)."""

    __slots__ = ("expected_end", "alloc", "alloc_nodes")

    def __init__(self, expected_end: int, alloc: int, alloc_nodes: int) -> None:
        self.expected_end = expected_end
        self.alloc = alloc
        self.alloc_nodes = alloc_nodes


class _PassView:
    """The view as the low-priority batch pass must see it after this pass's RT starts and
    preemptions (only what ``schedule_batch`` reads: machine, now, running)."""

    __slots__ = ("machine", "now", "running", "state")

    def __init__(self, view: SimView, running: dict) -> None:
        self.machine = view.machine
        self.now = view.now
        self.state = view.state
        self.running = running


class Holders:
    """Who holds which partition, for choosing what to preempt (built once per pass when needed).

    ``victims[q]`` lists the preemptable jobs (running, checkpointable BJs) holding partition q;
    ``hard`` has bit p set for every partition p that conflicts with a partition held by a job that
    must not be preempted (RTJs, RTJs bound for a JIT hand-over, non-checkpointable jobs) — such p is
    never a candidate.  Jobs writing a JIT checkpoint are ignored (already leaving).
    """

    __slots__ = ("machine", "conflict", "victims", "busy", "hard")

    def __init__(self, view: SimView, rt_allocs: list[int]) -> None:
        machine = view.machine
        conflict = machine.conflict_mask
        self.machine = machine
        self.conflict = conflict
        victims: dict[int, list[JobState]] = {}
        hard = 0
        for js in view.running.values():
            st = js.status
            if st == DRAINING:
                continue
            if st == RUNNING and js.info.kind == "batch" and js.info.checkpointable:
                lst = victims.get(js.alloc)
                if lst is None:
                    victims[js.alloc] = [js]
                else:
                    lst.append(js)
            else:
                hard |= conflict[js.alloc]
        for p in rt_allocs:
            hard |= conflict[p]
        self.victims = victims
        busy = 0
        for q in victims:
            busy |= 1 << q
        self.busy = busy
        self.hard = hard

    def mask_where(self, pred) -> int:
        """Partitions conflicting with a victim partition q where ``pred(q, jobs)`` holds."""
        conflict = self.conflict
        mask = 0
        for q, jobs in self.victims.items():
            if pred(q, jobs):
                mask |= conflict[q]
        return mask

    def take(self, p: int) -> list[JobState]:
        """Mark partition p as taken by an RTJ; return the victims it displaces (they leave)."""
        out: list[JobState] = []
        for q in _bits(self.conflict[p] & self.busy):
            out.extend(self.victims.pop(q))
        self.busy &= ~self.conflict[p]
        self.hard |= self.conflict[p]
        return out


@dataclass
class RealTimePolicy:
    """Shared pass: high-priority RTJs first, then the low-priority queue through the batch policy.

    Args:
        priority: batch queue priority (``heuristics.priorities``), default Cobalt ``wfp2``.
        backfill: batch backfilling rule, default first-fit ``ff``.
        rt_order: order of the high-priority queue: ``fcfs`` (submit, id) or ``slowdown``
            (estimated slowdown, highest first).
        blocking: ``block`` (while a high-priority RTJ waits, no other job starts), ``backfill``
            (others may start if they do not delay the first waiting RTJ's reservation) or
            ``rt-only`` (BJs start as usual, low-priority RTJs wait).
        checkpoint: checkpoint model of the preemptions (None: the simulation's).
    """

    priority: str = "wfp2"
    backfill: str = "ff"
    rt_order: str = "fcfs"
    blocking: str = "block"
    checkpoint: CheckpointModel | None = None

    name = "realtime"
    preemptive = False

    def __post_init__(self) -> None:
        self.backfill = normalize_backfill(self.backfill)
        if self.rt_order not in RT_ORDERS:
            raise ValueError(f"unknown RT order {self.rt_order!r}; choose from {', '.join(RT_ORDERS)}")
        if self.blocking not in BLOCKING:
            raise ValueError(f"unknown blocking rule {self.blocking!r}; choose from {', '.join(BLOCKING)}")
        if isinstance(self.checkpoint, str):
            self.checkpoint = CheckpointModel.parse(self.checkpoint)
        self._priority = get_priority(self.priority)

    # ---- hooks ---------------------------------------------------------------------------
    def split(self, view: SimView) -> tuple[list[JobState], list[JobState]]:
        """(high-priority jobs in service order, low-priority jobs)."""
        hp = []
        low = []
        for js in view.queue:
            (hp if js.info.kind == "rt" else low).append(js)
        return self.order_hp(hp, view.now), low

    def order_hp(self, hp: list[JobState], now: int) -> list[JobState]:
        if self.rt_order == "slowdown":
            return sorted(hp, key=lambda js: (-estimated_slowdown(js, now), js.info.submit, js.info.id))
        return sorted(hp, key=lambda js: (js.info.submit, js.info.id))

    def choose(self, view: SimView, js: JobState, holders: Holders, model: CheckpointModel) -> int | None:
        """Partition to preempt for high-priority ``js`` (None: it waits).  Non-preemptive here."""
        return None

    def extra_decisions(self, view: SimView, low: list[JobState]) -> list[Decision]:
        return []

    # ---- the pass ------------------------------------------------------------------------
    def decide(self, view: SimView) -> list[Decision]:
        if not view.queue:
            return []
        now = view.now
        machine = view.machine
        if self.preemptive:
            require_partitioned(self.name, machine)
        alloc_nodes = machine.allocated_nodes
        hp, low = self.split(view)
        plan = view.state.copy()
        out: list[Decision] = []
        rt_started: list[tuple[JobState, int, int]] = []  # (job, partition, expected start)
        leaving: dict[int, int] = {}  # preempted job id -> when it releases its partition (JIT), or -1
        waiting: list[JobState] = []
        holders: Holders | None = None
        model = self.checkpoint or view.checkpoint
        jit = model.kind is CheckpointKind.JIT
        io = view.io
        for js in hp:
            info = js.info
            n = alloc_nodes(info.nodes)
            p = plan.find(info.nodes)
            if p is not None:
                plan.allocate(p, n)
                out.append(Start(info.id, p))
                rt_started.append((js, p, now))
                if holders is not None:
                    holders.take(p)
                continue
            if self.preemptive:
                if holders is None:
                    holders = Holders(view, [q for _, q, _ in rt_started])
                p = self.choose(view, js, holders, model)
                if p is not None:
                    victims = holders.take(p)
                    start_at = now
                    for v in victims:
                        out.append(Preempt(v.info.id, self.checkpoint))
                        if jit:
                            done = now + io.write_seconds(v.alloc_nodes)
                            leaving[v.info.id] = done
                            if done > start_at:
                                start_at = done
                        else:
                            leaving[v.info.id] = -1
                            plan.release(v.alloc, v.alloc_nodes)
                    if plan.is_free(p, info.nodes):
                        plan.allocate(p, n)
                    else:  # JIT hand-over: bound now on hardware still being written
                        plan.force_allocate(p, n)
                    out.append(Start(info.id, p))
                    rt_started.append((js, p, start_at))
                    continue
            waiting.append(js)
        out.extend(self.extra_decisions(view, low))
        if waiting and self.blocking == "block":
            return out
        if waiting and self.blocking == "rt-only":  # the authors' simulator: BJs go on, RTJs wait
            low = [js for js in low if js.info.kind != "rt"]
        if not low:
            return out
        order = self._priority.order(low, now, machine.total_nodes)
        backfill = self.backfill
        if waiting and self.blocking == "backfill":  # the first waiting RTJ is the head to protect
            order = [waiting[0]] + order
            if backfill == "none":
                backfill = "ff"
        pass_view = self._pass_view(view, rt_started, leaving, jit)
        out.extend(schedule_batch(pass_view, order, backfill, state=plan))
        return out

    @staticmethod
    def _pass_view(view: SimView, rt_started: list, leaving: dict[int, int], jit: bool) -> Any:
        """The view the batch pass's reservation should see: this pass's RT starts as busy until
        (start + walltime), preempted jobs gone (NO/SYS/APP) or busy until their JIT write ends, and
        jobs of earlier JIT hand-overs (writing: until the write ends at the latest; bound RTJs:
        until a write plus their walltime at the latest) with walltime-based ends."""
        if not (rt_started or leaving or jit):
            return view
        now = view.now
        io = view.io
        running: dict[int, Any] = {}
        for jid, r in view.running.items():
            st = r.status
            if jid in leaving:
                if leaving[jid] >= 0:
                    running[jid] = _Stub(leaving[jid], r.alloc, r.alloc_nodes)
            elif st == RUNNING:
                running[jid] = r
            elif st == DRAINING:
                running[jid] = _Stub(now + io.write_seconds(r.alloc_nodes), r.alloc, r.alloc_nodes)
            else:  # bound, waiting for JIT writes
                running[jid] = _Stub(now + io.write_seconds(r.alloc_nodes) + r.info.walltime, r.alloc,
                                     r.alloc_nodes)
        alloc_nodes = view.machine.allocated_nodes
        for js, p, start_at in rt_started:
            running[js.info.id] = _Stub(start_at + js.info.walltime, p, alloc_nodes(js.info.nodes))
        return _PassView(view, running)


@dataclass
class HighPriorityQueuePolicy(RealTimePolicy):
    """§4.1: RTJs in a high-priority queue that blocks the normal queue until it is empty."""

    name = "highpq"


def cheapest_candidate(cands: int, conflict, holders: Holders,
                       victims_cost: Callable[[list[JobState]], float]) -> int | None:
    """The candidate partition (a bit of ``cands``) whose conflicting busy partitions cost least in
    total, a busy partition costing ``victims_cost(its jobs)`` (computed once per partition); ties go
    to the lowest index; None when ``cands`` is empty."""
    victims = holders.victims
    busy = holders.busy
    qcost: dict[int, float] = {}
    best = None
    best_cost = 0
    for p in _bits(cands):
        cost = 0
        for q in _bits(conflict[p] & busy):
            c = qcost.get(q)
            if c is None:
                c = qcost[q] = victims_cost(victims[q])
            cost += c
        if best is None or cost < best_cost:
            best, best_cost = p, cost
    return best


@dataclass
class PreemptivePolicy(RealTimePolicy):
    """§4.2: an RTJ without a free partition preempts the BJs of the candidate partition that costs
    the fewest busy BJ nodes (allocated nodes; ties: lowest index); the checkpoint model (NO, SYS,
    APP, JIT) is the simulation's unless ``checkpoint`` is given."""

    name = "preempt"
    preemptive = True

    def choose(self, view: SimView, js: JobState, holders: Holders, model: CheckpointModel) -> int | None:
        machine = view.machine
        conflict = holders.conflict
        cands = machine.candidate_mask(js.info.nodes) & ~holders.hard
        if not cands:
            return None
        return cheapest_candidate(cands, conflict, holders, lambda jobs: sum(v.alloc_nodes for v in jobs))


@dataclass
class WcjsPolicy(RealTimePolicy):
    """§6 (Alg. 1-2): weighted-cost job scheduling; thresholds, weights and factors in ``config``
    (a ``WcjsConfig``, a preset name, a mapping or a TOML path; None: the defaults).

    ``priority``, ``backfill`` and ``blocking`` default to the config's; given here, they override it.
    The high-priority queue is always served by estimated slowdown, highest first.
    """

    priority: str | None = None  # type: ignore[assignment]
    backfill: str | None = None  # type: ignore[assignment]
    rt_order: str = "slowdown"
    blocking: str | None = None  # type: ignore[assignment]
    config: WcjsConfig | None = None

    name = "wcjs"
    preemptive = True

    def __post_init__(self) -> None:
        cfg = WcjsConfig.coerce(self.config)
        overrides = {k: getattr(self, k) for k in ("priority", "backfill", "blocking") if getattr(self, k) is not None}
        if overrides:
            cfg = replace(cfg, **overrides)
        if self.rt_order != "slowdown":
            raise ValueError("WCJS serves its high-priority queue by estimated slowdown (rt_order='slowdown')")
        self.config = cfg
        self.priority = cfg.priority
        self.backfill = cfg.backfill
        self.blocking = cfg.blocking
        super().__post_init__()
        self._run_id = None
        self._wakes: list[int] = []

    def split(self, view: SimView) -> tuple[list[JobState], list[JobState]]:
        cfg = self.config
        now = view.now
        hp: list[tuple[float, int, int, JobState]] = []
        low: list[JobState] = []
        for js in view.queue:
            info = js.info
            if info.kind == "rt" and is_high_priority(js, now, cfg):
                hp.append((-estimated_slowdown(js, now), info.submit, info.id, js))
                continue
            low.append(js)
        hp.sort(key=lambda t: t[:3])
        return [t[3] for t in hp], low

    def extra_decisions(self, view: SimView, low: list[JobState]) -> list[Decision]:
        """A wake-up when the next waiting low-priority RTJ crosses its threshold."""
        cfg = self.config
        if not cfg.wake_on_threshold:
            return []
        if view.run_id != self._run_id:
            self._run_id = view.run_id
            self._wakes = []
        now = view.now
        wakes = self._wakes
        while wakes and wakes[0] <= now:
            heapq.heappop(wakes)
        first = next_rt_threshold_crossing(low, now, cfg)
        if first is None or (wakes and wakes[0] <= first):
            return []
        heapq.heappush(wakes, first)
        return [WakeAt(first)]

    def choose(self, view: SimView, js: JobState, holders: Holders, model: CheckpointModel) -> int | None:
        cfg = self.config
        cands = wcjs_eligible(view, js, holders, model, cfg)
        if not cands:
            return None
        now = view.now
        return cheapest_candidate(cands, holders.conflict, holders,
                                  lambda jobs: sum(preemption_cost(v, now, cfg) for v in jobs))


def wcjs_eligible(view: SimView, js: JobState, holders: Holders, model: CheckpointModel, cfg: WcjsConfig) -> int:
    """Bitset of the candidate partitions WCJS (Alg. 2) may free for RTJ ``js`` by preemption: the
    partitions of its size, less those conflicting with a job that is never preempted (criterion 1),
    with a victim larger than the RTJ (criterion 2, ``reject_larger``) or with a victim that would
    pass its BJ threshold (criterion 3, ``reject_threshold``; ``threshold_estimate``).  Shared with
    the RL agent ``rtmix`` (``rtsched.rl.rtmix.core``), whose preemption actions are exactly these."""
    now = view.now
    machine = view.machine
    cands = machine.candidate_mask(js.info.nodes) & ~holders.hard
    if cands and cfg.reject_larger:
        size = machine.allocated_nodes(js.info.nodes)
        cands &= ~holders.mask_where(lambda q, jobs: any(v.alloc_nodes > size for v in jobs))
    if cands and cfg.reject_threshold:
        io = view.io
        if cfg.threshold_estimate == "after":
            def over(q: int, jobs: list[JobState]) -> bool:
                return any(slowdown_after_preemption(v, now, model, io) > cfg.bj_threshold(v.info.nodes,
                                                                                          v.info.walltime)
                           for v in jobs)
        else:
            def over(q: int, jobs: list[JobState]) -> bool:
                return any(estimated_slowdown(v, now) > cfg.bj_threshold(v.info.nodes, v.info.walltime)
                           for v in jobs)
        cands &= ~holders.mask_where(over)
    return cands


def batch_pass_view(view: SimView, rt_started: list, leaving: dict[int, int], jit: bool) -> Any:
    """The view WCJS's low-priority batch pass plans on (``RealTimePolicy._pass_view``): this
    pass's RT starts ``[(job, partition, start time)]`` busy until start + walltime, ``leaving``
    (preempted id → end of its JIT write, or −1 when gone) and earlier JIT hand-overs.  For agents
    that must see the batch pass exactly as WCJS does (``rtsched.rl.rtmix.core``)."""
    return RealTimePolicy._pass_view(view, rt_started, leaving, jit)


__all__ = ["baseline_policy", "batch_pass_view", "RealTimePolicy", "HighPriorityQueuePolicy", "PreemptivePolicy",
           "WcjsPolicy", "Holders", "RT_ORDERS", "BLOCKING", "cheapest_candidate", "wcjs_eligible"]
