"""Simulation at scale (issue 25), measured side by side in one run.

1. Generated Lublin traces (``rtsched traces generate --model lublin --jobs N --seed 1``), FCFS +
   EASY on ``flat:256``: rtsched's run pipeline (read, simulate, validate, metrics: ``execute`` and
   the summary, as ``rtsched simulate --json``) against the plain heap-based FCFS+EASY script of
   ``bench/plain_easy_script.py`` (read, simulate, mean wait), each N alternating the two, each run
   in its own fresh process.  Printed per N (with ``--repeat`` > 1: the best of each side, then the
   ratios of every repeat's pair, the spread): simulation seconds of each side and their ratio
   (target <= 1.2 at 500,000 jobs), the whole process's wall seconds (interpreter start to exit;
   target <= 1.5), peak resident memory of each process (target: rtsched <= 2x the script's,
   <= 0.6 KB per job), rtsched's simulation cost per job (target: flat within 15 % from 10,000 to
   1,000,000 jobs).  Both sides must report the same mean wait (asserted).
2. A generated Mira-like year (``traces generate --model miralike --days 365 --seed 1``) on
   ``mira:96`` with 10 % RTJs under ``wcjs-jit`` (``rtsched simulate`` as a whole process): its
   time and peak memory (target < 60 s).
3. Readers: ``read_swf`` of the 500,000-job trace against ``pandas.read_csv`` of the same file
   with the same dtypes (int64 columns), best of ``--repeat`` in one process.

    python bench/bench_scale.py [--jobs 10000,50000,200000,500000,1000000] [--repeat 1]
        [--dir /tmp/rtsched-scale] [--no-mira] [--no-readers]

The traces are generated into ``--dir`` once (kept for later runs).  On a shared machine compare
the ratios of one run; CPU seconds are printed beside wall seconds (waiting for a core does not
count in them).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"


# --------------------------------------------------------------------------------- workers
def worker_plain(trace: str) -> dict:
    """The plain script's steps, timed: read, simulate, mean wait."""
    sys.path.insert(0, str(BENCH))
    from plain_easy import plain_fcfs_easy
    from plain_easy_script import read_jobs

    clock = time.process_time
    t0 = clock()
    jobs = read_jobs(trace)
    t1 = clock()
    starts = plain_fcfs_easy(jobs, 256)
    t2 = clock()
    waits = [starts[j[0]] - j[1] for j in jobs]
    mean_wait = sum(waits) / len(waits)
    t3 = clock()
    return {"jobs": len(jobs), "mean_wait": mean_wait, "read_s": t1 - t0, "simulate_s": t2 - t1,
            "metrics_s": t3 - t2}


def worker_rtsched(trace: str) -> dict:
    """``rtsched simulate TRACE --machine flat:256 --policy fcfs --backfill easy --json``'s work,
    timed by the pipeline: read, simulate, validate, the summary."""
    import types

    import rtsched.pipeline as pipeline
    from rtsched.pipeline import RunSpec, execute

    # The pipeline's stage timings in CPU seconds (this process only): on a shared, loaded machine
    # waiting for a core would otherwise count.
    pipeline.time = types.SimpleNamespace(perf_counter=time.process_time)
    t0 = time.process_time()
    spec = RunSpec(trace=trace, machine="flat:256", policy="fcfs", policy_options={"backfill": "easy"})
    record = execute(spec)
    text = json.dumps(record.to_json())
    t = record.timings
    return {"jobs": record.provenance["jobs"], "mean_wait": json.loads(text)["summary"]["all"]["mean_wait"],
            "read_s": t["load_s"] + t["setup_s"], "simulate_s": t["simulate_s"], "validate_s": t.get("validate_s", 0.0),
            "metrics_s": t.get("metrics_s", 0.0), "execute_s": time.process_time() - t0}


