"""An exact CP-SAT model of the offline problem, without the sequence cap.

Per job: start s_j, completion C_j, and for a BJ that may be split a literal prm_j, the integer
work split w_j and a second part.  Two views of "no overlap on conflicting partitions", used
together by default: every part is a rectangle (time × the block range [y_j, y_j + k_j) of its
aligned partition) in one NoOverlap2D; and per job and candidate partition q, optional intervals
(part 1, and part 2 when split) present iff the job is on q, in a NoOverlap per 512-node block
(conflicting partitions share a block).  A redundant Cumulative (demand k_j, capacity M) on the
job-level intervals strengthens propagation.

Slowdowns are rational; sums of them are made integral exactly (docs/milp.md):

* objective Σ_BJ (C_j − r_j)/p_j ⇒ minimise Σ (L/p_j)·(C_j − r_j) with L = lcm of the BJ runtimes,
  as long as Σ (L/p_j)·(H − r_j) <= 2^53 (so the objective is also exact as a double);
  otherwise integer weights round(S/p_j) with the largest S that respects that budget, and the
  result is optimal within the reported additive tolerance ``eps`` on Σ SD (about 1e-9 for
  Table-3-sized instances);
* RTJ bound Σ_RT (C_j − r_j)/p_j <= θ·n_rt ⇒ Σ (L'/p_j)(C_j − r_j) <= floor(θ·n_rt·L') with
  L' = lcm of the RTJ runtimes and θ a Fraction (exact); if that overflows, ceil-scaled weights
  make it a (slightly) conservative restriction.

Symmetry breaking: identical jobs (kind, submit, runtime, size, splittable) start in id order; on
a machine whose partitions form a complete binary tree (M = 1, 2, 4, 8, 16) the widest job with more
than one candidate is fixed to the leftmost partition of its size (the automorphisms act transitively on each
level).  Warm start: AddHint from a greedy left-justified plan or from a previous stage.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

from ortools.sat.python import cp_model

from milp.instance import Instance, split_bounds
from milp.plan import Placement, evaluate, left_justify, parts_of
from milp.stoppable import BuildTimeout, run_stoppable

BUDGET = 2 ** 53


@dataclass(frozen=True)
class RatioWeights:
    """Integer weights for Σ_j c_j/p_j ≈ Σ_j weight_j·c_j / scale (exact when ``eps == 0``)."""

    weights: dict[int, int]
    scale: int
    eps: float  # |Σ c/p − Σ weight·c / scale| <= eps for every feasible c


def ratio_weights(jobs, max_c: dict[int, int], budget: int = BUDGET, round_up: bool = False) -> RatioWeights:
    if not jobs:
        return RatioWeights({}, 1, 0.0)
    L = math.lcm(*(j.runtime for j in jobs))
    if sum((L // j.runtime) * max_c[j.id] for j in jobs) <= budget:
        return RatioWeights({j.id: L // j.runtime for j in jobs}, L, 0.0)
    total = sum(Fraction(max_c[j.id], j.runtime) for j in jobs)
    S = max(1, int(budget // (total * 2)))
    if round_up:
        w = {j.id: -(-S // j.runtime) for j in jobs}
    else:
        w = {j.id: max(1, round(Fraction(S, j.runtime))) for j in jobs}
    eps = float(sum(abs(Fraction(S, j.runtime) - w[j.id]) * max_c[j.id] for j in jobs) / S)
    return RatioWeights(w, S, eps)


def is_binary_tree(blocks: int) -> bool:
    return blocks in (1, 2, 4, 8, 16)


# ---------------------------------------------------------------------------------------------
# Greedy plans (hints)
# ---------------------------------------------------------------------------------------------


class GreedyTimeout(TimeoutError):
    """A greedy plan was abandoned at its deadline (large instances: the greedy is quadratic)."""


def greedy_plan(instance: Instance, order: Sequence[int] | None = None,
                fixed: Sequence[Placement] = (), deadline: float | None = None) -> list[Placement]:
    """Unsplit list scheduling: the ``fixed`` placements stay; the other jobs, in ``order`` (default:
    RTJs by submit, then BJs by submit), each go on the candidate partition where they can start
    earliest, using any gap between the parts already placed.  ``deadline`` (a
    ``time.perf_counter()`` value): raise :class:`GreedyTimeout` once it has passed."""
    inst = instance
    kept = {pl.job_id: pl for pl in fixed}
    if order is None:
        order = [j.id for j in sorted(inst.jobs, key=lambda j: (j.kind != "rt", j.submit, j.id))]
    busy: list[tuple[int, int, int]] = [(p.partition, p.start, p.end) for pl in fixed for p in parts_of(inst, pl)]
    parts = inst.partitions
    out = dict(kept)
    for jid in order:
        if jid in kept:
            continue
        if deadline is not None and time.perf_counter() > deadline:
            raise GreedyTimeout("greedy plan abandoned at its deadline")
        job = inst.job(jid)
        best = None
        for c in inst.candidates(job):
            ivs = sorted((s, e) for q, s, e in busy if parts[q].conflicts(c))
            t = job.submit
            for s, e in ivs:
                if s >= t + job.runtime:
                    break
                if e > t:
                    t = e
            if best is None or t < best[0]:
                best = (t, c.index)
        t, q = best
        busy.append((q, t, t + job.runtime))
        out[jid] = Placement(jid, q, t)
    return [out[j.id] for j in inst.jobs]


def best_greedy_plan(instance: Instance, base: Sequence[Placement] | None = None,
                     rt_bound: Fraction | None = None, deadline: float | None = None) -> list[Placement] | None:
    """The best of a few greedy plans (lexicographic: meets ``rt_bound``, then least Σ BJ SD).

    Candidates: ``base`` itself; and with ``base``'s RTJ placements kept, the BJs inserted into the
    gaps in submit, shortest-first and widest-first order; and plain greedy plans (RTJs first).
    A warm start and the source of the per-job horizons (``job_upper_bounds``).  ``deadline`` (a
    ``time.perf_counter()`` value) bounds the work: the candidates finished by then are compared,
    and None is returned when there is none (a large instance)."""
    inst = instance
    bj = inst.batch_jobs
    orders = [sorted(bj, key=lambda j: (j.submit, j.id)), sorted(bj, key=lambda j: (j.runtime, j.submit, j.id)),
              sorted(bj, key=lambda j: (-inst.k(j), j.submit, j.id)),
              sorted(bj, key=lambda j: (j.submit + j.runtime, j.id))]
    rt_ids = [j.id for j in sorted(inst.rt_jobs, key=lambda j: (j.submit, j.id))]
    makers = []
    cands: list[list[Placement]] = []
    if base is not None:
        cands.append(list(base))
        fixed = [pl for pl in base if inst.job(pl.job_id).kind == "rt"]
        makers += [lambda o=o: greedy_plan(inst, [j.id for j in o], fixed, deadline) for o in orders]
    makers += [lambda o=o: greedy_plan(inst, rt_ids + [j.id for j in o], deadline=deadline) for o in orders]
    makers.append(lambda: greedy_plan(inst, [j.id for j in sorted(inst.jobs, key=lambda j: (j.submit, j.id))],
                                      deadline=deadline))
    for make in makers:
        try:
            cands.append(make())
        except GreedyTimeout:
            break

    def key(plan):
        ev = evaluate(inst, plan)
        over = 0 if rt_bound is None or ev.rt_mean is None or ev.rt_mean <= rt_bound else 1
        return (over, ev.rt_sum if over else 0, ev.bj_sum)

    justified = []
    for c in cands:
        if justified and deadline is not None and time.perf_counter() > deadline:
            break
        justified.append(left_justify(inst, c))
    return [*min(justified, key=key)] if justified else None


def job_upper_bounds(instance: Instance, objective: str, incumbent: Sequence[Placement] | None,
                     rt_bound: Fraction | None, preempt: bool = True,
                     bj_sum_bound: Fraction | None = None) -> dict[int, int]:
    """Latest completion time of every job in some optimal schedule no worse than ``incumbent``.

    Start from the left-justified horizon H (``Instance.horizon``).  Every SD is >= 1, so with the
    RTJ bound Σ_RT SD <= θ·n_rt an RTJ has SD_j <= θ·n_rt − (n_rt − 1); likewise a BJ under the
    BJ bound Σ_BJ SD <= ``bj_sum_bound`` (the RTJ tie-break stage); and a schedule at least
    as good as the incumbent on the objective's jobs has SD_j <= UB − (n − 1) for each of them,
    UB = the incumbent's Σ SD.  C_j <= r_j + floor(p_j · that)."""
    inst = instance
    H = inst.horizon(preempt)
    ub = {j.id: H for j in inst.jobs}

    def cap(jobs, total: Fraction) -> None:
        n = len(jobs)
        for j in jobs:
            ub[j.id] = min(ub[j.id], j.submit + math.floor(j.runtime * (total - (n - 1))))

    rts = inst.rt_jobs
    if rt_bound is not None and rts:
        cap(rts, Fraction(rt_bound) * len(rts))
    if bj_sum_bound is not None and inst.batch_jobs:
        cap(inst.batch_jobs, Fraction(bj_sum_bound))
    if incumbent is not None:
        ev = evaluate(inst, incumbent)
        if objective == "bj" and inst.batch_jobs:
            cap(inst.batch_jobs, ev.bj_sum)
        elif objective == "rt" and rts:
            cap(rts, ev.rt_sum)
    for j in inst.jobs:
        ub[j.id] = max(ub[j.id], j.submit + j.runtime)
    return ub


