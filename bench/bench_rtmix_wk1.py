"""The rtmix agent on Mira wk1 against WCJS-JIT (issue 13's second quality criterion).

Issue 13: "on Mira wk1, 10 % RTJs, real partition file, results window 7 days from 2018-01-21,
5 seeds: the agent's mean RTJ and mean BJ bounded slowdown (τ = 600 s) each no worse than
WCJS-JIT's".  Every trace run is ``rtsched.experiments.weeks.run_week`` (the one used by
``bench/bench_mira_weeks.py`` for issue 23's four weeks: the week's jobs submitted before the
window's end, random RTJ marking with the seed, the real partition file, the schedule re-checked by
the validator, bounded slowdown from ``rtsched.metrics``); ``--week`` picks another of its weeks.
The agent runs under JIT checkpointing, beside the seed-002 schemes ``wcjs-jit``, ``jit-ckpt`` and
``baseline`` (for reference).  ``bench_mira_weeks`` gives the paired intervals over the four weeks;
this bench adds the mean slowdowns, utilization and preemptions per run and the Mira-like mode.

Printed: per seed and policy the mean bounded slowdown of RTJs and BJs in the window, the means
over seeds, each policy's ratio to WCJS-JIT, the paired differences against WCJS-JIT over the seeds
(95 % bootstrap intervals; on how many seeds a policy is better on both means, and worse on the BJ
mean), and the verdict (agent's mean RTJ and mean BJ each ≤ WCJS-JIT's).  ``--miralike SEEDS``
runs generated Mira-like weeks instead of wk1 (validation of a model without touching the test
trace; ``rtsched.generators.generate_miralike(days=7, seed=S)``, every job in the results, the RTJ
marking seed = the week's seed).

    PYTHONPATH=. nice python bench/bench_rtmix_wk1.py [--seeds 1-5] [--models rtmix[,MODEL.pt]] [--json out.json]
    PYTHONPATH=. nice python bench/bench_rtmix_wk1.py --miralike 9001-9003 [--machine mira]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rtsched.experiments.weeks import (REFERENCE, RT_PERCENT, TAU, WEEKS, outcome_row, paired_weeks,  # noqa: E402
                                       policy_fields, run_week, split_policies, week_named, week_paths, week_workload)
from benchcli import one_line_errors, seed_list, unique_labels  # noqa: E402  (bench/ is sys.path[0] when run as a script)
from rtsched.files import atomic_write_text  # noqa: E402
from rtsched.pipeline import RunSpec, execute  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PARTITIONS = SHARED_DATA / "mira" / "mira-partitions.xml"


def run_miralike(name: str, seed: int, args) -> dict:
    """``name`` on the generated Mira-like week of ``seed`` (every job in the results)."""
    from rtsched.generators import generate_miralike

    spec = RunSpec(machine=args.machine, **policy_fields(name), rt_percent=args.rt_percent, marking="random",
                   seed=seed, tau=args.tau)
    t = time.perf_counter()
    rec = execute(spec, workload=generate_miralike(days=7.0, seed=seed), time_decisions=True)
    return {"policy": name, "seed": seed, **outcome_row(rec, f"{name}, Mira-like week {seed}"),
            "wall_s": time.perf_counter() - t}


def paired_over_seeds(rows: list[dict], name: str) -> dict:
    """``name`` − WCJS-JIT over the seeds both ran (each seed one week, or one RTJ marking of the trace week):
    ``paired_weeks`` with every row in one group, so its intervals and per-seed counts (better on both means;
    BJ mean above WCJS-JIT's, with the largest excess) span all seeds."""
    return paired_weeks([{**r, "week": "all"} for r in rows], name)["all"]


def _interval(part: dict) -> str:
    ci = part["ci"]
    return f"{part['diff']:+.3f}" + (f" [{ci[1]:+.3f}, {ci[2]:+.3f}]" if ci else " [too few seeds]")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1-5", help="RTJ marking seeds (default 1-5)")
    ap.add_argument("--models", default="rtmix", help="comma-separated rtmix models: the name rtmix or .pt files")
    ap.add_argument("--others", default="wcjs-jit,jit-ckpt,baseline", help="reference schemes (wcjs-jit first)")
    ap.add_argument("--week", default="wk1", help="trace week of rtsched.experiments.weeks: "
                    + ", ".join(w.name for w in WEEKS) + " (default wk1)")
    ap.add_argument("--data", default=str(SHARED_DATA), help="the shared data folder")
    ap.add_argument("--machine", default=str(PARTITIONS), help="--miralike only: partition XML or mira[:BLOCKS] "
                    "(a trace week always runs on the real partition file)")
    ap.add_argument("--rt-percent", type=float, default=RT_PERCENT)
    ap.add_argument("--tau", type=int, default=TAU)
    ap.add_argument("--miralike", help="generated Mira-like weeks of these seeds instead of the trace (validation)")
    ap.add_argument("--json")
    args = ap.parse_args()
    week = wl = None
    if args.miralike:
        seeds = seed_list(args.miralike)
        where = "generated Mira-like weeks (generate_miralike(days=7, seed=S)), every job"
    else:
        try:
            week = week_named(args.week)
        except ValueError as exc:
            print(f"--week: {exc}", file=sys.stderr)
            return 2
        log, partitions = week_paths(args.data, week)
        for p in (log, partitions):
            if not p.exists():
                print(f"skipped: {p} not found (the {week.name} bench needs ../shared/data)", file=sys.stderr)
                return 0
        seeds = seed_list(args.seeds)
        wl = week_workload(log, week)
        where = f"{log.name}, window {week.start}/7 (jobs submitted before its end); machine {partitions.name}"
    models = split_policies(args.models)
    others = split_policies(args.others)
    if REFERENCE not in others:
        others.insert(0, REFERENCE)
    names = models + others
    t0 = time.perf_counter()
    rows = [run_miralike(name, seed, args) if week is None else
            run_week(week, name, seed, args.data, rt_percent=args.rt_percent, tau=args.tau, workload=wl)
            for seed in seeds for name in names]
    wall = time.perf_counter() - t0
    machine = "" if week is not None else f"; machine {Path(args.machine).name}"
    print(f"{where}{machine}; {args.rt_percent:g} % RTJs (random); bounded slowdown "
          f"τ = {args.tau} s (seed 002 form); agent under JIT checkpointing")
    label = unique_labels(names)
    width = max(22, *(len(v) + 1 for v in label.values()))
    print(f"{'seed':>5} {'policy':<{width}}{'RTJ bsld':>9}{'BJ bsld':>9}{'RTJ SD':>8}{'BJ SD':>8}{'util':>7}{'preempt':>8}"
          f"{'n RT/BJ':>10}{'s':>6}")
    for r in rows:
        print(f"{r['seed']:>5} {label[r['policy']]:<{width}}{r['rtj_bsld']:9.3f}{r['bj_bsld']:9.3f}{r['rtj_sd']:8.3f}"
              f"{r['bj_sd']:8.3f}{r['utilization']:7.3f}{r['preemptions']:8d}{r['n_rt']:>5}/{r['n_bj']:<4}"
              f"{r['wall_s']:6.1f}")
    means = {}
    for name in names:
        sel = [r for r in rows if r["policy"] == name]
        means[name] = {k: sum(r[k] for r in sel) / len(sel) for k in ("rtj_bsld", "bj_bsld", "rtj_sd", "bj_sd",
                                                                        "utilization")}
    ref = means[REFERENCE]
    print(f"means over {len(seeds)} seeds ({', '.join(map(str, seeds))}); ratio = policy / {REFERENCE}")
    for name in names:
        m = means[name]
        print(f"      {label[name]:<{width}}RTJ bsld {m['rtj_bsld']:8.3f} ({m['rtj_bsld'] / ref['rtj_bsld']:5.2f}x)  "
              f"BJ bsld {m['bj_bsld']:8.3f} ({m['bj_bsld'] / ref['bj_bsld']:5.2f}x)  util {m['utilization']:.3f}")
    paired = {name: paired_over_seeds(rows, name) for name in names if name != REFERENCE}
    print(f"paired differences policy − {REFERENCE} over the seeds (95 % bootstrap)")
    for name, rec in paired.items():
        n = len(rec["seeds"])
        print(f"      {label[name]:<{width}}ΔRTJ {_interval(rec['rtj_bsld'])}  ΔBJ {_interval(rec['bj_bsld'])}  "
              f"better on both on {rec['better_on_both']} of {n}; BJ above {REFERENCE}'s on {rec['bj_worse']} of {n}"
              + (f" (at most +{rec['bj_worse_max']:.3f})" if rec["bj_worse"] else ""))
    verdicts = {}
    for name in models:
        m = means[name]
        ok_rt, ok_bj = m["rtj_bsld"] <= ref["rtj_bsld"], m["bj_bsld"] <= ref["bj_bsld"]
        verdicts[name] = ok_rt and ok_bj
        print(f"verdict {label[name]}: RTJ {'met' if ok_rt else 'NOT met'} ({m['rtj_bsld']:.3f} vs "
              f"{ref['rtj_bsld']:.3f}), BJ {'met' if ok_bj else 'NOT met'} ({m['bj_bsld']:.3f} vs {ref['bj_bsld']:.3f})"
              f" -> {'PASS' if verdicts[name] else 'FAIL'}")
    print(f"wall time: {len(rows)} runs in {wall:.1f} s")
    if args.json:
        record = {"where": where, "rows": rows, "means": means, "paired": paired, "verdicts": verdicts, "wall_s": wall}
        atomic_write_text(args.json, json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(one_line_errors("bench_rtmix_wk1", main))
