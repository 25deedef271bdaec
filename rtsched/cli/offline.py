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

from rtsched.cli.common import pct

EXIT_INFEASIBLE = 3
EXIT_NO_SOLUTION = 4
# The exact methods of milp.solve (kept here so that building the parser imports no solver;
# tests/test_cli_layout.py checks the two lists agree).
METHODS = ("cpsat", "milp-cbc", "milp-ortools", "bruteforce")


def register(sub: Any) -> None:
    """Add ``solve``, ``instances`` (``generate``) and ``compare`` to the ``rtsched`` subparsers."""
    sv = sub.add_parser("solve", help="solve a small offline instance to optimality (MILP / CP-SAT)")
    sv.add_argument("instance", help="instance JSON file {\"blocks\": 16, \"jobs\": [...]}")
    _solve_options(sv, METHODS)
    sv.add_argument("--json", action="store_true", help="print a machine-readable JSON object")
    sv.add_argument("--schedule-out", help="write the schedule (CSV, or Parquet if the name ends in .parquet)")
    sv.set_defaults(func=cmd_solve)

    ins = sub.add_parser("instances", help="generate offline instances (seed 002 Table 2/3 settings)")
    isub = ins.add_subparsers(dest="instances_command", required=True)
    gen = isub.add_parser("generate", help="write seeded random instances (default: the Table 3 set)")
    gen.add_argument("--count", type=int, default=20, help="number of instances (seeds SEED .. SEED+COUNT-1)")
    gen.add_argument("--seed", type=int, default=0, help="first seed")
    gen.add_argument("--bj", type=int, default=5, help="batch jobs per instance (#BJ)")
    gen.add_argument("--rt", type=int, default=2, help="real-time jobs per instance (#RTJ)")
    gen.add_argument("--blocks", type=int, default=16, help="512-node blocks of the machine (16 = 8,192 nodes)")
    gen.add_argument("--sizes", help="comma-separated job sizes in nodes (default 512,1024,2048,4096,8192 "
                                     "that fit the machine)")
    gen.add_argument("--submit-window", type=int, default=3600, help="submit times uniform over [0, S] s")
    gen.add_argument("--runtime-min", type=int, default=600, help="s")
    gen.add_argument("--runtime-max", type=int, default=7200, help="s")
    gen.add_argument("--runtime-step", type=int, default=60, help="runtime grid, s")
    gen.add_argument("--walltime-factor", type=float, nargs=2, default=(1.0, 2.0), metavar=("LO", "HI"),
                     help="walltime = ceil(runtime × U(LO, HI))")
    gen.add_argument("--prefix", default="table3", help="file name prefix: PREFIX-SEED.json")
    gen.add_argument("--out", required=True, help="output folder (created if missing)")
    gen.set_defaults(func=cmd_instances_generate)

    cp = sub.add_parser("compare", help="online policies vs the offline optimum (seed 002 Table 3)")
    cp.add_argument("instances", nargs="+", help="instance JSON files")
    cp.add_argument("--policies", default="wcjs", help="comma-separated policy or scheme names (default wcjs)")
    cp.add_argument("--checkpoint", default="jit",
                    help="checkpoint model for policies that are not schemes: no, sys[:S], app-PCT, jit (default jit)")
    _solve_options(cp, METHODS)
    cp.add_argument("--json", action="store_true", help="print the per-instance runs and the table as JSON")
    cp.set_defaults(func=cmd_compare)