# ---------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------


@dataclass
class SplitVars:
    """The variables of a job that may be split once: ``prm`` (split or not), ``work`` (w: work of
    the first part, = all of it unsplit), ``d1``/``e1`` (first part's length and end: w + o·prm),
    ``s2``/``d2`` (second part's start and length: the rest + o·prm)."""

    prm: cp_model.IntVar
    work: cp_model.IntVar
    d1: cp_model.IntVar
    e1: cp_model.IntVar
    s2: cp_model.IntVar
    d2: cp_model.IntVar


def split_vars(m: cp_model.CpModel, j: int, *, work: int, lo: int, hi: int, overhead: int, release: int,
               horizon: int) -> SplitVars:
    """Variables and links of a split-once job with ``work`` s to do, its first part carrying
    between ``lo`` and ``hi`` of it when split (all of it otherwise), ``overhead`` s of checkpoint
    write (end of part 1) and restart read (start of part 2); shared by this model and
    ``milp.replan``'s (where a running job's first part may carry ``lo`` = 0 more work)."""
    o = overhead
    prm = m.NewBoolVar(f"prm{j}")
    w = m.NewIntVar(lo, work, f"w{j}")
    m.Add(w <= hi).OnlyEnforceIf(prm)
    m.Add(w == work).OnlyEnforceIf(prm.Not())
    d1 = m.NewIntVar(lo, max(work, hi + o), f"d1_{j}")
    m.Add(d1 == w + o * prm)
    e1 = m.NewIntVar(release + lo, horizon, f"e1_{j}")
    s2 = m.NewIntVar(release, horizon, f"s2_{j}")
    d2 = m.NewIntVar(0, work - lo + o, f"d2_{j}")
    m.Add(d2 == work - w + o * prm)
    return SplitVars(prm, w, d1, e1, s2, d2)


