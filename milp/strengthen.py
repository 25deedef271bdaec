"""Valid strengthenings shared by the MILP formulations (docs/milp.md, "Making the MILP prove").

Every piece is switchable through :class:`Strengthen` so that a before/after table can be made and
each cut can be tested not to cut off the optimum (tests/test_milp_strength.py solves with and
without it).  None of them changes the problem:

* ``horizons`` — per-job completion bounds (:func:`milp.cpsat.job_upper_bounds`: every SD >= 1, so
  the RTJ bound θ and an incumbent's Σ SD each cap every job's completion) and the big-M of every
  implication taken from those bounds (the tightest valid constant per constraint), plus the
  objective cut Σ SD <= the incumbent's;
* ``energy`` — for a set S of jobs released at or after r = min r_j (j ∈ S), the machine (M
  blocks) processes at most M block-seconds per second, so with e_j = k_j·p_j and E = Σ e_j,
  Σ e_j·C_j >= r·E + E²/(2M) + Σ e_j·p_j/2 (a job's last p_j busy seconds have mean time at most
  C_j − p_j/2; a split job is busy longer, which only helps);
* ``clique`` — jobs that pairwise conflict whatever their partitions (k_i + k_j > M) run one at a
  time: the single-machine bound Σ p_j·C_j >= r·P + P²/2 + Σ p_j²/2 (Queyranne);
* ``symmetry`` — identical jobs start in id order; on a complete block tree (M = 1, 2, 4, 8, 16)
  the widest job with several candidate partitions is fixed to the leftmost (the tree's
  automorphisms act transitively on each level; milp/cpsat.py does the same);
* ``start`` — the greedy/heuristic plan given to the solver as a MIP start;
* ``relaxation`` — with a binding sequence cap T, the BJ stage first solves the uncapped problem
  (the disjunctive MILP, a relaxation: every capped plan is an uncapped plan): its bound is added
  as the cut Σ SD >= bound, and its plan, when it fits in T slots, is the MIP start (then optimal).

Branching priorities are not offered: none of the open-source back ends (HiGHS, CBC through PuLP,
SCIP through OR-Tools' linear solver wrapper) takes them through the interfaces used here.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, replace
from typing import Iterable, Sequence

from milp.instance import Instance
from milp.linmodel import LinearModel, Var, lin, vsum
from rtsched.jobs import Job

# Sets of jobs: every subset while the objective's set is this small, else release-time suffixes.
ALL_SUBSETS_UP_TO = 10


@dataclass(frozen=True)
class Strengthen:
    """Which strengthenings a MILP build / solve uses (all on by default)."""

    horizons: bool = True
    energy: bool = True
    clique: bool = True
    symmetry: bool = True
    start: bool = True
    relaxation: bool = True

    @classmethod
    def none(cls) -> "Strengthen":
        return cls(**{f.name: False for f in fields(cls)})

    @classmethod
    def parse(cls, text: str) -> "Strengthen":
        """"all", "none", a comma list of names to switch on ("energy,clique"), or of names to
        switch off from all, each as "no-NAME" (or "-NAME", e.g. ``--strengthen=-energy``)."""
        text = text.strip()
        names = [f.name for f in fields(cls)]
        if text in ("all", ""):
            return cls()
        if text == "none":
            return cls.none()
        items = [t.strip() for t in text.split(",") if t.strip()]

        def off(t: str) -> str | None:
            return t[3:] if t.startswith("no-") else t[1:] if t.startswith("-") else None

        bad = [t for t in items if (off(t) or t) not in names]
        if bad:
            raise ValueError(f"unknown strengthening(s) {bad}; choose from {names} (no-NAME switches one off), "
                             "'all' or 'none'")
        offs = [off(t) for t in items]
        if all(offs):
            return replace(cls(), **{t: False for t in offs})
        if any(offs):
            raise ValueError("give either names to switch on or no-names to switch off, not both")
        return replace(cls.none(), **{t: True for t in items})

    def label(self) -> str:
        on = [f.name for f in fields(self) if getattr(self, f.name)]
        return "+".join(on) if on else "none"


def job_sets(jobs: Sequence[Job]) -> Iterable[list[Job]]:
    """Every non-empty subset of ``jobs`` (up to ALL_SUBSETS_UP_TO jobs), else every suffix of the
    jobs sorted by release time (the sets whose release bound r is tightest)."""
    jobs = sorted(jobs, key=lambda j: (j.submit, j.id))
    if len(jobs) <= ALL_SUBSETS_UP_TO:
        for n in range(1, len(jobs) + 1):
            for combo in itertools.combinations(jobs, n):
                yield list(combo)
    else:
        for i in range(len(jobs)):
            yield jobs[i:]


def add_energy_cuts(model: LinearModel, instance: Instance, et: dict[int, Var]) -> int:
    """The machine energy bound on every job set (module docstring); each row is divided by E
    (a weighted mean completion time >= a time) to keep its coefficients near 1.  Returns the
    number of rows added."""
    M = instance.blocks
    n = 0
    for S in job_sets(instance.jobs):
        e = {j.id: instance.k(j) * j.runtime for j in S}
        E = sum(e.values())
        r = min(j.submit for j in S)
        rhs = r + E / (2 * M) + sum(e[j.id] * j.runtime for j in S) / (2 * E)
        if sum(e[j.id] * (j.submit + j.runtime) for j in S) / E >= rhs:
            continue  # implied by the jobs' own bounds C_j >= r_j + p_j
        model.add(vsum(lin(et[j.id]) * (e[j.id] / E) for j in S), ">=", rhs, f"energy[{_ids(S)}]")
        n += 1
    return n


def add_clique_cuts(model: LinearModel, instance: Instance, et: dict[int, Var]) -> int:
    """The single-machine bound on every set of pairwise conflicting jobs (k_i + k_j > M) of two
    or more jobs; rows divided by P.  Returns the number of rows added."""
    M = instance.blocks
    n = 0
    for S in job_sets(instance.jobs):
        if len(S) < 2 or any(instance.k(a) + instance.k(b) <= M for a, b in itertools.combinations(S, 2)):
            continue
        P = sum(j.runtime for j in S)
        r = min(j.submit for j in S)
        rhs = r + P / 2 + sum(j.runtime ** 2 for j in S) / (2 * P)
        if sum(j.runtime * (j.submit + j.runtime) for j in S) / P >= rhs:
            continue
        model.add(vsum(lin(et[j.id]) * (j.runtime / P) for j in S), ">=", rhs, f"clique[{_ids(S)}]")
        n += 1
    return n


def _ids(S: Sequence[Job]) -> str:
    return ",".join(str(j.id) for j in S)


def identical_groups(instance: Instance, splittable: set[int]) -> list[list[int]]:
    """Ids of interchangeable jobs (kind, submit, runtime, size, splittable), each group sorted."""
    groups: dict[tuple, list[int]] = {}
    for job in instance.jobs:
        key = (job.kind, job.submit, job.runtime, instance.k(job), job.id in splittable)
        groups.setdefault(key, []).append(job.id)
    return [sorted(g) for g in groups.values() if len(g) > 1]


def tree_fixed_job(instance: Instance) -> tuple[int, int] | None:
    """(job id, partition index) that the block tree's automorphisms allow fixing (or None): the
    widest job with more than one candidate partition, on the leftmost one.  Compatible with the
    identical-job order (the job fixed is the first of its group: ties go to the smallest id)."""
    from milp.cpsat import is_binary_tree

    movable = [j for j in instance.jobs if len(instance.candidates(j)) > 1]
    if not is_binary_tree(instance.blocks) or not movable:
        return None
    j0 = min(movable, key=lambda j: (-instance.k(j), j.submit, j.id))
    return j0.id, instance.candidates(j0)[0].index




def canonical_plan(instance: Instance, plan, splittable: set[int]):
    """``plan`` mapped into the region the symmetry breaking keeps (same slowdowns): identical
    jobs swapped so that they start in id order, then the blocks relabelled b -> b XOR c (an
    automorphism of the complete block tree: it maps every aligned partition onto an aligned
    partition of the same size) so that the job of :func:`tree_fixed_job` sits on the leftmost
    partition.  A MIP start that violated the symmetry breaking would be rejected."""
    from dataclasses import replace as dc_replace

    by = {pl.job_id: pl for pl in plan}
    for ids in identical_groups(instance, splittable):
        pls = sorted((by[i] for i in ids), key=lambda pl: (pl.start, pl.job_id))
        for i, pl in zip(ids, pls):
            by[i] = dc_replace(pl, job_id=i)
    fixed = tree_fixed_job(instance)
    if fixed is not None:
        parts = instance.partitions
        c = parts[by[fixed[0]].partition].first
        index = {(p.k, p.first): p.index for p in parts}
        for i, pl in list(by.items()):
            p = parts[pl.partition]
            first = (p.first ^ c) & ~(p.k - 1)
            by[i] = dc_replace(pl, partition=index[(p.k, first)])
    return [by[j.id] for j in instance.jobs]


def objective_cut(model: LinearModel, instance: Instance, et: dict[int, Var], objective: str,
                  incumbent_sum: float | None, tol: float = 1e-6, name: str = "objective_cut") -> LinearModel:
    """``model`` plus Σ SD <= ``incumbent_sum`` + tol over the objective's jobs (unchanged for None)."""
    jobs = {"bj": instance.batch_jobs, "rt": instance.rt_jobs}.get(objective, [])
    if incumbent_sum is None or not jobs:
        return model
    out = LinearModel(model.name, model.vars, list(model.cons), model.objectives)
    expr = vsum(lin(et[j.id]) * (1.0 / j.runtime) for j in jobs)
    out.add(expr, "<=", incumbent_sum + sum(j.submit / j.runtime for j in jobs) + tol, name)
    return out


