"""``replan``: receding-horizon scheduling on the exact model (issue 23).

At every scheduling point (an arrival, a completion, the end of a checkpoint write, or an action
time the previous plan asked to be woken for) the policy re-solves the offline problem of
``shared/docs/offline-model.md`` over the jobs it knows now, with the past fixed, and applies only
the plan's actions due now (starts, preemptions); the rest of the plan is discarded and kept only
as the next solve's warm start.

The problem at time ``now`` (every unfinished job that has arrived; with ``window`` K, the running
jobs, every waiting RTJ, the first K other waiting jobs in queue order and the further waiting
jobs that a first-fit pass in queue order places on the partitions free now, ``bounded_window``):

* it plans with **walltimes** (an online scheduler never sees runtimes): a job's duration is its
  walltime, a running job's remaining time its walltime-based ``expected_end − now``; a job that
  ends early is a completion event, and the next pass plans again;
* a **running** job keeps its start and partition; a running checkpointable BJ that has not been
  preempted yet (the offline model preempts a job at most once) may be split under the JIT
  checkpoint model: it runs x more seconds (x = 0: preempted now), writes its checkpoint
  (o_j s), and later restarts on the same partition (read o_j s, then the rest), with its total
  first part within the model's [⌈0.1 W⌉, ⌊0.9 W⌋] (W the walltime); under another checkpoint model
  it is not preempted (the periodic models lose work the plan cannot see);
* a job whose checkpoint is being written (preempted by this policy) holds its partition until the
  write ends and restarts there after it; a preempted job restarts on its partition;
* a **waiting** job starts at ``now`` or later and may itself be split later, as offline;
* objective, as offline: the least mean RTJ slowdown θ* first, then the least mean BJ slowdown with
  the RTJ mean ≤ θ_used = max(θ, θ*), then (``tiebreak``) the least RTJ mean among those plans.
  Slowdowns are (C − r)/W.  Without a window the RTJ mean is over every RTJ that has arrived, the
  finished ones at their known slowdown (so on a clairvoyant instance — everything at time 0,
  walltime = runtime — the first plan is the offline optimum and every later one its continuation);
  with a window it is over the RTJs in the plan.

Solving (``method="cpsat"``): CP-SAT with one worker and a fixed seed, the per-block layout of
``milp.cpsat`` (one NoOverlap per class of hardware units that the same partitions cover, optional
intervals per candidate partition), warm-started with the previous plan as hints.
``time_limit_ms`` is the budget of one decision (all stages), in CP-SAT's *deterministic* time by
default (``clock="deterministic"``: about a second of one core's work per unit, and the same answer
on a loaded or an idle machine, so runs are reproducible), or in wall time (``clock="wall"``).
``method="milp"``: the same stages on the disjunctive MILP of ``milp.replan_milp`` (wall-time
limits or none).

Not solving: a pass where nothing happened that the last plan did not assume (a wake-up for a
planned action, jobs ending at their walltime, a preempted job back after its write) follows that
plan (``_as_planned``); a pass where no plan could act now (``_nothing_to_decide``) does nothing.
With a window K (the Mira mode) a running BJ's split point is its earliest allowed one.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

from ortools.sat.python import cp_model

from rtsched.checkpoint import CheckpointKind
from rtsched.errors import OptionError
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Preempt, Start, WakeAt
from rtsched.sim.state import DRAINING, PENDING, RUNNING

from milp.cpsat import ratio_weights, split_intervals_on, split_vars
from milp.instance import split_bounds

METHODS = ("cpsat", "milp")
CLOCKS = ("deterministic", "wall")
DEFAULT_THETA = Fraction(6, 5)
DEFAULT_LIMIT_MS = 200
# Stage shares of one decision's budget: θ*, the BJ stage, the RTJ tie-break.
STAGE_SHARES = (0.25, 0.5, 0.25)


@dataclass
class PlanJob:
    """One job of the planning problem (times in s, ``weight_runtime`` = W, the walltime)."""

    id: int
    kind: str
    submit: int
    weight_runtime: int
    release: int  # earliest start of its (next) part
    duration: int  # unsplit: time on the partition from its start to its end
    candidates: list[int]
    fixed_start: bool = False  # running: starts at ``now`` (the rest of its stint)
    split: tuple[int, int] | None = None  # (x_lo, x_hi): more work before a split, s
    write: int = 0  # checkpoint write = restart read, s (when split)


@dataclass
class Blocker:
    """A partition held from now to ``end`` by something the plan cannot move."""

    partition: int
    end: int


@dataclass
class Problem:
    now: int
    jobs: list[PlanJob]
    blockers: list[Blocker]
    rt_offset: Fraction  # Σ SD of the RTJs counted in θ but not planned (finished, fixed)
    n_rt: int  # RTJs the θ mean is over


@dataclass
class PlannedJob:
    partition: int
    start: int
    split: int | None = None  # x: work before the write (from ``start``), s
    restart: int | None = None
    end: int = 0


@dataclass
class DecisionStats:
    now: int
    jobs: int
    seconds: float  # wall time of the solve
    status: str
    cpu_seconds: float = 0.0  # this process's CPU time of the solve (what a loaded machine does not inflate)


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


def unit_classes(machine) -> list[list[int]]:
    """For each partition, the classes of hardware units it covers: units covered by the same set
    of partitions form one class (a NoOverlap per class is exact: two partitions conflict iff they
    share a unit, hence a class)."""
    cached = getattr(machine, "_replan_unit_classes", None)
    if cached is not None:
        return cached
    signature: dict[int, int] = {}
    for p in machine.partitions:
        hw = p.hardware
        while hw:
            low = hw & -hw
            unit = low.bit_length() - 1
            signature[unit] = signature.get(unit, 0) | (1 << p.index)
            hw ^= low
    classes: dict[int, int] = {}
    for unit, sig in sorted(signature.items()):
        classes.setdefault(sig, len(classes))
    per_partition: list[list[int]] = [[] for _ in machine.partitions]
    for sig, cls in classes.items():
        mask = sig
        while mask:
            low = mask & -mask
            per_partition[low.bit_length() - 1].append(cls)
            mask ^= low
    machine._replan_unit_classes = per_partition
    return per_partition


@dataclass
class Model:
    problem: Problem
    model: cp_model.CpModel
    s: dict[int, Any] = field(default_factory=dict)
    C: dict[int, Any] = field(default_factory=dict)
    prm: dict[int, Any] = field(default_factory=dict)
    x: dict[int, Any] = field(default_factory=dict)
    s2: dict[int, Any] = field(default_factory=dict)
    a: dict[tuple[int, int], Any] = field(default_factory=dict)

    def weighted(self, jobs: Sequence[PlanJob], weights: dict[int, int]):
        return sum(weights[j.id] * (self.C[j.id] - j.submit) for j in jobs)


def horizon(problem: Problem) -> int:
    """Nothing of a left-justified plan ends later (every part starts at a release or another end)."""
    rel = max([problem.now] + [j.release for j in problem.jobs] + [b.end for b in problem.blockers])
    return rel + sum(j.duration + (2 * j.write if j.split else 0) for j in problem.jobs)


def caps(jobs: Sequence[PlanJob], total: Fraction, ub: dict[int, int]) -> None:
    """Tighten ``ub`` (latest completion per job) under Σ SD <= ``total`` over ``jobs``: every
    slowdown is at least 1 (a job does all its W seconds of work after its submit), so
    SD_j <= total − (n − 1) (as ``milp.cpsat.job_upper_bounds``)."""
    n = len(jobs)
    for j in jobs:
        ub[j.id] = min(ub[j.id], j.submit + math.floor(j.weight_runtime * (total - (n - 1))))


def plan_sum(jobs: Sequence[PlanJob], plan: dict[int, PlannedJob]) -> Fraction:
    return sum((Fraction(plan[j.id].end - j.submit, j.weight_runtime) for j in jobs), Fraction(0))


def build(problem: Problem, unit_cls: list[list[int]], H: int, ub: dict[int, int] | None = None) -> Model:
    """The CP-SAT model of ``problem``; ``ub``: latest completion per job (default ``H``)."""
    m = cp_model.CpModel()
    md = Model(problem, m)
    now = problem.now
    class_ivs: dict[int, list] = {}
    for b in problem.blockers:
        iv = m.NewFixedSizeIntervalVar(now, max(1, b.end - now), f"B{b.partition}_{b.end}")
        for c in unit_cls[b.partition]:
            class_ivs.setdefault(c, []).append(iv)
    for j in problem.jobs:
        jid, D = j.id, j.duration
        lo_s = now if j.fixed_start else max(j.release, now)
        Hj = max(ub.get(jid, H) if ub else H, lo_s + D)  # never below the unsplit plan's end
        s = md.s[jid] = m.NewIntVar(lo_s, now if j.fixed_start else Hj - D, f"s{jid}")
        C = md.C[jid] = m.NewIntVar(lo_s + min(D, (j.split[0] if j.split else D)), Hj, f"C{jid}")
        lits = {q: m.NewBoolVar(f"a{jid}_{q}") for q in j.candidates}
        m.AddExactlyOne(lits.values())
        for q, lit in lits.items():
            md.a[(jid, q)] = lit
        if j.split is None:
            m.Add(C == s + D)
            for q, lit in lits.items():
                iv = m.NewOptionalIntervalVar(s, D, C, lit, f"I{jid}_{q}")
                for c in unit_cls[q]:
                    class_ivs.setdefault(c, []).append(iv)
            continue
        x_lo, x_hi = j.split
        sp = split_vars(m, jid, work=D, lo=x_lo, hi=x_hi, overhead=j.write, release=lo_s, horizon=Hj)
        prm, d1, e1, s2, d2 = sp.prm, sp.d1, sp.e1, sp.s2, sp.d2
        md.prm[jid], md.x[jid], md.s2[jid] = prm, sp.work, s2
        m.Add(e1 == s + d1)
        m.Add(s2 >= e1 + 1).OnlyEnforceIf(prm)  # a gapless split only adds 2·o (as milp.cpsat)
        m.Add(s2 == e1).OnlyEnforceIf(prm.Not())
        m.Add(C == s2 + d2)
        for q, lit in lits.items():
            iv1, iv2 = split_intervals_on(m, jid, q, lit, sp, s, C)
            for c in unit_cls[q]:
                class_ivs.setdefault(c, []).extend((iv1, iv2))
    for ivs in class_ivs.values():
        if len(ivs) > 1:
            m.AddNoOverlap(ivs)
    return md


def read_plan(md: Model, solver: cp_model.CpSolver) -> dict[int, PlannedJob]:
    out = {}
    for j in md.problem.jobs:
        jid = j.id
        q = next(q for q in j.candidates if solver.BooleanValue(md.a[(jid, q)]))
        s = solver.Value(md.s[jid])
        if jid in md.prm and solver.BooleanValue(md.prm[jid]):
            out[jid] = PlannedJob(q, s, solver.Value(md.x[jid]), solver.Value(md.s2[jid]), solver.Value(md.C[jid]))
        else:
            out[jid] = PlannedJob(q, s, end=solver.Value(md.C[jid]))
    return out


def hint(md: Model, plan: dict[int, PlannedJob]) -> None:
    m = md.model
    m.ClearHints()
    for j in md.problem.jobs:
        p = plan.get(j.id)
        if p is None or p.partition not in j.candidates:
            continue
        m.AddHint(md.s[j.id], p.start)
        for q in j.candidates:
            m.AddHint(md.a[(j.id, q)], int(q == p.partition))
        if j.id in md.prm:
            m.AddHint(md.prm[j.id], int(p.split is not None))


# ---------------------------------------------------------------------------------------------
# Solving one decision
# ---------------------------------------------------------------------------------------------


@dataclass
class Budget:
    clock: str
    total_s: float | None

    def params(self, solver: cp_model.CpSolver, share: float, seed: int) -> None:
        prm = solver.parameters
        prm.num_workers = 1
        prm.random_seed = seed
        # The full LP relaxation (with the interval cuts) proves these small models fast: a 6-job
        # decision of Table-3 seed 0 took 0.06 s of CPU, against 3.5 s unproven at the default level.
        prm.linearization_level = 2
        if self.total_s is not None:
            limit = max(0.001, self.total_s * share)
            if self.clock == "wall":
                prm.max_time_in_seconds = limit
            else:
                prm.max_deterministic_time = limit


def _solve(md: Model, budget: Budget, share: float, seed: int):
    solver = cp_model.CpSolver()
    budget.params(solver, share, seed)
    st = solver.Solve(md.model)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, "no_solution" if st != cp_model.INFEASIBLE else "infeasible", solver
    return read_plan(md, solver), "optimal" if st == cp_model.OPTIMAL else "feasible", solver


def _sum_bound(md: Model, jobs: list[PlanJob], total: Fraction, max_c: dict[int, int],
               floor_plan: dict[int, PlannedJob] | None) -> None:
    """Σ (C − r)/W <= total over ``jobs``, exact where the lcm fits (as ``milp.cpsat``), else with
    rounded-up weights loosened just enough to keep ``floor_plan`` feasible."""
    rw = ratio_weights(_Weighted.of(jobs), max_c, budget=2 ** 62, round_up=True)
    rhs = math.floor(total * rw.scale)
    if floor_plan is not None:
        need = sum(rw.weights[j.id] * (floor_plan[j.id].end - j.submit) for j in jobs)
        rhs = max(rhs, need)
    md.model.Add(md.weighted(jobs, rw.weights) <= rhs)


@dataclass(frozen=True)
class _Weighted:
    """What ``ratio_weights`` reads of a job: its id and the runtime it divides by (W)."""

    id: int
    runtime: int

    @staticmethod
    def of(jobs: Sequence[PlanJob]) -> list["_Weighted"]:
        return [_Weighted(j.id, j.weight_runtime) for j in jobs]


class CpsatStage:
    """One stage's CP-SAT model of a decision's problem; ``milp.replan_milp.MilpStage`` is the same
    interface on the disjunctive MILP (``solve_problem`` runs the stages on either)."""

    def __init__(self, problem: Problem, unit_cls: list[list[int]], H: int, ub: dict[int, int] | None) -> None:
        self.md = build(problem, unit_cls, H, ub)
        self.max_c = {j.id: H - j.submit for j in problem.jobs}

    def _weights(self, jobs: Sequence[PlanJob]) -> dict[int, int]:
        return ratio_weights(_Weighted.of(jobs), self.max_c).weights

    def minimize(self, jobs: Sequence[PlanJob]) -> None:
        self.md.model.Minimize(self.md.weighted(jobs, self._weights(jobs)))

    def at_most(self, jobs: Sequence[PlanJob], total: Fraction, floor_plan: dict[int, PlannedJob] | None) -> None:
        _sum_bound(self.md, list(jobs), total, self.max_c, floor_plan)

    def no_worse(self, jobs: Sequence[PlanJob], plan: dict[int, PlannedJob]) -> None:
        """Only plans at least as good as ``plan`` on the slowdown sum of ``jobs`` (exact weights)."""
        w = self._weights(jobs)
        self.md.model.Add(self.md.weighted(jobs, w) <= sum(w[j.id] * (plan[j.id].end - j.submit) for j in jobs))

    def hint(self, plan: dict[int, PlannedJob]) -> None:
        hint(self.md, plan)

    def solve(self, budget: Budget, share: float, seed: int) -> tuple[dict[int, PlannedJob] | None, str]:
        plan, status, _ = _solve(self.md, budget, share, seed)
        return plan, status


def stage_builder(method: str):
    """``(problem, unit_cls, H, ub) -> stage`` of ``method`` (``cpsat`` or ``milp``)."""
    if method == "milp":
        from milp.replan_milp import build_milp

        return build_milp
    return CpsatStage


def list_plan(problem: Problem, unit_cls: list[list[int]], last: dict[int, PlannedJob] | None) -> dict[int, PlannedJob]:
    """A feasible plan of ``problem`` without a solver (list scheduling): the running jobs go on
    as they are (unsplit), then every other job in the order of its start in ``last`` (the
    previous plan; jobs it lacks after, in problem order), unsplit, at its earliest start on a
    candidate partition, on ``last``'s partition where that is as early (else the first such
    candidate).  Every start is at the job's release or at the end of something in its way, so
    the plan ends within ``horizon``."""
    now = problem.now
    busy: dict[int, list[tuple[int, int]]] = {}  # class of hardware units -> occupied [a, b), s
    for b in problem.blockers:
        for c in unit_cls[b.partition]:
            busy.setdefault(c, []).append((now, max(now + 1, b.end)))
    last = last or {}
    never = 1 << 62
    order = sorted(range(len(problem.jobs)), key=lambda i: (
        not problem.jobs[i].fixed_start, last[problem.jobs[i].id].start if problem.jobs[i].id in last else never, i))
    out: dict[int, PlannedJob] = {}
    for i in order:
        j = problem.jobs[i]
        D = j.duration
        lo = now if j.fixed_start else max(j.release, now)
        was = last.get(j.id)
        best_t, best_q = None, None
        for q in j.candidates:
            t = lo
            if not j.fixed_start:
                for a, b in sorted(iv for c in unit_cls[q] for iv in busy.get(c, ())):
                    if b <= t:
                        continue
                    if a >= t + D:
                        break
                    t = b
            if best_t is None or t < best_t or (t == best_t and was is not None and q == was.partition):
                best_t, best_q = t, q
        out[j.id] = PlannedJob(best_q, best_t, end=best_t + D)
        for c in unit_cls[best_q]:
            busy.setdefault(c, []).append((best_t, best_t + D))
    return out


def solve_problem(problem: Problem, unit_cls: list[list[int]], theta: Fraction, budget: Budget, *,
                  tiebreak: bool = True, warm: dict[int, PlannedJob] | None = None,
                  seed: int = 0, method: str = "cpsat", floor: bool = False) -> tuple[dict[int, PlannedJob] | None, str]:
    """The lexicographic plan of ``problem`` (θ*, then BJs, then the RTJ tie-break) on ``method``'s
    model.  Each stage after the first is warm-started from the previous stage's plan, looks only for
    plans at least as good (objective cut) and bounds every job's completion from that plan
    (``caps``).  ``floor``: start from ``list_plan`` (the hint of the first stage, and the plan
    kept where a stage finds nothing in its budget), so that a plan always comes back (the Mira
    mode: at 20 ms half of wk1's solves found nothing)."""
    stage = stage_builder(method)
    H = horizon(problem)
    rts = [j for j in problem.jobs if j.kind == "rt"]
    bjs = [j for j in problem.jobs if j.kind != "rt"]
    status = "optimal"
    base = list_plan(problem, unit_cls, warm) if floor else None
    plan = base if base is not None else warm
    rt_total = None  # bound on Σ SD of the planned RTJs
    ub = {j.id: H for j in problem.jobs}
    if rts:
        md = stage(problem, unit_cls, H, None)
        md.minimize(rts)
        if plan:
            md.hint(plan)
        got, st = md.solve(budget, STAGE_SHARES[0], seed)
        if got is None and base is None:
            return None, st
        if got is None:
            got, st = base, "feasible"
        plan = got
        status = st if st != "optimal" else status
        theta_star_sum = plan_sum(rts, plan)
        rt_total = max(theta * problem.n_rt - problem.rt_offset, theta_star_sum)
        caps(rts, rt_total, ub)
        if bjs:
            caps(bjs, plan_sum(bjs, plan), ub)
    md = stage(problem, unit_cls, H, ub if rts else None)
    if rt_total is not None:
        md.at_most(rts, rt_total, plan)
    if bjs:
        md.minimize(bjs)
        if rts:  # the θ* plan is feasible here: look only for plans at least as good
            md.no_worse(bjs, plan)
    if plan:
        md.hint(plan)
    got, st = md.solve(budget, STAGE_SHARES[1], seed)
    if got is None:
        return (plan, "feasible") if rts or base is not None else (None, st)
    plan = got
    status = st if st != "optimal" else status
    # The tie-break can lower nothing when the BJ plan's RTJ sum is already the least one (θ*).
    if tiebreak and rts and bjs and not (status == "optimal" and plan_sum(rts, plan) <= theta_star_sum):
        ub = {j.id: H for j in problem.jobs}
        caps(rts, plan_sum(rts, plan), ub)
        caps(bjs, plan_sum(bjs, plan), ub)
        md = stage(problem, unit_cls, H, ub)
        md.at_most(rts, rt_total, plan)
        md.no_worse(bjs, plan)
        md.minimize(rts)
        md.hint(plan)
        got, st = md.solve(budget, STAGE_SHARES[2], seed)
        if got is not None:
            plan = got
            status = st if st != "optimal" else status
    return plan, status


# ---------------------------------------------------------------------------------------------
# The policy
# ---------------------------------------------------------------------------------------------


def _progress(js, view: SimView) -> int:
    """Work done by a running job, s (a restart's read is not work)."""
    if js.saved > 0:
        read = view.io.read_seconds(js.alloc_nodes)
        return js.saved + max(0, view.now - js.run_start - read)
    return view.now - js.run_start


def bounded_window(view: SimView, k: int, home: dict[int, int]) -> tuple[list, set[int]]:
    """The waiting jobs a bounded plan (window ``k``) sees, in queue order, and the ids of those
    taken only because they fit now.

    The window is every waiting RTJ, the first ``k`` other waiting jobs (queue order) and every
    further waiting job that a first-fit pass in queue order places on the partitions free now
    (a preempted job only on its own partition): the jobs a backfilling heuristic could start now,
    at most as many as the free partitions hold together.  Without them a plan of the first ``k``
    jobs backfilled nothing deeper (Mira wk1, K = 8: BJ bounded slowdown 11.3 against WCJS-JIT's
    2.0).  The plan offers a fitting job only the partitions free now (``ReplanPolicy.problem``).
    """
    rts, head, rest = [], [], []
    for js in view.queue:
        if js.info.kind == "rt":
            rts.append(js)
        elif len(head) < k:
            head.append(js)
        else:
            rest.append(js)
    fitting: set[int] = set()
    if rest and view.state.free_mask:
        state = view.state.copy()
        allocated_nodes = view.machine.allocated_nodes
        for js in rest:
            nodes = js.info.nodes
            own = home.get(js.info.id)
            q = state.find(nodes) if own is None else (own if state.is_free(own, nodes) else None)
            if q is None:
                continue
            state.allocate(q, allocated_nodes(nodes))
            fitting.add(js.info.id)
            if not state.free_mask:
                break
    keep = {js.info.id for js in rts} | {js.info.id for js in head} | fitting
    return [js for js in view.queue if js.info.id in keep], fitting


class ReplanPolicy:
    """Receding-horizon scheduling on the exact model (module docstring).

    Args:
        method: the model and solver: ``cpsat`` (CP-SAT) or ``milp`` (the disjunctive MILP of
            ``milp.replan_milp`` on the best installed back end; wall-clock limits only).
        time_limit_ms: budget of one decision (all stages), ms; None: no limit (proven optima).
        clock: ``deterministic`` (CP-SAT's deterministic time: reproducible) or ``wall``.
        window: K — plan the running jobs, every waiting RTJ, the first K other waiting jobs and
            the further waiting jobs that fit the partitions free now (``bounded_window``; None:
            every job).
        theta: the RTJ bound θ (mean RTJ slowdown), default 6/5.
        preempt: whether the plan may preempt running checkpointable BJs.
        tiebreak: the third stage (least RTJ mean among the BJ-optimal plans).
        seed: CP-SAT's random seed.
    """

    preemptive = True
    # The checkpoint model a run without --checkpoint gets (rtsched.pipeline): the one the plan
    # preempts under; the periodic models and NO leave it without preemption.
    default_checkpoint = "jit"

    def __init__(self, method: str = "cpsat", time_limit_ms: int | None = DEFAULT_LIMIT_MS,
                 clock: str = "deterministic", window: int | None = None, theta: Any = DEFAULT_THETA,
                 preempt: bool = True, tiebreak: bool = True, seed: int = 0) -> None:
        if method not in METHODS:
            raise OptionError(f"replan: unknown method {method!r}; choose from {', '.join(METHODS)}")
        if clock not in CLOCKS:
            raise OptionError(f"replan: unknown clock {clock!r}; choose from {', '.join(CLOCKS)}")
        if method == "milp" and clock == "deterministic" and time_limit_ms is not None:
            # no MILP back end here has a deterministic clock: a limit would make runs irreproducible
            raise OptionError("replan: method=milp has no deterministic clock; give clock=wall (a wall-time limit, "
                              "runs not reproducible) or ms=none (no limit)")
        if time_limit_ms is not None and int(time_limit_ms) < 1:
            raise OptionError(f"replan: time_limit_ms must be >= 1 ms, got {time_limit_ms}")
        if window is not None and int(window) < 1:
            # k = 0 plans only the RTJs: with none waiting, nothing would ever start
            raise OptionError(f"replan: k (window) must be >= 1 waiting job, got {window}")
        try:
            theta = Fraction(str(theta)) if not isinstance(theta, Fraction) else theta
        except ValueError:
            raise OptionError(f"replan: theta must be a number, got {theta!r}") from None
        if theta < 1:
            raise OptionError(f"replan: theta must be >= 1 (a mean slowdown), got {theta}")
        self.method = method
        self.time_limit_ms = None if time_limit_ms is None else int(time_limit_ms)
        self.clock = clock
        self.window = None if window is None else int(window)
        self.theta = theta
        self.preempt = bool(preempt)
        self.tiebreak = bool(tiebreak)
        self.seed = int(seed)
        self.name = replan_name(self.options())
        self._reset(None)

    def options(self) -> dict[str, Any]:
        return {"method": self.method, "time_limit_ms": self.time_limit_ms, "clock": self.clock,
                "window": self.window, "theta": str(self.theta), "preempt": self.preempt,
                "tiebreak": self.tiebreak, "seed": self.seed}

    def _reset(self, run_id) -> None:
        self._run_id = run_id
        self._plan: dict[int, PlannedJob] = {}
        self._home: dict[int, int] = {}  # preempted job -> its partition (it restarts there)
        self._write_end: dict[int, int] = {}  # job writing its checkpoint -> end of the write
        self._progress_at_preempt: dict[int, int] = {}
        self._rt_done: dict[int, Fraction] = {}  # finished RTJ -> its slowdown
        self._rt_seen: set[int] = set()
        self._wakes: set[int] = set()
        self._plan_valid = False  # the last pass solved (its plan may be followed, ``_as_planned``)
        self.stats: list[DecisionStats] = []
        self.skipped = 0  # passes that followed the last plan without solving (``_as_planned``)
        self.log: list[tuple[int, tuple[Decision, ...]]] = []

    # -- the problem at ``now`` ------------------------------------------------------------
    def problem(self, view: SimView) -> Problem:
        now = view.now
        machine = view.machine
        io = view.io
        jit = view.checkpoint.kind is CheckpointKind.JIT
        jobs: list[PlanJob] = []
        blockers: list[Blocker] = []
        rt_fixed = Fraction(0)
        n_rt_fixed = 0
        # Bounded (Mira) mode: running BJs are preempted only for a waiting RTJ (as the heuristic
        # schemes do); with ~20 running checkpointable BJs in each Mira decision, planning their
        # preemption at every arrival doubled a solve's CPU (56 solves of wk1's first day at 50 ms:
        # 0.100 -> 0.046 s each).
        preemptible = self.preempt and jit and (self.window is None or any(js.info.kind == "rt" for js in view.queue))
        for js in sorted(view.running.values(), key=lambda s: s.info.id):
            info = js.info
            W = info.walltime
            if js.status == DRAINING:  # writing the checkpoint this policy asked for
                end = self._write_end.get(info.id, now + io.write_seconds(js.alloc_nodes))
                blockers.append(Blocker(js.alloc, max(end, now + 1)))
                rest = W - self._progress_at_preempt.get(info.id, 0)
                jobs.append(PlanJob(info.id, info.kind, info.submit, W, max(end, now),
                                    io.read_seconds(js.alloc_nodes) + max(rest, 1), [js.alloc]))
                continue
            if js.status == PENDING:  # bound to a partition, waiting for writes: cannot move
                blockers.append(Blocker(js.alloc, now + W + io.write_seconds(js.alloc_nodes)))
                continue
            remaining = max(js.expected_end - now, 1)
            split = None
            if (preemptible and js.status == RUNNING and info.kind == "batch" and info.checkpointable
                    and js.n_preemptions == 0):
                progress = _progress(js, view)
                lo, hi = split_bounds(W)
                x_lo, x_hi = max(0, lo - progress), hi - progress
                if self.window is not None:
                    # Bounded (Mira) mode: preempted at its earliest allowed point or not in this
                    # plan; a later point is decided at a later event (the plan is re-solved at
                    # every arrival and early end).  A free split point of every running job made
                    # most Mira decisions unprovable in the budget (52 decisions of wk1's first
                    # day: 0.25 -> 0.14 s of CPU each, optimal 40 -> 55 of 56 solves).
                    x_hi = x_lo
                if lo <= hi and x_lo <= x_hi and x_hi < remaining:
                    split = (x_lo, x_hi)
            if split is None and info.kind == "rt":
                rt_fixed += Fraction(now + remaining - info.submit, W)
                n_rt_fixed += 1
            if split is None:
                blockers.append(Blocker(js.alloc, now + remaining))
                continue
            jobs.append(PlanJob(info.id, info.kind, info.submit, W, now, remaining, [js.alloc], fixed_start=True,
                                split=split, write=io.write_seconds(js.alloc_nodes)))
        waiting = list(view.queue)
        fitting: set[int] = set()
        if self.window is not None:
            waiting, fitting = bounded_window(view, self.window, self._home)
        for js in waiting:
            info = js.info
            W = info.walltime
            home = self._home.get(info.id)
            cands = [home] if home is not None else list(machine.candidates_for(info.nodes))
            if info.id in fitting:  # taken for a partition free now: offered only those (a small model)
                cands = [q for q in cands if view.state.is_free(q, info.nodes)]
            nodes = machine.allocated_nodes(info.nodes)
            if js.saved > 0 or js.n_preemptions > 0:  # a restart: read, then the rest; no second split
                read = io.read_seconds(nodes) if js.saved > 0 else 0
                jobs.append(PlanJob(info.id, info.kind, info.submit, W, now, read + max(W - js.saved, 1), cands))
                continue
            split = None
            if self.preempt and jit and info.kind == "batch" and info.checkpointable:
                lo, hi = split_bounds(W)
                if lo <= hi:
                    split = (lo, hi)
            jobs.append(PlanJob(info.id, info.kind, info.submit, W, now, W, cands, split=split,
                                write=io.write_seconds(nodes)))
        planned_rt = [j for j in jobs if j.kind == "rt"]
        if self.window is None:  # θ over every RTJ that has arrived (the finished ones as they were)
            offset = rt_fixed + sum(self._rt_done.values(), Fraction(0))
            n_rt = len(planned_rt) + n_rt_fixed + len(self._rt_done)
        else:  # θ over the RTJs of this plan
            offset, n_rt = rt_fixed, len(planned_rt) + n_rt_fixed
        return Problem(now, jobs, blockers, offset, n_rt)

    def _note_finished(self, view: SimView) -> None:
        for js in view.running.values():
            if js.info.kind == "rt":
                self._rt_seen.add(js.info.id)
        for js in view.completed:
            if js.info.kind == "rt" and js.info.id not in self._rt_done:
                # a finished job's ``saved`` is its runtime; an RTJ runs in one stint
                end = js.run_start + js.saved
                self._rt_done[js.info.id] = Fraction(end - js.info.submit, max(js.saved, 1))
            self._write_end.pop(js.info.id, None)
            if js.expected_end > view.now:  # ended before the end the plan assumed (seen even in a
                self._plan_valid = False  # pass with an empty queue, which returns before planning)

    # -- the pass --------------------------------------------------------------------------
    def decide(self, view: SimView) -> list[Decision]:
        if view.run_id != self._run_id:
            self._reset(view.run_id)
        if view.machine is None or not getattr(view.machine, "partitioned", False):
            raise OptionError(f"{self.name}: needs a partitioned machine (--machine mira, mira:BLOCKS or a "
                              "partition .xml)")
        self._note_finished(view)
        now = view.now
        self._wakes = {t for t in self._wakes if t > now}
        if not view.queue:
            return []
        problem = self.problem(view)
        if not problem.jobs or self._nothing_to_decide(view, problem):
            return []
        if self._as_planned(view, problem):
            # Nothing happened that the plan did not assume (a wake-up for a planned action, a job
            # ending at its walltime, a preempted job back in the queue after its write): the rest
            # of the plan is still a plan of the rest of the problem (the past is its own), as good
            # as the last solve could make it, so it is followed without solving again.
            self.skipped += 1
            return self._apply(view, problem, self._plan)
        t0, c0 = time.perf_counter(), time.process_time()
        budget = Budget(self.clock, None if self.time_limit_ms is None else self.time_limit_ms / 1000.0)
        plan, status = solve_problem(problem, unit_classes(view.machine), self.theta, budget,
                                     tiebreak=self.tiebreak, warm=self._plan, seed=self.seed, method=self.method,
                                     floor=self.window is not None)
        self.stats.append(DecisionStats(now, len(problem.jobs), time.perf_counter() - t0, status,
                                        time.process_time() - c0))
        if plan is None:  # nothing found in the budget: start what fits now, in queue order (never idle)
            self._plan_valid = False
            return self._fallback(view)
        self._plan = plan
        self._plan_valid = True
        return self._apply(view, problem, plan)

    def _fallback(self, view: SimView) -> list[Decision]:
        state = view.state.copy()
        out: list[Decision] = []
        for js in view.queue:
            home = self._home.get(js.info.id)
            q = state.find(js.info.nodes) if home is None else (home if state.is_free(home, js.info.nodes) else None)
            if q is not None:
                state.allocate(q, view.machine.allocated_nodes(js.info.nodes))
                out.append(Start(js.info.id, q))
        self.log.append((view.now, tuple(out)))
        return out

    def _nothing_to_decide(self, view: SimView, problem: Problem) -> bool:
        """No plan could act before the next event: no waiting job of the plan has a free
        partition now and no running job may be preempted (a start can then come only when a
        partition frees — a completion or the end of a write, both events)."""
        if any(j.fixed_start for j in problem.jobs):
            return False
        free = view.state.free_mask
        queued = {js.info.id for js in view.queue}
        return not any(j.id in queued and any((free >> q) & 1 for q in j.candidates) for j in problem.jobs)

    def _as_planned(self, view: SimView, problem: Problem) -> bool:
        """Whether the last plan still holds at ``view.now``: it plans every job of ``problem``,
        no job of ``problem`` arrived since (a job that entered the queue is one this policy
        preempted, back after its write, or one outside the bounded window), no job ended before its walltime-based end (the plan assumed that end;
        ``_note_finished`` marks the plan invalid), and every planned start of a waiting job is now or later (none was missed)."""
        plan = self._plan
        if not self._plan_valid:
            return False
        if view.entered:
            # A job that arrived outside a bounded window (beyond the first K, fitting nothing free)
            # leaves the problem as it was; without a window every arrival is in it.
            planned = {j.id for j in problem.jobs}
            if any(js.info.id not in self._home and js.info.id in planned for js in view.entered):
                return False
        now = view.now
        queued = {js.info.id for js in view.queue}
        for j in problem.jobs:
            p = plan.get(j.id)
            if p is None or (j.id in queued and (p.start < now or p.partition not in j.candidates)):
                return False
        return True

    def _apply(self, view: SimView, problem: Problem, plan: dict[int, PlannedJob]) -> list[Decision]:
        """The plan's actions due now (starts, preemptions) and a wake-up for its next one."""
        now = view.now
        out: list[Decision] = []
        state = view.state.copy()
        nxt = None
        queued = {js.info.id: js for js in view.queue}
        for j in problem.jobs:
            p = plan[j.id]
            if j.fixed_start:  # running: preempt now, or later
                if p.split is None:
                    continue
                write_at = p.start + p.split  # the plan's start was the then-current time
                if write_at <= now:
                    js = view.running[j.id]
                    out.append(Preempt(j.id))
                    self._home[j.id] = js.alloc
                    self._progress_at_preempt[j.id] = _progress(js, view)
                    self._write_end[j.id] = now + j.write
                elif nxt is None or write_at < nxt:
                    nxt = write_at
                continue
            if j.id not in queued:  # a checkpoint still being written
                continue
            if p.start == now:
                nodes = queued[j.id].info.nodes
                if state.is_free(p.partition, nodes):
                    state.allocate(p.partition, view.machine.allocated_nodes(nodes))
                    out.append(Start(j.id, p.partition))
                    if p.split is not None:
                        self._home[j.id] = p.partition
            elif nxt is None or p.start < nxt:
                nxt = p.start
        if nxt is not None and nxt > now and nxt not in self._wakes:
            self._wakes.add(nxt)
            out.append(WakeAt(nxt))
        self.log.append((now, tuple(out)))
        return out


def replan_name(options: dict[str, Any]) -> str:
    """The name a policy with these options has in results: ``replan`` for the defaults, else
    ``replan:KEY=VALUE,...`` with the options that differ (``make_policy`` reads it back)."""
    defaults = ReplanPolicy.__init__.__defaults__
    names = ("method", "time_limit_ms", "clock", "window", "theta", "preempt", "tiebreak", "seed")
    base = dict(zip(names, defaults))
    base["theta"] = str(base["theta"])
    diff = [f"{SHORT.get(k, k)}={_fmt(v)}" for k, v in options.items() if base.get(k) != v]
    return "replan" + (":" + ",".join(diff) if diff else "")


def _fmt(v: Any) -> str:
    return "none" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


# option names in ``replan:...`` -> keyword
SHORT = {"time_limit_ms": "ms", "window": "k"}
LONG = {"ms": "time_limit_ms", "k": "window"}


def parse_replan_name(name: str) -> dict[str, Any]:
    """The options of ``replan`` or ``replan:ms=200,k=16,theta=1.2,method=cpsat,clock=wall,...``;
    OptionError names the bad item."""
    key = name.strip().lower()
    if key == "replan":
        return {}
    _, _, rest = key.partition(":")
    out: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        given, eq, v = item.partition("=")
        given = given.strip()
        k = LONG.get(given, given)
        if not eq or k not in ("method", "time_limit_ms", "clock", "window", "theta", "preempt", "tiebreak", "seed"):
            raise OptionError(f"policy {name!r}: bad option {item!r}; replan takes ms=, k=, theta=, method=, clock=, "
                              "preempt=, tiebreak=, seed=")
        v = v.strip()
        try:
            if k in ("time_limit_ms", "window", "seed"):
                out[k] = None if v == "none" and k != "seed" else int(v)
            elif k in ("preempt", "tiebreak"):
                if v not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(v)
                out[k] = v in ("true", "1", "yes")
            else:
                out[k] = v
        except ValueError:
            raise OptionError(f"policy {name!r}: option {given} has a bad value {v!r}") from None
    return out


__all__ = ["ReplanPolicy", "bounded_window", "list_plan", "Problem", "PlanJob", "solve_problem", "replan_name", "parse_replan_name", "unit_classes"]