def split_intervals_on(m: cp_model.CpModel, j: int, q: int, lit, sp: SplitVars, start, end) -> tuple:
    """The two parts of split-once job ``j`` as optional intervals on candidate partition ``q``
    (literal ``lit``): part 1 present iff the job is on q, part 2 iff it is on q and split."""
    both = m.NewBoolVar(f"c{j}_{q}")
    m.AddImplication(both, lit)
    m.AddImplication(both, sp.prm)
    m.AddBoolOr([lit.Not(), sp.prm.Not(), both])
    return (m.NewOptionalIntervalVar(start, sp.d1, sp.e1, lit, f"I1_{j}_{q}"),
            m.NewOptionalIntervalVar(sp.s2, sp.d2, end, both, f"I2_{j}_{q}"))


@dataclass
class CpsatModel:
    instance: Instance
    preempt: bool
    model: cp_model.CpModel
    horizon: int
    s: dict[int, cp_model.IntVar] = field(default_factory=dict)
    C: dict[int, cp_model.IntVar] = field(default_factory=dict)
    prm: dict[int, cp_model.IntVar] = field(default_factory=dict)
    w: dict[int, cp_model.IntVar] = field(default_factory=dict)
    s2: dict[int, cp_model.IntVar] = field(default_factory=dict)
    a: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    objective_weights: RatioWeights | None = None
    rt_weights: RatioWeights | None = None
    rt_rhs: int | None = None
    bj_weights: RatioWeights | None = None
    bj_rhs: int | None = None

    def size(self) -> dict[str, int]:
        proto = self.model.Proto()
        n_bool = sum(1 for v in proto.variables if len(v.domain) == 2 and v.domain[0] >= 0 and v.domain[1] <= 1)
        n_iv = sum(1 for c in proto.constraints if c.has_interval())
        return {"variables": len(proto.variables), "binaries": n_bool, "integers": len(proto.variables) - n_bool,
                "constraints": len(proto.constraints) - n_iv, "intervals": n_iv}

    def hint(self, plan: Sequence[Placement]) -> None:
        inst = self.instance
        m = self.model
        m.ClearHints()
        by_job: dict[int, list] = {}
        for (jj, q), lit in self.a.items():
            by_job.setdefault(jj, []).append((q, lit))
        for pl in plan:
            job = inst.job(pl.job_id)
            j = job.id
            m.AddHint(self.s[j], pl.start)
            for q, lit in by_job.get(j, ()):
                m.AddHint(lit, 1 if q == pl.partition else 0)
            ps = parts_of(inst, pl)
            m.AddHint(self.C[j], ps[-1].end)
            if j in self.prm:
                split = pl.split is not None
                m.AddHint(self.prm[j], 1 if split else 0)
                m.AddHint(self.w[j], pl.split if split else job.runtime)
                m.AddHint(self.s2[j], ps[1].start if split else ps[0].end)

    def placements(self, solver: cp_model.CpSolver) -> list[Placement]:
        inst = self.instance
        out = []
        for job in inst.jobs:
            j = job.id
            q = next(qq for (jj, qq), lit in self.a.items() if jj == j and solver.BooleanValue(lit))
            st = solver.Value(self.s[j])
            if j in self.prm and solver.BooleanValue(self.prm[j]):
                out.append(Placement(j, q, st, solver.Value(self.w[j]), solver.Value(self.s2[j])))
            else:
                out.append(Placement(j, q, st))
        return left_justify(inst, out)


