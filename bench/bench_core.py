"""Benchmark of the event core (issue 2): jobs simulated per second, and scaling 10k -> 100k.

Prints, measured side by side in one run on this machine:
  1. FCFS+EASY on lublin_256.swf (10,000 jobs, 256 processors): rtsched's core vs the plain
     heap loop of bench/plain_easy.py (ratio), and a check that both produce the same start times;
  2. Mira wk1 (Cobalt log) on the aligned 96-block model and on the real partition file, wfp2+ff;
  3. generated Lublin traces (rtsched.generators.generate_lublin, seed 1) of 10k and 100k jobs, core
     vs the plain loop on each: time ratio 100k / 10k (near-linear means ≈ 10).
Targets: 10k Lublin < 1 s; 100k < 10 s (simulation only, start-up and parsing excluded).

    python bench/bench_core.py [--repeat 3]
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
sys.path.insert(0, str(REPO / "bench"))

from plain_easy import plain_fcfs_easy  # noqa: E402

from heuristics import batch_policy  # noqa: E402
from rtsched.machines import AlignedMira, FlatCluster, load_cobalt_partitions  # noqa: E402
from rtsched.sim.core import Simulator  # noqa: E402

DATA = REPO.parent / "shared" / "data"


def best_of(repeat: int, fn):
    best = None
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best, out


def sim_time(workload, machine, policy_args, repeat, record=True):
    def go():
        return Simulator(workload, machine, record_schedule=record).run(batch_policy(*policy_args))
    return best_of(repeat, go)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big", type=int, default=100_000, help="jobs in the scaling run")
    args = ap.parse_args()
    from rtsched.io.swf import SwfOptions, read_swf

    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"# bench_core  python {platform.python_version()}  {platform.machine()}  {os.cpu_count()} CPUs  "
          f"load average {load}  repeat={args.repeat} (best of)")
    lublin = DATA / "traces" / "swf" / "lublin_256.swf"
    if lublin.exists():
        wl = read_swf(str(lublin), SwfOptions())
        m = FlatCluster(256)
        t_core, res = sim_time(wl, m, ("fcfs", "easy"), args.repeat)
        rows = [(j.id, j.submit, j.runtime, j.walltime, j.nodes) for j in wl.jobs]
        t_plain, starts = best_of(args.repeat, lambda: plain_fcfs_easy(rows, 256))
        same = all(starts[o.job.id] == o.first_start for o in res.outcomes)
        print(f"lublin_256.swf FCFS+EASY: {len(wl)} jobs  core {t_core:.3f} s ({len(wl) / t_core:,.0f} jobs/s)  "
              f"plain loop {t_plain:.3f} s  ratio core/plain {t_core / t_plain:.2f}  same start times: {same}  "
              f"target < 1 s: {'PASS' if t_core < 1 else 'FAIL'}")
    else:
        print(f"lublin_256.swf: skipped ({lublin} absent)")
    wk1 = DATA / "traces" / "mira" / "wk1.log"
    if wk1.exists():
        from rtsched.io.cobalt import read_cobalt

        wl = read_cobalt(str(wk1))
        for label, machine in (("aligned 96-block", AlignedMira(96)),
                               ("real partitions (294)", load_cobalt_partitions(str(DATA / "mira" / "mira-partitions.xml")))):
            t, _ = sim_time(wl, machine, ("wfp2", "ff"), args.repeat)
            t_easy, _ = sim_time(wl, machine, ("fcfs", "easy"), args.repeat)
            print(f"Mira wk1 on {label}: {len(wl)} jobs  wfp2+ff {t:.3f} s ({len(wl) / t:,.0f} jobs/s)  "
                  f"fcfs+easy {t_easy:.3f} s")
    from rtsched.generators import generate_lublin

    t0 = time.perf_counter()
    small = generate_lublin(n_jobs=10_000, nodes=256, seed=1)
    t_gen_small = time.perf_counter() - t0
    t0 = time.perf_counter()
    big = generate_lublin(n_jobs=args.big, nodes=256, seed=1)
    t_gen_big = time.perf_counter() - t0
    print(f"generate_lublin: 10k jobs {t_gen_small:.3f} s, {args.big // 1000}k jobs {t_gen_big:.3f} s (not in the timings below)")
    m = FlatCluster(256)
    times = {}
    for label, wl, repeat in (("10k", small, args.repeat), (f"{args.big // 1000}k", big, 1)):
        t_core, res = sim_time(wl, m, ("fcfs", "easy"), repeat)
        rows = [(j.id, j.submit, j.runtime, j.walltime, j.nodes) for j in wl.jobs]
        t_plain, starts = best_of(repeat, lambda: plain_fcfs_easy(rows, 256))
        same = all(starts[o.job.id] == o.first_start for o in res.outcomes)
        times[label] = (t_core, t_plain)
        print(f"generated Lublin {label} FCFS+EASY: core {t_core:.3f} s ({len(wl) / t_core:,.0f} jobs/s)  "
              f"plain loop {t_plain:.3f} s  ratio core/plain {t_core / t_plain:.2f}  same start times: {same}")
    (t_small, p_small), (t_big, p_big) = times["10k"], times[f"{args.big // 1000}k"]
    print(f"scaling 10k -> {args.big // 1000}k: core x{t_big / t_small:.1f}, plain loop x{p_big / p_small:.1f} "
          f"(linear = {args.big / 10_000:.0f})  target 10k < 1 s: {'PASS' if t_small < 1 else 'FAIL'}  "
          f"target {args.big // 1000}k < 10 s: {'PASS' if t_big < 10 else 'FAIL'}")

if __name__ == "__main__":
    main()