def _solve_options(p: argparse.ArgumentParser, methods) -> None:
    p.add_argument("--method", default="cpsat", choices=list(methods),
                   help="cpsat (fast exact, default), milp-cbc / milp-ortools (the paper's partition-sequence "
                        "MILP via PuLP+CBC / OR-Tools), bruteforce (tiny instances)")
    p.add_argument("--time-limit", type=float, help="seconds for the whole solve; returns the best schedule and gap")
    p.add_argument("--theta", type=float, default=1.2, help="RTJ mean-slowdown bound θ (default 1.2)")
    p.add_argument("--theta-mode", default="lexicographic", choices=["lexicographic", "binary-search", "fixed"],
                   help="lexicographic: θ_used = max(θ, θ*) (default); binary-search: the paper's loop over "
                        "1.10..2.00; fixed: θ as given (may be infeasible)")
    p.add_argument("--no-preempt", action="store_true", help="forbid BJ preemption (the no-preemption optimum)")
    p.add_argument("--sequences", type=int, help="T, sequences per block of the MILP (default: no effective cap)")
    p.add_argument("--workers", type=int, default=2, help="CP-SAT workers (default 2)")
    p.add_argument("--threads", type=int, help="MILP solver threads")


def _solve_kwargs(args) -> dict[str, Any]:
    return {"method": args.method, "theta": args.theta, "time_limit": args.time_limit,
            "preempt": not args.no_preempt, "sequences": args.sequences,
            "lexicographic": args.theta_mode == "lexicographic", "binary_search": args.theta_mode == "binary-search",
            "workers": args.workers, "threads": args.threads}


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
    from milp.solve import solve

    inst = load_instance(args.instance)
    res = solve(inst, **_solve_kwargs(args))
    if args.schedule_out and res.schedule is not None:
        machine = inst.machine()
        res.schedule.write(args.schedule_out, machine.partition_names())
    if args.json:
        print(json.dumps(result_json(res), indent=2, allow_nan=False))
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
    for pl in sorted(res.placements, key=lambda p: (p.start, p.job_id)):
        job = by[pl.job_id]
        end = max(s.end for s in res.segments if s.job_id == pl.job_id)
        t.add_row(str(job.id), job.kind, names[pl.partition], str(pl.start), "–" if pl.split is None else str(pl.split),
                  "–" if pl.restart is None else str(pl.restart), str(end), f"{res.sd[job.id]:.4f}")
    con.print(t)


def cmd_instances_generate(args) -> int:
    from milp.instance import random_instance, save_instance

    if args.count < 1:
        raise SystemExit("rtsched instances generate: --count must be >= 1")
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else None
    os.makedirs(args.out, exist_ok=True)
    for seed in range(args.seed, args.seed + args.count):
        inst = random_instance(seed, args.bj, args.rt, args.blocks, sizes=sizes, submit_window=args.submit_window,
                               runtime_min=args.runtime_min, runtime_max=args.runtime_max,
                               runtime_step=args.runtime_step, walltime_factor=tuple(args.walltime_factor),
                               name=f"{args.prefix}-{seed:02d}")
        path = os.path.join(args.out, f"{args.prefix}-{seed:02d}.json")
        save_instance(inst, path)
        print(path)
    return 0


def cmd_compare(args) -> int:
    from milp.compare import compare, table3
    from milp.instance import load_instance

    instances = [load_instance(p) for p in args.instances]
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    runs = compare(instances, policies, checkpoint=args.checkpoint, **_solve_kwargs(args))
    rows = table3(runs)
    if args.json:
        print(json.dumps({"runs": [{"instance": r.instance, "policy": r.policy, "status": r.status,
                                    "bj_sd_mean": r.bj_sd_mean, "rtj_sd_mean": r.rtj_sd_mean, **r.extra}
                                   for r in runs],
                          "table": [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                                    for r in rows]}, indent=2, allow_nan=False))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table("Algorithm", "BJ SD", "RTJ SD", "BJ vs opt", "RTJ vs opt", "instances", "not optimal",
              title=f"Table 3 layout: means over {len(instances)} instances")
    for r in rows:
        t.add_row(r["algorithm"], f"{r['bj_sd']:.2f}", f"{r['rtj_sd']:.2f}", pct(r["bj_sd_vs_optimum"]),
                  pct(r["rtj_sd_vs_optimum"]), str(r["instances"]), str(r["not_optimal"]))
    Console().print(t)
    return 0

