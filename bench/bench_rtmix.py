"""The rtmix agent against the proven optimum and every seed-002 heuristic (issue 13).

50 fresh Table-3-style instances (5 BJs + 2 RTJs on 16 blocks, the generator of
``rtsched.generators.smallmix``) with generator seeds EVAL_SEED_BASE + i, which no training step
used (experts: 100000-199999, PPO episodes: 200000-899999).  For each instance: the optimum
(θ = 1.2, lexicographic; ``--method``, default ``milp-disjunctive``, the disjunctive MILP on HiGHS,
which proves all 50 in seconds where CP-SAT left 9 open at 60 s each; both solve the same problem,
``tests/test_rtmix_compare.py`` cross-checks them), then every policy through the run pipeline
(``milp.compare``).  Printed:

* the Table-3 layout (``milp.compare.table3``): per policy the mean BJ and RTJ slowdowns, mean and
  worst gaps to the optimum, matches-optimum count, decision seconds per instance;
* how far above θ_used each instance's RTJ mean goes, for the agent;
* the agent's time per decision (network decisions and whole ``decide`` passes), side by side with
  WCJS-JIT's time per pass;
* wall time of the comparison (optimum + wcjs-jit, baseline, highpq, rtmix), the issue's
  5-minute figure, and of the remaining heuristics.

    PYTHONPATH=. nice python bench/bench_rtmix.py [--n 50] [--jobs 2] [--model rtmix] [--method milp-disjunctive]
                                                  [--time-limit S] [--walltime-factor LO,HI]
                                                  [--rtj-tiebreak] [--json out.json]

``--rtj-tiebreak``: the optimum is the least RTJ mean among the schedules with the proven least BJ
mean (``milp.solve``'s third stage), so its RTJ mean and every RTJ gap no longer depend on the
solver's tie-break; the bench then says on how many instances that moved the optimum's RTJ mean.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from heuristics.registry import SCHEMES, make_policy  # noqa: E402
from milp.compare import OPTIMUM, RTJ_TIEBREAK, compare, hindsight_best, table3  # noqa: E402
from milp.instance import table3_instance  # noqa: E402
from milp.solve import METHODS  # noqa: E402
from rtsched.checkpoint import CheckpointModel  # noqa: E402
from rtsched.rl.rtmix.env import EVAL_SEED_BASE  # noqa: E402
from rtsched.sim.core import Simulator  # noqa: E402
from rtsched.validate import validate_schedule  # noqa: E402
from rtsched.files import atomic_write_text  # noqa: E402


def per_decision(instances, model: str) -> dict:
    """Time the agent per decision (its network choices) and per pass, and WCJS-JIT per pass."""
    jit = CheckpointModel.parse("jit")
    out = {}
    for name in (model, "wcjs"):
        pol = make_policy(name)
        calls = 0
        spent = 0.0
        for inst in instances:
            sim = Simulator(inst.workload(), inst.machine(), checkpoint=jit)
            while sim.advance():
                t0 = time.perf_counter()
                ds = pol.decide(sim.view)
                spent += time.perf_counter() - t0
                calls += 1
                if ds:
                    sim.apply(ds)
            res = sim.result(name)
            validate_schedule(res.schedule, inst.workload(), inst.machine(), sim.io)
        row = {"passes": calls, "ms_per_pass": 1e3 * spent / max(calls, 1)}
        if hasattr(pol, "n_decisions"):
            row["network_decisions"] = pol.n_decisions
            row["ms_per_network_decision"] = 1e3 * pol.decide_seconds / max(pol.n_decisions, 1)
        out[name] = row
    return out


def main() -> int:
    """The benchmark's protocol, top to bottom: options, the instances and their optima, every policy's
    runs, then the printed tables.  One piece on purpose (over 80 lines): it is the protocol a reader
    checks against docs/benchmarks.md in one place, and each step prints what the next one uses."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--model", default="rtmix")
    ap.add_argument("--time-limit", type=float, default=None, help="per solve, s (default: none, proven optima)")
    ap.add_argument("--method", default="milp-disjunctive", choices=list(METHODS),
                    help="exact method of the optimum (default milp-disjunctive; cpsat was used before)")
    ap.add_argument("--walltime-factor", default="1,2", metavar="LO,HI",
                    help="walltime = runtime x U(LO, HI) (default 1,2, the generator's); 1,1 gives every policy "
                         "exact runtime estimates, which separates the optimum's knowledge of runtimes from its "
                         "knowledge of arrivals")
    ap.add_argument("--rtj-tiebreak", action=argparse.BooleanOptionalAction, default=RTJ_TIEBREAK,
                    help="optimum: the least RTJ mean among the BJ-optimal schedules (milp.solve's third stage; "
                         "default on, as rtsched compare; --no-rtj-tiebreak for the tables before 2026-11-26 06:30)")
    ap.add_argument("--json")
    args = ap.parse_args()
    try:
        lo, hi = (float(x) for x in args.walltime_factor.split(","))
        if not 1.0 <= lo <= hi:
            raise ValueError
    except ValueError:
        ap.error(f"--walltime-factor {args.walltime_factor!r}: give LO,HI with 1 <= LO <= HI")
    instances = [table3_instance(EVAL_SEED_BASE + i, name=f"eval-{EVAL_SEED_BASE + i}", walltime_factor=(lo, hi))
                 for i in range(args.n)]
    main4 = ["wcjs-jit", "baseline", "highpq", args.model]
    t0 = time.perf_counter()
    def note(inst, rs) -> None:
        print(f"  {inst.name}: optimum {rs[0].status} in {rs[0].extra.get('seconds', 0):.1f} s "
              f"({time.perf_counter() - t0:.0f} s so far)", file=sys.stderr, flush=True)

    runs = compare(instances, main4, jobs=args.jobs, time_limit=args.time_limit, method=args.method, progress=note,
                   rtj_tiebreak=args.rtj_tiebreak)
    t_main = time.perf_counter() - t0
    others = [s for s in SCHEMES if s not in main4]
    t1 = time.perf_counter()
    opt = {r.instance: r for r in runs if r.policy == OPTIMUM}
    from milp.compare import run_online, score_against  # the same gap and match rule as compare_instance

    for inst in instances:
        for name in others:
            runs.append(score_against(run_online(inst, name), opt[inst.name]))
    t_others = time.perf_counter() - t1
    rows = table3(runs)
    order = [OPTIMUM] + main4 + others
    rows.sort(key=lambda r: order.index(r["algorithm"]) if r["algorithm"] in order else len(order))
    unproven = sum(1 for r in runs if r.policy == OPTIMUM and r.status != "optimal")

    def pct(x):
        return "   –   " if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+7.1f}%"

    print(f"{args.n} Table-3-style instances, seeds {EVAL_SEED_BASE}..{EVAL_SEED_BASE + args.n - 1}; optimum: "
          f"{args.method}, time limit {args.time_limit or 'none'}; walltime = runtime x U({lo:g}, {hi:g}); "
          f"RTJ tie-break {'on' if args.rtj_tiebreak else 'off'}; proven optima: {args.n - unproven}/{args.n}")
    print(f"{'algorithm':<14}{'BJ SD':>8}{'RTJ SD':>8}{'BJ gap':>9}{'RTJ gap':>9}{'worst BJ':>9}{'worst RTJ':>10}"
          f"{'=opt':>6}{'s/inst':>9}")
    for r in rows:
        print(f"{r['algorithm']:<14}{r['bj_sd']:8.3f}{r['rtj_sd']:8.3f}{pct(r['bj_gap_mean'])}{pct(r['rtj_gap_mean'])}"
              f"{pct(r['bj_gap_worst'])} {pct(r['rtj_gap_worst'])}{r['matches_optimum']:>4}/{r['instances']:<2}"
              f"{r['decision_seconds']:9.4f}")
    agent = [r for r in runs if r.policy == args.model]
    over = []
    for r in agent:
        theta = opt[r.instance].extra.get("theta")
        if theta is not None:
            over.append(max(0.0, r.rtj_sd_mean - theta))
    n_over = sum(1 for x in over if x > 1e-9)
    print(f"{args.model}: RTJ mean above θ_used on {n_over}/{len(over)} instances with a θ_used; excess mean "
          f"{sum(over) / len(over):.3f}, max {max(over):.3f}; sorted excesses > 0: "
          f"{[round(x, 3) for x in sorted(over, reverse=True) if x > 1e-9]}")
    better_both = [r["algorithm"] for r in rows if r["algorithm"] not in (OPTIMUM, args.model)
                   and r["bj_sd"] < next(x["bj_sd"] for x in rows if x["algorithm"] == args.model)
                   and r["rtj_sd"] < next(x["rtj_sd"] for x in rows if x["algorithm"] == args.model)]
    print(f"heuristics better than {args.model} on both means: {better_both or 'none'}")
    for label, subset in (("the 13 heuristics", [r for r in runs if r.policy != args.model]),
                          ("them and " + args.model, runs)):
        hb = hindsight_best(subset)
        print(f"hindsight best of {label} per instance (least BJ mean meeting θ_used; else least RTJ mean): "
              f"BJ {hb['bj_sd']:.3f} vs optimum {hb['optimum_bj_sd']:.3f} ({100 * hb['bj_sd_vs_optimum']:+.1f}%, "
              f"mean per-instance gap {100 * hb['bj_gap_mean']:+.1f}%); some policy meets θ_used on "
              f"{hb['meets_theta']}/{hb['instances']}; BJ within 5% on {hb['within']}/{hb['instances']}")
    # What the optimum does that no online policy can copy, and the agent's gap with and without it.
    n_pre = sum(r.extra["preemptions"] for r in opt.values())
    n_ant = sum(r.extra["preemptions_anticipatory"] for r in opt.values())
    n_bjo = sum(r.extra["preemptions_for_bjs_only"] for r in opt.values())
    print(f"optimum's preemptions: {n_pre} on {sum(1 for r in opt.values() if r.extra['preemptions'])}/{args.n} "
          f"instances; begun before the job they make room for arrived: {n_ant}; for BJs only: {n_bjo}")
    # Only an anticipatory preemption needs the future: one for a BJ already waiting is an online move.
    uncopyable = {name for name, r in opt.items() if r.extra["preemptions_anticipatory"]}
    for label, names in (("with such a preemption", uncopyable), ("without", set(opt) - uncopyable)):
        if not names:
            continue
        o = sum(opt[n].bj_sd_mean for n in names) / len(names)
        parts = []
        for pol in (args.model, "wcjs-jit"):
            v = sum(r.bj_sd_mean for r in runs if r.policy == pol and r.instance in names) / len(names)
            parts.append(f"{pol} {v:.3f} ({100 * (v / o - 1):+.1f}%)")
        print(f"  instances {label}: {len(names)}; BJ means: optimum {o:.3f}, " + ", ".join(parts))
    timing = per_decision(instances, args.model)
    a, w = timing[args.model], timing["wcjs"]
    print(f"per decision: {args.model} {a.get('ms_per_network_decision', math.nan):.3f} ms per network decision "
          f"({a.get('network_decisions')} decisions), {a['ms_per_pass']:.3f} ms per pass; WCJS-JIT "
          f"{w['ms_per_pass']:.3f} ms per pass; ratio per pass {a['ms_per_pass'] / w['ms_per_pass']:.2f}x")
    if args.rtj_tiebreak:
        moved = [(r.extra["rtj_sd_mean_before_tiebreak"], r.rtj_sd_mean) for r in opt.values()
                 if "rtj_sd_mean_before_tiebreak" in r.extra]
        changed = [(a, b) for a, b in moved if abs(a - b) > 1e-9]
        print(f"RTJ tie-break: the optimum's RTJ mean moved on {len(changed)}/{len(moved)} instances "
              f"(mean over all {len(moved)}: {sum(a for a, _ in moved) / max(len(moved), 1):.4f} -> "
              f"{sum(b for _, b in moved) / max(len(moved), 1):.4f}; largest drop "
              f"{max((a - b for a, b in changed), default=0.0):.4f})")
    solve_s = [r.extra.get("seconds", 0.0) for r in runs if r.policy == OPTIMUM]
    print(f"solve seconds per instance ({args.method}): median {sorted(solve_s)[len(solve_s) // 2]:.2f}, "
          f"max {max(solve_s):.2f}, sum {sum(solve_s):.1f}")
    print(f"wall time: optimum + {', '.join(main4)} on {args.n} instances with {args.jobs} processes: {t_main:.1f} s "
          f"(issue 13 target: under 300 s on 2 cores); the {len(others)} other heuristics: {t_others:.1f} s")
    if args.json:
        record = {"method": args.method, "time_limit": args.time_limit, "walltime_factor": [lo, hi],
                  "rtj_tiebreak": args.rtj_tiebreak, "rows": rows,
                  "runs": [r.to_json() for r in runs], "timing": timing, "t_main_s": t_main, "t_others_s": t_others,
                  "rtj_excess": over}
        atomic_write_text(args.json, json.dumps(record, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
