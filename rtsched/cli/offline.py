"""``rtsched solve``, ``rtsched instances generate`` and ``rtsched compare``: the offline optimum (``milp``).

Exit status of ``solve``: 0 when a schedule is returned (optimal, or feasible with its gap when a
time limit stopped the search), 3 when the instance is infeasible (no schedule meets θ: only with
``--theta-mode fixed`` or ``binary-search``), 4 when the time limit passed before any schedule
was found.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any

from rtsched.cli.common import (SCHEDULE_FORMATS, UsageError, changed_options, check_distinct_outputs, check_extension,
                                check_output, console, float_in, fmt, int_in, int_list, name_list,
                                nonneg_int, pct, positive_float, positive_int, progress_bar)
from rtsched.limits import MAX_SOLVE_JOBS

EXIT_INFEASIBLE = 3
# Limits of ``instances generate`` (and MAX_SOLVE_JOBS, milp.solve's, from rtsched.limits).
MAX_COUNT = 10_000
MAX_SECONDS = 365 * 86400
EXIT_NO_SOLUTION = 4
# The largest θ (a mean slowdown): larger ones overflow CP-SAT's integer coefficients, and no bound
# that large ever binds (a slowdown over 10^10 needs a wait over MAX_TIME_S = 10^10 s).
MAX_THETA = 1e10
# ``instances generate``'s generator options and their defaults (--shipped, a fixed set, refuses them)
GENERATE_DEFAULTS = {"count": 20, "seed": 0, "bj": 5, "rt": 2, "blocks": 16, "sizes": None, "submit_window": 3600,
                     "runtime_min": 600, "runtime_max": 7200, "runtime_step": 60, "walltime_factor": (1.0, 2.0),
                     "prefix": "table3"}
# ``rtsched compare`` runs the RTJ tie-break stage by default (``solve`` does not: its results stay
# as they were), so its RTJ gaps do not depend on the solver's tie-break.  It costs little: the
# 50-instance rtmix comparison took 20.8 s instead of 14.3 s (docs/benchmarks.md, "RTJ tie-break").
# A copy of milp.compare.RTJ_TIEBREAK (the parser imports no solver; tests/test_layers.py checks it).
COMPARE_TIEBREAK = True
# The reference policy of compare's paired intervals (a copy of milp.compare.REFERENCE: the parser
# imports no solver).
COMPARE_REFERENCE = "wcjs-jit"
# The exact methods of milp.solve (kept here so that building the parser imports no solver;
# tests/test_layers.py checks the two lists agree).
METHODS = ("cpsat", "milp", "milp-highs", "milp-cbc", "milp-ortools", "milp-disjunctive", "bruteforce")


def register(sub: Any) -> None:
    """Add ``solve``, ``instances`` (``generate``) and ``compare`` to the ``rtsched`` subparsers."""
    sv = sub.add_parser("solve", help="solve a small offline instance to optimality (MILP / CP-SAT)")
    sv.add_argument("instance", help="instance JSON file {\"blocks\": 16, \"jobs\": [...]}")
    _solve_options(sv, METHODS)
    sv.add_argument("--json", action="store_true", help="print a machine-readable JSON object")
    sv.add_argument("--schedule-out", help="write the schedule (CSV, or Parquet if the name ends in .parquet)")
    sv.add_argument("--write-model", metavar="FILE",
                    help="milp* methods: write the BJ-stage MILP (with the θ used) as FILE.mps or FILE.lp, to run on "
                         "any solver")
    sv.set_defaults(func=cmd_solve)
    _register_instances(sub)
    _register_compare(sub)


def _register_instances(sub: Any) -> None:
    """``rtsched instances generate``."""

    ins = sub.add_parser("instances", help="generate offline instances (seed 002 Table 2/3 settings)")
    isub = ins.add_subparsers(dest="instances_command", required=True, metavar="COMMAND")
    gen = isub.add_parser("generate", help="write seeded random instances (default: the Table 3 set)")
    gen.add_argument("--shipped", action="store_true",
                     help="rewrite the instance set shipped in traces/instances/ (rtsched compare's default) byte "
                          "for byte; --out writes it elsewhere")
    d = GENERATE_DEFAULTS
    gen.add_argument("--count", type=int_in(1, MAX_COUNT, "MAX_COUNT"), default=d["count"],
                     help=f"number of instances (seeds SEED .. SEED+COUNT-1; default {d['count']}, "
                          f"at most {MAX_COUNT:,})")
    gen.add_argument("--seed", type=nonneg_int, default=d["seed"], help=f"first seed (default {d['seed']})")
    gen.add_argument("--bj", type=int_in(0, MAX_SOLVE_JOBS, "MAX_SOLVE_JOBS"), default=d["bj"],
                     help=f"batch jobs per instance (#BJ, default {d['bj']})")
    gen.add_argument("--rt", type=int_in(0, MAX_SOLVE_JOBS, "MAX_SOLVE_JOBS"), default=d["rt"],
                     help=f"real-time jobs per instance (#RTJ, default {d['rt']})")
    gen.add_argument("--blocks", type=int_in(1, 96, "Mira's 96 blocks"), default=d["blocks"],
                     help=f"512-node blocks of the machine (default {d['blocks']} = 8,192 nodes; at most 96, Mira)")
    gen.add_argument("--sizes", help="comma-separated job sizes in nodes (default 512,1024,2048,4096,8192 "
                                     "that fit the machine)")
    seconds = int_in(1, MAX_SECONDS, "a year")
    gen.add_argument("--submit-window", type=int_in(0, MAX_SECONDS, "a year"), default=d["submit_window"],
                     help=f"submit times uniform over [0, S] s (default {d['submit_window']})")
    gen.add_argument("--runtime-min", type=seconds, default=d["runtime_min"],
                     help=f"least runtime, s (default {d['runtime_min']})")
    gen.add_argument("--runtime-max", type=seconds, default=d["runtime_max"],
                     help=f"largest runtime, s (default {d['runtime_max']})")
    gen.add_argument("--runtime-step", type=seconds, default=d["runtime_step"],
                     help=f"runtime grid step, s (default {d['runtime_step']})")
    gen.add_argument("--walltime-factor", type=float_in(0, 100, "at most 100"), nargs=2,
                     default=d["walltime_factor"], metavar=("LO", "HI"),
                     help="walltime = ceil(runtime × U(LO, HI)) (default %g %g)" % d["walltime_factor"])
    gen.add_argument("--prefix", default=d["prefix"],
                     help="file name prefix: PREFIX-SS.json, SS the seed as at least two digits (default "
                          f"{d['prefix']}; a "
                          "plain name, no folders)")
    gen.add_argument("--out", help="output folder (created if missing; required unless --shipped)")
    gen.set_defaults(func=cmd_instances_generate)


def _register_compare(sub: Any) -> None:
    """``rtsched compare``."""
    cp = sub.add_parser("compare", help="online policies vs the offline optimum (seed 002 Table 3)",
                        description="Solve each instance to proven optimality and run every policy on it in the "
                                    "simulator; print each policy's slowdowns and gaps to the optimum.  Without "
                                    "INSTANCES: the set shipped in traces/instances/ against every seed-002 scheme "
                                    "and the shipped RL agent rtmix.")
    cp.add_argument("instances", nargs="*", help="instance JSON files (default: traces/instances/*.json)")
    cp.add_argument("--policies", help="comma-separated scheme or policy names, or model files (default: every "
                                       "seed-002 scheme, the shipped agent rtmix and replan with the shipped "
                                       "instances, else wcjs-jit and replan); the --reference and the --replan "
                                       "yardstick are added when missing")
    cp.add_argument("--reference", default=COMPARE_REFERENCE,
                    help=f"the policy the paired 95 %% bootstrap intervals are taken against (default "
                         f"{COMPARE_REFERENCE}); they are also taken against replan")
    cp.add_argument("--replan", default=None, metavar="NAME",
                    help="the online yardstick: replan with its options, e.g. replan:ms=500 (default: replan, "
                         "with --theta's θ); none leaves it out")
    cp.add_argument("--seeds", metavar="S|A-B|A,B,...",
                    help="compare a fresh Table-3 set generated now instead of files: generator seeds S .. S+COUNT-1, "
                         "a range A-B or a list (rtsched instances generate's generator: 5 BJs, 2 RTJs, 16 blocks)")
    cp.add_argument("--count", type=int_in(1, MAX_COUNT), help="with --seeds S: how many instances (default 20)")
    cp.add_argument("--walltime-factor", metavar="LO,HI",
                    help="with --seeds: the generator's runtime estimate, walltime = ceil(runtime · U(LO, HI)) "
                         "(default 1,2; 1,1 gives exact walltimes)")
    cp.add_argument("-j", "--jobs", type=int_in(1, 1024), default=1,
                    help="instances solved in parallel processes (each solve then gets one CP-SAT worker or one "
                         "MILP thread); the 50-instance rtmix comparison proves every optimum in well under a "
                         "minute with -j 2 (docs/benchmarks.md)")
    cp.add_argument("--no-progress", action="store_true", help="no progress bar")
    cp.add_argument("--cache", metavar="DIR",
                    help="save each finished instance's rows in DIR (one JSON file per instance, written "
                         "atomically); the same command run again takes them from there, so an interrupted "
                         "comparison (Ctrl-C, SIGTERM, SIGKILL) resumes where it stopped")
    cp.add_argument("--checkpoint", default="jit",
                    help="checkpoint model for policies that are not schemes: no, sys[:S], app-PCT, jit (default jit)")
    # The disjunctive MILP proves Table-3-size instances several times faster than CP-SAT, with the same
    # optima (tests/test_rtmix_compare.py; docs/milp.md): the comparison's default.
    _solve_options(cp, METHODS, default="milp-disjunctive", tiebreak=COMPARE_TIEBREAK)
    cp.add_argument("--json", action="store_true", help="print the per-instance runs and the table as JSON")
    cp.set_defaults(func=cmd_compare)


def _solve_options(p: argparse.ArgumentParser, methods, default: str = "cpsat", tiebreak: bool = False) -> None:
    p.add_argument("--method", default=default, choices=list(methods),
                   help=f"cpsat (CP-SAT, exact); milp (the paper's partition-sequence MILP on the best installed "
                        "back end: HiGHS, else OR-Tools SCIP, else CBC), milp-highs / milp-cbc / milp-ortools (that "
                        "MILP on one back end); milp-disjunctive (the second exact MILP, disjunctive over conflicting "
                        f"partitions); bruteforce (tiny instances).  Default: {default}")
    p.add_argument("--time-limit", type=positive_float,
                   help="seconds (> 0) for the whole solve; returns the best schedule and its gap")
    p.add_argument("--theta", type=float_in(0, MAX_THETA, "MAX_THETA"), default=1.2,
                   help=f"RTJ mean-slowdown bound θ > 0 (default 1.2; at most {MAX_THETA:.0e}, never binding)")
    p.add_argument("--theta-mode", default="lexicographic", choices=["lexicographic", "binary-search", "fixed"],
                   help="lexicographic: θ_used = max(θ, θ*) (default); binary-search: the paper's loop over "
                        "1.10..2.00; fixed: θ as given (may be infeasible)")
    p.add_argument("--no-preempt", action="store_true", help="forbid BJ preemption (the no-preemption optimum)")
    p.add_argument("--sequences", type=positive_int,
                   help="T, sequences per block of the MILP (default: no effective cap)")
    p.add_argument("--workers", type=int_in(1, 1024),
                   help="CP-SAT workers (default 2; 1 per process with compare -j N)")
    p.add_argument("--threads", type=int_in(1, 1024), help="MILP solver threads")
    p.add_argument("--strengthen",
                   help="MILP strengthenings: all (default), none, a comma list of horizons, energy, clique, "
                        "symmetry, start, relaxation to switch on, or no-NAME,... to switch off (docs/milp.md)")
    p.add_argument("--milp-backend", choices=["highs", "ortools", "cbc"],
                   help="back end of --method milp / milp-disjunctive (default: the best installed)")
    p.add_argument("--rtj-tiebreak", action=argparse.BooleanOptionalAction, default=tiebreak,
                   help="a third stage: among the schedules with the proven least BJ mean, the least RTJ mean, so "
                        "the optimum's RTJ mean does not depend on the solver's tie-break (default: "
                        f"{'on' if tiebreak else 'off'})")


def _check_method_options(args) -> None:
    """Refuse a solver option the chosen ``--method`` does not use (it would be ignored)."""
    method = args.method
    milp = method.startswith("milp")
    uses = {"--workers": (args.workers, method == "cpsat", "CP-SAT's workers, for --method cpsat"),
            "--threads": (args.threads, milp, "MILP solver threads, for the milp* methods"),
            "--strengthen": (args.strengthen, milp, "MILP strengthenings, for the milp* methods"),
            "--milp-backend": (args.milp_backend, method in ("milp", "milp-disjunctive"),
                               "the back end of --method milp and milp-disjunctive (milp-highs, milp-cbc and "
                               "milp-ortools name theirs)"),
            "--time-limit": (args.time_limit, method != "bruteforce",
                             "brute force enumerates every schedule, with no time limit")}
    for option, (value, used, what) in uses.items():
        if value is not None and not used:
            raise UsageError(f"{option} does not apply to --method {method}: {what}")


def _solve_kwargs(args) -> dict[str, Any]:
    _check_method_options(args)
    kwargs = {"method": args.method, "theta": args.theta, "time_limit": args.time_limit,
              "preempt": not args.no_preempt, "sequences": args.sequences,
              "lexicographic": args.theta_mode == "lexicographic", "binary_search": args.theta_mode == "binary-search",
              "threads": args.threads, "milp_backend": args.milp_backend, "rtj_tiebreak": args.rtj_tiebreak}
    from milp.strengthen import Strengthen

    try:
        kwargs["strengthen"] = Strengthen.parse(args.strengthen or "all")
    except ValueError as exc:
        raise UsageError(f"--strengthen: {exc}") from None
    if args.workers is not None:
        kwargs["workers"] = args.workers
    return kwargs


def result_json(res) -> dict[str, Any]:
    """The ``--json`` object of ``rtsched solve`` (``theta`` is the θ used)."""
    out = {
        "status": res.status,
        "method": res.method,
        "theta": res.theta_used,
        "theta_requested": res.theta,
        "theta_star": res.theta_star,
        "theta_star_bound": res.theta_star_bound,
        "rtj_sd_mean": res.rtj_sd_mean,
        "bj_sd_mean": res.bj_sd_mean,
        "best_bound": res.best_bound,
        "gap": res.gap,
        "root_bound": res.root_bound,
        "nodes": res.nodes,
        "solver": res.solver,
        "seconds": round(res.seconds, 4),
        "preempt": res.preempt,
        "sequences": res.sequences,
        "restricted": res.restricted,
        "model_size": res.model_size,
        "n_preempted": res.n_preempted,
        "sd": {str(k): v for k, v in sorted(res.sd.items())},
        "notes": list(res.notes),
        "stages": list(res.stages),
        "segments": [{"job_id": s.job_id, "start": s.start, "end": s.end, "kind": s.kind, "partition": s.partition,
                      "nodes": s.nodes, "progress_from": s.progress_from, "progress_to": s.progress_to}
                     for s in res.segments],
    }
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


def cmd_solve(args) -> int:
    from milp.instance import load_instance
    from milp.solve import check_size, solve
    from rtsched.errors import InputError

    check_output(args.schedule_out, "--schedule-out", inputs=(args.instance,))
    check_extension(args.schedule_out, "--schedule-out", SCHEDULE_FORMATS)
    kwargs = _solve_kwargs(args)
    if args.write_model:
        check_output(args.write_model, "--write-model", inputs=(args.instance,))
        check_distinct_outputs({"--schedule-out": args.schedule_out, "--write-model": args.write_model})
        if not args.method.startswith("milp"):
            raise UsageError(f"--write-model needs a milp* method, not --method {args.method}")
        if os.path.splitext(args.write_model)[1].lower() not in (".mps", ".lp"):
            raise UsageError(f"--write-model: {args.write_model}: the name must end in .mps or .lp")
        kwargs["write_model"] = args.write_model
    inst = load_instance(args.instance)
    check_size(inst, args.instance, args.method)
    try:
        res = solve(inst, **kwargs)
    except InputError as exc:  # said of the instance (by its name): say it of the user's path
        raise InputError(exc.reason, path=args.instance) from None
    if args.schedule_out and res.schedule is not None:
        machine = inst.machine()
        res.schedule.write(args.schedule_out, machine.partition_names())
    if args.json:
        print(json.dumps({"instance": args.instance, **result_json(res)}, indent=2, allow_nan=False))
    else:
        _print_solve(res, args.instance)
    if res.status == "infeasible":
        why = "; ".join(res.notes) or f"no schedule meets mean RTJ slowdown <= {args.theta:g}"
        print(f"rtsched solve: {args.instance}: infeasible: {why}", file=sys.stderr)
        return EXIT_INFEASIBLE
    if res.status == "no_solution":
        print(f"rtsched solve: {args.instance}: no schedule found within the time limit "
              f"({args.time_limit:g} s)", file=sys.stderr)
        return EXIT_NO_SOLUTION
    return 0


def _f(x, digits: int = 4) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


# Jobs the plan's table shows (the earliest starts): rich lays out a 3,000-job table in seconds,
# longer than a short --time-limit, and nobody reads it on a terminal.
TABLE_ROWS = 100


def _print_solve(res, path: str) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    con.print(f"[bold]{path}[/bold]: {res.status} ({res.method}, {res.seconds:.2f} s)")
    ts = _f(res.theta_star, 4)
    if res.theta_star_status not in (None, "optimal"):  # θ* stage stopped on the limit: show its bound
        ts += f", not proven: bound {_f(res.theta_star_bound, 4)}"
    con.print(f"θ used {_f(res.theta_used, 4)} (requested {res.theta:g}, θ* {ts}); "
              f"RTJ SD mean {_f(res.rtj_sd_mean)}; BJ SD mean {_f(res.bj_sd_mean)}; "
              f"best bound {_f(res.best_bound)}; gap {_f(res.gap)}; preempted BJs {res.n_preempted}")
    for note in res.notes:
        con.print(f"note: {note}")
    if res.placements is None:
        return
    t = Table("job", "kind", "partition", "start", "split w", "restart", "end", "SD")
    by = {j.id: j for j in res.instance.jobs}
    names = res.instance.machine().partition_names()
    ends: dict[int, int] = {}  # each job's last end, in one pass (a scan of every segment per job was quadratic)
    for seg in res.segments:
        ends[seg.job_id] = max(ends.get(seg.job_id, seg.end), seg.end)
    placements = sorted(res.placements, key=lambda p: (p.start, p.job_id))
    for pl in placements[:TABLE_ROWS]:
        job = by[pl.job_id]
        end = ends[pl.job_id]
        t.add_row(str(job.id), job.kind, names[pl.partition], str(pl.start), "–" if pl.split is None else str(pl.split),
                  "–" if pl.restart is None else str(pl.restart), str(end), f"{res.sd[job.id]:.4f}")
    con.print(t)
    if len(placements) > TABLE_ROWS:
        con.print(f"… and {len(placements) - TABLE_ROWS:,} more jobs (--json or --schedule-out FILE give every job)")


def cmd_instances_generate(args) -> int:
    from milp.instance import random_instance, save_instance, write_shipped_instances

    if args.shipped:
        given = changed_options(args, GENERATE_DEFAULTS)
        if given:
            raise UsageError(f"{', '.join(given)}: --shipped rewrites the shipped set as it is (it takes only --out)")
        check_output(args.out, "--out", folder=True)
        for path in write_shipped_instances(args.out):
            print(path)
        return 0
    if not args.out:
        raise UsageError("--out FOLDER is required (or --shipped)")
    if not args.prefix or os.sep in args.prefix or (os.altsep and os.altsep in args.prefix) \
            or args.prefix in (".", "..") or args.prefix.startswith("."):
        raise UsageError(f"--prefix must be a plain file-name prefix (no folders, not hidden), got {args.prefix!r}")
    if args.runtime_min > args.runtime_max:
        raise UsageError(f"--runtime-min ({args.runtime_min} s) exceeds --runtime-max ({args.runtime_max} s)")
    lo, hi = args.walltime_factor
    if not 1.0 <= lo <= hi:
        raise UsageError(f"--walltime-factor needs 1 <= LO <= HI (a walltime is never below the runtime), got {lo} {hi}")
    if args.bj + args.rt < 1:
        raise UsageError("--bj and --rt give no job: an instance needs at least one")
    if args.bj + args.rt > MAX_SOLVE_JOBS:
        raise UsageError(f"--bj + --rt = {args.bj + args.rt:,} jobs: more than an exact solve accepts "
                         f"(MAX_SOLVE_JOBS = {MAX_SOLVE_JOBS:,})")
    sizes = int_list(args.sizes, "--sizes") if args.sizes is not None else None
    for size in sizes or ():
        from rtsched.machines.sizes import partition_blocks_for

        try:
            if size < 1:
                raise ValueError(f"a job size must be >= 1 node, got {size}")
            partition_blocks_for(size, args.blocks)
        except ValueError as exc:
            raise UsageError(f"--sizes: {exc} (--blocks {args.blocks})") from None
    check_output(args.out, "--out", folder=True)
    made = []
    for seed in range(args.seed, args.seed + args.count):
        try:
            made.append(random_instance(seed, args.bj, args.rt, args.blocks, sizes=sizes,
                                        submit_window=args.submit_window, runtime_min=args.runtime_min,
                                        runtime_max=args.runtime_max, runtime_step=args.runtime_step,
                                        walltime_factor=(lo, hi), name=f"{args.prefix}-{seed:02d}"))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    os.makedirs(args.out, exist_ok=True)
    for inst in made:
        path = os.path.join(args.out, f"{inst.name}.json")
        save_instance(inst, path)
        print(path)
    return 0


def _compare_instances(args) -> tuple[list, list[str], bool]:
    """The instances of a ``compare`` command: files, a fresh set (``--seeds``), or the shipped set;
    refuses the same instance twice (its rows would be merged under one name)."""
    from milp.instance import SHIPPED_DIR, load_instance, table3_instance

    if args.seeds is None and (args.count is not None or args.walltime_factor is not None):
        raise UsageError("--count and --walltime-factor shape a fresh set: give --seeds too")
    if args.seeds is not None:
        if args.instances:
            raise UsageError("--seeds generates the instances: give no INSTANCES files with it")
        seeds = _seed_list(args.seeds, args.count)
        lo, hi = _walltime_factor(args.walltime_factor or "1,2")
        instances = [table3_instance(seed, walltime_factor=(lo, hi), name=f"table3-{seed:02d}") for seed in seeds]
        return instances, [inst.name for inst in instances], False
    shipped = not args.instances
    paths = sorted(str(p) for p in SHIPPED_DIR.glob("*.json")) if shipped else list(args.instances)
    if not paths:
        raise UsageError(f"no instances given and none shipped in {SHIPPED_DIR} "
                         "(rtsched instances generate --shipped writes them)")
    instances = [load_instance(p) for p in paths]
    seen_name: dict[str, str] = {}
    seen_jobs: dict[str, str] = {}
    for inst, path in zip(instances, paths):
        content = json.dumps(inst.to_dict(), sort_keys=True)
        if content in seen_jobs:
            raise UsageError(f"{path}: the same instance as {seen_jobs[content]} (given twice, it would count twice "
                             "in every mean and interval)")
        if inst.name in seen_name:
            raise UsageError(f"{path}: its name {inst.name!r} is also {seen_name[inst.name]}'s (rows are kept by "
                             "instance name: rename one)")
        seen_jobs[content] = seen_name[inst.name] = path
    return instances, paths, shipped


def _seed_list(text: str, count: int | None) -> list[int]:
    try:
        if "," in text:
            seeds = [int(x) for x in text.split(",") if x.strip()]
        elif "-" in text.strip("-"):
            a, b = (int(x) for x in text.split("-", 1))
            if b < a:
                raise ValueError
            seeds = list(range(a, b + 1))
        else:
            first = int(text)
            seeds = list(range(first, first + (count or 20)))
    except ValueError:
        raise UsageError(f"--seeds: expected S, A-B (A <= B) or A,B,..., non-negative integers, got {text!r}") from None
    if count is not None and ("," in text or "-" in text.strip("-")):
        raise UsageError("--count goes with --seeds S (a range or a list already says how many)")
    if any(x < 0 for x in seeds) or len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds: seeds must be non-negative and distinct, got {text!r}")
    if len(seeds) > MAX_COUNT:
        raise UsageError(f"--seeds: {len(seeds):,} instances, more than MAX_COUNT = {MAX_COUNT:,}")
    return seeds


def _walltime_factor(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"--walltime-factor: expected LO,HI (two numbers), got {text!r}") from None
    if not (1.0 <= lo <= hi <= 100):
        raise UsageError(f"--walltime-factor needs 1 <= LO <= HI <= 100 (a walltime is never below the runtime), "
                         f"got {text!r}")
    return lo, hi


def _yardstick(args) -> str | None:
    if args.replan is not None:
        if args.replan.strip().lower() == "none":
            return None
        if not args.replan.strip().lower().startswith("replan"):
            raise UsageError(f"--replan: expected replan or replan:OPTIONS (or none), got {args.replan!r}")
        return args.replan.strip()
    return "replan" if args.theta == 1.2 else f"replan:theta={args.theta:g}"


def cmd_compare(args) -> int:
    """Solve the instances, run the policies on them, print the table (stages below)."""
    import time

    from milp.compare import reading, table3

    t_start = time.perf_counter()
    instances, paths, shipped = _compare_instances(args)
    yard = _yardstick(args)
    policies = _compare_policies(args, shipped, yard)
    runs = _compare_runs(args, instances, paths, policies)
    rows = table3(runs, reference=args.reference, yardstick=yard)
    seconds = time.perf_counter() - t_start
    if args.json:
        what = {"instances": paths, "shipped_default": shipped, "seeds": args.seeds,
                "walltime_factor": args.walltime_factor, "policies": policies, "reference": args.reference,
                "yardstick": yard, "checkpoint": args.checkpoint, "method": args.method, "theta": args.theta,
                "theta_mode": args.theta_mode, "time_limit": args.time_limit, "rtj_tiebreak": args.rtj_tiebreak,
                "cache": args.cache}
        table = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
                 for r in rows]
        print(json.dumps({**what, "runs": [r.to_json() for r in runs], "table": table,
                          "reading": reading(rows, args.reference), "seconds": round(seconds, 3)},
                         indent=2, allow_nan=False))
        return 0
    where = ("traces/instances (shipped)" if shipped else f"fresh, seeds {args.seeds}" if args.seeds
             else f"{len(paths)} instance file(s)")
    _print_compare(args, rows, f"{len(instances)} instances ({where})", seconds)
    return 0


def _compare_policies(args, shipped: bool, yard: str | None) -> list[str]:
    """The policies compared: ``--policies`` (or every scheme and shipped agent on the shipped set),
    with the reference and the yardstick added when missing; checked before any solve."""
    from heuristics.registry import SCHEMES

    if args.policies is not None:
        policies = name_list(args.policies, "--policies")
    else:
        policies = list(SCHEMES) + shipped_agents() if shipped else []
    for option, extra in (("--reference", args.reference), ("--replan", yard)):
        if extra is not None and extra not in policies:
            _check_policies([extra], args.checkpoint, option)
            policies.append(extra)
    _check_policies(policies, args.checkpoint)
    return policies


def _compare_runs(args, instances, paths, policies):
    """The optimum and every policy on every instance (``milp.compare.compare``), with a progress bar;
    on Ctrl-C, says how many instances the cache kept."""
    from milp.compare import compare
    from milp.solve import check_size

    for inst, path in zip(instances, paths):
        check_size(inst, path, args.method)
    kwargs = _solve_kwargs(args)
    check_output(args.cache, "--cache", folder=True)
    done: list[str] = []
    with progress_bar("optimum + policies", not args.json and not args.no_progress, len(instances)) as update:
        def note(inst, runs) -> None:
            done.append(inst.name)
            if update is not None:
                update(len(done), note=f"{inst.name}: {runs[0].status}")

        try:
            return compare(instances, policies, checkpoint=args.checkpoint, jobs=args.jobs, progress=note,
                           cache_dir=args.cache, **kwargs)
        except KeyboardInterrupt:
            if args.cache:
                print(f"rtsched compare: {len(done)} of {len(instances)} instances are saved in {args.cache}; "
                      "the same command resumes from them", file=sys.stderr)
            raise


def _print_compare(args, rows: list[dict], what: str, seconds: float) -> None:
    """The two tables (means and gaps; paired intervals), the legend, the reading and the time."""
    from rich import box
    from rich.table import Table

    from milp.compare import reading

    # Compact (no column rules, two-line headers): the table fits an 80-column terminal or pipe.
    tie = ", RTJ tie-break" if args.rtj_tiebreak else ""
    t = Table(title=f"{what} · optimum: {args.method}, θ = {args.theta:g} "
                    f"({args.theta_mode}{tie}) · non-scheme policies under {args.checkpoint} checkpointing",
              title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1), pad_edge=False,
              collapse_padding=True)
    t.add_column("algorithm", min_width=11, max_width=24, overflow="fold")
    for col in ("BJ\nSD", "RTJ\nSD", "BJ\ngap", "BJ gap\nrange", "RTJ\ngap", "RTJ gap\nrange", "θ\nviol.",
                "=opt", "s/inst"):
        t.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        viol = "–" if r["theta_violations"] is None else str(r["theta_violations"])
        t.add_row(_short(r["algorithm"]), fmt(r["bj_sd"], 3), fmt(r["rtj_sd"], 3), pct(r["bj_gap_mean"]),
                  _span(r["bj_gap_best"], r["bj_gap_worst"]), pct(r["rtj_gap_mean"]),
                  _span(r["rtj_gap_best"], r["rtj_gap_worst"]), viol, f"{r['matches_optimum']}/{r['instances']}",
                  f"{r['decision_seconds']:.3f}")
    con = console()
    con.print(t)
    d = Table(title="paired differences, policy − other, of the per-instance SD means: mean and 95 % bootstrap "
                    "interval (below 0: the policy's slowdown is lower)",
              title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1), pad_edge=False,
              collapse_padding=True)
    d.add_column("algorithm", max_width=24, overflow="fold")
    for col in (f"ΔBJ vs\n{args.reference}", f"ΔRTJ vs\n{args.reference}", "ΔBJ vs\nreplan", "ΔRTJ vs\nreplan"):
        d.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        if r["algorithm"] == "optimum":
            continue
        cells = [_interval(r["vs_reference"], k) for k in ("bj", "rtj")] + \
                [_interval(r["vs_yardstick"], k) for k in ("bj", "rtj")]
        d.add_row(_short(r["algorithm"]), *cells)
    con.print(d)
    unproven = sum(r["not_optimal"] for r in rows if r["algorithm"] == "optimum")
    if unproven:
        con.print(f"note: {unproven} optimum/optima not proven within the time limit (gaps are against the best "
                  "schedule found)", style="yellow")
    con.print("SD = slowdown = turnaround / runtime, mean per instance then over instances; gap = policy / optimum − 1 "
              "per instance (mean; range: best..worst, in %); θ viol.: instances whose RTJ SD exceeds the θ the optimum used; "
              "=opt: instances where the policy's BJ SD is no worse than the optimum's and its RTJ SD meets that θ; "
              "s/inst: seconds deciding per instance (the optimum: solving).  The optimum is the clairvoyant lower "
              "bound; replan, which re-solves the exact model at every event with the jobs known then, the online "
              "yardstick.", style="dim")
    con.print(reading([{**r, "algorithm": _short(r["algorithm"])} for r in rows], args.reference))
    con.print(f"rtsched compare took {seconds:.1f} s", style="dim")


def _interval(v, key: str) -> str:
    """A paired difference as two lines: its mean, then its 95 % interval."""
    if v is None or v.get(key) is None:
        return "–"
    mean, lo, hi = v[key]
    return f"{mean:+.3f}\n[{lo:+.2f}, {hi:+.2f}]"


def _span(best: float, worst: float) -> str:
    """The best and the worst per-instance gap, in %: ``-43..+75``."""
    if best is None or worst is None or math.isnan(best) or math.isnan(worst):
        return "–"
    return f"{best * 100:+.0f}..{worst * 100:+.0f}"


def _short(name: str) -> str:
    """A policy's label in the table: a model file by its file name (the JSON keeps the path)."""
    if os.sep not in name:
        return name
    base = os.path.basename(os.path.normpath(name))
    return base.removesuffix(".pt")


def shipped_agents() -> list[str]:
    """The shipped RL agent trained on instances like the shipped set (``rtmix``, docs/rl.md), when
    the rl extra (PyTorch) is installed: the default comparison then has all three corners."""
    import importlib.util

    return ["rtmix"] if importlib.util.find_spec("torch") is not None else []


def _check_policies(policies: list[str], checkpoint: str, option: str = "--policies") -> None:
    """Refuse an unknown policy name (naming ``option``, where it came from) or checkpoint model
    before any solve starts."""
    from heuristics.registry import SCHEMES, make_policy
    from rtsched.checkpoint import CheckpointModel

    try:
        CheckpointModel.parse(checkpoint)
    except ValueError as exc:
        raise UsageError(f"--checkpoint: {exc}") from None
    for name in policies:
        if name.strip().lower() in SCHEMES:
            continue
        try:
            make_policy(name)
        except ValueError as exc:
            raise UsageError(f"{option}: {exc}") from None
