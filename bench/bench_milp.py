"""Benchmark of the offline optimum (issue 4), against seed 002's Tables 2 and 3.

    python bench/bench_milp.py [--part table3|table2|scaling|all] [--count 20] [--t3-limit S]
                               [--time-limit S] [--scale-limit S] [--workers 2]

1. Table 3 set: 20 seeded 5-BJ + 2-RTJ instances on 16 blocks (``rtsched instances generate``
   defaults) solved by the fast exact model (CP-SAT, ``--workers`` workers, per-instance limit
   ``--t3-limit``); total time (target < 2 min on 2 cores), how many proven optimal; the mean BJ /
   RTJ SD beside WCJS (JIT-CKPT) in the simulator, and the paper's 1.50 / 1.08 and 2.54 / 1.50.
2. Table 2 rows: the partition-sequence MILP (T = 5) on PuLP+CBC, ``--time-limit`` per row (the
   issue's setting is 600 s), binaries and time (or gap) beside the paper's CPLEX figures.
3. Scaling: the largest instance the fast model proves optimal within ``--scale-limit`` as the
   number of jobs grows, on 16 and on 96 blocks.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from milp.instance import TABLE2_ROWS  # noqa: E402
from milp.tables import PAPER_TABLE3, scaling_study, table2_row, table3_study  # noqa: E402


def _f(x, d=3):
    return "-" if x is None else f"{x:.{d}f}"


def _dur(s):
    if s is None:
        return "-"
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s"


def part_table3(args) -> None:
    print(f"== 1. Table 3 set: {args.count} instances (5 BJ + 2 RTJ, 16 blocks), CP-SAT, {args.workers} workers, "
          f"limit {args.t3_limit:g} s each")
    t0 = time.perf_counter()
    runs, rows, results = table3_study(args.count, 0, policies=("wcjs",), checkpoint="jit",
                                       time_limit=args.t3_limit, workers=args.workers)
    wall = time.perf_counter() - t0
    print(f"{'seed':>4} {'status':>9} {'theta':>6} {'RTJ SD':>7} {'BJ SD':>7} {'gap':>6} {'s':>7} {'preempt':>7}"
          f"  {'WCJS RTJ':>8} {'WCJS BJ':>8}")
    wcjs = [r for r in runs if r.policy == "wcjs"]
    for seed, (res, w) in enumerate(zip(results, wcjs)):
        print(f"{seed:>4} {res.status:>9} {_f(res.theta_used, 3):>6} {_f(res.rtj_sd_mean):>7} {_f(res.bj_sd_mean):>7} "
              f"{_f(res.gap, 3):>6} {res.seconds:>7.2f} {res.n_preempted:>7}  {_f(w.rtj_sd_mean):>8} "
              f"{_f(w.bj_sd_mean):>8}")
    solve_s = sum(r.seconds for r in results)
    proven = sum(1 for r in results if r.status == "optimal")
    print(f"proven optimal: {proven}/{len(results)}; solve time total {solve_s:.1f} s (max {max(r.seconds for r in results):.1f} s, "
          f"median {sorted(r.seconds for r in results)[len(results) // 2]:.1f} s); wall incl. WCJS runs {wall:.1f} s")
    print(f"{'algorithm':<18} {'BJ SD':>6} {'RTJ SD':>7}   paper: {'BJ SD':>6} {'RTJ SD':>7}")
    paper = {"optimum": PAPER_TABLE3["formulation"], "wcjs": PAPER_TABLE3["WCJS (JIT-CKPT)"]}
    for row in rows:
        pb, pr = paper.get(row["algorithm"], (None, None))
        print(f"{row['algorithm']:<18} {row['bj_sd']:>6.2f} {row['rtj_sd']:>7.2f}   {'':>6} {_f(pb, 2):>6} {_f(pr, 2):>7}")
    w = next(r for r in rows if r["algorithm"] == "wcjs")
    print(f"WCJS vs optimum: BJ SD {w['bj_sd_vs_optimum'] * 100:+.0f} %, RTJ SD {w['rtj_sd_vs_optimum'] * 100:+.0f} % "
          f"(paper: +69 %, +38 %)")


def part_table2(args) -> None:
    print(f"== 2. Table 2 rows: partition-sequence MILP, T = 5, PuLP+CBC, limit {args.time_limit:g} s per row")
    print(f"{'BJ':>2} {'RTJ':>3} {'blocks':>6} {'binaries':>8} {'(paper)':>8} {'status':>9} {'time':>9} {'CBC gap':>7} "
          f"{'CPLEX (paper)':>13}  {'θ*':>6} {'θ* bound':>8}  stages", flush=True)
    rows = TABLE2_ROWS if not args.rows else [tuple(int(x) for x in r.split("/")) for r in args.rows.split(",")]
    for nb, nr, blocks in rows:  # row by row: each line is printed as soon as it is solved
        row = table2_row(nb, nr, blocks, time_limit=args.time_limit, threads=args.threads)
        print(f"{row['bj']:>2} {row['rt']:>3} {row['blocks']:>6} {row['binaries']:>8} {row['paper_binaries']:>8} "
              f"{row['status']:>9} {_dur(row['seconds']):>9} {_f(row['solver_gap'], 3):>7} {_dur(row['paper_cplex_seconds']):>13}  {_f(row['theta_star']):>6} "
              f"{_f(row['theta_star_bound']):>8}  {' '.join(row['stages'])}",
              flush=True)


def part_scaling(args) -> None:
    print(f"== 3. Scaling: CP-SAT, limit {args.scale_limit:g} s per instance, jobs growing (2/7 RTJs), "
          "sizes: every partition size of the machine")
    for blocks in args.scale_blocks:
        rows = scaling_study(blocks, range(args.scale_from, args.scale_to + 1, args.scale_step),
                             time_limit=args.scale_limit, workers=args.workers)
        for r in rows:
            print(f"blocks {blocks:>2}  jobs {r['jobs']:>2} ({r['bj']} BJ + {r['rt']} RTJ)  {r['status']:>9}  "
                  f"{r['seconds']:>7.1f} s  gap {_f(r['gap'])}", flush=True)
        proven = [r["jobs"] for r in rows if r["status"] == "optimal"]
        print(f"blocks {blocks}: largest proven optimal = {max(proven) if proven else 'none'} jobs")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="all", choices=["table3", "table2", "scaling", "all"])
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--t3-limit", type=float, default=120.0, help="CP-SAT limit per Table-3 instance, s")
    ap.add_argument("--time-limit", type=float, default=600.0, help="CBC limit per Table-2 row, s (issue: 600)")
    ap.add_argument("--scale-limit", type=float, default=600.0, help="CP-SAT limit per scaling instance, s")
    ap.add_argument("--scale-from", type=int, default=7)
    ap.add_argument("--scale-to", type=int, default=25)
    ap.add_argument("--scale-step", type=int, default=2)
    ap.add_argument("--scale-blocks", type=lambda v: [int(x) for x in v.split(",")], default=[16, 96],
                    help="machine sizes of the scaling study, comma-separated (default 16,96)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="CBC threads")
    ap.add_argument("--rows", default=None, help="Table-2 rows to run, e.g. 3/2/16,4/3/8 (BJ/RTJ/blocks; default all)")
    args = ap.parse_args(argv)
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.1f}")
    if args.part in ("table3", "all"):
        part_table3(args)
    if args.part in ("table2", "all"):
        part_table2(args)
    if args.part in ("scaling", "all"):
        part_scaling(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
