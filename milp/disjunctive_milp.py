"""A second exact MILP of offline-model.md: disjunctive over conflicting partitions
(``--method milp-disjunctive``).

The paper's partition-sequence model orders parts through per-block slots (T·M·n slot binaries,
big-M on every slot); this one orders the *parts* directly:

* ``a[j,q]``  — binary: job j on candidate partition q, Σ_q a[j,q] = 1;
* ``c[i,j]``  — conflict indicator (i < j): >= 1 when i's and j's partitions overlap,
  c >= a[i,q] + Σ_{q' ∈ cand(j) conflicting q} a[j,q'] − 1 for every q (a constant 1 when every
  candidate pair conflicts; absent when none does);
* a job's parts: part 1 [st, e1) with e1 = st + w + o·prm, and for a splittable BJ part 2
  [rst, et) with et = rst + p − w + o·prm, rst >= e1 (+1 when split: a gapless split is never
  better than no split, milp/plan.py merges it) and rst <= e1 when not split (part 2 is then the
  empty interval [e1, e1), which never conflicts with anything that does not overlap part 1);
  prm, w, ⌈0.1p⌉ <= w <= ⌊0.9p⌋ when split, w = p otherwise — as in the sequence model;
* ``o[u,v]`` — binary for each pair of parts of two jobs that may conflict: u before v, or v before u:
  end_u <= start_v + M_uv·(1 − o) + M_uv·(1 − c) and end_v <= start_u + M_vu·o + M_vu·(1 − c), with
  M_uv = ub(end_u) − lb(start_v), the tightest constant given the per-job completion bounds.

Both formulations solve the same problem; tests cross-check them with CP-SAT and brute force.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Sequence

from milp.instance import Instance, split_bounds
from milp.linmodel import Expr, LinearModel, Var, lin, vsum
from milp.plan import Placement, left_justify, parts_of
from milp.strengthen import (Strengthen, add_clique_cuts, add_energy_cuts, bj_bound, identical_groups, objective_cut,
                             rtj_bound, tree_fixed_job)


@dataclass
class _Part:
    job: int
    index: int
    start: Expr
    end: Expr
    lb_start: float
    ub_end: float


@dataclass
class DisjunctiveMILP:
    instance: Instance
    preempt: bool
    model: LinearModel
    ub: dict[int, int]
    options: Strengthen
    a: dict[tuple[int, int], Var] = field(default_factory=dict)
    c: dict[tuple[int, int], Var] = field(default_factory=dict)
    order: dict[tuple[tuple[int, int], tuple[int, int]], Var] = field(default_factory=dict)
    prm: dict[int, Var] = field(default_factory=dict)
    w: dict[int, Var] = field(default_factory=dict)
    st: dict[int, Var] = field(default_factory=dict)
    rst: dict[int, Var] = field(default_factory=dict)
    et: dict[int, Var] = field(default_factory=dict)
    parts: dict[int, list[_Part]] = field(default_factory=dict)

    restricted = False

    # ------------------------------------------------------------------------------ solution I/O
    def mip_start(self, plan: Sequence[Placement]) -> dict[int, float] | None:
        inst = self.instance
        vals = {v.index: 0.0 for v in self.model.vars}
        ends: dict[int, list[tuple[float, float]]] = {}
        part_q: dict[int, int] = {}
        for pl in plan:
            job = inst.job(pl.job_id)
            j = job.id
            if pl.split is not None and j not in self.prm:
                return None
            ps = parts_of(inst, pl)
            if ps[-1].end > self.ub[j] + 1e-9:
                return None  # outside this model's horizons (e.g. worse than the incumbent)
            vals[self.a[(j, pl.partition)].index] = 1.0
            part_q[j] = pl.partition
            vals[self.st[j].index] = ps[0].start
            vals[self.et[j].index] = ps[-1].end
            if j in self.prm:
                split = pl.split is not None
                vals[self.prm[j].index] = 1.0 if split else 0.0
                vals[self.w[j].index] = pl.split if split else job.runtime
                vals[self.rst[j].index] = ps[1].start if split else ps[0].end
                ends[j] = [(ps[0].start, ps[0].end), (ps[1].start, ps[1].end) if split else (ps[0].end, ps[0].end)]
            else:
                ends[j] = [(ps[0].start, ps[0].end)]
        parts = inst.partitions
        for (i, j), var in self.c.items():
            vals[var.index] = 1.0 if parts[part_q[i]].conflicts(parts[part_q[j]]) else 0.0
        for ((i, u), (j, v)), var in self.order.items():
            su, eu = ends[i][u]
            sv, ev = ends[j][v]
            vals[var.index] = 1.0 if eu <= sv else 0.0
        return vals

    def placements(self, values: list[float]) -> list[Placement]:
        inst = self.instance
        raw: list[Placement] = []
        times: dict[tuple[int, int], float] = {}
        for job in inst.jobs:
            j = job.id
            q = max((c.index for c in inst.candidates(job)), key=lambda q: values[self.a[(j, q)].index])
            st = values[self.st[j].index]
            times[(j, 0)] = st
            if j in self.prm and values[self.prm[j].index] > 0.5:
                rst = values[self.rst[j].index]
                times[(j, 1)] = rst
                raw.append(Placement(j, q, int(round(st)), int(round(values[self.w[j].index])), int(round(rst))))
            else:
                raw.append(Placement(j, q, int(round(st))))
        return left_justify(inst, raw, times)

    def stage_model(self, objective: str, theta, incumbent_sum: float | None = None,
                    bj_sum=None) -> LinearModel:
        """The model plus eq. 37 (θ; None: none), the BJ bound Σ_BJ SD <= ``bj_sum`` (the RTJ
        tie-break stage; None: none) and the objective cut Σ SD <= ``incumbent_sum``."""
        model = bj_bound(rtj_bound(self.model, self.instance, self.et, theta), self.instance, self.et, bj_sum)
        return objective_cut(model, self.instance, self.et, objective, incumbent_sum)


def _job_vars(d: DisjunctiveMILP, job, preempt: bool) -> None:
    """Partition choice, times, split (eq. 51) and the job's parts."""
    m, inst = d.model, d.instance
    j, p, r = job.id, job.runtime, job.submit
    ub = d.ub[j]
    for c in inst.candidates(job):
        d.a[(j, c.index)] = m.var(f"a[{j},{c.index}]", kind="B")
    m.add(vsum(d.a[(j, c.index)] for c in inst.candidates(job)), "==", 1, f"assign[{j}]")
    d.st[j] = m.var(f"st[{j}]", r, ub - p)
    d.et[j] = m.var(f"et[{j}]", r + p, ub)
    if not (preempt and inst.preemptible(job)):
        m.add(d.et[j], "==", lin(d.st[j]) + p, f"et_def[{j}]")
        d.parts[j] = [_Part(j, 0, lin(d.st[j]), lin(d.et[j]), r, ub)]
        return
    o = inst.overhead(job)
    lo, hi = split_bounds(p)
    prm = d.prm[j] = m.var(f"prm[{j}]", kind="B")
    w = d.w[j] = m.var(f"w[{j}]", lo, p, kind="I")
    m.add(w, "<=", hi + (p - hi) * (1 - lin(prm)), f"eq51_hi[{j}]")
    m.add(w, ">=", p * (1 - lin(prm)) + lo * lin(prm), f"eq51_lo[{j}]")
    e1 = lin(d.st[j]) + w + o * lin(prm)
    rst = d.rst[j] = m.var(f"rst[{j}]", r + lo, ub)
    m.add(rst, ">=", e1 + lin(prm), f"rst_after_part1[{j}]")  # a split leaves a gap (else merge it)
    m.add(rst, "<=", e1 + (ub - r) * lin(prm), f"rst_unsplit[{j}]")
    m.add(d.et[j], "==", lin(rst) + p - lin(w) + o * lin(prm), f"et_def[{j}]")
    d.parts[j] = [_Part(j, 0, lin(d.st[j]), e1, r, ub), _Part(j, 1, lin(rst), lin(d.et[j]), r + lo, ub)]


