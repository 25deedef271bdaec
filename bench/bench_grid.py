"""Experiment-grid backends side by side (issue 15): one 200-run grid on the local backend with 1
and 2 worker processes, on Ray with 2 workers (a local Ray instance), and as 2 shards (two
``rtsched experiment run --shard I/2 -j 1`` processes, each in its own session as two batch jobs
would be; their start-up is in their wall time).

Prints, per backend: wall time, runs/s, the speed-up against 1 local worker (the baseline), and
the overhead per run = (wall x workers - sum of the runs' own times) / runs, where a run's own
time is what ``run_task`` measured around the pipeline and its writes (timings.total_s in each
record); and the CPU overhead per run = (CPU seconds of this process and its workers -- for Ray,
of every process of the Ray instance -- minus the runs' own CPU seconds) / runs, which other load
on the machine inflates much less than wall times.  The cases alternate over ``--repeat`` rounds
(the median is shown), so that a change in the machine's load hits them alike; the Ray instance
is started afresh in each round (its start time is shown apart).  Checks that every result folder
holds the same summary.parquet bytes.  Also times the expansion and the status check of a
10,000-run grid (what a cluster launch does first).

The grid: the first 300 jobs of the shipped Mira-like week on the aligned Mira model, 10 % RTJs,
5 batch policies x 2 backfilling rules x 20 seeds = 200 runs of about 0.03 s of CPU each (small runs, so
that the per-run overhead shows).

    python bench/bench_grid.py [--out /tmp/bench_grid] [--repeat 3] [--skip-ray]
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rtsched import pipeline  # noqa: E402
from rtsched.experiments import expand_grid, load_grid, run_grid, store  # noqa: E402
from rtsched.experiments.results import iter_records  # noqa: E402
from rtsched.experiments.runner import plan  # noqa: E402

GRID = """
name = "bench-grid"
[trace]
name = "miralike300"
path = "{trace}"
machine = "mira"
first_n = 300
[grid]
policy = ["fcfs", "sjf", "f1", "wfp2", "wfp3"]
backfill = ["none", "easy"]
rt_percent = 10
seeds = {seeds}
"""


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (the pool's workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _tree_cpu_seconds() -> float | None:
    """CPU seconds of this process and its living descendants (a local Ray instance's processes)."""
    try:
        import psutil
    except ImportError:
        return None
    me = psutil.Process()
    total = 0.0
    for p in [me] + me.children(recursive=True):
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def run_one(grid: Path, out: Path, backend: str, jobs: int) -> dict:
    if out.exists():
        shutil.rmtree(out)
    pipeline.clear_caches()
    measure = _cpu_seconds if backend == "local" else _tree_cpu_seconds  # local workers end before the end
    cpu0 = measure()
    t = time.perf_counter()
    s = run_grid(grid, out_dir=out, jobs=jobs, progress=False, backend=backend)
    wall = time.perf_counter() - t
    cpu1 = measure()
    total_cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
    if s["failed"] or s["completed"] != s["runs"]:
        raise SystemExit(f"{backend} -j {jobs}: {len(s['failed'])} failed, {s['completed']}/{s['runs']} completed")
    own = sum(r["timings"]["total_s"] for r in iter_records(out))
    cpu = sum(r["timings"].get("cpu_s", 0.0) for r in iter_records(out))
    return {"wall": wall, "own": own, "cpu": cpu, "runs": s["runs"], "jobs": jobs, "total_cpu": total_cpu}


def run_shards(grid: Path, out: Path, n: int) -> dict:
    """``n`` shard processes of the grid on one folder, started together, each -j 1."""
    if out.exists():
        shutil.rmtree(out)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cpu0 = _cpu_seconds()
    t = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "rtsched", "experiment", "run", str(grid), "--out", str(out),
                               "-j", "1", "--no-progress", "--shard", f"{i}/{n}"], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(n)]
    codes = [p.wait() for p in procs]
    wall = time.perf_counter() - t
    if any(codes):
        raise SystemExit(f"shards: exit codes {codes}")
    records = list(iter_records(out))
    return {"wall": wall, "own": sum(r["timings"]["total_s"] for r in records),
            "cpu": sum(r["timings"].get("cpu_s", 0.0) for r in records), "runs": len(records), "jobs": n,
            "total_cpu": _cpu_seconds() - cpu0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/bench_grid")
    ap.add_argument("--seeds", type=int, default=20, help="seeds (runs = 10 x seeds; default 20 -> 200 runs)")
    ap.add_argument("--repeat", type=int, default=3, help="alternating rounds (default 3; the median is shown)")
    ap.add_argument("--skip-ray", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    grid = out / "grid.toml"
    grid.write_text(GRID.format(trace=(REPO / "traces" / "mira_like_week.swf").as_posix(), seeds=args.seeds))
    load = os.getloadavg()[0]
    print(f"# bench_grid  python {platform.python_version()}  {platform.machine()}  cpus={os.cpu_count()}  "
          f"load average {load:.1f} at start")
    n = len(expand_grid(grid))
    try:
        import ray
    except ImportError:
        ray = None
        print("ray: not installed (pip install -e '.[ray]'); skipped")
    cases = [("local", 1), ("local", 2)] + ([("ray", 2)] if ray is not None and not args.skip_ray else [])
    cases.append(("shards", 2))
    rounds: dict[tuple, list[dict]] = {c: [] for c in cases}
    ray_starts = []
    for _ in range(args.repeat):
        for backend, jobs in cases:
            if backend == "ray":
                import logging

                t = time.perf_counter()
                ray.init(num_cpus=jobs, include_dashboard=False, object_store_memory=256 * 1024 * 1024,
                         logging_level=logging.WARNING, log_to_driver=False)
                ray_starts.append(time.perf_counter() - t)
                try:
                    rounds[(backend, jobs)].append(run_one(grid, out / f"{backend}-{jobs}", backend, jobs))
                finally:
                    ray.shutdown()
            elif backend == "shards":
                rounds[(backend, jobs)].append(run_shards(grid, out / f"{backend}-{jobs}", jobs))
            else:
                rounds[(backend, jobs)].append(run_one(grid, out / f"{backend}-{jobs}", backend, jobs))
    results = {c: min(rs, key=lambda r: abs(r["wall"] - statistics.median(x["wall"] for x in rs)))
               for c, rs in rounds.items()}  # the round with the median wall time
    base = results[("local", 1)]["wall"]
    print(f"grid: {n} runs (5 policies x 2 backfilling x {args.seeds} seeds; 300 jobs each, aligned Mira, 10 % RTJs); "
          f"median of {args.repeat} alternating rounds")
    for (backend, jobs), r in results.items():
        overhead = (r["wall"] * jobs - r["own"]) / r["runs"]
        cpu_over = (f"  CPU overhead {(r['total_cpu'] - r['cpu']) / r['runs'] * 1000:.0f} ms/run"
                    if r["total_cpu"] is not None else "")
        walls = ", ".join(f"{x['wall']:.1f}" for x in rounds[(backend, jobs)])
        name = f"{backend} -j {jobs}" if backend != "shards" else f"{jobs} shards -j 1"
        print(f"{name:13s}: wall {r['wall']:6.1f} s ({walls})  {r['runs'] / r['wall']:5.1f} runs/s  "
              f"speed-up vs local -j 1: {base / r['wall']:.2f}x  run time {r['own'] / r['runs'] * 1000:.0f} ms/run "
              f"(CPU {r['cpu'] / r['runs'] * 1000:.0f} ms)  overhead {overhead * 1000:+.0f} ms/run{cpu_over}")
    if ray_starts:
        print(f"ray: starting the local instance took {statistics.median(ray_starts):.1f} s (median; not in the "
              "wall times above)")
    summaries = {k: (out / f"{k[0]}-{k[1]}" / store.SUMMARY).read_bytes() for k in results}
    same = len(set(summaries.values())) == 1
    print(f"summary.parquet byte-identical across {', '.join(f'{b}-{j}' for b, j in results)}: {same}")
    # a 10,000-run grid: expansion and status (every run's files checked), as a cluster launch does
    big = out / "big.toml"
    big.write_text(GRID.format(trace=(REPO / "traces" / "mira_like_week.swf").as_posix(), seeds=1000))
    t = time.perf_counter()
    runs = load_grid(big).expand()
    t_expand = time.perf_counter() - t
    t = time.perf_counter()
    frame = plan(big, out / "local-1")
    t_plan = time.perf_counter() - t
    print(f"10,000-run grid: expansion {t_expand:.2f} s ({len(runs)} runs), status of every run {t_plan:.2f} s "
          f"({int((frame['status'] == 'done').sum())} done)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
