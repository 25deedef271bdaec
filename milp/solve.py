"""One entry point for every exact method: :func:`solve` -> :class:`SolveResult`.

The RTJ bound follows offline-model.md:

* ``lexicographic=True`` (default): θ* = the minimum achievable mean RTJ slowdown is computed
  first (same model, objective = Σ RTJ slowdowns; CP-SAT solves that stage on the RTJs alone,
  which is equivalent without a sequence cap because BJs can always be appended after every RTJ),
  then the BJ objective is minimised under θ_used = max(θ, θ*);
* ``binary_search=True``: the paper's loop — θ if feasible, else the smallest θ in 1.10, 1.11, ...,
  2.00 for which a schedule exists (found by bisection on feasibility solves); infeasible if none;
* neither: θ as given; "infeasible" when no schedule meets it.

``rtj_tiebreak=True`` adds a third lexicographic stage: where θ_used leaves the RTJs slack, many
schedules reach the least BJ mean, with different RTJ means, and which one a solver returns is its
tie-break (docs/benchmarks.md: CP-SAT 1.110, the disjunctive MILP 1.198 on one instance).  Stage 3
minimises Σ RTJ SD under Σ BJ SD <= the proven BJ stage's sum (exact in CP-SAT's integer scaling;
a 1e-7 tolerance in the MILPs, as eq. 37's, with the plan checked exactly afterwards) and the RTJ
bound θ_used, so every method returns the same (BJ mean, RTJ mean) pair.  Off by default.

All reported slowdowns are recomputed exactly (Fractions) from the returned plan, which is
left-justified (every part as early as its block order allows; see :func:`milp.plan.left_justify`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

from rtsched.errors import InputError
from rtsched.limits import MAX_SOLVE_JOBS
from rtsched.schedule import Schedule, Segment

from milp.instance import Instance
from milp.linmodel import solve_model
from milp.model_size import check_buildable
from milp.plan import Evaluation, Placement, evaluate, left_justify
from milp.strengthen import Strengthen, canonical_plan, objective_floor
from milp.report import ReplayReport, replay_plan
from milp.stoppable import BuildTimeout, build_deadline

METHODS = ("cpsat", "milp", "milp-highs", "milp-cbc", "milp-ortools", "milp-disjunctive", "bruteforce")
# "milp": the paper's partition-sequence MILP on the best installed back end (linmodel.best_backend);
# "milp-disjunctive": the second exact MILP (milp/disjunctive_milp.py), on the same back end.

# The largest instance an exact solve accepts (jobs).  The greedy warm starts are quadratic in the
# number of jobs, so with a time limit they get at most GREEDY_SHARE of the time left and are
# abandoned at that point; a 3,000-job instance then answers within its limit (tests/test_cli_errors.py).
GREEDY_SHARE = 0.25


def check_size(instance: Instance, path: str | None = None, method: str | None = None) -> None:
    """Refuse an instance larger than :data:`MAX_SOLVE_JOBS`, or (``method="bruteforce"``) than
    the enumeration takes (an ``InputError`` naming the limit), before any work starts."""
    n = len(instance.jobs)
    where = path if path is not None else (instance.name or None)
    if n > MAX_SOLVE_JOBS:
        raise InputError(f"{n:,} jobs: an exact solve accepts at most MAX_SOLVE_JOBS = {MAX_SOLVE_JOBS:,} jobs "
                         "(the optimum of seed 002's instances is for a few to a few dozen jobs)", path=where)
    if method == "bruteforce":
        from milp.bruteforce import check_tiny

        check_tiny(n, instance.blocks, path=where)


def _greedy_deadline(limit: float | None) -> float | None:
    return None if limit is None else time.perf_counter() + GREEDY_SHARE * limit


@dataclass
class SolveResult:
    """What a solve reports (offline-model.md "What a solve reports").

    Slowdown means are floats computed from exact Fractions (``*_exact``).  ``best_bound`` is a
    lower bound on the mean BJ slowdown (under θ_used) and ``gap`` = (bj_sd_mean − best_bound) /
    bj_sd_mean (0 when proven optimal).  ``restricted`` is True when a sequence cap T < the
    number of parts that could share a block makes the optimum one *restricted to T*.
    """

    status: str  # "optimal" | "feasible" | "infeasible" | "no_solution"
    method: str
    theta: float
    theta_used: float | None
    theta_star: float | None
    rtj_sd_mean: float | None
    bj_sd_mean: float | None
    sd: dict[int, float]
    best_bound: float | None
    gap: float | None
    seconds: float
    model_size: dict[str, int]
    placements: list[Placement] | None
    instance: Instance = field(repr=False)
    sequences: int | None = None
    restricted: bool = False
    preempt: bool = True
    objective_tolerance: float = 0.0
    theta_star_status: str | None = None
    stages: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    theta_used_exact: Fraction | None = None
    theta_star_exact: Fraction | None = None
    evaluation: Evaluation | None = field(default=None, repr=False)
    replay: ReplayReport | None = field(default=None, repr=False)

    @property
    def schedule(self) -> Schedule | None:
        """The plan's segments (the simulator reproduced exactly these when the result was made)."""
        return None if self.replay is None else self.replay.schedule

    @property
    def segments(self) -> list[Segment]:
        s = self.schedule
        return [] if s is None else list(s.segments)

    @property
    def theta_star_bound(self) -> float | None:
        """A lower bound on θ* (the minimum mean RTJ slowdown): θ* when its stage was proven, the
        solver's bound when it stopped on the time limit, None without a θ* stage or a bound."""
        for st in self.stages:
            if st["stage"] == "theta_star":
                return st.get("theta_star_bound")
        return None

    @property
    def solver(self) -> str | None:
        """The MILP back end that solved the last stage (None for CP-SAT and brute force)."""
        return next((st["solver"] for st in reversed(self.stages) if "solver" in st), None)

    @property
    def nodes(self) -> int | None:
        """Branch-and-bound nodes over all MILP stages (None when no back end reported them)."""
        counts = [st["nodes"] for st in self.stages if st.get("nodes") is not None]
        return sum(counts) if counts else None

    @property
    def root_bound(self) -> float | None:
        """The BJ stage model's LP relaxation bound as a mean BJ slowdown (comparable with
        ``best_bound``); None when the back end did not report one."""
        n_bj = len(self.instance.batch_jobs)
        for st in self.stages:
            if st["stage"] == "bj" and st.get("root_bound") is not None and n_bj:
                return st["root_bound"] / n_bj
        return None

    @property
    def n_preempted(self) -> int:
        return sum(1 for p in self.placements or [] if p.split is not None)

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly summary (no segments)."""
        return {k: getattr(self, k) for k in (
            "status", "method", "theta", "theta_used", "theta_star", "theta_star_status", "rtj_sd_mean",
            "bj_sd_mean", "best_bound", "gap", "seconds", "model_size", "sequences", "restricted", "preempt",
            "objective_tolerance", "notes", "solver", "nodes", "root_bound")} | {
                "sd": {str(k): v for k, v in self.sd.items()},
                                                 "n_preempted": self.n_preempted,
                                                 "theta_star_bound": self.theta_star_bound}


@dataclass
class _Stage:
    status: str
    plan: list[Placement] | None
    bound_sum: float | None  # lower bound on the stage objective's sum of slowdowns
    seconds: float
    size: dict[str, int]
    eps: float = 0.0
    # The MILP solver's own relative gap on its model, (objective − bound) / objective: with a
    # binding sequence cap T that model is restricted, so this, not the replayed plan's, is the gap
    # a MILP solver reports (seed 002 Table 2).
    solver_gap: float | None = None
    solver: str | None = None  # the MILP back end that ran (None: CP-SAT)
    nodes: int | None = None  # branch-and-bound nodes of the stage's MILP solve(s)
    root_bound: float | None = None  # the stage model's LP relaxation bound (sum of slowdowns)
    warning: str | None = None  # why the back end's own answer was not taken (linmodel.reconcile)


def _solver_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None or objective == 0:
        return None
    return max(0.0, (objective - bound) / abs(objective))


def _frac(theta: float | Fraction) -> Fraction:
    return Fraction(str(theta)) if isinstance(theta, float) else Fraction(theta)


# ---------------------------------------------------------------------------------------------
# Per-method stage runners: stage(objective, theta_bound or None, time_limit, hint_plan) -> _Stage
# ---------------------------------------------------------------------------------------------


# CP-SAT settings of the BJ stage (measured on the Table-3 set, docs/milp.md): phase 1 (default
# portfolio) runs PRIMAL_SECONDS s at most (and at most PRIMAL_SHARE of the limit); phase 2 runs
# the LP tree search beside the core-based search, on the per-block layout.
PRIMAL_SECONDS = 3.0
PRIMAL_SHARE = 0.25
CPSAT_LAYOUT = "blocks"


# Share of the θ* stage's time limit for its relaxation (RTJs only, no cap) when the cap binds.
RELAXATION_SHARE = 0.25


def _proof_params(workers: int) -> dict[str, Any]:
    if workers >= 2:
        return {"subsolvers": ["lb_tree_search", "core"], "use_lns": False}
    return {"optimize_with_lb_tree_search": True, "linearization_level": 2}


def _cpsat_runner(instance: Instance, preempt: bool, workers: int, seed: int) -> Callable[..., _Stage]:
    check_size(instance)
    return _CpsatStages(instance, preempt, workers, seed).stage


# The least time (s) worth giving CP-SAT once its model is built and loaded; with less left the
# stage keeps its incumbent.
MIN_SOLVE_SECONDS = 0.05


class _NoTime(Exception):
    """A CP-SAT stage has no time left to build or solve its model (the message says why)."""


class _CpsatStages:
    """The stages of the CP-SAT method on one instance, each within the seconds it is given
    (issue 26, "A time limit is a promise"): a model is not built when its estimated build and
    CP-SAT's load of it (milp.model_size, scaled by how slowly this solve's earlier builds went:
    the machine's load) do not fit in the time left; a build is abandoned at the deadline; CP-SAT
    gets the time left less its load of the model, and is stopped at the deadline.  A stage out of
    time returns the plan it started from ("feasible", its notes say why), else "no_solution"."""

    def __init__(self, instance: Instance, preempt: bool, workers: int, seed: int):
        self.instance, self.preempt, self.workers, self.seed = instance, preempt, workers, seed
        self.built_seconds = 0.0  # the builds so far: measured
        self.estimated_seconds = 0.0  # and estimated (milp.model_size)

    def pace(self) -> float:
        """Measured over estimated build time so far (1 before the first build)."""
        return self.built_seconds / self.estimated_seconds if self.estimated_seconds > 0 else 1.0

    def solve(self, inst: Instance, deadline: float | None, seconds: float | None, start, *,
              params: dict | None = None, expected_build: float | None = None, **build: Any) -> tuple[Any, float]:
        """Build ``inst``'s model (``build_cpsat``'s keywords ``build``), hint ``start``, solve it for
        ``seconds`` at most and within ``deadline``: (the CpsatRun, the build's seconds).  Raises
        :class:`_NoTime` when the build (``expected_build`` s, default the estimate) would not fit."""
        from milp.cpsat import build_cpsat, solve_cpsat_model
        from milp.model_size import CPSAT_LOAD_PER_BUILD, estimate

        est = estimate(inst, "cpsat", self.preempt).build_seconds
        if deadline is not None:
            expected = est * self.pace() if expected_build is None else expected_build
            left = deadline - time.perf_counter()
            if expected * (1 + CPSAT_LOAD_PER_BUILD) > left:
                raise _NoTime(f"no time left to build the CP-SAT model of {len(inst.jobs):,} jobs (about "
                              f"{expected * (1 + CPSAT_LOAD_PER_BUILD):.1f} s to build and load, {max(0.0, left):.1f} s left)")
        t = time.perf_counter()
        try:
            cm = build_cpsat(inst, preempt=self.preempt, deadline=deadline, **build)
        except BuildTimeout as exc:
            raise _NoTime(f"CP-SAT {exc}") from None
        built = time.perf_counter() - t
        self.built_seconds += built
        self.estimated_seconds += est
        if start is not None:
            cm.hint(start)
        if deadline is not None:
            left = deadline - time.perf_counter() - CPSAT_LOAD_PER_BUILD * built
            if left < MIN_SOLVE_SECONDS:
                raise _NoTime(f"no time left to solve the CP-SAT model of {len(inst.jobs):,} jobs (built in {built:.1f} s)")
            seconds = left if seconds is None else min(seconds, left)
        return solve_cpsat_model(cm, seconds, self.workers, self.seed, params=params), built

    def stage(self, objective: str, bound: Fraction | None, limit: float | None, hint,
              bj_sum_bound: Fraction | None = None) -> _Stage:
        from milp.cpsat import best_greedy_plan

        t_start = time.perf_counter()
        deadline = None if limit is None else t_start + limit
        instance = self.instance
        if objective == "rt" and bj_sum_bound is None:
            return self.theta_star(limit, deadline, t_start)
        inc = hint if hint is not None and _meets(instance, hint, bound) else None
        start = hint if hint is not None else best_greedy_plan(instance, None, bound, _greedy_deadline(limit))
        # The plan kept when the time runs out: one that meets every bound of the stage.
        fallback = inc if inc is not None or bj_sum_bound is not None else (
            start if start is not None and _meets(instance, start, bound) else None)
        try:
            if objective != "bj" and bj_sum_bound is None:
                run, _ = self.solve(instance, deadline, limit, start, objective=objective, rt_bound=bound,
                                    rt_floor_plan=inc)
                return _with_incumbent(run, fallback, t_start)
            return self.two_phases(objective, bound, limit, deadline, t_start, inc, start, fallback, bj_sum_bound)
        except _NoTime as why:
            return _out_of_time(fallback, str(why), t_start)

    def theta_star(self, limit: float | None, deadline: float | None, t_start: float) -> _Stage:
        """θ* needs the RTJs only (BJs can always be appended after them: no sequence cap here)."""
        from milp.cpsat import append_batch, best_greedy_plan, rt_subinstance

        instance = self.instance
        sub = rt_subinstance(instance)
        inc = best_greedy_plan(sub, deadline=_greedy_deadline(limit))
        fallback = append_batch(instance, inc) if inc is not None else None
        try:
            run, _ = self.solve(sub, deadline, limit, inc, objective="rt", incumbent=inc)
        except _NoTime as why:
            return _out_of_time(fallback, str(why), t_start)
        if run.plan is not None:
            run.plan = append_batch(instance, run.plan)
        return _with_incumbent(run, fallback, t_start)

    def two_phases(self, objective: str, bound, limit: float | None, deadline: float | None, t_start: float,
                   inc, start, fallback, bj_sum_bound) -> _Stage:
        # Two phases (docs/milp.md, "What makes it faster"): the default portfolio (LNS) finds the
        # best schedule within seconds; a fresh model built around that incumbent (tighter per-job
        # horizons, objective cut) is then proven by LP-driven tree search, which closes the bound
        # far faster but finds good schedules poorly on its own.  The BJ stage, and the RTJ
        # tie-break stage (objective "rt" under the BJ bound ``bj_sum_bound``).
        instance = self.instance
        first = PRIMAL_SECONDS if limit is None else min(PRIMAL_SECONDS, PRIMAL_SHARE * limit)
        run, built = self.solve(instance, deadline, first, start, objective=objective, rt_bound=bound,
                                rt_floor_plan=inc, incumbent=inc, layout=CPSAT_LAYOUT, bj_sum_bound=bj_sum_bound)
        if run.status in ("optimal", "infeasible"):
            return _Stage(run.status, run.plan, run.bound_sum, run.seconds, run.size, run.eps)
        best = run.plan if run.plan is not None and _meets(instance, run.plan, bound) else inc
        try:
            # as long as the first build took: the time left may not even rebuild the model (3,000 jobs)
            run2, _ = self.solve(instance, deadline, None, best if best is not None else start,
                                 params=_proof_params(self.workers), expected_build=built, objective=objective,
                                 rt_bound=bound, rt_floor_plan=best, incumbent=best, layout=CPSAT_LAYOUT,
                                 bj_sum_bound=bj_sum_bound)
        except _NoTime:
            return _with_incumbent(run, fallback, t_start)
        seconds = time.perf_counter() - t_start
        if run2.plan is None:  # the proof phase timed out without re-finding a schedule: keep phase 1's
            if run2.status == "infeasible":
                return _Stage(run2.status, None, None, seconds, run2.size, run2.eps)
            if run.plan is None:  # nor did phase 1: the plan the stage started from
                return _with_incumbent(run2, fallback, t_start)
            return _Stage("feasible", run.plan, run.bound_sum, seconds, run2.size, run.eps)
        bound_sum = run2.bound_sum
        if run.bound_sum is not None and bound_sum is not None:
            bound_sum = max(bound_sum, run.bound_sum)
        return _Stage(run2.status, run2.plan, bound_sum, seconds, run2.size, run2.eps)


def _with_incumbent(run, fallback, t_start: float) -> _Stage:
    """A CP-SAT run as a stage; one that stopped on its time limit without a schedule keeps
    ``fallback`` (the plan the stage started from) with the solver's bound."""
    seconds = time.perf_counter() - t_start
    if run.plan is None and run.status == "no_solution" and fallback is not None:
        return _Stage("feasible", fallback, run.bound_sum, seconds, run.size, run.eps,
                      warning="CP-SAT found no schedule in its time; the plan it started from is kept")
    return _Stage(run.status, run.plan, run.bound_sum, seconds, run.size, run.eps)


def _out_of_time(fallback, why: str, t_start: float) -> _Stage:
    """A stage with no time left for its model: ``fallback`` ("feasible"), else "no_solution"."""
    status = "feasible" if fallback is not None else "no_solution"
    kept = "; the plan it started from is kept" if fallback is not None else ""
    return _Stage(status, fallback, None, time.perf_counter() - t_start, {}, warning=why + kept)


def _milp_runner(instance: Instance, preempt: bool, sequences: int | None, backend: str,
                 threads: int | None, formulation: str = "sequence", options: Strengthen | None = None,
                 kept: dict[str, Any] | None = None) -> tuple[Callable[..., _Stage], Any]:
    """Stage runner of the MILP methods: ``formulation`` "sequence" (the paper's model) or
    "disjunctive"; ``options`` the strengthenings of :mod:`milp.strengthen` (None: none);
    ``kept`` receives each stage's model (key = objective) for ``write_model``.  Returns the
    runner and the instance's model (its sequence cap ``T`` and ``restricted``)."""
    stages = _MilpStages(instance, preempt, sequences, backend, threads, formulation,
                         Strengthen.none() if options is None else options, {} if kept is None else kept)
    return stages.stage, stages.sm


class _MilpStages:
    """The stages of the MILP methods on one instance (see :func:`_milp_runner`)."""

    def __init__(self, instance: Instance, preempt: bool, sequences: int | None, backend: str,
                 threads: int | None, formulation: str, options: Strengthen, kept: dict[str, Any]):
        self.instance, self.preempt, self.sequences = instance, preempt, sequences
        self.backend, self.threads, self.formulation = backend, threads, formulation
        self.options, self.kept = options, kept
        self.sm = self.build(instance)

    def build(self, inst: Instance, ub=None, capped: bool = True, form: str | None = None):
        from milp.disjunctive_milp import build_disjunctive_milp
        from milp.sequence_milp import build_sequence_milp, sequences_needed

        if (form or self.formulation) == "disjunctive":
            return build_disjunctive_milp(inst, self.preempt, ub, self.options)
        # A cap above sequences_needed restricts nothing: its extra slots stay empty (same optimum,
        # a model that grows with T: --sequences 1000 did not finish building within a time limit).
        cap = min(self.sequences, sequences_needed(inst, self.preempt)) \
            if capped and self.sequences is not None else None
        return build_sequence_milp(inst, cap, self.preempt, ub=ub, options=self.options)

    def run(self, inst: Instance, objective: str, bound, limit, plan, capped: bool = True,
            floor: float | None = None, form: str | None = None, keep: bool = True,
            bj_sum_bound: Fraction | None = None):
        """Build the stage's model (horizons from ``plan`` when it fits), solve it: (model, result).
        ``floor``: a valid lower bound on the stage objective's sum, added as a cut.
        ``bj_sum_bound``: the BJ bound Σ_BJ SD <= it (the RTJ tie-break stage)."""
        from milp.cpsat import job_upper_bounds

        deadline = None if limit is None else time.perf_counter() + limit
        form = form or self.formulation
        options, preempt = self.options, self.preempt
        # the instance's own model (built once, up front) serves wherever the same one is needed
        same = inst is self.instance and capped and form == self.formulation
        f = self.sm if same and not options.horizons else None
        inc = None
        if plan is not None:
            plan = canonical_plan(inst, plan, {j.id for j in inst.jobs if preempt and inst.preemptible(j)}) \
                if options.symmetry else list(plan)
            if not _meets(inst, plan, bound):
                plan = None
        if f is None:
            ub = None
            with build_deadline(deadline):  # the time limit covers the builds (issue 26)
                if options.horizons:
                    probe = None if plan is None else self.sm if same else self.build(inst, None, capped, form)
                    inc = plan if probe is not None and probe.mip_start(plan) is not None else None
                    ub = job_upper_bounds(inst, objective, inc, bound, preempt, bj_sum_bound)
                f = self.build(inst, ub, capped, form)
        inc_sum = None
        if inc is not None:
            ev = evaluate(inst, inc)
            inc_sum = float(ev.bj_sum if objective == "bj" else ev.rt_sum)
        if form == "disjunctive":
            model = f.stage_model(objective, bound, inc_sum, bj_sum=bj_sum_bound)
        else:
            model = f.stage_model(objective, bound, inc_sum, floor if objective == "rt" else None, bj_sum=bj_sum_bound)
        if objective == "bj":
            model = objective_floor(model, inst, f.et, objective, floor)
        start = f.mip_start(plan) if options.start and plan is not None else None
        if keep:
            self.kept[objective] = model
        if deadline is not None:  # the seconds left after the builds
            limit = deadline - time.perf_counter()
            if limit < MIN_SOLVE_SECONDS:
                raise _NoTime(f"no time left to solve the {form} MILP of {len(inst.jobs):,} jobs after building it")
        res = solve_model(model, objective, self.backend, time_limit=limit, threads=self.threads, start=start)
        return f, res

    def rtj_only(self, limit: float | None):
        """The θ* model of the RTJs alone without a cap: (its MILP, its solve)."""
        from milp.cpsat import greedy_plan, rt_subinstance

        sub = rt_subinstance(self.instance)
        return self.run(sub, "rt", None, limit, greedy_plan(sub), capped=False)

    def stage(self, objective: str, bound: Fraction | None, limit: float | None, hint,
              bj_sum_bound: Fraction | None = None) -> _Stage:
        """One stage within ``limit`` seconds, builds included; out of time, the stage keeps
        ``hint`` when it meets the stage's bound ("feasible"), else reports "no_solution"."""
        t_start = time.perf_counter()
        try:
            return self.stage_in_time(objective, bound, limit, hint, bj_sum_bound)
        except (_NoTime, BuildTimeout) as why:
            fallback = hint if hint is not None and _meets(self.instance, hint, bound) else None
            return _out_of_time(fallback, str(why), t_start)

    def stage_in_time(self, objective: str, bound: Fraction | None, limit: float | None, hint,
                      bj_sum_bound: Fraction | None = None) -> _Stage:
        from milp.cpsat import append_batch

        tiebreak = bj_sum_bound is not None  # the RTJ tie-break stage: the full model under both bounds
        if objective == "rt" and not tiebreak and not self.sm.restricted:
            # Without a binding sequence cap, θ* only depends on the RTJs (the BJs can always be
            # appended after every RTJ), so the first stage solves the much smaller RTJ-only MILP.
            sub_f, res = self.rtj_only(limit)
            plan = append_batch(self.instance, sub_f.placements(res.values)) if res.values is not None else None
            return _Stage(res.status, plan, res.bound, res.seconds, sub_f.model.size(),
                          solver_gap=_solver_gap(res.objective, res.bound), **_stats(res))
        if objective == "rt" and not tiebreak:
            return self.restricted_theta_star(limit, hint)
        if objective == "bj" and self.sm.restricted and self.options.relaxation and self.formulation == "sequence":
            return self.restricted_bj(bound, limit, hint)
        f, res = self.run(self.instance, objective, bound, limit, hint, bj_sum_bound=bj_sum_bound)
        plan = f.placements(res.values) if res.values is not None else None
        return _Stage(res.status, plan, res.bound, res.seconds, self.kept[objective].size(),
                      solver_gap=_solver_gap(res.objective, res.bound), **_stats(res))

    def restricted_theta_star(self, limit: float | None, hint) -> _Stage:
        # With a binding cap the θ* model's LP bound is the trivial Σ SD = n_rt, so CBC can find the
        # optimal θ* at once and still never prove it.  The RTJ-only model without the cap is a
        # relaxation (drop the BJs and the cap from any capped plan and it stays feasible), so its
        # proven bound is a valid cut on the capped model; it is small and solves in seconds.
        from milp.cpsat import append_batch

        t_start = time.perf_counter()
        sub_f, relax = self.rtj_only(None if limit is None else RELAXATION_SHARE * limit)
        n_rt = len(self.instance.rt_jobs)
        floor = relax.bound if relax.bound is not None and relax.bound > n_rt else None
        rest = None if limit is None else max(0.5, limit - (time.perf_counter() - t_start))
        if relax.values is not None:
            # The relaxation's RTJ placements with the BJs appended: when that plan fits in T slots
            # it meets the floor, so it is the capped θ* as well (a MIP start that closes the gap).
            hint = self.better_start("rt", append_batch(self.instance, sub_f.placements(relax.values)), hint, None)
        f, res = self.run(self.instance, "rt", None, rest, hint, floor=floor)
        return self.closed_by_relaxation("rt", f, res, relax, floor, t_start)

    def restricted_bj(self, bound, limit: float | None, hint) -> _Stage:
        # The capped BJ stage's tree closes slowly (Table 2, 4/3/16: gap 0.19 after 600 s with the
        # optimum found).  The uncapped problem is a relaxation of it (a capped plan is an uncapped
        # plan), and the disjunctive MILP proves it in about a second: its bound is a valid cut,
        # and its plan, when it fits in T slots, is optimal for the capped model too.
        t_start = time.perf_counter()
        rf, relax = self.run(self.instance, "bj", bound, None if limit is None else RELAXATION_SHARE * limit, hint,
                             form="disjunctive", keep=False)
        floor = relax.bound if relax.status in ("optimal", "feasible") else None
        if relax.values is not None:
            hint = self.better_start("bj", rf.placements(relax.values), hint, bound)
        rest = None if limit is None else max(0.5, limit - (time.perf_counter() - t_start))
        f, res = self.run(self.instance, "bj", bound, rest, hint, floor=floor)
        return self.closed_by_relaxation("bj", f, res, relax, floor, t_start)

    def better_start(self, objective: str, plan, hint, bound):
        """``plan`` (a relaxation's) instead of ``hint`` as the MIP start when it fits in T slots,
        meets θ and is no worse on the objective."""
        instance, sm = self.instance, self.sm
        if not _meets(instance, plan, bound) or sm.mip_start(plan) is None:
            return hint
        if hint is None or sm.mip_start(hint) is None:
            return plan
        a, b = evaluate(instance, plan), evaluate(instance, hint)
        return plan if (a.bj_sum <= b.bj_sum if objective == "bj" else a.rt_sum <= b.rt_sum) else hint

    def closed_by_relaxation(self, objective: str, f, res, relax, floor, t_start: float) -> _Stage:
        """The stage's result with a relaxation's proven bound ``floor``: the larger of the two
        bounds, and "optimal" when the incumbent meets it (nothing better exists)."""
        bound = res.bound
        if floor is not None and res.status != "infeasible":
            bound = floor if bound is None else max(bound, floor)
        status = res.status
        if status == "feasible" and res.objective is not None and bound is not None \
                and res.objective <= bound + 1e-6 * max(1.0, abs(bound)):
            status = "optimal"
        plan = f.placements(res.values) if res.values is not None else None
        stats = _stats(res)
        if relax.nodes is not None and stats["nodes"] is not None:
            stats["nodes"] += relax.nodes
        return _Stage(status, plan, bound, time.perf_counter() - t_start, self.kept[objective].size(),
                      solver_gap=_solver_gap(res.objective, bound), **stats)


def _stats(res) -> dict[str, Any]:
    return {"solver": res.solver, "nodes": res.nodes, "root_bound": res.root_bound, "warning": res.warning}


def _meets(instance: Instance, plan, bound: Fraction | None) -> bool:
    """Whether ``plan`` meets the RTJ bound Σ_RT SD <= θ·n_rt (exactly)."""
    if bound is None or not instance.rt_jobs:
        return True
    return evaluate(instance, plan).rt_mean <= bound


# ---------------------------------------------------------------------------------------------


def solve(instance: Instance, method: str = "cpsat", theta: float | Fraction = 1.2, time_limit: float | None = None,
          preempt: bool = True, sequences: int | None = None, lexicographic: bool = True,
          binary_search: bool = False, *, workers: int = 2, seed: int = 0, threads: int | None = None,
          splits: Any = "all", strengthen: Strengthen | str | None = None, milp_backend: str | None = None,
          write_model: str | None = None, rtj_tiebreak: bool = False) -> SolveResult:
    """Solve ``instance`` exactly with ``method`` (one of :data:`METHODS`).

    Args:
        theta: the RTJ mean-slowdown bound θ (eq. 37).
        time_limit: seconds for the whole solve (all stages); None = no limit.  When it runs out
            the best plan found is returned with status "feasible" and its gap.
        preempt: allow one preemption per BJ (False: the no-preemption optimum).
        sequences: T, the sequence cap of the MILP methods (None: large enough to restrict nothing).
        lexicographic / binary_search: how θ is loosened when it cannot be met (module docstring).
        workers: CP-SAT workers (2).  threads: CBC / OR-Tools threads (solver default).
        splits: brute force's split candidates ("all", "bounds", a list or a callable).
        strengthen: the MILP strengthenings (:class:`milp.strengthen.Strengthen` or its text form,
            e.g. "none", "-energy"); None: all of them.
        milp_backend: the back end of "milp" and "milp-disjunctive" (default: the best installed).
        write_model: write the MILP of the BJ stage (with θ_used) to this .mps / .lp file.
        rtj_tiebreak: a third lexicographic stage (module docstring): among the schedules with the
            proven least BJ mean (and RTJ mean <= θ_used), the least RTJ mean — a canonical optimum
            whose RTJ mean does not depend on the solver's tie-break.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    t0 = time.perf_counter()
    theta_f = _frac(theta)
    if method == "bruteforce":
        return _solve_bruteforce(instance, theta_f, preempt, lexicographic, binary_search, splits, t0, float(theta),
                                 rtj_tiebreak)
    if write_model is not None and not method.startswith("milp"):
        raise ValueError(f"write_model needs a MILP method, not {method!r}")
    run = _Run(instance, method, float(theta), time_limit, preempt, t0)
    try:
        stage, kept = _stage_runner(run, sequences, workers, seed, threads, strengthen, milp_backend)
    except BuildTimeout as exc:  # the instance's model itself took the whole limit to build
        return run.result("no_solution", None, _Theta(None), None, None, {}, 0.0, notes=[str(exc)])
    n_rt = len(instance.rt_jobs)
    if n_rt and binary_search:
        theta_stage = _theta_by_binary_search(run, stage, theta_f)
    elif n_rt and lexicographic:
        theta_stage = _theta_star_first(run, stage, theta_f)
    else:
        theta_stage = _Theta(used=theta_f if n_rt else None)
    if isinstance(theta_stage, SolveResult):  # the θ* stage proved that no schedule exists
        return theta_stage
    if theta_stage.infeasible is not None:
        return run.result("infeasible", None, theta_stage, None, None, {}, 0.0, notes=[theta_stage.infeasible])
    return _bj_stage(run, stage, kept, theta_stage, write_model, rtj_tiebreak)


@dataclass
class _Run:
    """What the stages of one :func:`solve` share: the instance and options, the clock of the time
    limit (seconds for all stages together), the stage rows and the notes reported."""

    instance: Instance
    method: str
    theta: float  # θ as requested
    time_limit: float | None
    preempt: bool
    t0: float  # time.perf_counter() at the start of the solve
    T: int | None = None  # the MILP's sequence cap (None: CP-SAT, or the disjunctive MILP)
    restricted: bool = False
    stages: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def remaining(self, frac: float = 1.0) -> float | None:
        """``frac`` of the seconds left (at least 0.5), None without a limit."""
        if self.time_limit is None:
            return None
        return max(0.5, (self.time_limit - (time.perf_counter() - self.t0)) * frac)

    def greedy(self, frac: float) -> list[Placement] | None:
        """The plain greedy plan, or None when it is abandoned at its share of the time left."""
        from milp.cpsat import GreedyTimeout, greedy_plan

        try:
            return greedy_plan(self.instance, deadline=_greedy_deadline(self.remaining(frac)))
        except GreedyTimeout:
            return None

    def record(self, name: str, st: _Stage, extra: dict | None = None) -> None:
        """One row of the reported ``stages`` (and the stage's warning as a note)."""
        row = {"stage": name, "status": st.status, "seconds": round(st.seconds, 4), **(extra or {})}
        if st.solver_gap is not None:
            row["solver_gap"] = st.solver_gap
        for key in ("solver", "nodes", "root_bound", "warning"):
            if getattr(st, key) is not None:
                row[key] = getattr(st, key)
        if st.warning is not None:
            self.notes.append(f"{name} stage: {st.warning}")
        self.stages.append(row)

    def result(self, status: str, theta_used: Fraction | None, theta: _Theta, plan, bound_sum,
               size: dict[str, int], eps: float, notes: list[str] | None = None) -> SolveResult:
        """The :class:`SolveResult` now (``notes``: added to the run's for this result only)."""
        return _result(self.instance, self.method, status, self.theta, theta_used, theta.star, plan, bound_sum,
                       None, time.perf_counter() - self.t0, size, self.T, self.restricted, self.preempt, eps,
                       theta.star_status, self.stages, self.notes + notes if notes else self.notes)


@dataclass
class _Theta:
    """What the θ stage decided: θ_used (None: no RTJ, or no θ can be met), θ* and its status, the
    plan to start the BJ stage from, and why no θ can be met (binary search)."""

    used: Fraction | None
    star: Fraction | None = None
    star_status: str | None = None
    hint: Any = None
    infeasible: str | None = None


def _stage_runner(run: _Run, sequences: int | None, workers: int, seed: int, threads: int | None,
                  strengthen: Strengthen | str | None,
                  milp_backend: str | None) -> tuple[Callable[..., _Stage], dict[str, Any]]:
    """The method's stage runner and the dict the MILP runner keeps each stage's model in; sets the
    run's sequence cap T and ``restricted``, and notes the options the method ignores."""
    instance, kept = run.instance, {}
    if run.method == "cpsat":
        if sequences is not None:
            run.notes.append("sequences ignored: CP-SAT has no sequence cap")
        # Models that cannot be built (and loaded by CP-SAT) within the limit or the memory are
        # refused before any is built (milp.model_size); the stages then keep to the time left.
        check_buildable(instance, "cpsat", run.preempt, None, run.time_limit)
        return _cpsat_runner(instance, run.preempt, workers, seed), kept
    from milp.linmodel import BACKENDS, best_backend

    options = Strengthen() if strengthen is None else (
        Strengthen.parse(strengthen) if isinstance(strengthen, str) else strengthen)
    formulation = "disjunctive" if run.method == "milp-disjunctive" else "sequence"
    backend = run.method.removeprefix("milp-") if run.method.removeprefix("milp-") in BACKENDS else (
        milp_backend or best_backend())
    if milp_backend is not None and milp_backend not in BACKENDS:
        raise ValueError(f"unknown MILP back end {milp_backend!r}; choose one of {BACKENDS}")
    # A model that cannot be built within the time limit or the memory is refused before any
    # of it is built (milp.model_size: estimated from the instance's dimensions).
    check_buildable(instance, formulation, run.preempt, sequences, run.time_limit)
    with build_deadline(None if run.time_limit is None else run.t0 + run.time_limit):
        stage, sm = _milp_runner(instance, run.preempt, sequences, backend, threads, formulation, options, kept)
    if formulation == "disjunctive" and sequences is not None:
        run.notes.append("sequences ignored: the disjunctive MILP has no sequence cap")
    run.T = getattr(sm, "T", None)
    run.restricted = sm.restricted
    if run.restricted:
        run.notes.append(f"optimum restricted to T={run.T} sequences per block")
    return stage, kept


def _theta_by_binary_search(run: _Run, stage: Callable[..., _Stage], theta_f: Fraction) -> _Theta:
    """The paper's loop: θ if feasible, else the least θ in 1.10, 1.11, ..., 2.00 that is (by
    bisection on feasibility solves, each with a quarter of the time left)."""
    cache: dict[Fraction, tuple[bool | None, Any]] = {}

    def feasible(th: Fraction) -> bool | None:
        if th not in cache:
            st = stage("none", th, run.remaining(0.25), None)
            run.record(f"feasibility θ={float(th):g}", st)
            ok = None if st.status == "no_solution" else st.status != "infeasible"
            cache[th] = (ok, st.plan)
        return cache[th][0]

    theta_used: Fraction | None = theta_f
    if not feasible(theta_f):
        lo, hi = max(110, int(theta_f * 100)), 200
        if not feasible(Fraction(hi, 100)):
            return _Theta(None, infeasible="no schedule meets θ = 2.0 (binary search range 1.1–2.0)")
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if feasible(Fraction(mid, 100)):
                hi = mid
            else:
                lo = mid
        theta_used = Fraction(hi, 100)
    return _Theta(theta_used, hint=cache.get(theta_used, (None, None))[1])


def _theta_star_first(run: _Run, stage: Callable[..., _Stage], theta_f: Fraction) -> _Theta | SolveResult:
    """The lexicographic θ stage: θ* = the least mean RTJ slowdown (with half of the time left),
    θ_used = max(θ, θ*); the greedy plan bounds θ* when the stage finds no plan in time.  A
    :class:`SolveResult` ("infeasible") when the stage proves that no schedule exists."""
    instance = run.instance
    st1 = stage("rt", None, run.remaining(0.5), run.greedy(0.5) if run.method != "cpsat" else None)
    if st1.status == "infeasible":
        run.record("theta_star", st1)
        why = (f"no schedule fits in T={run.T} sequences per block" if run.restricted
               else "no schedule exists")
        return run.result("infeasible", None, _Theta(None, star_status="infeasible"), None, None, st1.size, 0.0,
                          notes=[why])
    if st1.plan is None:
        st1_plan = run.greedy(1.0)
        if st1_plan is None:
            run.notes.append("θ* stage found no plan in time, nor did the greedy plan; θ used as given")
            star_status = "none"
        else:
            run.notes.append("θ* stage found no plan in time; θ* bounded by the greedy plan")
            star_status = "greedy"
    else:
        st1_plan = st1.plan
        star_status = st1.status
    if st1_plan is None:
        run.record("theta_star", st1)
        return _Theta(theta_f, None, star_status, None)
    theta_star = evaluate(instance, st1_plan).rt_mean
    n_rt = len(instance.rt_jobs)
    # Σ RTJ slowdown lower bound of the θ* stage / n_rt: θ* itself when that stage is proven.
    ts_bound = float(theta_star) if st1.status == "optimal" else (
        None if st1.bound_sum is None else min(float(theta_star), max(1.0, st1.bound_sum / n_rt)))
    run.record("theta_star", st1, {"theta_star": float(theta_star), "theta_star_bound": ts_bound})
    return _Theta(max(theta_f, theta_star), theta_star, star_status, st1_plan)


def _bj_stage(run: _Run, stage: Callable[..., _Stage], kept: dict[str, Any], theta: _Theta,
              write_model: str | None, rtj_tiebreak: bool) -> SolveResult:
    """The BJ stage under θ_used (warm-started from the best greedy completion of the θ stage's
    plan), then the RTJ tie-break stage when asked for, and the result."""
    from milp.cpsat import best_greedy_plan

    instance, theta_used = run.instance, theta.used
    hint = best_greedy_plan(instance, theta.hint, theta_used, _greedy_deadline(run.remaining()))
    st2 = stage("bj", theta_used, run.remaining(), hint)
    run.record("bj", st2)
    if write_model is not None and "bj" in kept:
        from milp.linmodel import write_model as write_lp

        write_lp(kept["bj"], "bj", write_model)
    status = st2.status
    if status in ("infeasible", "no_solution") or st2.plan is None:
        if status == "infeasible" and instance.rt_jobs:
            run.notes.append(f"no schedule meets mean RTJ slowdown <= {float(theta_used):g}")
        return run.result(status, theta_used, theta, None, None, st2.size, st2.eps)
    if status == "optimal" and theta.star_status not in (None, "optimal"):
        status = "feasible"
        run.notes.append("θ* not proven minimal (its stage stopped on the time limit)")
    plan = st2.plan
    if rtj_tiebreak:
        proven_star = theta.star if theta.star_status == "optimal" else None
        plan, proven = _rtj_tiebreak(instance, stage, st2, theta_used, proven_star, run.remaining(), run.record,
                                     run.notes)
        if status == "optimal" and not proven:
            status = "feasible"
    return run.result(status, theta_used, theta, plan, st2.bound_sum, st2.size, st2.eps)


def _rtj_tiebreak(instance: Instance, stage: Callable[..., _Stage], st2: _Stage, theta_used: Fraction | None,
                  theta_star: Fraction | None, limit: float | None, record: Callable[..., None],
                  notes: list[str]) -> tuple[list[Placement], bool]:
    """Stage 3: among the schedules whose Σ BJ SD is at most the proven BJ stage's (and mean RTJ SD
    <= θ_used), the least Σ RTJ SD.  Returns (the final plan, whether the stage was proven); the BJ
    stage's plan when the stage is skipped, stops on the time limit, or its plan fails the exact
    check (Fractions: BJ sum no larger, RTJ mean within θ_used, RTJ sum no larger).  When the BJ
    stage's plan already has the RTJ mean θ* (``theta_star``: proven, else None) nothing is lower:
    the stage is proven without a solve (``"shortcut": "theta_star"``)."""
    if not instance.rt_jobs:
        notes.append("RTJ tie-break: no RTJ, nothing to break")
        return st2.plan, True
    if st2.status != "optimal":
        notes.append("RTJ tie-break skipped: the BJ optimum is not proven")
        return st2.plan, False
    ev2 = evaluate(instance, st2.plan)
    extra: dict[str, Any] = {"rtj_sd_mean_before": float(ev2.rt_mean)}
    if theta_star is not None and ev2.rt_mean <= theta_star:
        record("rtj_tiebreak", _Stage("optimal", st2.plan, float(ev2.rt_sum), 0.0, {}),
               {**extra, "rtj_sd_mean": float(ev2.rt_mean), "rtj_sd_mean_bound": float(ev2.rt_mean),
                "shortcut": "theta_star"})
        return st2.plan, True
    st3 = stage("rt", theta_used, limit, st2.plan, bj_sum_bound=ev2.bj_sum)
    n_rt = len(instance.rt_jobs)
    ok = st3.status == "optimal" and st3.plan is not None
    if st3.plan is not None:
        ev3 = evaluate(instance, st3.plan)
        extra["rtj_sd_mean"] = float(ev3.rt_mean)
        exact = ev3.bj_sum <= ev2.bj_sum and ev3.rt_sum <= ev2.rt_sum and (
            theta_used is None or ev3.rt_mean <= theta_used)
        if not exact:
            notes.append(f"RTJ tie-break: its plan failed the exact check (BJ sum {float(ev3.bj_sum):.12g} vs "
                         f"{float(ev2.bj_sum):.12g}, RTJ mean {float(ev3.rt_mean):.12g}); kept the BJ stage's plan")
            ok = False
    if st3.bound_sum is not None:
        extra["rtj_sd_mean_bound"] = min(float(ev2.rt_mean), st3.bound_sum / n_rt)
    record("rtj_tiebreak", st3, extra)
    if ok:
        return st3.plan, True
    if st3.status != "optimal":
        notes.append(f"RTJ tie-break not proven ({st3.status}); kept the BJ stage's plan")
    return st2.plan, False


def _result(instance, method, status, theta, theta_used, theta_star, plan, bound_sum, _unused, seconds, size, T,
            restricted, preempt, eps, theta_star_status, stages, notes) -> SolveResult:
    ev = evaluate(instance, plan) if plan is not None else None
    n_bj = len(instance.batch_jobs)
    # Reported slowdowns: replayed by the core simulator, computed by rtsched.metrics.
    rep = replay_plan(instance, plan) if plan is not None else None
    bj_mean = rep.bj_sd_mean if rep is not None else None
    rt_mean = rep.rtj_sd_mean if rep is not None else None
    best_bound = gap = None
    if ev is not None:
        if n_bj == 0:
            best_bound, gap = None, 0.0
        elif status == "optimal":
            best_bound = bj_mean if bound_sum is None else min(bound_sum / n_bj, bj_mean)
            gap = 0.0 if best_bound is None else max(0.0, (bj_mean - best_bound) / bj_mean)
            if gap < 1e-6:
                gap = 0.0
        elif bound_sum is not None:
            # every BJ slowdown is >= 1
            best_bound = max(1.0, bound_sum / n_bj)
            gap = max(0.0, (bj_mean - best_bound) / bj_mean)
    return SolveResult(
        status=status, method=method, theta=theta,
        theta_used=float(theta_used) if theta_used is not None else None,
        theta_star=float(theta_star) if theta_star is not None else None,
        rtj_sd_mean=rt_mean, bj_sd_mean=bj_mean,
        sd=dict(rep.sd) if rep is not None else {},
        best_bound=best_bound, gap=gap, seconds=seconds, model_size=dict(size), placements=plan,
        instance=instance, sequences=T, restricted=restricted, preempt=preempt, objective_tolerance=eps,
        theta_star_status=theta_star_status, stages=stages, notes=notes,
        theta_used_exact=theta_used, theta_star_exact=theta_star, evaluation=ev, replay=rep)


def _solve_bruteforce(instance: Instance, theta: Fraction, preempt: bool, lexicographic: bool, binary_search: bool,
                      splits: Any, t0: float, theta_in: float, rtj_tiebreak: bool = False) -> SolveResult:
    """Brute force's optimum.  Its choice among the BJ-optimal plans is always the least RTJ sum
    (:func:`milp.bruteforce.bruteforce`), so ``rtj_tiebreak`` only records that stage."""
    from milp.bruteforce import bruteforce

    notes: list[str] = []
    if preempt and splits != "all":
        notes.append(f"preemption splits restricted to {splits!r}")
    if binary_search and instance.rt_jobs:
        base = bruteforce(instance.blocks, instance.jobs, theta=theta, preempt=preempt, splits=splits,
                          lexicographic=True)
        ts = base.theta_star
        if ts <= theta:
            th = theta
        elif ts <= 2:
            th = Fraction(max(110, -(-ts * 100 // 1)), 100)
        else:
            return _result(instance, "bruteforce", "infeasible", theta_in, None, ts, None, None, None,
                           time.perf_counter() - t0, {"leaves": base.leaves}, None, False, preempt, 0.0, "optimal",
                           [], notes + ["no schedule meets θ = 2.0 (binary search range 1.1–2.0)"])
        res = bruteforce(instance.blocks, instance.jobs, theta=th, preempt=preempt, splits=splits,
                         lexicographic=False)
    else:
        res = bruteforce(instance.blocks, instance.jobs, theta=theta, preempt=preempt, splits=splits,
                         lexicographic=lexicographic)
    size = {"leaves": res.leaves}
    if res.status == "infeasible":
        return _result(instance, "bruteforce", "infeasible", theta_in, res.theta_used, res.theta_star, None, None,
                       None, time.perf_counter() - t0, size, None, False, preempt, 0.0, "optimal", [], notes)
    n_bj = len(instance.batch_jobs)
    plan = res.placements
    bound = float(res.bj_sum) if n_bj else None
    stages = []
    if rtj_tiebreak and instance.rt_jobs:
        mean = float(res.rt_sum / len(instance.rt_jobs))
        stages.append({"stage": "rtj_tiebreak", "status": "optimal", "seconds": 0.0, "rtj_sd_mean": mean,
                       "rtj_sd_mean_bound": mean})
    return _result(instance, "bruteforce", "optimal", theta_in, res.theta_used, res.theta_star, plan, bound, None,
                   time.perf_counter() - t0, size, None, False, preempt, 0.0,
                   "optimal" if res.theta_star is not None else None, stages, notes)


__all__ = ["solve", "SolveResult", "METHODS", "left_justify"]
