"""A small solver-neutral MILP representation and its back ends (HiGHS, PuLP/CBC and OR-Tools).

The model is built once (variables with bounds and types, linear constraints, named objectives)
and translated for a solver on demand.  Only what the sequence MILP needs is supported.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Mapping

from milp.stoppable import check_build_deadline, run_stoppable

# Rows between two looks at the build's deadline (milp.stoppable.build_deadline): a look costs a
# clock read; 1,024 rows of a large model take milliseconds.
BUILD_CHECK_ROWS = 1024

INF = math.inf


@dataclass(slots=True)
class Var:
    index: int
    name: str
    lb: float
    ub: float
    kind: str  # "C" continuous, "B" binary, "I" integer


@dataclass(slots=True)
class Constraint:
    name: str
    coefs: dict[int, float]
    lb: float
    ub: float


class Expr:
    """A linear expression: {var index: coefficient} + constant."""

    __slots__ = ("coefs", "const")

    def __init__(self, coefs: Mapping[int, float] | None = None, const: float = 0.0) -> None:
        self.coefs: dict[int, float] = dict(coefs or {})
        self.const = float(const)

    @staticmethod
    def of(x: "Expr | Var | float | int") -> "Expr":
        if isinstance(x, Expr):
            return x
        if isinstance(x, Var):
            return Expr({x.index: 1.0})
        return Expr(None, float(x))

    def __add__(self, other):
        o = Expr.of(other)
        c = dict(self.coefs)
        for k, v in o.coefs.items():
            c[k] = c.get(k, 0.0) + v
        return Expr(c, self.const + o.const)

    __radd__ = __add__

    def __neg__(self):
        return Expr({k: -v for k, v in self.coefs.items()}, -self.const)

    def __sub__(self, other):
        return self + (-Expr.of(other))

    def __rsub__(self, other):
        return Expr.of(other) + (-self)

    def __mul__(self, a: float):
        if isinstance(a, (Expr, Var)):
            raise TypeError("products of variables must be linearised explicitly")
        return Expr({k: v * a for k, v in self.coefs.items()}, self.const * a)

    __rmul__ = __mul__


def lin(x) -> Expr:
    return Expr.of(x)


def vsum(items) -> Expr:
    out = Expr()
    for it in items:
        it = Expr.of(it)
        for k, v in it.coefs.items():
            out.coefs[k] = out.coefs.get(k, 0.0) + v
        out.const += it.const
    return out


@dataclass
class LinearModel:
    name: str = "model"
    vars: list[Var] = field(default_factory=list)
    cons: list[Constraint] = field(default_factory=list)
    objectives: dict[str, Expr] = field(default_factory=dict)

    # -- building -------------------------------------------------------------------------------
    def var(self, name: str, lb: float = 0.0, ub: float = INF, kind: str = "C") -> Var:
        if kind == "B":
            lb, ub = max(lb, 0.0), min(ub, 1.0)
        v = Var(len(self.vars), name, float(lb), float(ub), kind)
        self.vars.append(v)
        return v

    def add(self, lhs, sense: str, rhs=0.0, name: str = "") -> Constraint:
        """Add ``lhs sense rhs`` with sense in {"<=", ">=", "=="}."""
        e = Expr.of(lhs) - Expr.of(rhs)
        coefs = {k: v for k, v in e.coefs.items() if v != 0.0}
        b = -e.const
        lb, ub = {"<=": (-INF, b), ">=": (b, INF), "==": (b, b)}[sense]
        c = Constraint(name or f"c{len(self.cons)}", coefs, lb, ub)
        self.cons.append(c)
        if not len(self.cons) & BUILD_CHECK_ROWS - 1:
            check_build_deadline(f"model {self.name} ({len(self.cons):,} rows built)")
        return c

    def size(self) -> dict[str, int]:
        return {
            "variables": len(self.vars),
            "binaries": sum(1 for v in self.vars if v.kind == "B"),
            "integers": sum(1 for v in self.vars if v.kind == "I"),
            "continuous": sum(1 for v in self.vars if v.kind == "C"),
            "constraints": len(self.cons),
            "nonzeros": sum(len(c.coefs) for c in self.cons),
        }


@dataclass
class LPResult:
    status: str  # optimal / feasible / infeasible / no_solution
    values: list[float] | None
    objective: float | None
    bound: float | None
    seconds: float
    solver: str
    nodes: int | None = None  # branch-and-bound nodes, where the solver reports them
    root_bound: float | None = None  # the LP relaxation's optimum (the root bound before cuts)
    # Why the back end's own answer was not taken (it failed, or contradicted a feasible MIP start);
    # None when it was.
    warning: str | None = None


# ---------------------------------------------------------------------------------------------
# Back ends
# ---------------------------------------------------------------------------------------------


# CBC options for every solve.  CBC's integer preprocessing (CglPreProcess; CBC 2.10.3 as PuLP
# bundles it) is unsound on these models: on the disjunctive MILP of table3_instance(36)'s BJ stage
# it declares the model "proven infeasible", and without the objective cut returns 13.008 as
# "optimal" where HiGHS proves 12.737 (a MIP start of value 12.737 satisfies every row); with a MIP
# start and a time limit that ends inside it the process dies with SIGSEGV (exit 139; table2_instance
# (3, 2, 16, 0) at 0.3-0.7 s).  With it off CBC proves 12.737 (docs/milp.md, "CBC's preprocessing").
CBC_OPTIONS = ("preprocess off",)


def solve_pulp_cbc(model: LinearModel, objective: str, time_limit: float | None = None, threads: int | None = None,
                   gap_rel: float = 1e-9, msg: bool = False, start: dict[int, float] | None = None,
                   max_nodes: int | None = None) -> LPResult:
    """Solve with CBC through PuLP (:data:`CBC_OPTIONS`).  The best bound is read from CBC's log.
    CBC ending with an error (a crash, no solution file) is the status "no_solution" with a
    ``warning``, not an exception.  ``max_nodes``: stop after that many branch-and-bound nodes
    (with one thread, a stop that does not depend on the machine's speed)."""
    import pulp

    t0 = time.perf_counter()
    prob, pv = _pulp_problem(model, objective, start)
    with tempfile.TemporaryDirectory(prefix="rtsched-cbc-") as tmp:  # PuLP's files and CBC's log, all removed
        log = os.path.join(tmp, "cbc.log")
        solver = pulp.COIN_CMD(path=cbc_binary(), msg=msg, timeLimit=time_limit, threads=threads, gapRel=gap_rel,
                               logPath=None if msg else log, warmStart=bool(start), options=list(CBC_OPTIONS),
                               maxNodes=max_nodes)
        solver.tmpDir = tmp
        try:
            prob.solve(solver)
        except pulp.PulpSolverError as exc:
            return LPResult("no_solution", None, None, None, time.perf_counter() - t0, "cbc",
                            warning=f"CBC ended with an error ({str(exc).split(',')[0]})")
        text = ""
        if os.path.exists(log):
            with open(log, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
    return _cbc_result(prob, pv, model.objectives[objective], text, time.perf_counter() - t0)


def _pulp_problem(model: LinearModel, objective: str, start: dict[int, float] | None):
    """``model`` with ``objective`` as a PuLP problem, and its variables in ``model.vars`` order."""
    import pulp

    prob = pulp.LpProblem(re.sub(r"\W", "_", model.name), pulp.LpMinimize)
    cat = {"C": pulp.LpContinuous, "B": pulp.LpBinary, "I": pulp.LpInteger}
    pv = [prob.add_variable(f"x{v.index}", None if v.lb == -INF else v.lb, None if v.ub == INF else v.ub, cat[v.kind])
          for v in model.vars]
    obj = model.objectives[objective]
    prob += pulp.LpAffineExpression([(pv[k], c) for k, c in obj.coefs.items()], constant=obj.const)
    for c in model.cons:
        expr = pulp.LpAffineExpression([(pv[k], v) for k, v in c.coefs.items()])
        if c.lb == c.ub:
            prob += pulp.LpConstraint(expr, pulp.LpConstraintEQ, rhs=c.lb)
        else:
            if c.lb != -INF:
                prob += pulp.LpConstraint(expr, pulp.LpConstraintGE, rhs=c.lb)
            if c.ub != INF:
                prob += pulp.LpConstraint(expr, pulp.LpConstraintLE, rhs=c.ub)
    if start:
        for k, val in start.items():
            pv[k].setInitialValue(val)
    return prob, pv


def _cbc_result(prob, pv, obj: Expr, text: str, seconds: float) -> LPResult:
    """The status, values and bounds PuLP read back from CBC, with CBC's log ``text``."""
    import pulp

    sol = prob.sol_status
    infeasible = prob.status == pulp.LpStatusInfeasible or sol == pulp.LpSolutionInfeasible or \
        "Problem is infeasible" in text or "Result - Problem proven infeasible" in text
    has_sol = sol in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible) and all(
        v.varValue is not None for v in pv)
    bound = _cbc_bound(text)
    if infeasible and not has_sol:
        return LPResult("infeasible", None, None, None, seconds, "cbc")
    if not has_sol:
        return LPResult("no_solution", None, None, bound, seconds, "cbc")
    values = [float(v.varValue) for v in pv]
    objv = obj.const + sum(c * values[k] for k, c in obj.coefs.items())
    nodes, root = _cbc_stats(text)
    if root is not None:
        logged = _cbc_objective(text)
        root += obj.const if logged is None else objv - logged  # the log leaves out the constant
    optimal = sol == pulp.LpSolutionOptimal and "Stopped on" not in text
    if optimal:
        bound = objv  # proven optimal (gapRel ~ 0): the log's "Lower bound" may be a root bound
    elif bound is not None:
        # CBC's log leaves out the objective's constant term: shift its bound by the difference
        # between our objective value and the one it printed.
        logged = _cbc_objective(text)
        if logged is not None:
            bound += objv - logged
        bound = min(bound, objv)
    return LPResult("optimal" if optimal else "feasible", values, objv, bound, seconds, "cbc", nodes, root)


def cbc_binary() -> str:
    """Path of the CBC executable: the one bundled with PuLP < 4, else cbcbox's (``pip install
    'rtsched[cbc]'``, which PuLP 4 needs), else ``cbc`` on PATH.

    Called through ``COIN_CMD(path=...)``: PuLP 4 removes ``PULP_CBC_CMD`` with its bundled binary.
    """
    try:
        from pulp.apis.coin_api import pulp_cbc_path  # PuLP < 4 only
    except ImportError:
        pulp_cbc_path = None
    if pulp_cbc_path and os.path.isfile(pulp_cbc_path):
        if not os.access(pulp_cbc_path, os.X_OK):
            os.chmod(pulp_cbc_path, os.stat(pulp_cbc_path).st_mode | 0o111)  # wheels may drop the x bit
        return pulp_cbc_path
    try:
        import cbcbox

        path = cbcbox.cbc_bin_path()
        if os.path.isfile(path):
            return path
    except ImportError:
        pass
    path = shutil.which("cbc")
    if path:
        return path
    raise RuntimeError("no CBC executable found: PuLP >= 4 no longer bundles one; "
                       "install it with `pip install 'rtsched[cbc]'` (cbcbox) or put `cbc` on PATH")


def _cbc_objective(text: str) -> float | None:
    m = re.findall(r"Objective value:\s*([-\d.eE+]+)", text)
    try:
        return float(m[-1]) if m else None
    except ValueError:
        return None


def _cbc_stats(text: str) -> tuple[int | None, float | None]:
    """(branch-and-bound nodes, the root LP relaxation's objective) from CBC's log."""
    nodes = re.findall(r"Enumerated nodes:\s*(\d+)", text)
    root = re.findall(r"Continuous objective value is\s*([-\d.eE+]+)", text)
    try:
        return (int(nodes[-1]) if nodes else None), (float(root[0]) if root else None)
    except ValueError:
        return None, None


def _cbc_bound(text: str) -> float | None:
    for pat in (r"Lower bound:\s*([-\d.eE+]+)", r"best possible\s*([-\d.eE+]+)"):
        m = re.findall(pat, text)
        if m:
            try:
                return float(m[-1])
            except ValueError:
                pass
    return None


def ortools_backend() -> str:
    """The OR-Tools MIP back end available: "SCIP" if present, else "CBC"."""
    from ortools.linear_solver import pywraplp

    for name in ("SCIP", "CBC"):
        if pywraplp.Solver.CreateSolver(name) is not None:
            return name
    raise RuntimeError("OR-Tools has neither SCIP nor CBC")


def _solve_interruptible(solver, params, deadline: float | None = None):
    """``solver.Solve(params)`` in a worker thread while this thread waits, so that Ctrl-C and
    SIGTERM (``KeyboardInterrupt``) stop the solve (``InterruptSolve``) and propagate at once, as
    does ``deadline`` (``time.perf_counter()``; milp.stoppable)."""
    return run_stoppable(lambda: solver.Solve(params), solver.InterruptSolve, deadline)


def solve_ortools(model: LinearModel, objective: str, time_limit: float | None = None, backend: str | None = None,
                  threads: int | None = None, gap_rel: float = 1e-9,
                  hint: dict[int, float] | None = None) -> LPResult:
    from ortools.linear_solver import pywraplp

    t0 = time.perf_counter()
    backend = backend or ortools_backend()
    solver = pywraplp.Solver.CreateSolver(backend)
    inf = solver.infinity()
    xs = []
    for v in model.vars:
        lb = -inf if v.lb == -INF else v.lb
        ub = inf if v.ub == INF else v.ub
        if v.kind == "C":
            xs.append(solver.NumVar(lb, ub, f"x{v.index}"))
        else:
            xs.append(solver.IntVar(lb, ub, f"x{v.index}"))
    for c in model.cons:
        ct = solver.Constraint(-inf if c.lb == -INF else c.lb, inf if c.ub == INF else c.ub)
        for k, a in c.coefs.items():
            ct.SetCoefficient(xs[k], a)
    obj = solver.Objective()
    e = model.objectives[objective]
    for k, a in e.coefs.items():
        obj.SetCoefficient(xs[k], a)
    obj.SetOffset(e.const)
    obj.SetMinimization()
    if time_limit is not None:  # the seconds left after loading the model
        time_limit = max(1.0, time_limit - (time.perf_counter() - t0))
        solver.SetTimeLimit(int(time_limit * 1000))
    if threads:
        solver.SetNumThreads(threads)
    if hint:
        solver.SetHint([xs[k] for k in hint], list(hint.values()))
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(pywraplp.MPSolverParameters.RELATIVE_MIP_GAP, gap_rel)
    status = _solve_interruptible(solver, params, None if time_limit is None else time.perf_counter() + time_limit)
    seconds = time.perf_counter() - t0
    name = f"ortools-{backend.lower()}"
    if status == pywraplp.Solver.INFEASIBLE:
        return LPResult("infeasible", None, None, None, seconds, name)
    if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        return LPResult("no_solution", None, None, None, seconds, name)
    values = [x.solution_value() for x in xs]
    objv = obj.Value()
    try:
        bound = obj.BestBound()
    except Exception:  # pragma: no cover - back ends without a bound
        bound = None
    st = "optimal" if status == pywraplp.Solver.OPTIMAL else "feasible"
    if st == "optimal":
        bound = objv if bound is None or not math.isfinite(bound) else min(bound, objv)
    return LPResult(st, values, objv, bound, seconds, name, int(solver.nodes()))


# ---------------------------------------------------------------------------------------------
# HiGHS (highspy), and writing a model as MPS / LP
# ---------------------------------------------------------------------------------------------


def highs_available() -> bool:
    try:
        import highspy  # noqa: F401
    except ImportError:
        return False
    return True


_HIGHS_BANNER_DONE = False


def _new_highs():
    """A quiet ``highspy.Highs``.  HiGHS prints its banner on the process's first instance straight
    to file descriptor 1, which would corrupt ``--json`` output: that first construction runs with
    descriptor 1 pointed at /dev/null."""
    import sys

    import highspy

    global _HIGHS_BANNER_DONE
    if _HIGHS_BANNER_DONE:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
        _HIGHS_BANNER_DONE = True
    h.setOptionValue("output_flag", False)
    return h


def _safe_name(name: str) -> str:
    """A name every LP/MPS reader accepts: brackets and commas become underscores."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)


def run_interruptible(h, deadline: float | None = None):
    """``h.run()`` in HiGHS's solver thread while this thread waits, so that Ctrl-C and SIGTERM (a
    ``KeyboardInterrupt`` here: rtsched.cli) cancel the solve and propagate at once; a solve run
    in this thread would hold the signal until HiGHS returns (possibly hours).  ``deadline``
    (``time.perf_counter()``): cancelled then too (a backstop to HiGHS's own time limit).
    Returns the status."""
    h.HandleUserInterrupt = True  # HiGHS's interrupt callbacks poll the flag cancelSolve sets
    thread = None
    try:
        # Inside the ``try``: an interrupt can land in startSolve after its thread has started.  The flag
        # cancelSolve sets is reset by startSolve before that thread starts, so a cancel after it holds.
        thread = h.startSolve()
        while True:
            done, status = h.wait(0.1)  # seconds
            if done:
                return status
            if deadline is not None and time.perf_counter() > deadline:
                h.cancelSolve()
    except KeyboardInterrupt:
        h.cancelSolve()
        # Wait for the solver to stop (HiGHS returns soon after the flag is set): a process exiting
        # while HiGHS still runs in it can crash in the allocator.  Without the thread object (the
        # interrupt landed in startSolve) the solver's own lock says when it has returned.
        if thread is not None:
            thread.join()
        else:
            while not h.wait(0.1)[0]:
                pass
        raise


def highs_model(model: LinearModel, objective: str, *, relax: bool = False):
    """A ``highspy.Highs`` holding ``model`` with ``objective`` (minimised), quiet.  ``relax``:
    every integer variable continuous (the LP relaxation)."""
    import highspy

    h = _new_highs()
    n = len(model.vars)
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(model.cons)
    e = model.objectives[objective]
    cost = [0.0] * n
    for k, a in e.coefs.items():
        cost[k] = a
    lp.col_cost_ = cost
    lp.offset_ = e.const
    inf = highspy.kHighsInf
    lp.col_lower_ = [-inf if v.lb == -INF else v.lb for v in model.vars]
    lp.col_upper_ = [inf if v.ub == INF else v.ub for v in model.vars]
    lp.row_lower_ = [-inf if c.lb == -INF else c.lb for c in model.cons]
    lp.row_upper_ = [inf if c.ub == INF else c.ub for c in model.cons]
    starts, index, value = [0], [], []
    for c in model.cons:  # row-wise matrix
        for k, a in c.coefs.items():
            index.append(k)
            value.append(a)
        starts.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = len(model.cons)
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = index
    lp.a_matrix_.value_ = value
    if not relax:
        lp.integrality_ = [highspy.HighsVarType.kContinuous if v.kind == "C" else highspy.HighsVarType.kInteger
                           for v in model.vars]
    lp.col_names_ = [_safe_name(v.name) for v in model.vars]
    lp.row_names_ = [_safe_name(c.name) for c in model.cons]
    lp.model_name_ = _safe_name(model.name)
    h.passModel(lp)
    return h


def lp_bound(model: LinearModel, objective: str, time_limit: float | None = None) -> float | None:
    """The optimum of ``model``'s LP relaxation (HiGHS simplex); None if it has none or is not
    found within ``time_limit`` seconds (the whole call's)."""
    import highspy

    t0 = time.perf_counter()
    h = highs_model(model, objective, relax=True)
    deadline = None
    if time_limit is not None:
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            return None
        h.setOptionValue("time_limit", float(left))
        deadline = t0 + time_limit
    run_interruptible(h, deadline)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return float(h.getInfo().objective_function_value)


# Share of a limited HiGHS solve's seconds its root LP bound may take.
ROOT_SHARE = 0.25


def solve_highs(model: LinearModel, objective: str, time_limit: float | None = None, threads: int | None = None,
                gap_rel: float = 1e-9, start: dict[int, float] | None = None, msg: bool = False,
                root: bool = True) -> LPResult:
    """Solve with HiGHS's branch-and-cut (highspy).  ``start``: a MIP start (full assignment);
    ``root``: also report the LP relaxation's bound (one more LP solve, counted in ``seconds``)."""
    import highspy

    t0 = time.perf_counter()
    # The root bound is worth a share of a limited solve, not all of it (a 150-job disjunctive
    # model's LP took 20 s of a 1.5-s stage); ``time_limit`` covers loading the model, each solve.
    root_bound = lp_bound(model, objective, None if time_limit is None else ROOT_SHARE * time_limit) if root else None
    h = highs_model(model, objective)
    if msg:
        h.setOptionValue("output_flag", True)
    h.setOptionValue("mip_rel_gap", gap_rel)
    h.setOptionValue("mip_abs_gap", 1e-9)
    h.setOptionValue("random_seed", 0)
    deadline = None
    if time_limit is not None:
        left = float(max(0.5, time_limit - (time.perf_counter() - t0)))
        h.setOptionValue("time_limit", left)
        deadline = time.perf_counter() + left
    if threads:
        h.setOptionValue("threads", int(threads))
    if start:
        sol = highspy.HighsSolution()
        vals = [0.0] * len(model.vars)
        for k, v in start.items():
            vals[k] = v
        sol.col_value = vals
        sol.value_valid = True
        h.setSolution(sol)
    run_interruptible(h, deadline)
    seconds = time.perf_counter() - t0
    ms = h.getModelStatus()
    info = h.getInfo()
    nodes = int(info.mip_node_count)
    S = highspy.HighsModelStatus
    if ms == S.kInfeasible:
        return LPResult("infeasible", None, None, None, seconds, "highs", nodes, root_bound)
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    if not has_sol:
        return LPResult("no_solution", None, None, _finite(info.mip_dual_bound), seconds, "highs", nodes, root_bound)
    values = list(h.getSolution().col_value)
    e = model.objectives[objective]
    objv = e.const + sum(c * values[k] for k, c in e.coefs.items())
    bound = _finite(info.mip_dual_bound)
    if ms == S.kOptimal:
        bound = objv if bound is None else min(bound, objv)
        return LPResult("optimal", values, objv, bound, seconds, "highs", nodes, root_bound)
    if bound is not None:
        bound = min(bound, objv)
    return LPResult("feasible", values, objv, bound, seconds, "highs", nodes, root_bound)


def _finite(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def write_model(model: LinearModel, objective: str, path: str | os.PathLike) -> None:
    """Write ``model`` with ``objective`` as MPS (``.mps``) or CPLEX LP (``.lp``), atomically
    (:func:`rtsched.files.atomic_write_bytes`), through HiGHS's writer."""
    import highspy

    from rtsched.files import WriteError, atomic_write_bytes

    suffix = os.path.splitext(str(path))[1].lower()
    if suffix not in (".mps", ".lp"):
        raise ValueError(f"model file {path}: the name must end in .mps or .lp")
    h = highs_model(model, objective)
    # HiGHS chooses the format by the name's ending, which atomic_write's temporary name hides:
    # it writes into a folder of its own first
    with tempfile.TemporaryDirectory(prefix="rtsched-model-") as tmp:
        out = os.path.join(tmp, "model" + suffix)
        status = h.writeModel(out)
        if status != highspy.HighsStatus.kOk or not os.path.isfile(out):  # HiGHS reports, never raises
            raise WriteError(path, f"HiGHS could not write the model in the temporary folder {tmp} "
                                   f"(status {status}; is that disk full?); nothing written")
        with open(out, "rb") as fh:
            data = fh.read()
    atomic_write_bytes(path, data)


# The MILP back ends, in the order ``--method milp`` tries them (docs/milp.md, "Back ends": HiGHS
# proved the most on the Table-3 set and Table 2, then OR-Tools' SCIP, then CBC).
BACKENDS = ("highs", "ortools", "cbc")


def best_backend() -> str:
    """The first installed back end of :data:`BACKENDS` (CBC ships with PuLP, so there is always one)."""
    if highs_available():
        return "highs"
    try:
        if ortools_backend() == "SCIP":
            return "ortools"
    except (ImportError, RuntimeError):
        pass
    return "cbc"


def solve_model(model: LinearModel, objective: str, backend: str, time_limit: float | None = None,
                threads: int | None = None, start: dict[int, float] | None = None) -> LPResult:
    """Solve ``model`` on ``backend`` (one of :data:`BACKENDS`) with an optional MIP start.

    A back end's answer that a feasible MIP start contradicts is not taken (:func:`reconcile`)."""
    if backend == "cbc":
        res = solve_pulp_cbc(model, objective, time_limit=time_limit, threads=threads, start=start)
    elif backend == "ortools":
        res = solve_ortools(model, objective, time_limit=time_limit, threads=threads, hint=start)
    elif backend == "highs":
        res = solve_highs(model, objective, time_limit=time_limit, threads=threads, start=start)
    else:
        raise ValueError(f"unknown MILP back end {backend!r}; use one of {BACKENDS}")
    return reconcile(model, objective, res, start)


# Feasibility tolerance of a MIP start's check (absolute, per row scaled by max(1, |rhs|)): looser
# than the 1e-7 of eq. 37's and the objective cut's slack, tighter than anything a schedule moves.
START_TOL = 1e-6


def start_violation(model: LinearModel, start: Mapping[int, float]) -> float:
    """The largest violation of a bound, an integrality or a row (scaled by max(1, |rhs|)) by the
    full assignment ``start``; ``inf`` when it leaves a variable out."""
    if len(start) < len(model.vars):
        return INF
    worst = 0.0
    for v in model.vars:
        x = start[v.index]
        worst = max(worst, v.lb - x, x - v.ub, abs(x - round(x)) if v.kind != "C" else 0.0)
    for c in model.cons:
        a = sum(k * start[i] for i, k in c.coefs.items())
        if c.lb != -INF:
            worst = max(worst, (c.lb - a) / max(1.0, abs(c.lb)))
        if c.ub != INF:
            worst = max(worst, (a - c.ub) / max(1.0, abs(c.ub)))
    return worst


def reconcile(model: LinearModel, objective: str, res: LPResult, start: Mapping[int, float] | None) -> LPResult:
    """``res``, unless the MIP start ``start`` is feasible for ``model`` and contradicts it.

    An exact method reports "infeasible" only with a proof, and no proof stands against a feasible
    point: a back end that says "infeasible", found nothing, or returns a worse solution (as
    "optimal" too) than a start that satisfies every row is wrong or stopped early, so the start is
    the incumbent ("feasible").  Its bound is kept only where it is consistent (no more than the
    start's value, and never from a contradicted "infeasible" or "optimal").  The check runs only
    when the answer could be contradicted, so an answer no worse than the start costs nothing."""
    if not start:
        return res
    e = model.objectives[objective]
    start_obj = e.const + sum(c * start.get(k, 0.0) for k, c in e.coefs.items())
    if res.values is not None and res.objective is not None and \
            res.objective <= start_obj + START_TOL * max(1.0, abs(start_obj)):
        return res
    if start_violation(model, start) > START_TOL:
        return res
    bound = res.bound if res.status in ("feasible", "no_solution") else None
    if bound is not None and bound > start_obj:
        bound = None
    warning = res.warning
    if res.status in ("infeasible", "optimal"):  # a false claim, not just a time limit
        what = "reported the model infeasible" if res.status == "infeasible" else \
            f"reported {res.objective:.12g} as optimal"
        contradiction = f"{res.solver} {what}, but the MIP start (value {start_obj:.12g}) satisfies every row; kept the start"
        warning = contradiction if warning is None else f"{warning}; {contradiction}"
    values = [float(start[v.index]) for v in model.vars]
    return LPResult("feasible", values, start_obj, bound, res.seconds, res.solver, res.nodes, res.root_bound, warning)