def worker_mira(trace: str) -> dict:
    """``rtsched simulate TRACE --machine mira:96 --rt-percent 10 --scheme wcjs-jit --json``'s work."""
    import types

    import rtsched.pipeline as pipeline
    from rtsched.pipeline import RunSpec, execute

    pipeline.time = types.SimpleNamespace(perf_counter=time.process_time)  # CPU seconds (worker_rtsched)

    record = execute(RunSpec(trace=trace, machine="mira:96", rt_percent=10, scheme="wcjs-jit"))
    json.dumps(record.to_json())
    t = record.timings
    return {"jobs": record.provenance["jobs"], "simulate_s": t["simulate_s"], "validate_s": t.get("validate_s", 0.0)}


def run_worker(kind: str, trace: str) -> dict:
    """One worker in a fresh process: its report, wall and CPU seconds and peak resident memory."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, trace]
    t = time.perf_counter()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO, check=True).stdout
    wall = time.perf_counter() - t
    report = json.loads(out.strip().splitlines()[-1])
    report["wall_s"] = wall
    report.update(report.pop("_usage"))
    return report


def _self_usage() -> dict:
    """CPU s and peak resident MB of this process.  The peak is VmHWM where /proc has it: Linux keeps
    ``ru_maxrss`` across exec, so a worker would report its parent's resident set at the fork when
    that was larger (the parent holds the readers part's 500,000-job trace when the Mira year runs)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    peak_kib = r.ru_maxrss  # KiB on Linux
    try:
        with open("/proc/self/status") as fh:
            peak_kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    return {"cpu_s": r.ru_utime + r.ru_stime, "peak_mb": peak_kib / 1024}


def generate(directory: Path, model: str, size: int) -> Path:
    """The trace of ``model`` (lublin: ``size`` jobs; miralike: ``size`` days), generated once."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (f"lublin_{size}.swf" if model == "lublin" else f"miralike_{size}d.swf")
    if not path.exists():
        opt = ["--jobs", str(size)] if model == "lublin" else ["--days", str(size)]
        subprocess.run([sys.executable, "-m", "rtsched", "traces", "generate", "--model", model, *opt, "--seed", "1",
                        "--out", str(path)], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return path


# --------------------------------------------------------------------------------- parts
def part_scaling(sizes: list[int], directory: Path, repeat: int) -> None:
    print("## FCFS + EASY on flat:256, generated Lublin traces (each side a fresh process; best of "
          f"{repeat} by simulation time)")
    print("simulation and stage times: CPU s of each process; whole: CPU s of the process from start to exit "
          "(wall s in brackets)")
    print(f"{'jobs':>9} {'sim s':>7} {'plain':>7} {'ratio':>6} | {'whole s':>7} {'plain':>7} {'ratio':>6} | "
          f"{'peak MB':>7} {'plain':>6} {'ratio':>5} {'KB/job':>6} | {'us/job':>6} {'plain':>6} | "
          f"rtsched read/validate/metrics s")
    per_job = {}
    for n in sizes:
        trace = str(generate(directory, "lublin", n))
        best: dict[str, dict] = {}
        pairs: list[tuple[float, float]] = []  # (simulation ratio, whole ratio) of each repeat's pair
        for _ in range(repeat):
            pair = {}
            for kind in ("rtsched", "plain"):
                r = pair[kind] = run_worker(kind, trace)
                if kind not in best or r["simulate_s"] < best[kind]["simulate_s"]:
                    best[kind] = r
            pairs.append((pair["rtsched"]["simulate_s"] / pair["plain"]["simulate_s"],
                          pair["rtsched"]["cpu_s"] / pair["plain"]["cpu_s"]))
        ours, plain = best["rtsched"], best["plain"]
        assert ours["jobs"] == plain["jobs"] == n, (ours["jobs"], plain["jobs"], n)
        assert abs(ours["mean_wait"] - plain["mean_wait"]) < 1e-6 * max(1.0, plain["mean_wait"]), \
            f"different schedules: mean wait {ours['mean_wait']} vs {plain['mean_wait']}"
        per_job[n] = ours["simulate_s"] / n
        print(f"{n:>9,} {ours['simulate_s']:7.2f} {plain['simulate_s']:7.2f} "
              f"{ours['simulate_s'] / plain['simulate_s']:6.2f} | {ours['cpu_s']:7.2f} {plain['cpu_s']:7.2f} "
              f"{ours['cpu_s'] / plain['cpu_s']:6.2f} [{ours['wall_s']:.1f} / {plain['wall_s']:.1f}] | {ours['peak_mb']:7.0f} {plain['peak_mb']:6.0f} "
              f"{ours['peak_mb'] / plain['peak_mb']:5.2f} {ours['peak_mb'] * 1024 / n:6.2f} | "
              f"{per_job[n] * 1e6:6.1f} {plain['simulate_s'] / n * 1e6:6.1f} | {ours['read_s']:.2f} / "
              f"{ours['validate_s']:.2f} / {ours['metrics_s']:.2f}   same mean wait {ours['mean_wait']:.1f}")
        if repeat > 1:  # the spread: each repeat's rtsched run against the plain run beside it
            sims, wholes = sorted(p[0] for p in pairs), sorted(p[1] for p in pairs)
            print(f"{'':>9} ratios of the {repeat} pairs: simulation {' '.join(f'{x:.2f}' for x in sims)}, "
                  f"whole {' '.join(f'{x:.2f}' for x in wholes)}")
        sys.stdout.flush()
    if len(per_job) > 1:
        lo, hi = min(per_job.values()), max(per_job.values())
        print(f"rtsched simulation cost per job: {lo * 1e6:.1f} .. {hi * 1e6:.1f} us (max/min {hi / lo:.2f}; "
              "target <= 1.15)")


def part_mira(directory: Path) -> None:
    trace = str(generate(directory, "miralike", 365))
    r = run_worker("mira", trace)
    print(f"## Mira-like year (miralike --days 365 --seed 1), mira:96, 10 % RTJs, wcjs-jit: {r['jobs']:,} jobs, "
          f"whole process {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU (target < 60 s), peak memory "
          f"{r['peak_mb']:.0f} MB; simulate {r['simulate_s']:.1f} s, validate {r['validate_s']:.1f} s")


def part_readers(directory: Path, repeat: int) -> None:
    import numpy as np
    import pandas as pd

    from rtsched.io.swf import SwfOptions, read_swf

    trace = str(generate(directory, "lublin", 500_000))

    def best(fn) -> float:  # CPU s of this process
        out = None
        for _ in range(repeat):
            t = time.process_time()
            fn()
            dt = time.process_time() - t
            out = dt if out is None else min(out, dt)
        return out

    t_pd = best(lambda: pd.read_csv(trace, sep=r"\s+", comment=";", header=None, dtype=np.int64))
    t_ours = best(lambda: read_swf(trace, SwfOptions()))
    print(f"## Readers, 500,000-line SWF (best of {repeat}, CPU s): read_swf {t_ours:.2f} s, pandas.read_csv "
          f"(18 int64 columns) {t_pd:.2f} s, ratio {t_ours / t_pd:.2f} (target <= 1)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="10000,50000,200000,500000,1000000", help="trace sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "rtsched-scale"))
    ap.add_argument("--no-mira", action="store_true")
    ap.add_argument("--no-readers", action="store_true")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)  # internal: KIND TRACE
    args = ap.parse_args(argv)
    if args.worker:
        kind, trace = args.worker
        report = {"plain": worker_plain, "rtsched": worker_rtsched, "mira": worker_mira}[kind](trace)
        report["_usage"] = _self_usage()
        print(json.dumps(report))
        return 0
    directory = Path(args.dir)
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"# bench_scale  {time.strftime('%Y-%m-%d %H:%M')}  python {platform.python_version()}  "
          f"{os.cpu_count()} CPUs  load average {load}")
    part_scaling([int(s) for s in args.jobs.split(",")], directory, args.repeat)
    if not args.no_readers:
        part_readers(directory, max(2, args.repeat))
    if not args.no_mira:
        part_mira(directory)
    print(f"# load average at the end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