def build_cpsat(instance: Instance, *, preempt: bool = True, objective: str = "bj",
                rt_bound: Fraction | None = None, rt_floor_plan: Sequence[Placement] | None = None,
                incumbent: Sequence[Placement] | None = None, symmetry: bool = True,
                cumulative: bool = True, layout: str = "both",
                bj_sum_bound: Fraction | None = None, deadline: float | None = None) -> CpsatModel:
    """Build the model.  ``objective``: "bj" (Σ BJ slowdowns) or "rt" (Σ RTJ slowdowns).
    ``rt_bound``: θ — adds Σ_RT SD <= θ·n_rt (exact).  ``bj_sum_bound``: adds Σ_BJ SD <= it, exact
    in the same way (the RTJ tie-break stage: the proven BJ optimum's sum).  ``rt_floor_plan``: a
    plan that must stay feasible under both bounds (only used when a bound needs the conservative
    fallback).
    ``incumbent``: a feasible plan; the model then only looks for schedules at least as good
    (objective <= the incumbent's) and every job gets its own horizon (``job_upper_bounds``).
    ``layout``: "2d" — one rectangle (time × block range) per part in a NoOverlap2D, the block
    range's first block y_j a variable on the multiples of k_j; "blocks" — optional intervals per
    candidate partition in a NoOverlap per block; "both" (default) — the two views together, which
    propagates and bounds best on the Table-3 set (docs/milp.md).
    ``deadline`` (a ``time.perf_counter()`` value): raise :class:`BuildTimeout` once it has passed
    (checked after every job: a 3,000-job model takes about a second to build)."""
    if layout not in ("2d", "blocks", "both"):
        raise ValueError(f"unknown layout {layout!r}")
    inst = instance
    ubC = job_upper_bounds(inst, objective, incumbent, rt_bound, preempt, bj_sum_bound)
    H = max(ubC.values(), default=0)
    m = cp_model.CpModel()
    cm = CpsatModel(inst, preempt, m, H)
    res = _Resources({b: [] for b in range(inst.blocks)})
    for job in inst.jobs:  # in the instance's order: the variables' order steers CP-SAT's search
        if deadline is not None and time.perf_counter() > deadline:
            raise BuildTimeout(f"model build abandoned at its deadline after {len(cm.s):,} of {len(inst.jobs):,} jobs")
        _add_job(cm, job, ubC[job.id], layout, res)
    for b, ivs in res.block_ivs.items():
        if len(ivs) > 1:
            m.AddNoOverlap(ivs)
    if layout != "blocks" and len(res.rect_x) > 1:
        m.AddNoOverlap2D(res.rect_x, res.rect_y)
    if cumulative and res.job_ivs:
        m.AddCumulative(res.job_ivs, res.job_dem, inst.blocks)

    if symmetry:
        _break_symmetry(cm)
    _add_bounds_and_objective(cm, ubC, objective, rt_bound, bj_sum_bound, rt_floor_plan, incumbent)
    return cm