__all__ = ["Strengthen", "add_energy_cuts", "add_clique_cuts", "identical_groups", "tree_fixed_job", "job_sets",
           "canonical_plan", "objective_cut"]


def rtj_bound(model: LinearModel, instance: Instance, et: dict[int, Var], theta, tol: float = 1e-7) -> LinearModel:
    """``model`` plus eq. 37, Σ_rt (et − r)/p <= θ·n_rt (+ tol); ``None``: unchanged."""
    rts = instance.rt_jobs
    if theta is None or not rts:
        return model
    out = LinearModel(model.name, model.vars, list(model.cons), model.objectives)
    expr = vsum(lin(et[j.id]) * (1.0 / j.runtime) for j in rts)
    out.add(expr, "<=", float(theta) * len(rts) + sum(j.submit / j.runtime for j in rts) + tol, "eq37_rtj_bound")
    return out


__all__ += ["rtj_bound"]


def bj_bound(model: LinearModel, instance: Instance, et: dict[int, Var], bj_sum, tol: float = 1e-7) -> LinearModel:
    """``model`` plus Σ_BJ (et − r)/p <= ``bj_sum`` (+ tol; None: unchanged): the RTJ tie-break
    stage keeps the proven BJ optimum this way (the tolerance as eq. 37's; ``milp.solve`` checks the
    resulting plan exactly)."""
    return objective_cut(model, instance, et, "bj", None if bj_sum is None else float(bj_sum), tol, "bj_sum_bound")


__all__ += ["bj_bound"]


def objective_floor(model: LinearModel, instance: Instance, et: dict[int, Var], objective: str,
                    floor_sum: float | None, tol: float = 1e-6) -> LinearModel:
    """``model`` plus Σ SD >= ``floor_sum`` − tol over the objective's jobs, for a valid lower bound
    ``floor_sum`` (e.g. a relaxation's proven bound); unchanged for None."""
    jobs = {"bj": instance.batch_jobs, "rt": instance.rt_jobs}.get(objective, [])
    if floor_sum is None or not jobs:
        return model
    out = LinearModel(model.name, model.vars, list(model.cons), model.objectives)
    expr = vsum(lin(et[j.id]) * (1.0 / j.runtime) for j in jobs)
    out.add(expr, ">=", floor_sum + sum(j.submit / j.runtime for j in jobs) - tol, "objective_floor")
    return out


__all__ += ["objective_floor"]
