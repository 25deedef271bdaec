"""Benchmark of the trace readers (issue 12): a 1,000,000-job SWF in < 5 s and < 500 MB.

Prints, measured side by side in one run on this machine, for two generated 1M-job SWF files:
  * "lublin": the Lublin–Feitelson model (rtsched.generators.generate_lublin, seed 1, 256
    processors) written by write_swf: whole numbers, requested time -1, as the RL papers' traces;
  * "archive": an archive-like log (synthetic, seed 1): fields padded to columns as in the
    Parallel Workloads Archive logs, and a fractional average CPU time on every other line, as in
    SDSC-SP2;
the wall time and the peak memory (ru_maxrss of a fresh process) of
  * rtsched.io.read_swf now, and of the reader at the baseline commit (default: the branch point
    of the streaming reader, aa802d3), run from a `git archive` of that commit's rtsched/;
  * read_rl_trace now (through rtsched.io) and at the baseline (its own parser then), on "lublin".
Each reading runs in its own process (`python -c`), timed from just before the call to just after;
the peak memory is the process's VmHWM, "imports" its value after the imports, before reading;
CPU is the process's CPU time over the same span (on a loaded machine the wall time is longer).
Both versions must give the same jobs (a SHA-256 of their fields).

    python bench/bench_readers.py [--jobs 1000000] [--baseline aa802d3] [--repeat 1] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGET_S = 5.0
TARGET_MB = 500.0

# The measurement each child process makes (PYTHONPATH picks the rtsched it imports).
CHILD = r"""
import hashlib, json, resource, sys, time
import numpy as np
kind, path = sys.argv[1], sys.argv[2]
if kind == "swf":
    from rtsched.io import read_swf as read
else:
    from rtsched.rl.trace import read_rl_trace as read

def peak_kb():
    # VmHWM: this process's own peak (ru_maxrss would also count the parent's peak before exec)
    try:
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

rss0 = peak_kb()
t0, c0 = time.perf_counter(), time.process_time()
out = read(path)
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = peak_kb()
jobs = out.jobs
cols = [np.fromiter((getattr(j, f) for j in jobs), np.int64, len(jobs))
        for f in ("id", "submit", "runtime", "walltime", "nodes", "user", "group")]
if kind == "rl":
    cols += [np.asarray(getattr(out, c), np.int64) for c in ("procs", "memory", "executable")]
digest = hashlib.sha256(b"".join(c.tobytes() for c in cols)).hexdigest()[:16]
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": peak / 1024, "imports_mb": rss0 / 1024, "jobs": len(jobs),
                  "digest": digest}))