@dataclass
class _Resources:
    """The intervals the resource constraints of :func:`build_cpsat` gather, job by job."""

    block_ivs: dict[int, list]  # block -> the optional intervals of the parts that may run on it
    job_ivs: list = field(default_factory=list)  # every part's interval (Cumulative over the blocks)
    job_dem: list = field(default_factory=list)  # its demand, blocks
    rect_x: list = field(default_factory=list)  # NoOverlap2D: time intervals
    rect_y: list = field(default_factory=list)  # and block-range intervals


def _add_job(cm: CpsatModel, job, Hj: int, layout: str, res: _Resources) -> None:
    """One job's variables and constraints (horizon ``Hj``, s): its partition, its part(s)."""
    inst, m = cm.instance, cm.model
    j, p, r = job.id, job.runtime, job.submit
    k = inst.k(job)
    s = cm.s[j] = m.NewIntVar(r, Hj - p, f"s{j}")
    C = cm.C[j] = m.NewIntVar(r + p, Hj, f"C{j}")
    cand = inst.candidates(job)
    lits = {c.index: m.NewBoolVar(f"a{j}_{c.index}") for c in cand}
    m.AddExactlyOne(lits.values())
    for q, lit in lits.items():
        cm.a[(j, q)] = lit
    # first block of the job's partition (aligned: a multiple of k), channelled to the literals
    y = m.NewIntVarFromDomain(cp_model.Domain.FromValues([c.first for c in cand]), f"y{j}")
    for c in cand:
        m.Add(y == c.first).OnlyEnforceIf(lits[c.index])
    yiv = m.NewFixedSizeIntervalVar(y, k, f"Y{j}")
    per_block = lits.items() if layout != "2d" else ()
    if cm.preempt and inst.preemptible(job):
        _add_split_parts(cm, job, Hj, s, C, y, yiv, per_block, res)
        return
    m.Add(C == s + p)
    iv = m.NewIntervalVar(s, p, C, f"I_{j}")
    res.job_ivs.append(iv)
    res.job_dem.append(k)
    res.rect_x.append(iv)
    res.rect_y.append(yiv)
    for q, lit in per_block:
        ivq = m.NewOptionalIntervalVar(s, p, C, lit, f"I_{j}_{q}")
        for b in inst.partitions[q].blocks:
            res.block_ivs[b].append(ivq)


def _add_split_parts(cm: CpsatModel, job, Hj: int, s, C, y, yiv, per_block, res: _Resources) -> None:
    """A preemptible BJ: a first part of w seconds and, when split (``prm``), a second part later."""
    inst, m = cm.instance, cm.model
    j, p, r = job.id, job.runtime, job.submit
    k = inst.k(job)
    o = inst.overhead(job)
    lo, hi = split_bounds(p)
    sp = split_vars(m, j, work=p, lo=lo, hi=hi, overhead=o, release=r, horizon=Hj)
    prm, w, d1, e1, s2, d2 = sp.prm, sp.work, sp.d1, sp.e1, sp.s2, sp.d2
    cm.prm[j], cm.w[j], cm.s2[j] = prm, w, s2
    iv1 = m.NewIntervalVar(s, d1, e1, f"I1_{j}")
    iv2 = m.NewOptionalIntervalVar(s2, d2, C, prm, f"I2_{j}")
    m.Add(s2 >= e1)
    m.Add(s2 == e1).OnlyEnforceIf(prm.Not())
    # Dominance: a split whose second part follows the first without a gap only adds 2·o_j
    # (merging the parts is strictly better), so a split leaves a gap.
    m.Add(s2 >= e1 + 1).OnlyEnforceIf(prm)
    m.Add(C == e1).OnlyEnforceIf(prm.Not())
    res.job_ivs += [iv1, iv2]
    res.job_dem += [k, k]
    res.rect_x += [iv1, iv2]
    res.rect_y += [yiv, m.NewOptionalFixedSizeIntervalVar(y, k, prm, f"Y2_{j}")]
    for q, lit in per_block:
        ivq1, ivq2 = split_intervals_on(m, j, q, lit, sp, s, C)
        for b in inst.partitions[q].blocks:
            res.block_ivs[b] += [ivq1, ivq2]


