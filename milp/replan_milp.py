"""``replan:method=milp``: one decision's planning problem (``milp.replan.Problem``) as a
disjunctive MILP, the second exact model issue 23 asks the re-planner to use.

The same problem as ``milp.replan``'s CP-SAT model, in the formulation of
``milp.disjunctive_milp`` (which builds an offline ``Instance``; a decision's problem adds what an
instance cannot say: running jobs with a fixed start, partitions held until a known time, restarts on
a fixed partition and, for a running job, a split point counted from now):

* ``a[j,q]`` — binary, job j on candidate partition q, Σ_q a[j,q] = 1;
* times in seconds from ``now`` (an absolute Mira time, ≈ 4·10⁶ s, would sit at the solver's
  feasibility tolerance); integer starts;
* a job's parts: part 1 [s, e1) with e1 = s + x + o·prm, part 2 [s2, C) with C = s2 + D − x + o·prm;
  unsplit (prm = 0) x = D and s2 = e1 (part 2 is the empty interval [e1, e1), which conflicts with
  nothing part 1 does not), split x in the job's range and s2 >= e1 + 1 (a gapless split only adds
  2·o, as in ``milp.cpsat``);
* a blocker (a partition held until ``end``): s >= end − M·(1 − Σ_{q conflicting it} a[j,q]);
* two jobs whose candidates may conflict: ``c[i,j]`` >= a[i,q] + Σ_{q' conflicting q} a[j,q'] − 1
  (the constant 1 when every pair conflicts), and for each pair of their parts an order binary with
  big-M disjunctions enforced when c = 1.

Objectives are the slowdown sums Σ (C − r)/W in floating point; bounds on them get a slack of
``SUM_SLACK`` (the plan read back is scored exactly, in fractions, by ``milp.replan``).  HiGHS (or
the best installed back end) with one thread; its time limit is wall time (no MILP back end here
has a deterministic clock), so ``ReplanPolicy`` accepts ``method=milp`` only with ``clock=wall`` or
no limit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Sequence

from milp.linmodel import Expr, LinearModel, Var, best_backend, lin, solve_model, vsum

if TYPE_CHECKING:  # milp.replan imports this module lazily
    from milp.replan import Budget, PlanJob, PlannedJob, Problem

# Slack of a bound on a slowdown sum (floating point): far below one second of any job's slowdown
# (1/W >= 1/(10⁶ s) here) and above the back ends' feasibility tolerances (1e-7 ... 1e-6).
SUM_SLACK = 1e-6
OBJECTIVE = "sd"
# The back ends' shortest useful time limit, s (``milp.linmodel.solve_highs`` floors it at 0.5 s).
MIN_LIMIT_S = 0.5


def _conflict_sets(unit_cls: list[list[int]]) -> list[frozenset[int]]:
    return [frozenset(c) for c in unit_cls]


@dataclass
class _Parts:
    job: "PlanJob"
    s: Var
    C: Expr
    parts: list[tuple[Expr, Expr]]  # (start, end) of each part, s from now
    prm: Var | None = None
    x: Var | None = None
    s2: Var | None = None


@dataclass
class MilpStage:
    """One stage's MILP of a decision's problem (the interface of ``milp.replan``'s CP-SAT stage)."""

    problem: "Problem"
    model: LinearModel
    jobs: dict[int, _Parts] = field(default_factory=dict)
    a: dict[tuple[int, int], Var] = field(default_factory=dict)
    start: dict[int, float] | None = None

    def _sum(self, jobs: Sequence["PlanJob"]) -> Expr:
        now = self.problem.now
        return vsum(lin(self.jobs[j.id].C) * (1.0 / j.weight_runtime) + Expr(const=(now - j.submit) / j.weight_runtime)
                    for j in jobs)

    def minimize(self, jobs: Sequence["PlanJob"]) -> None:
        self.model.objectives[OBJECTIVE] = self._sum(jobs)

    def at_most(self, jobs: Sequence["PlanJob"], total: Fraction, floor_plan: dict[int, "PlannedJob"] | None) -> None:
        """Σ SD <= ``total`` over ``jobs`` (loosened to keep ``floor_plan`` feasible, as CP-SAT's)."""
        rhs = float(total)
        if floor_plan is not None:
            rhs = max(rhs, float(_plan_sum(jobs, floor_plan)))
        self.model.add(self._sum(jobs), "<=", rhs + SUM_SLACK)

    def no_worse(self, jobs: Sequence["PlanJob"], plan: dict[int, "PlannedJob"]) -> None:
        self.model.add(self._sum(jobs), "<=", float(_plan_sum(jobs, plan)) + SUM_SLACK)

    def hint(self, plan: dict[int, "PlannedJob"]) -> None:
        """No MIP start: a start must assign every order binary, and the back ends reject one that
        breaks a row; the previous plan is not passed (each stage's objective cut keeps the
        stages' order instead)."""

    def solve(self, budget: "Budget", share: float, seed: int) -> tuple[dict[int, "PlannedJob"] | None, str]:
        limit = None if budget.total_s is None else max(MIN_LIMIT_S, budget.total_s * share)
        res = solve_model(self.model, OBJECTIVE, best_backend(), time_limit=limit, threads=1)
        if res.values is None:
            return None, "infeasible" if res.status == "infeasible" else "no_solution"
        return self._read(res.values), res.status

    def _read(self, values: list[float]) -> dict[int, "PlannedJob"]:
        from milp.replan import PlannedJob

        now = self.problem.now

        def val(e) -> int:
            e = lin(e)
            return round(e.const + sum(c * values[k] for k, c in e.coefs.items()))

        out = {}
        for jid, p in self.jobs.items():
            q = max(p.job.candidates, key=lambda q: values[self.a[(jid, q)].index])
            start = now + val(p.s)
            if p.prm is not None and values[p.prm.index] > 0.5:
                out[jid] = PlannedJob(q, start, val(p.x), now + val(p.s2), now + val(p.C))
            else:
                out[jid] = PlannedJob(q, start, end=now + val(p.C))
        return out


def _plan_sum(jobs: Sequence["PlanJob"], plan: dict[int, "PlannedJob"]) -> Fraction:
    return sum((Fraction(plan[j.id].end - j.submit, j.weight_runtime) for j in jobs), Fraction(0))


def build_milp(problem: "Problem", unit_cls: list[list[int]], H: int, ub: dict[int, int] | None = None) -> MilpStage:
    """The disjunctive MILP of ``problem`` (module docstring); ``ub``: latest completion per job."""
    now = problem.now
    m = LinearModel("replan")
    m.objectives[OBJECTIVE] = Expr()  # a stage without an objective (RTJs only, after θ*) is a feasibility problem
    st = MilpStage(problem, m)
    cls = _conflict_sets(unit_cls)
    big = H - now  # no time of a plan is later than the horizon
    for j in problem.jobs:
        D = j.duration
        lo_s = 0 if j.fixed_start else max(j.release, now) - now
        Hj = max((ub.get(j.id, H) if ub else H) - now, lo_s + D)
        for q in j.candidates:
            st.a[(j.id, q)] = m.var(f"a{j.id}_{q}", kind="B")
        m.add(vsum(st.a[(j.id, q)] for q in j.candidates), "==", 1)
        s = m.var(f"s{j.id}", lo_s, 0 if j.fixed_start else Hj - D, kind="I")
        if j.split is None:
            C = lin(s) + D
            st.jobs[j.id] = _Parts(j, s, C, [(lin(s), C)])
        else:
            x_lo, x_hi = j.split
            o = j.write
            prm = m.var(f"prm{j.id}", kind="B")
            x = m.var(f"x{j.id}", x_lo, D, kind="I")
            m.add(lin(x) - (D - x_hi) * (1 - lin(prm)), "<=", x_hi)  # split: x <= x_hi
            m.add(lin(x) + (D - x_lo) * lin(prm), ">=", D)  # unsplit: x = D
            e1 = lin(s) + lin(x) + o * lin(prm)
            s2 = m.var(f"s2_{j.id}", lo_s, Hj, kind="I")
            m.add(lin(s2) - e1 - lin(prm), ">=", 0)  # split: a gap of at least 1 s
            m.add(lin(s2) - e1 - Hj * lin(prm), "<=", 0)  # unsplit: s2 = e1
            C = lin(s2) + D - lin(x) + o * lin(prm)
            st.jobs[j.id] = _Parts(j, s, C, [(lin(s), e1), (lin(s2), C)], prm, x, s2)
        m.add(C, "<=", Hj)
        for b in problem.blockers:
            hit = [q for q in j.candidates if cls[q] & cls[b.partition]]
            if hit:
                end = b.end - now
                m.add(lin(s) + (end - lo_s) * (1 - vsum(st.a[(j.id, q)] for q in hit)), ">=", end)
    _disjunctions(st, problem.jobs, cls, big)
    return st


def _disjunctions(st: MilpStage, jobs: Sequence["PlanJob"], cls: list[frozenset[int]], big: int) -> None:
    m = st.model
    for i_pos, ji in enumerate(jobs):
        for jj in jobs[i_pos + 1:]:
            pairs = [(q, q2) for q in ji.candidates for q2 in jj.candidates if cls[q] & cls[q2]]
            if not pairs:
                continue
            n_all = len(ji.candidates) * len(jj.candidates)
            if len(pairs) == n_all:
                c: Expr = Expr(const=1.0)
            else:
                cv = m.var(f"c{ji.id}_{jj.id}", kind="B")
                for q in ji.candidates:
                    hit = [q2 for q2 in jj.candidates if cls[q] & cls[q2]]
                    if hit:
                        m.add(lin(cv) - st.a[(ji.id, q)] - vsum(st.a[(jj.id, q2)] for q2 in hit), ">=", -1)
                c = lin(cv)
            for u_pos, (su, eu) in enumerate(st.jobs[ji.id].parts):
                for v_pos, (sv, ev) in enumerate(st.jobs[jj.id].parts):
                    o = m.var(f"o{ji.id}_{u_pos}_{jj.id}_{v_pos}", kind="B")
                    # u before v, or v before u, where the two jobs' partitions conflict (c = 1)
                    m.add(eu - sv - big * (1 - lin(o)) - big * (1 - c), "<=", 0)
                    m.add(ev - su - big * lin(o) - big * (1 - c), "<=", 0)


__all__ = ["build_milp", "MilpStage"]