def _conflict_vars(d: DisjunctiveMILP) -> dict[tuple[int, int], Expr | None]:
    """c[i,j] per pair of jobs: a variable, the constant 1 (always conflict) or None (never)."""
    m, inst = d.model, d.instance
    out: dict[tuple[int, int], Expr | None] = {}
    for ji, jj in itertools.combinations(inst.jobs, 2):
        ci, cj = inst.candidates(ji), inst.candidates(jj)
        pairs = [(p.conflicts(q)) for p in ci for q in cj]
        if not any(pairs):
            out[(ji.id, jj.id)] = None
        elif all(pairs):
            out[(ji.id, jj.id)] = lin(1.0)
        else:
            v = d.c[(ji.id, jj.id)] = m.var(f"c[{ji.id},{jj.id}]", kind="B")
            for p in ci:
                hit = vsum(d.a[(jj.id, q.index)] for q in cj if p.conflicts(q))
                m.add(v, ">=", lin(d.a[(ji.id, p.index)]) + hit - 1, f"conflict[{ji.id},{jj.id},{p.index}]")
            out[(ji.id, jj.id)] = lin(v)
    return out


def _disjunctions(d: DisjunctiveMILP, conflict: dict[tuple[int, int], Expr | None]) -> None:
    """One order binary per pair of parts of two possibly conflicting jobs, tightest big-Ms."""
    m = d.model
    for (i, j), c in conflict.items():
        if c is None:
            continue
        for u, v in itertools.product(d.parts[i], d.parts[j]):
            o = d.order[((i, u.index), (j, v.index))] = m.var(f"o[{i}.{u.index},{j}.{v.index}]", kind="B")
            m_uv = max(0.0, u.ub_end - v.lb_start)
            m_vu = max(0.0, v.ub_end - u.lb_start)
            slack = 1 - c  # 0 when they conflict
            m.add(u.end, "<=", v.start + m_uv * (1 - lin(o)) + slack * m_uv, f"before[{i}.{u.index},{j}.{v.index}]")
            m.add(v.end, "<=", u.start + m_vu * lin(o) + slack * m_vu, f"after[{i}.{u.index},{j}.{v.index}]")