def _add_bounds_and_objective(cm: CpsatModel, ubC: dict[int, int], objective: str, rt_bound, bj_sum_bound,
                              rt_floor_plan, incumbent) -> None:
    """The RTJ bound θ and the BJ sum bound (exact), the objective, and the incumbent's cut."""
    inst, m = cm.instance, cm.model
    max_c = {j.id: ubC[j.id] - j.submit for j in inst.jobs}
    rts = inst.rt_jobs
    if rt_bound is not None and rts:
        cm.rt_weights, cm.rt_rhs = _add_sum_bound(cm, rts, Fraction(rt_bound) * len(rts), max_c, rt_floor_plan)
    if bj_sum_bound is not None and inst.batch_jobs:
        cm.bj_weights, cm.bj_rhs = _add_sum_bound(cm, inst.batch_jobs, Fraction(bj_sum_bound), max_c, rt_floor_plan)

    if objective not in ("bj", "rt", "none"):
        raise ValueError(f"unknown objective {objective!r}")
    obj_jobs = inst.batch_jobs if objective == "bj" else rts if objective == "rt" else []
    ow = ratio_weights(obj_jobs, max_c)
    cm.objective_weights = ow
    if obj_jobs:
        expr = sum(ow.weights[j.id] * (cm.C[j.id] - j.submit) for j in obj_jobs)
        m.Minimize(expr)
        if incumbent is not None and ow.eps == 0.0:
            by = {pl.job_id: pl for pl in incumbent}
            m.Add(expr <= sum(ow.weights[j.id] * (parts_of(inst, by[j.id])[-1].end - j.submit) for j in obj_jobs))


def _add_sum_bound(cm: CpsatModel, jobs, total: Fraction, max_c: dict[int, int],
                   floor_plan: Sequence[Placement] | None) -> tuple[RatioWeights, int]:
    """Add Σ_{j in jobs} (C_j − r_j)/p_j <= ``total`` exactly: Σ (L/p_j)(C_j − r_j) <= floor(total·L),
    L = lcm of the jobs' runtimes.  If that overflows, ceil-scaled weights make it a (slightly)
    conservative restriction, loosened just enough to keep ``floor_plan`` feasible."""
    inst = cm.instance
    rw = ratio_weights(jobs, max_c, budget=2 ** 62, round_up=True)
    rhs = math.floor(total * rw.scale)
    if rw.eps != 0.0 and floor_plan is not None:  # conservative: Σ ceil(S/p)·c <= floor(S·total)
        by = {pl.job_id: pl for pl in floor_plan}
        need = sum(rw.weights[j.id] * (parts_of(inst, by[j.id])[-1].end - j.submit) for j in jobs)
        rhs = max(rhs, need)
    cm.model.Add(sum(rw.weights[j.id] * (cm.C[j.id] - j.submit) for j in jobs) <= rhs)
    return rw, rhs


def _break_symmetry(cm: CpsatModel) -> None:
    inst, m = cm.instance, cm.model
    groups: dict[tuple, list[int]] = {}
    for job in inst.jobs:
        key = (job.kind, job.submit, job.runtime, inst.k(job), job.id in cm.prm)
        groups.setdefault(key, []).append(job.id)
    for ids in groups.values():
        ids.sort()
        for a, b in zip(ids, ids[1:]):
            m.Add(cm.s[a] <= cm.s[b])
    # The machine's automorphisms (swapping the two halves of any subtree) act transitively on the
    # partitions of each size, so one job with more than one candidate may be fixed to the
    # leftmost one: the widest such job (full-machine jobs have one candidate only).
    movable = [j for j in inst.jobs if len(inst.candidates(j)) > 1]
    if is_binary_tree(inst.blocks) and movable:
        j0 = min(movable, key=lambda j: (-inst.k(j), j.submit, j.id))
        first = inst.candidates(j0)[0].index
        m.Add(cm.a[(j0.id, first)] == 1)


