"""Benchmark of the MILPs that prove (issue 16): back ends, strengthenings, the disjunctive MILP.

    nice python bench/bench_milp_strength.py [--part measure|table2|table3|ablation|all] [--t2-limit 600]
                                             [--t3-limit 60] [--ab-limit 60] [--count 20]
                                             [--hard 4,10,15] [--paper-t3]

0. Measure (``--m-limit`` per solve): where CBC's time goes on the paper's model as it was (the
   greedy MIP start, no cuts) on the Table-2 rows (T = 5) and the Table-3 set: root LP bound vs the optimum,
   the θ* and BJ stages' status, seconds and nodes.
1. Table 2 (seed 002), all nine rows: the paper's partition-sequence MILP with T = 5 on the best
   installed back end with every strengthening (``--method milp``), limit ``--t2-limit`` per row,
   beside the disjunctive MILP (uncapped), CP-SAT (uncapped) and the paper's CPLEX times; the
   ratio is our MILP time / CPLEX time.
2. The 20-instance Table-3 set: the disjunctive MILP (best back end) vs CP-SAT side by side on each
   instance (same optimum checked), proven count, median and total; ``--paper-t3`` adds the paper's
   model (HiGHS, all strengthenings, ``--t3-limit``).
3. Before/after on three hard instances (``--hard``): each strengthening switched off alone, none,
   all — root bound (mean BJ SD), best bound, gap, nodes, time — for both formulations on HiGHS,
   and the paper model as it was (CBC, no strengthening) as the baseline.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from milp.instance import TABLE2_ROWS, table2_instance, table3_instance  # noqa: E402
from milp.linmodel import best_backend  # noqa: E402
from milp.solve import solve  # noqa: E402
from milp.strengthen import Strengthen  # noqa: E402
from milp.tables import PAPER_TABLE2, table2_row  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from bench_milp import _dur, _f  # noqa: E402  (one copy of the number formats)


def part_table2(args) -> None:
    print(f"== 1. Table 2: paper MILP (T = 5, --method milp = {best_backend()}, all strengthenings, limit "
          f"{args.t2_limit:g} s/row) | disjunctive MILP (uncapped) | CP-SAT (uncapped) | paper CPLEX", flush=True)
    print(f"{'row':>8} {'bin':>5} {'paper MILP':>11} {'time':>8} {'gap':>6} {'nodes':>7} {'BJ SD':>7} | "
          f"{'disj':>8} {'time':>6} {'BJ SD':>7} | {'CP-SAT':>8} {'time':>6} | {'CPLEX':>8} {'ratio':>7}", flush=True)
    for nb, nr, bl in TABLE2_ROWS:
        row = table2_row(nb, nr, bl, method="milp", time_limit=args.t2_limit)
        inst = table2_instance(nb, nr, bl, 0)
        dj = solve(inst, "milp-disjunctive", time_limit=args.t2_limit)
        cp = solve(inst, "cpsat", time_limit=args.t2_limit)
        paper_s = PAPER_TABLE2[(nb, nr, bl)][1]
        ratio = row["seconds"] / paper_s if row["status"] == "optimal" else None
        assert dj.status != "optimal" or cp.status != "optimal" or abs(dj.bj_sd_mean - cp.bj_sd_mean) < 1e-6
        print(f"{nb}/{nr}/{bl:<4} {row['binaries']:>5} {row['status']:>11} {_dur(row['seconds']):>8} "
              f"{_f(row['solver_gap']):>6} {row['nodes'] if row['nodes'] is not None else '-':>7} "
              f"{_f(row['bj_sd_mean']):>7} | {dj.status:>8} {_dur(dj.seconds):>6} {_f(dj.bj_sd_mean):>7} | "
              f"{cp.status:>8} {_dur(cp.seconds):>6} | {_dur(paper_s):>8} {_f(ratio, 2):>7}", flush=True)


def part_table3(args) -> None:
    print(f"== 2. Table-3 set: {args.count} instances (5 BJ + 2 RTJ, 16 blocks): disjunctive MILP "
          f"({best_backend()}) vs CP-SAT (2 workers), limit {args.t3_limit:g} s each"
          + (" | paper MILP (HiGHS, all strengthenings)" if args.paper_t3 else ""), flush=True)
    dj_t, cp_t, pm_t, proven, pm_proven = [], [], [], 0, 0
    for seed in range(args.count):
        inst = table3_instance(seed)
        dj = solve(inst, "milp-disjunctive", time_limit=args.t3_limit)
        cp = solve(inst, "cpsat", time_limit=args.t3_limit)
        same = (abs(dj.bj_sd_mean - cp.bj_sd_mean) < 1e-6) if dj.status == cp.status == "optimal" else "-"
        proven += dj.status == "optimal"
        dj_t.append(dj.seconds)
        cp_t.append(cp.seconds)
        line = (f"seed {seed:>2}: disj {dj.status:>8} {dj.seconds:>6.2f} s nodes {dj.nodes!s:>6} root {_f(dj.root_bound)} "
                f"BJ SD {_f(dj.bj_sd_mean, 4)} | CP-SAT {cp.status:>8} {cp.seconds:>6.2f} s | same optimum {same}")
        if args.paper_t3:
            pm = solve(inst, "milp-highs", time_limit=args.t3_limit)
            pm_t.append(pm.seconds)
            pm_proven += pm.status == "optimal"
            line += f" | paper {pm.status:>8} {pm.seconds:>6.1f} s gap {_f(pm.gap)}"
        print(line, flush=True)
    med_dj, med_cp = statistics.median(dj_t), statistics.median(cp_t)
    print(f"disjunctive MILP: {proven}/{args.count} proven; median {med_dj:.2f} s, max {max(dj_t):.2f} s, total "
          f"{sum(dj_t):.1f} s | CP-SAT median {med_cp:.2f} s, total {sum(cp_t):.1f} s | median ratio MILP/CP-SAT "
          f"{med_dj / med_cp:.2f}", flush=True)
    if args.paper_t3:
        print(f"paper MILP (HiGHS): {pm_proven}/{args.count} proven; median {statistics.median(pm_t):.1f} s", flush=True)


ABLATION = [("none", Strengthen.none())] + [
    (f"all -{name}", Strengthen.parse(f"no-{name}")) for name in ("horizons", "energy", "clique", "symmetry", "start")
] + [("all", Strengthen())]


def part_ablation(args) -> None:
    print(f"== 3. Before/after on Table-3 seeds {args.hard}: limit {args.ab_limit:g} s each; root = LP bound of the "
          "BJ stage (mean BJ SD), gap of the BJ stage", flush=True)
    print(f"{'seed':>4} {'model':<24} {'strengthening':<16} {'status':>8} {'root':>6} {'bound':>6} {'BJ SD':>7} "
          f"{'gap':>6} {'nodes':>7} {'time':>7} {'θ* s':>6} {'BJ s':>6} {'x none':>7}", flush=True)
    for seed in args.hard:
        inst = table3_instance(seed)
        runs = [("paper MILP, CBC (as was)", "milp-cbc", "none", Strengthen.none())]
        runs += [("paper MILP, HiGHS", "milp-highs", label, opt) for label, opt in (ABLATION[0], ABLATION[-1])]
        runs += [("disjunctive, HiGHS", "milp-disjunctive", label, opt) for label, opt in ABLATION]
        base: dict[str, float] = {}
        for model, method, label, opt in runs:
            res = solve(inst, method, time_limit=args.ab_limit, strengthen=opt)
            if label == "none":
                base[model] = res.seconds
            ratio = res.seconds / base[model] if model in base and base[model] > 0 else None
            print(f"{seed:>4} {model:<24} {label:<16} {res.status:>8} {_f(res.root_bound):>6} {_f(res.best_bound):>6} "
                  f"{_f(res.bj_sd_mean, 4):>7} {_f(res.gap):>6} {res.nodes!s:>7} {res.seconds:>6.1f}s "
                  f"{_stage_s(res, 'theta_star'):>6} {_stage_s(res, 'bj'):>6} {_f(ratio, 2):>7}", flush=True)


def _stage_s(res, name: str) -> str:
    return next((f"{st['seconds']:.1f}" for st in res.stages if st["stage"] == name), "-")


def part_measure(args) -> None:
    """Where the time of the paper's MILP as it was (CBC, the greedy MIP start only) goes."""
    print(f"== 0. Where CBC's time goes on the paper MILP as it was (greedy MIP start, no cuts), limit {args.m_limit:g} s: "
          "root = LP bound of the BJ stage (mean BJ SD) vs the optimum (disjunctive MILP, proven), θ* and BJ stage "
          "status / seconds / nodes", flush=True)
    print(f"{'instance':>12} {'root':>6} {'optimum':>7} {'root/opt':>8} {'bound':>6} {'found':>7} {'θ* stage':>18} "
          f"{'BJ stage':>18}", flush=True)
    cases = [(f"T2 {nb}/{nr}/{bl}", table2_instance(nb, nr, bl, 0), 5) for nb, nr, bl in TABLE2_ROWS]
    cases += [(f"T3 seed {s}", table3_instance(s), None) for s in range(args.count)]
    for name, inst, T in cases:
        # as before issue 16: no cuts, no symmetry breaking beyond the slot order, the greedy MIP start
        res = solve(inst, "milp-cbc", sequences=T, time_limit=args.m_limit, strengthen="start")
        ref = solve(inst, "milp-disjunctive", time_limit=args.m_limit)  # the uncapped optimum
        opt = ref.bj_sd_mean if ref.status == "optimal" else None
        stg = {st["stage"]: st for st in res.stages}

        def cell(key):
            st = stg.get(key)
            return "-" if st is None else f"{st['status'][:4]} {st['seconds']:.1f}s {st.get('nodes', '-')}n"

        ratio = res.root_bound / opt if res.root_bound is not None and opt else None
        print(f"{name:>12} {_f(res.root_bound):>6} {_f(opt):>7} {_f(ratio, 2):>8} {_f(res.best_bound):>6} "
              f"{_f(res.bj_sd_mean):>7} {cell('theta_star'):>18} {cell('bj'):>18}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="all", choices=["measure", "table2", "table3", "ablation", "all"])
    ap.add_argument("--m-limit", type=float, default=20.0, help="s per solve of the measure part")
    ap.add_argument("--t2-limit", type=float, default=600.0, help="s per Table-2 row and method (issue: 600)")
    ap.add_argument("--t3-limit", type=float, default=60.0, help="s per Table-3 instance and method")
    ap.add_argument("--ab-limit", type=float, default=60.0, help="s per ablation run")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--hard", type=lambda v: [int(x) for x in v.split(",")], default=[4, 10, 15])
    ap.add_argument("--paper-t3", action="store_true", help="also run the paper's MILP on the Table-3 set")
    args = ap.parse_args(argv)
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}", flush=True)
    if args.part in ("measure", "all"):
        part_measure(args)
    if args.part in ("table2", "all"):
        part_table2(args)
    if args.part in ("table3", "all"):
        part_table3(args)
    if args.part in ("ablation", "all"):
        part_ablation(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