def _symmetry(d: DisjunctiveMILP) -> None:
    m = d.model
    for ids in identical_groups(d.instance, set(d.prm)):
        for a, b in zip(ids, ids[1:]):
            m.add(d.st[a], "<=", d.st[b], f"identical[{a},{b}]")
    fixed = tree_fixed_job(d.instance)
    if fixed is not None:
        var = d.a[fixed]
        var.lb = 1.0


def build_disjunctive_milp(instance: Instance, preempt: bool = True, ub: dict[int, int] | None = None,
                           options: Strengthen = Strengthen()) -> DisjunctiveMILP:
    """Build the disjunctive MILP.  ``ub``: per-job completion bounds (default: the left-justified
    horizon for every job; :func:`milp.cpsat.job_upper_bounds` gives tighter ones)."""
    inst = instance
    H = inst.horizon(preempt)
    ub = {j.id: H for j in inst.jobs} if ub is None else dict(ub)
    m = LinearModel(f"disjunctive-{inst.name}")
    d = DisjunctiveMILP(inst, preempt, m, ub, options)
    for job in inst.jobs:
        _job_vars(d, job, preempt)
    _disjunctions(d, _conflict_vars(d))
    if options.symmetry:
        _symmetry(d)
    if options.energy:
        add_energy_cuts(m, inst, d.et)
    if options.clique:
        add_clique_cuts(m, inst, d.et)
    m.objectives["bj"] = vsum((lin(d.et[j.id]) - j.submit) * (1.0 / j.runtime) for j in inst.batch_jobs)
    m.objectives["rt"] = vsum((lin(d.et[j.id]) - j.submit) * (1.0 / j.runtime) for j in inst.rt_jobs)
    m.objectives["none"] = lin(0.0)
    return d


__all__ = ["DisjunctiveMILP", "build_disjunctive_milp"]