"""


def write_lublin(path: Path, n: int) -> None:
    from rtsched.generators import generate_lublin
    from rtsched.io import write_swf

    write_swf(generate_lublin(n_jobs=n, nodes=256, seed=1), path)


def write_archive_like(path: Path, n: int) -> None:
    """Fields padded to columns, a fractional CPU time on every other line (as in SDSC-SP2)."""
    rng = np.random.default_rng(1)
    submit = np.cumsum(rng.integers(0, 120, n))
    wait = rng.integers(0, 20000, n)
    run = rng.integers(-1, 40000, n)
    procs = 2 ** rng.integers(0, 8, n)
    req_time = np.where(rng.random(n) < 0.9, np.maximum(run, 1) * 2, -1)
    status = rng.choice([0, 1, 5], n)
    with open(path, "w") as fh:
        fh.write(f"; Version: 2.2\n; Computer: synthetic archive-like\n; MaxJobs: {n}\n; MaxRecords: {n}\n"
                 f"; MaxNodes: 128\n; MaxProcs: 128\n; UnixStartTime: 893466664\n;\n")
        cols = [np.arange(1, n + 1), submit, wait, run, procs, None, np.full(n, -1), procs, req_time,
                np.full(n, -1), status, rng.integers(1, 400, n), rng.integers(1, 30, n), rng.integers(1, 20000, n),
                rng.integers(0, 7, n), np.full(n, -1), np.full(n, -1), np.full(n, -1)]
        cpu = np.round(rng.random(n) * 500, 2)
        lists = [c.tolist() if c is not None else None for c in cols]
        cpu_l = cpu.tolist()
        widths = (5, 9, 6, 6, 4, 7, 5, 4, 6, 5, 2, 3, 3, 5, 2, 2, 2, 2)
        for i in range(n):
            fields = [str(lists[k][i]) if k != 5 else (f"{cpu_l[i]:.2f}" if i % 2 else "-1") for k in range(18)]
            fh.write(" ".join(f.rjust(w) for f, w in zip(fields, widths)) + "\n")


def baseline_tree(ref: str, dest: Path) -> Path:
    """rtsched/ as it was at ``ref`` (git archive), under dest."""
    data = subprocess.run(["git", "-C", str(REPO), "archive", ref, "rtsched"], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def measure(root: Path, kind: str, path: Path, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root)}
    best: dict | None = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", CHILD, kind, str(path)], env=env, check=True, capture_output=True,
                             text=True, cwd=str(root)).stdout
        result = json.loads(out.strip().splitlines()[-1])
        if best is None or result["seconds"] < best["seconds"]:
            best = result
    assert best is not None
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--baseline", default="aa802d3", help="git commit of the reader to compare with")
    ap.add_argument("--repeat", type=int, default=1, help="best of N fresh processes per measurement")
    ap.add_argument("--keep", type=Path, help="write the traces here (and keep them) instead of a temp dir")
    ap.add_argument("--write", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write:
        {"lublin": write_lublin, "archive": write_archive_like}[args.write[0]](Path(args.write[1]), args.jobs)
        return

    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"# bench_readers  python {platform.python_version()}  {platform.machine()}  {os.cpu_count()} CPUs  "
          f"load average {load}  jobs={args.jobs:,}  baseline={args.baseline}  repeat={args.repeat} (best of)")
    with tempfile.TemporaryDirectory(prefix="bench_readers_") as tmp_name:
        tmp = args.keep or Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        old_root = baseline_tree(args.baseline, Path(tmp_name) / "baseline")
        traces = {"lublin": tmp / f"lublin_{args.jobs}.swf", "archive": tmp / f"archive_{args.jobs}.swf"}
        for label in ("lublin", "archive"):
            t0 = time.perf_counter()
            # in a child process, so that this one stays small while the readers run
            subprocess.run([sys.executable, __file__, "--write", label, str(traces[label]), "--jobs", str(args.jobs)],
                           check=True)
            size = traces[label].stat().st_size / 2**20
            print(f"{label}: wrote {traces[label].name} ({size:.0f} MiB) in {time.perf_counter() - t0:.1f} s "
                  f"(not timed below)")
        runs = [("read_swf", "swf", "lublin"), ("read_swf", "swf", "archive"), ("read_rl_trace", "rl", "lublin")]
        for name, kind, label in runs:
            new = measure(REPO, kind, traces[label], args.repeat)
            old = measure(old_root, kind, traces[label], args.repeat)
            fits = new["peak_mb"] < TARGET_MB
            verdict = (f"wall {'PASS' if fits and new['seconds'] < TARGET_S else 'FAIL'}, "
                       f"CPU {'PASS' if fits and new['cpu'] < TARGET_S else 'FAIL'}")
            print(f"{name} {label} ({new['jobs']:,} jobs): now {new['seconds']:.2f} s (CPU {new['cpu']:.2f} s), "
                  f"peak {new['peak_mb']:.0f} MB (imports {new['imports_mb']:.0f} MB) | "
                  f"baseline {old['seconds']:.2f} s "
                  f"(CPU {old['cpu']:.2f} s), peak {old['peak_mb']:.0f} MB "
                  f"(imports {old['imports_mb']:.0f} MB) | ratio time {old['seconds'] / new['seconds']:.1f}x, "
                  f"memory {old['peak_mb'] / new['peak_mb']:.1f}x | same jobs: {new['digest'] == old['digest']} | "
                  f"target < {TARGET_S:.0f} s and < {TARGET_MB:.0f} MB: {verdict}")


if __name__ == "__main__":
    main()
