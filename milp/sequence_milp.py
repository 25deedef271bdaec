"""Seed 002's partition-sequence MILP (§5.3–5.4, eqs. 27–55), with the semantics of
offline-model.md and every product linearised (docs/milp.md lists each deviation from the print).

Each 512-node block b has T sequence slots s = 1..T with start times stSeq[s,b] (eq. 38: the first
is 0; eq. 39: nondecreasing).  A job occupies, on every block of its partition, one slot (two if it
is a preempted BJ: the earlier slot holds part 1, the later part 2); a part in slot s lies in
[stSeq[s,b], stSeq[s+1,b]], so parts on one block never overlap and, as conflicting partitions
share a block, neither do conflicting partitions.

Variables (the paper's names):

* exPb[j,q]      — binary: job j on partition q (a candidate of size k_j), eq. 55: Σ_q exPb = 1;
* exR[j,s,b]     — binary: RTJ j in slot s of block b;  exB[j,s,b] — the same for a BJ;
* exPrmpt[j]     — binary: BJ j is preempted (at most once: at most two slots per block);
* exRtB[j]       — continuous: the share of BJ j's work in its first part (w_j = p_j·exRtB[j]);
  kept per job (not per slot as printed) so that every block of the partition agrees on it; the
  work split itself is the integer w_j (integer seconds);
* zPrm[j,b]      — continuous in [0,1]: exPrmpt[j]·y[j,b] (McCormick, exact for binaries), where
  y[j,b] = Σ_q mPartDep[k_j,q,b]·exPb[j,q] says whether j's partition covers block b;
* st[j], rst[j], et[j] — start, restart, end (completion); stSeq[s,b].

Big-M values come from per-job completion bounds ub_j (default: the instance horizon H,
``Instance.horizon``; with the ``horizons`` strengthening, :func:`milp.cpsat.job_upper_bounds`):
the start side of job j uses max ub − r_j, the end side ub_j.  ``options`` adds the valid
inequalities and symmetry breaking of :mod:`milp.strengthen` (none by default: the model as
transcribed; :func:`milp.solve.solve` switches them all on unless told otherwise).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

from milp.instance import Instance, split_bounds
from milp.linmodel import INF, LinearModel, LPResult, Var, lin, solve_model, vsum
from milp.plan import Placement, left_justify, parts_of
from milp.strengthen import (Strengthen, add_clique_cuts, add_energy_cuts, bj_bound, identical_groups, objective_cut,
                             rtj_bound, tree_fixed_job)


def mpartdep(instance: Instance) -> dict[int, dict[int, dict[int, int]]]:
    """mPartDep[k][q][b] = 1 iff partition q (of size k blocks) covers block b (zeros left out)."""
    out: dict[int, dict[int, dict[int, int]]] = {}
    for p in instance.partitions:
        out.setdefault(p.k, {})[p.index] = {b: 1 for b in p.blocks}
    return out


def sequences_needed(instance: Instance, preempt: bool = True) -> int:
    """A T with which the sequence cap restricts nothing: every part of every job on one block."""
    return len(instance.jobs) + (sum(1 for j in instance.jobs if instance.preemptible(j)) if preempt else 0)


@dataclass
class SequenceMILP:
    instance: Instance
    T: int
    preempt: bool
    model: LinearModel
    horizon: int
    exPb: dict[tuple[int, int], Var] = field(default_factory=dict)
    ex: dict[tuple[int, int, int], Var] = field(default_factory=dict)
    exPrmpt: dict[int, Var] = field(default_factory=dict)
    exRtB: dict[int, Var] = field(default_factory=dict)
    w: dict[int, Var] = field(default_factory=dict)
    st: dict[int, Var] = field(default_factory=dict)
    rst: dict[int, Var] = field(default_factory=dict)
    et: dict[int, Var] = field(default_factory=dict)
    stSeq: dict[tuple[int, int], Var] = field(default_factory=dict)

    @property
    def restricted(self) -> bool:
        return self.T < sequences_needed(self.instance, self.preempt)

    # -------------------------------------------------------------------------------------------
    def with_rtj_bound(self, theta: Fraction | float | None, tol: float = 1e-7) -> LinearModel:
        """The model plus eq. 37, Σ_rt (et − r)/p <= θ·n_rt (+ tol); ``None``: no bound."""
        return rtj_bound(self.model, self.instance, self.et, theta, tol)

    def stage_model(self, objective: str, theta, incumbent_sum: float | None = None,
                    rt_floor_sum: float | None = None, bj_sum=None) -> LinearModel:
        """The model of one stage: eq. 37 (θ), the BJ bound Σ_BJ SD <= ``bj_sum`` (the RTJ tie-break
        stage), the objective cut Σ SD <= ``incumbent_sum`` and the RTJ floor cut
        (:meth:`with_rtj_floor`); each left out when None."""
        model = self.with_rtj_floor(self.with_rtj_bound(theta), rt_floor_sum)
        model = bj_bound(model, self.instance, self.et, bj_sum)
        return objective_cut(model, self.instance, self.et, objective, incumbent_sum)

    def with_rtj_floor(self, model: LinearModel, floor_sum: float | None, tol: float = 1e-6) -> LinearModel:
        """``model`` plus the valid cut Σ_rt (et − r)/p >= ``floor_sum`` − tol (None: unchanged).

        ``floor_sum`` must be a lower bound on the RTJs' summed slowdown of every plan of this model,
        e.g. the proven optimum of a relaxation (no sequence cap, no BJs).  It gives the θ* stage of a
        capped model the bound its LP relaxation lacks (that relaxation's bound is the trivial n_rt)."""
        if floor_sum is None or not self.instance.rt_jobs:
            return model
        out = LinearModel(model.name, model.vars, list(model.cons), model.objectives)
        expr = vsum(lin(self.et[j.id]) * (1.0 / j.runtime) for j in self.instance.rt_jobs)
        rhs = float(floor_sum) + sum(j.submit / j.runtime for j in self.instance.rt_jobs) - tol
        out.add(expr, ">=", rhs, name="rtj_floor_cut")
        return out

    def solve(self, objective: str, theta, backend: str, time_limit: float | None = None,
              threads: int | None = None, start: Sequence[Placement] | None = None,
              rt_floor_sum: float | None = None, incumbent_sum: float | None = None) -> LPResult:
        """Solve with ``objective`` ("bj", "rt" or "none") under eq. 37 with ``theta`` (None: no bound).
        ``start``: a plan given to the solver as a MIP start (ignored if it needs more than T slots).
        ``rt_floor_sum``: a valid lower bound on Σ RTJ slowdown, added as a cut (:meth:`with_rtj_floor`).
        ``incumbent_sum``: the objective cut."""
        model = self.stage_model(objective, theta, incumbent_sum, rt_floor_sum)
        values = self.mip_start(start) if start is not None else None
        return solve_model(model, objective, backend, time_limit=time_limit, threads=threads, start=values)

    def mip_start(self, plan: Sequence[Placement]) -> dict[int, float] | None:
        """Values of every variable for ``plan`` (slots by start time on each block), or None if
        the plan needs more than T slots on a block or splits a job the model cannot split."""
        inst = self.instance
        vals: dict[int, float] = {v.index: 0.0 for v in self.model.vars}
        zidx = self._zindex
        on_block: dict[int, list[tuple[int, int, int, int]]] = {b: [] for b in range(inst.blocks)}
        for pl in plan:
            job = inst.job(pl.job_id)
            j = job.id
            if pl.split is not None and j not in self.exPrmpt:
                return None
            vals[self.exPb[(j, pl.partition)].index] = 1.0
            ps = parts_of(inst, pl)
            vals[self.st[j].index] = ps[0].start
            vals[self.et[j].index] = ps[-1].end
            if j in self.exPrmpt:
                split = pl.split is not None
                vals[self.exPrmpt[j].index] = 1.0 if split else 0.0
                w = pl.split if split else job.runtime
                vals[self.w[j].index] = w
                vals[self.exRtB[j].index] = w / job.runtime
                vals[self.rst[j].index] = ps[1].start if split else ps[0].end
            for part in ps:
                for b in inst.partitions[pl.partition].blocks:
                    on_block[b].append((part.start, part.end, j, part.index))
                    if j in self.exPrmpt:
                        key = f"zPrm[{j},{b}]"
                        vals[zidx[key]] = 1.0 if pl.split is not None else 0.0
        for b, items in on_block.items():
            items.sort()
            if len(items) > self.T:
                return None
            for s, (start, _end, j, _part) in enumerate(items):
                vals[self.ex[(j, s, b)].index] = 1.0
                if s > 0:
                    vals[self.stSeq[(s, b)].index] = start
            last = items[-1][0] if items else 0
            for s in range(len(items), self.T):
                if s > 0:
                    vals[self.stSeq[(s, b)].index] = max(last, items[-1][1]) if items else 0
        return vals

    @property
    def _zindex(self) -> dict[str, int]:
        return {v.name: v.index for v in self.model.vars if v.name.startswith("zPrm[")}

    def placements(self, values: list[float]) -> list[Placement]:
        """The left-justified integer plan with the solution's partitions, splits and block orders."""
        inst = self.instance
        raw: list[Placement] = []
        times: dict[tuple[int, int], float] = {}
        for job in inst.jobs:
            q = max((c.index for c in inst.candidates(job)), key=lambda q: values[self.exPb[(job.id, q)].index])
            st = values[self.st[job.id].index]
            times[(job.id, 0)] = st
            prm = job.id in self.exPrmpt and values[self.exPrmpt[job.id].index] > 0.5
            if prm:
                w = int(round(values[self.w[job.id].index]))
                rst = values[self.rst[job.id].index]
                times[(job.id, 1)] = rst
                raw.append(Placement(job.id, q, int(round(st)), w, int(round(rst))))
            else:
                raw.append(Placement(job.id, q, int(round(st))))
        return left_justify(inst, raw, times)


def _slot_starts(sm: SequenceMILP) -> None:
    """stSeq (eqs. 38, 39): the first slot starts at 0, starts are nondecreasing."""
    m, Hs = sm.model, sm.horizon
    for b in range(sm.instance.blocks):
        for s in range(sm.T):
            sm.stSeq[(s, b)] = m.var(f"stSeq[{s + 1},{b}]", 0.0, 0.0 if s == 0 else Hs)
        for s in range(sm.T - 1):
            m.add(sm.stSeq[(s, b)], "<=", sm.stSeq[(s + 1, b)], f"eq39[{s + 1},{b}]")


def _job_times(sm: SequenceMILP, job, ub_j: int, blocks: list[int]):
    """Partition choice (eq. 55), slot binaries, times (eq. 27) and the split (eq. 51) of ``job``;
    returns (exPrmpt or None, the end of part 1)."""
    inst, m = sm.instance, sm.model
    j, p, r = job.id, job.runtime, job.submit
    cand = inst.candidates(job)
    can_split = sm.preempt and inst.preemptible(job)
    o = inst.overhead(job) if can_split else 0
    for c in cand:
        sm.exPb[(j, c.index)] = m.var(f"exPb[{j},{c.index}]", kind="B")
    m.add(vsum(sm.exPb[(j, c.index)] for c in cand), "==", 1, f"eq55[{j}]")
    sm.st[j] = m.var(f"st[{j}]", r, ub_j - p)
    sm.et[j] = m.var(f"et[{j}]", r + p, ub_j)
    prefix = "exB" if job.kind == "batch" else "exR"
    for s in range(sm.T):
        for b in blocks:
            sm.ex[(j, s, b)] = m.var(f"{prefix}[{j},{s + 1},{b}]", kind="B")
    if not can_split:
        e1 = lin(sm.st[j]) + p
        m.add(sm.et[j], "==", e1, f"et_def[{j}]")
        return None, e1
    prm = sm.exPrmpt[j] = m.var(f"exPrmpt[{j}]", kind="B")
    lo, hi = split_bounds(p)
    w = sm.w[j] = m.var(f"w[{j}]", lo, p, kind="I")
    ratio = sm.exRtB[j] = m.var(f"exRtB[{j}]", 0.0, 1.0)
    m.add(lin(ratio) * p, "==", w, f"exRtB_def[{j}]")
    # eq. 51 with prm: prm=0 -> w = p; prm=1 -> lo <= w <= hi
    m.add(w, "<=", hi + (p - hi) * (1 - lin(prm)), f"eq51_hi[{j}]")
    m.add(w, ">=", p * (1 - lin(prm)) + lo * lin(prm), f"eq51_lo[{j}]")
    sm.rst[j] = m.var(f"rst[{j}]", r, ub_j)
    e1 = lin(sm.st[j]) + w + o * lin(prm)  # end of part 1 (incl. checkpoint write)
    m.add(sm.rst[j], ">=", e1, f"rst_after_part1[{j}]")
    m.add(sm.rst[j], "<=", e1 + (ub_j - r) * lin(prm), f"rst_unsplit[{j}]")
    m.add(sm.et[j], "==", lin(sm.rst[j]) + p - lin(w) + o * lin(prm), f"et_def[{j}]")
    return prm, e1


def _slot_links(sm: SequenceMILP, job, prm, e1, ub_j: int, blocks: list[int], dep) -> None:
    """Slot counts per block (eqs. 45-48, 52-53) and the big-M links between a job's parts and
    its slots' start times (eqs. 28-31, 40-44), with the tightest constants the bounds give."""
    inst, m, S, T = sm.instance, sm.model, range(sm.T), sm.T
    j, r, k = job.id, job.submit, inst.k(job)
    M_start = sm.horizon - r  # st >= r and stSeq <= max ub
    M_end = ub_j  # every end of j is <= ub_j and stSeq >= 0
    for b in blocks:
        y = vsum(sm.exPb[(j, q)] for q, cover in dep[k].items() if b in cover and (j, q) in sm.exPb)
        slots = vsum(sm.ex[(j, s, b)] for s in S)
        if prm is not None:
            z = m.var(f"zPrm[{j},{b}]", 0.0, 1.0)
            m.add(z, "<=", prm, f"zPrm_a[{j},{b}]")
            m.add(z, "<=", y, f"zPrm_b[{j},{b}]")
            m.add(z, ">=", lin(prm) + y - 1, f"zPrm_c[{j},{b}]")
            # eqs. 45-48, 52-53: k_j blocks, each holding 1 slot (2 if preempted)
            m.add(slots, "==", y + z, f"eq52[{j},{b}]")
        else:
            m.add(slots, "==", y, f"eq46[{j},{b}]")
        cum = lin(0.0)
        for s in S:
            x = sm.ex[(j, s, b)]
            not_x = 1 - lin(x)
            if prm is None:
                # eqs. 28/30: st >= stSeq[s,b] if in slot s
                m.add(sm.st[j], ">=", lin(sm.stSeq[(s, b)]) - M_start * not_x, f"eq28[{j},{s + 1},{b}]")
                if s < T - 1:
                    # eqs. 40/41/42: the part ends before the next slot starts
                    m.add(e1, "<=", lin(sm.stSeq[(s + 1, b)]) + M_end * not_x, f"eq41[{j},{s + 1},{b}]")
            else:
                # eq. 31: the first of j's slots on b bounds st; eq. 30: every slot bounds rst
                m.add(sm.st[j], ">=", lin(sm.stSeq[(s, b)]) - M_start * not_x - M_start * cum,
                      f"eq31[{j},{s + 1},{b}]")
                m.add(sm.rst[j], ">=", lin(sm.stSeq[(s, b)]) - M_start * not_x, f"eq30[{j},{s + 1},{b}]")
                if s < T - 1:
                    # eq. 43: part 1 (first slot) ends before the next slot; eq. 44: part 2 too
                    m.add(e1, "<=", lin(sm.stSeq[(s + 1, b)]) + M_end * not_x + M_end * cum,
                          f"eq43[{j},{s + 1},{b}]")
                    if s > 0:
                        m.add(sm.et[j], "<=", lin(sm.stSeq[(s + 1, b)]) + M_end * not_x + M_end * (1 - cum),
                              f"eq44[{j},{s + 1},{b}]")
            cum = cum + x


def build_sequence_milp(instance: Instance, T: int | None = None, preempt: bool = True,
                        symmetry: bool = True, ub: dict[int, int] | None = None,
                        options: Strengthen | None = None) -> SequenceMILP:
    """Build the partition-sequence MILP once (solver-neutral).  ``T=None``: no effective cap.

    ``ub``: per-job completion bounds (default: the horizon H for all); every big-M is taken from
    them (``st >= stSeq − (max ub − r_j)(1 − x)``, ``end <= stSeq + ub_j (1 − x)``).  ``options``:
    the valid inequalities and symmetry breaking of :mod:`milp.strengthen` (default: none, the
    paper's model as transcribed); ``symmetry`` is the slot-fill order (always valid)."""
    inst = instance
    T = sequences_needed(inst, preempt) if T is None else int(T)
    if T < 1:
        raise ValueError("the number of sequences T must be >= 1")
    H = inst.horizon(preempt)
    ub = {j.id: H for j in inst.jobs} if ub is None else {j.id: min(H, ub[j.id]) for j in inst.jobs}
    options = Strengthen.none() if options is None else options
    m = LinearModel(f"seqmilp-{inst.name}-T{T}")
    sm = SequenceMILP(inst, T, preempt, m, max(ub.values(), default=0))

    blocks_of: dict[int, list[int]] = {}
    for job in inst.jobs:
        cand = inst.candidates(job)
        blocks_of[job.id] = sorted({b for p in cand for b in p.blocks})

    _slot_starts(sm)
    dep = mpartdep(inst)
    for job in inst.jobs:
        prm, e1 = _job_times(sm, job, ub[job.id], blocks_of[job.id])
        _slot_links(sm, job, prm, e1, ub[job.id], blocks_of[job.id], dep)

    S = range(T)
    # eq. 49: one job per slot; symmetry: slots fill from the first
    for b in range(inst.blocks):
        users = [job.id for job in inst.jobs if b in set(blocks_of[job.id])]
        if not users:
            continue
        for s in S:
            m.add(vsum(sm.ex[(j, s, b)] for j in users), "<=", 1, f"eq49[{s + 1},{b}]")
            if symmetry and s < T - 1:
                m.add(vsum(sm.ex[(j, s + 1, b)] for j in users), "<=", vsum(sm.ex[(j, s, b)] for j in users),
                      f"fill[{s + 1},{b}]")

    _strengthen(sm, options)
    # objectives: eq. 36 (BJs) and the RTJ slowdown sum (the lexicographic first stage)
    m.objectives["bj"] = vsum((lin(sm.et[j.id]) - j.submit) * (1.0 / j.runtime) for j in inst.batch_jobs)
    m.objectives["none"] = lin(0.0)
    m.objectives["rt"] = vsum((lin(sm.et[j.id]) - j.submit) * (1.0 / j.runtime) for j in inst.rt_jobs)
    return sm


def _strengthen(sm: SequenceMILP, options: Strengthen) -> None:
    """The valid inequalities and symmetry breaking of :mod:`milp.strengthen` that ``options`` asks for."""
    inst, m = sm.instance, sm.model
    if options.energy:
        add_energy_cuts(m, inst, sm.et)
    if options.clique:
        add_clique_cuts(m, inst, sm.et)
    if options.symmetry:
        for ids in identical_groups(inst, set(sm.exPrmpt)):
            for a, b in zip(ids, ids[1:]):
                m.add(sm.st[a], "<=", sm.st[b], f"identical[{a},{b}]")
        fixed = tree_fixed_job(inst)
        if fixed is not None:
            sm.exPb[fixed].lb = 1.0


__all__ = ["SequenceMILP", "build_sequence_milp", "mpartdep", "sequences_needed", "INF"]
