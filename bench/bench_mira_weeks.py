"""Mira weeks: rtmix, WCJS-JIT and replan on wk1, wk2, wk1-10 and December (issue 23, Acceptance).

Every run is ``rtsched.experiments.weeks.run_week`` (the real partition file, 10 % RTJs marked at
random with the seed, a 7-day results window per week — wk1 from 2018-01-21, wk2 2018-03-18,
wk1-10 2018-01-22, December 2014-12-01 —, bounded slowdown τ = 600 s, every policy on the jobs
submitted before the window's end); the comparison is ``rtsched.experiments.weeks.paired_weeks``
(paired per-seed differences against WCJS-JIT, 95 % bootstrap intervals of ``rtsched compare``).

Printed: per week, seed and policy the mean RTJ and BJ bounded slowdowns and the run's wall / CPU
seconds (replan: solves, per-solve CPU and wall mean and max); per week and policy the means over
seeds and the paired intervals policy − WCJS-JIT; the count of weeks where each policy is no
worse than WCJS-JIT on either mean and better on both.

Rows are saved in ``--out`` (JSON, rewritten atomically after each run; a run already there is
not repeated), so a long replan run can go in the background and be reported with the others:

    PYTHONPATH=. nice python bench/bench_mira_weeks.py --out runs/weeks-fast.json  # wcjs-jit, rtmix: 4 weeks x 5 seeds
    PYTHONPATH=. nice -n 19 python bench/bench_mira_weeks.py --policies 'replan:k=2,ms=20' --weeks wk1 \\
        --out runs/weeks-replan.json --progress runs/weeks-replan.progress
    PYTHONPATH=. python bench/bench_mira_weeks.py --report runs/weeks-fast.json runs/weeks-replan.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rtsched.experiments.weeks import DAYS, REFERENCE, WEEKS, paired_weeks, run_week, split_policies, week_named, week_paths, week_workload  # noqa: E402
from benchcli import one_line_errors  # noqa: E402  (bench/ is sys.path[0] when run as a script)
from rtsched.files import atomic_write_text  # noqa: E402
from rtsched.optiontext import int_list  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def load_rows(paths) -> list[dict]:
    rows: list[dict] = []
    for p in paths:
        if Path(p).exists():
            rows += json.loads(Path(p).read_text())["rows"]
    return rows


def run(args) -> list[dict]:
    weeks = [week_named(w.strip()) for w in args.weeks.split(",") if w.strip()]
    seeds = int_list(args.seeds, "--seeds")
    policies = split_policies(args.policies)
    rows = load_rows([args.out]) if args.out else []
    done = {(r["week"], r["policy"], r["seed"]) for r in rows}
    progress = open(args.progress, "a", encoding="utf-8") if args.progress else None
    for week in weeks:
        log, partitions = week_paths(args.data, week)
        if not log.exists() or not partitions.exists():
            print(f"skipped {week.name}: {log} or {partitions} not found (needs ../shared/data)", file=sys.stderr)
            continue
        wl = week_workload(log, week, args.days)
        label = week.name if args.days == DAYS else f"{week.name}/{args.days:g}d"
        for seed in seeds:
            for policy in policies:
                if (label, policy, seed) in done:
                    continue
                t = time.perf_counter()
                row = run_week(week, policy, seed, args.data, workload=wl, days=args.days,
                               progress=pass_reporter(progress, f"{label} seed {seed} {policy}", args.every))
                rows.append(row)
                if args.out:
                    atomic_write_text(args.out, json.dumps({"rows": rows}, indent=1))
                if progress is not None:
                    progress.write(f"{time.strftime('%H:%M:%S')} {week.name} seed {seed} {policy}: RTJ {row['rtj_bsld']:.3f} "
                                   f"BJ {row['bj_bsld']:.3f}, {time.perf_counter() - t:.0f} s wall, {row['cpu_s']:.0f} s CPU\n")
                    progress.flush()
    return rows


def pass_reporter(out, what: str, every: int):
    """A line to ``out`` every ``every`` passes of a replan run: simulated time, queue, solves,
    wall and CPU seconds so far."""
    if out is None:
        return None
    t0, c0 = time.perf_counter(), time.process_time()

    def report(pol, view) -> None:
        if len(pol.log) % every == 0 and pol.log and pol.log[-1][0] == view.now:
            out.write(f"  {what}: pass {len(pol.log)}, t = {view.now} s, {len(view.queue)} waiting, {len(pol.stats)} "
                      f"solves; {time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU\n")
            out.flush()

    return report


def ci_text(rec: dict) -> str:
    ci = rec["ci"]
    return f"{rec['diff']:+.3f}" + (f" [{ci[1]:+.3f}, {ci[2]:+.3f}]" if ci else " (too few seeds)")


def report(rows: list[dict]) -> None:
    print("| week | seed | policy | RTJ bsld | BJ bsld | n RTJ/BJ | wall s | CPU s | solves | solve CPU mean/max s | "
          "solve wall mean/max s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    order = {w.name: i for i, w in enumerate(WEEKS)}
    for r in sorted(rows, key=lambda r: (order.get(r["week"], 99), r["seed"], r["policy"])):
        solve = "–" if "solves" not in r else f"{r['solves']} ({r['proven']} proven)"
        cpu = "–" if "solves" not in r else f"{r['solve_cpu_mean']:.3f} / {r['solve_cpu_max']:.3f}"
        wall = "–" if "solves" not in r else f"{r['solve_wall_mean']:.3f} / {r['solve_wall_max']:.3f}"
        print(f"| {r['week']} | {r['seed']} | {r['policy']} | {r['rtj_bsld']:.3f} | {r['bj_bsld']:.3f} | "
              f"{r['n_rt']}/{r['n_bj']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {solve} | {cpu} | {wall} |")
    policies = [p for p in dict.fromkeys(r["policy"] for r in rows) if p != REFERENCE]
    print(f"\nmeans over seeds and paired differences policy − {REFERENCE} (95 % bootstrap over seeds)")
    print(f"| week | policy | seeds | RTJ bsld (vs {REFERENCE}) | ΔRTJ [95 %] | BJ bsld (vs {REFERENCE}) | ΔBJ [95 %] | "
          "no worse on both | better on both |")
    print("|---|---|---|---|---|---|---|---|---|")
    for policy in policies:
        weeks = paired_weeks(rows, policy)
        for wk, rec in sorted(weeks.items(), key=lambda kv: order.get(kv[0], 99)):
            rt, bj = rec["rtj_bsld"], rec["bj_bsld"]
            print(f"| {wk} | {policy} | {len(rec['seeds'])} | {rt['policy']:.3f} ({rt['reference']:.3f}) | {ci_text(rt)} | "
                  f"{bj['policy']:.3f} ({bj['reference']:.3f}) | {ci_text(bj)} | {'yes' if rec['no_worse'] else 'no'} | "
                  f"{'yes' if rec['better'] else 'no'} |")
        print(f"{policy}: no worse than {REFERENCE} on either mean on {sum(r['no_worse'] for r in weeks.values())} of "
              f"{len(weeks)} weeks, better on both on {sum(r['better'] for r in weeks.values())}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weeks", default=",".join(w.name for w in WEEKS))
    ap.add_argument("--seeds", default="1,2,3,4,5", help="RTJ marking seeds, comma-separated")
    ap.add_argument("--policies", default=f"{REFERENCE};rtmix", help="policy names separated by ';' or ',' (rtsched.experiments.weeks.split_policies: 'wcjs-jit:priority=sjf,backfill=sjf,rtmix' is two)")
    ap.add_argument("--days", type=float, default=DAYS, help="results window, days (7; a shorter one is reported "
                    "as another week, WEEK/Nd)")
    ap.add_argument("--data", default=str(SHARED_DATA), help="the shared data folder")
    ap.add_argument("--out", help="rows JSON (resumable)")
    ap.add_argument("--progress", help="a line per finished run appended here")
    ap.add_argument("--every", type=int, default=200, help="a progress line every N passes of replan")
    ap.add_argument("--report", nargs="+", help="only print the report of these rows files")
    args = ap.parse_args()
    rows = load_rows(args.report) if args.report else run(args)
    if rows:
        report(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(one_line_errors("bench_mira_weeks", main))
