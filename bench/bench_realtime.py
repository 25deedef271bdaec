"""Benchmark of the real-time study (seed 002 §7) on Mira wk1.

  (a) one simulation of Mira wk1 with 10 % RTJs (random marking, seed 0) under JIT-CKPT + WCJS
      (scheme ``wcjs-jit``) on the real 294-block partition file: simulation time (best of
      --repeat; parsing excluded), target < 2 s;
  (b) the whole paper grid (experiments/paper_wk1.toml) with 5 seeds, 2 worker processes:
      wall time, target < 5 min.  ``--sample K`` runs K runs spread evenly over the grid and
      extrapolates (K runs' wall time x total / K), saying so;
  (c) the headline comparison (10 % RTJs, baseline -> wcjs-jit, random marking) from the runs of
      (b), or from experiments/headline_wk1.toml when (b) was sampled, beside the paper's numbers.

    python bench/bench_realtime.py [--repeat 3] [--jobs 2] [--sample K | --skip-grid] [--out DIR]

Results of (b)/(c) go to --out (default: a temporary folder; an existing folder resumes).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rtsched.experiments import headline_table, load_grid, load_results, run_grid, shared_data_dir  # noqa: E402

TARGET_ONE = 2.0  # s, (a)
TARGET_GRID = 300.0  # s, (b)


def bench_one(repeat: int) -> None:
    from heuristics.registry import scheme
    from rtsched.io import read_workload
    from rtsched.machines import AlignedMira, load_cobalt_partitions
    from rtsched.rtmarking import RtMarking, mark_realtime
    from rtsched.sim.core import Simulator

    data = shared_data_dir()
    wl = read_workload(str(data / "traces" / "mira" / "wk1.log"), "cobalt")
    marked = mark_realtime(wl, RtMarking(percent=10, mode="random", seed=0))
    n_rt = sum(1 for j in marked.jobs if j.kind == "rt")
    for label, machine in (("real partitions (294)", load_cobalt_partitions(str(data / "mira" / "mira-partitions.xml"))),
                           ("aligned 96-block", AlignedMira(96))):
        best = None
        for _ in range(repeat):
            policy, ckpt = scheme("wcjs-jit")
            t0 = time.perf_counter()
            res = Simulator(marked, machine, checkpoint=ckpt).run(policy)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        npre = sum(o.n_preemptions for o in res.outcomes)
        print(f"(a) wk1 {len(marked)} jobs ({n_rt} RTJs), wcjs-jit, {label}: {best:.3f} s "
              f"({len(marked) / best:,.0f} jobs/s), {npre} preemptions; target < {TARGET_ONE:g} s: "
              f"ratio {best / TARGET_ONE:.2f} {'PASS' if best < TARGET_ONE else 'FAIL'}")


def bench_grid(jobs: int, sample: int | None, out: Path) -> bool:
    grid = load_grid(REPO / "experiments" / "paper_wk1.toml")
    grid.seeds = list(range(5))
    grid.name = "paper_wk1_5seeds"
    runs = grid.expand()
    only = None
    if sample and sample < len(runs):
        step = len(runs) / sample
        only = [runs[int(i * step)].key for i in range(sample)]
    t0 = time.perf_counter()
    summary = run_grid(grid, out_dir=out, jobs=jobs, progress=sys.stderr.isatty(), only=only)
    wall = time.perf_counter() - t0
    ran = summary["completed"] + len(summary["failed"])
    if summary["skipped"]:
        print(f"(b) note: {summary['skipped']} runs were already finished in {out} and were not re-run")
    if ran == 0:
        print(f"(b) paper grid on wk1, 5 seeds: nothing left to run in {out}; use a fresh --out to time it")
    elif only is None:
        print(f"(b) paper grid on wk1, 5 seeds: {len(runs)} runs ({ran} run now, {len(summary['failed'])} failed) "
              f"on {jobs} workers: {wall:.1f} s; target < {TARGET_GRID:g} s: ratio {wall / TARGET_GRID:.2f} "
              f"{'PASS' if wall < TARGET_GRID else 'FAIL'}")
    else:
        est = wall * len(runs) / max(ran, 1)
        print(f"(b) paper grid on wk1, 5 seeds: {len(runs)} runs; SAMPLED {ran} runs spread over the grid on {jobs} "
              f"workers in {wall:.1f} s ({wall / max(ran, 1):.2f} s/run wall) -> extrapolated {est:.0f} s for the grid; "
              f"target < {TARGET_GRID:g} s: ratio {est / TARGET_GRID:.2f} (extrapolated)")
    selected = set(only) if only else {r.key for r in runs}
    cpu = _cpu_seconds(out, selected)  # over every selected run, this call's or earlier
    if cpu is not None:
        n = len(selected)
        print(f"(b) CPU time of the {n} runs measured in their workers: {cpu:.1f} s ({cpu / n:.2f} s/run) -> "
              f"{cpu * len(runs) / n / jobs:.0f} s for the {len(runs)}-run grid on {jobs} otherwise idle cores "
              f"(estimate; load average now {os.getloadavg()[0]:.1f})")
    for f in summary["failed"][:5]:
        print(f"    failed {f['key']} {f['label']}: {f['error'].splitlines()[0]}")
    return only is None


def _cpu_seconds(out: Path, keys: set[str]) -> float | None:
    """Summed per-run CPU seconds (``timings.cpu_s``) of the runs ``keys`` stored in ``out``."""
    frame = load_results(out)
    frame = frame[frame["key"].isin(keys)]
    if "cpu_s" not in frame.columns or frame["cpu_s"].isna().any() or frame.empty:
        return None
    return float(frame["cpu_s"].sum())


def print_headline(out: Path) -> None:
    """(c): the headline table of every trace (partition model) in ``out``."""
    traces = list(dict.fromkeys(load_results(out)["trace"]))
    for trace in traces:
        head = headline_table(out, trace=trace)
        if head.empty:
            print(f"(c) headline, {trace}: no baseline/wcjs-jit runs at 10 % RTJs")
            continue
        at = head.attrs
        print(f"(c) headline, trace {trace}, {at['rt_percent']} % RTJs ({at['marking']}), {at['baseline']} -> "
              f"{at['heuristic']}, mean bounded slowdown τ = 600 s (plain slowdown SD in brackets); "
              f"runs baseline/heuristic = {head['runs'].iloc[0]}")
        for _, r in head.iterrows():
            paper = (f"paper {r['paper_baseline']:.2f} -> {r['paper_heuristic']:.2f} ({r['paper_change_%']:+.1f} %)"
                     if r["paper_baseline"] is not None and r["paper_baseline"] == r["paper_baseline"] else "paper –")
            print(f"    {r['kind']:>3} {r['category']:<12} measured {r['baseline_bsld']:.2f} -> {r['heuristic_bsld']:.2f} "
                  f"({r['change_bsld_%']:+.1f} %) [SD {r['baseline_sd']:.2f} -> {r['heuristic_sd']:.2f}]   {paper}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sample", type=int, help="run only K runs of the grid, evenly spread, and extrapolate")
    ap.add_argument("--skip-grid", action="store_true", help="only (a) and the headline grid")
    ap.add_argument("--out", help="results folder for (b) (default: a temporary folder)")
    args = ap.parse_args()
    data = shared_data_dir()
    print(f"# bench_realtime  python {platform.python_version()}  {platform.machine()}  cpus={os.cpu_count()}  "
          f"repeat={args.repeat}  load average {os.getloadavg()[0]:.1f} (other processes share the cores)")
    if not (data / "traces" / "mira" / "wk1.log").exists():
        print(f"skipped: Mira wk1 not found under {data} (set $SHARED_DATA)")
        return
    bench_one(args.repeat)
    tmp = None
    if args.out:
        out = Path(args.out)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="bench_realtime_")
        out = Path(tmp.name)
    full = False
    if not args.skip_grid:
        full = bench_grid(args.jobs, args.sample, out / "paper_wk1_5seeds")
    if full:
        print_headline(out / "paper_wk1_5seeds")
    else:
        t0 = time.perf_counter()
        s = run_grid(REPO / "experiments" / "headline_wk1.toml", out_dir=out / "headline_wk1", jobs=args.jobs,
                     progress=False)
        print(f"(c) headline grid: {s['runs']} runs in {time.perf_counter() - t0:.1f} s on {args.jobs} workers")
        print_headline(out / "headline_wk1")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