# ---------------------------------------------------------------------------------------------
# Solving
# ---------------------------------------------------------------------------------------------


@dataclass
class CpsatRun:
    status: str
    plan: list[Placement] | None
    objective_sum: float | None  # Σ slowdowns of the objective's jobs (solver's view)
    bound_sum: float | None  # lower bound on that sum
    eps: float
    seconds: float
    size: dict[str, int]


def solve_cpsat_model(cm: CpsatModel, time_limit: float | None = None, workers: int = 2, seed: int = 0,
                      log: bool = False, params: dict | None = None) -> CpsatRun:
    solver = cp_model.CpSolver()
    prm = solver.parameters
    for key, value in (params or {}).items():
        if isinstance(value, (list, tuple)):  # repeated fields (e.g. subsolvers) cannot be assigned
            getattr(prm, key).extend(value)
        else:
            setattr(prm, key, value)
    prm.num_workers = workers
    prm.random_seed = seed
    prm.log_search_progress = log
    if time_limit is not None:
        prm.max_time_in_seconds = float(max(0.01, time_limit))
    t0 = time.perf_counter()
    # In a worker thread, so that SIGTERM / Ctrl-C stop the search (milp.stoppable); the deadline
    # is a backstop to CP-SAT's own limit, which it may pass while loading a large model.
    backstop = None if time_limit is None else t0 + prm.max_time_in_seconds
    st = run_stoppable(lambda: solver.Solve(cm.model), solver.stop_search, backstop)
    seconds = time.perf_counter() - t0
    size = cm.size()
    ow = cm.objective_weights
    eps = ow.eps if ow else 0.0
    if st == cp_model.MODEL_INVALID:
        why = cm.model.Validate()
        if "overflow" in why:  # the data, not the model, is at fault: a one-line error naming the instance
            from rtsched.errors import InputError

            raise InputError(f"{len(cm.instance.jobs):,} jobs: CP-SAT rejected the model: possible integer overflow "
                             "(the instance's times are too far apart for CP-SAT's 64-bit arithmetic; solve fewer "
                             "jobs or a shorter submit window)", path=cm.instance.name or None)
        raise RuntimeError(f"CP-SAT rejected the model: {why}")
    if st == cp_model.INFEASIBLE:
        return CpsatRun("infeasible", None, None, None, eps, seconds, size)
    has_obj = cm.model.Proto().has_objective()
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):  # stopped without a schedule: its bound still holds
        bound = solver.BestObjectiveBound() / ow.scale - eps if has_obj and ow else None
        return CpsatRun("no_solution", None, None, bound, eps, seconds, size)
    plan = cm.placements(solver)
    obj = solver.ObjectiveValue() / ow.scale if has_obj and ow else 0.0
    bound = solver.BestObjectiveBound() / ow.scale - eps if has_obj and ow else 0.0
    return CpsatRun("optimal" if st == cp_model.OPTIMAL else "feasible", plan, obj, bound, eps, seconds, size)


def rt_subinstance(instance: Instance) -> Instance:
    return Instance(instance.blocks, instance.rt_jobs, name=instance.name + "-rt", io=instance.io)


def append_batch(instance: Instance, rt_plan: Sequence[Placement]) -> list[Placement]:
    """Complete an RTJ-only plan with the BJs placed (unsplit) after everything else."""
    order_rt = {pl.job_id: pl for pl in rt_plan}
    end = max((parts_of(instance, pl)[-1].end for pl in rt_plan), default=0)
    out = []
    t = end
    for job in sorted(instance.jobs, key=lambda j: (j.submit, j.id)):
        if job.id in order_rt:
            out.append(order_rt[job.id])
    for job in sorted(instance.batch_jobs, key=lambda j: (j.submit, j.id)):
        t = max(t, job.submit)
        out.append(Placement(job.id, instance.candidates(job)[0].index, t))
        t += job.runtime
    return left_justify(instance, out)


__all__ = ["split_vars", "split_intervals_on", "SplitVars", "build_cpsat", "solve_cpsat_model", "greedy_plan", "GreedyTimeout", "BuildTimeout", "ratio_weights", "RatioWeights",
           "CpsatModel", "CpsatRun", "rt_subinstance", "append_batch", "evaluate"]
