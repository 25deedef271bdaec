"""Issue 26, "A time limit is a promise": wall time of `rtsched solve --time-limit L` per method on
a large generated instance, against L.  A model that cannot be built in time or memory is refused
up front (exit 1, milp.model_size); the others must answer within L plus a few seconds.

    python bench/bench_time_limit.py [--jobs 3000] [--blocks 16] [--limit 10] [--methods cpsat,milp-disjunctive,milp]

Prints one row per method: exit status, elapsed s, elapsed / limit, and stderr's first line.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

# the rtsched command of this interpreter's environment
CLI = [sys.executable, "-c", "import sys; from rtsched.cli import main; sys.exit(main())"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--limit", type=float, default=10.0, help="--time-limit per solve, s")
    ap.add_argument("--methods", default="cpsat,milp-disjunctive,milp")
    args = ap.parse_args(argv)
    rt = max(1, args.jobs // 10)
    with tempfile.TemporaryDirectory(prefix="bench-limit-") as tmp:
        subprocess.run(CLI + ["instances", "generate", "--count", "1", "--seed", "0",
                        "--bj", str(args.jobs - rt), "--rt", str(rt), "--blocks", str(args.blocks),
                        "--prefix", "big", "--out", tmp], check=True, capture_output=True)
        path = os.path.join(tmp, "big-00.json")
        print(f"{args.jobs} jobs on {args.blocks} blocks, --time-limit {args.limit:g} s; load average "
              f"{os.getloadavg()[0]:.1f}")
        print(f"{'method':18s} {'exit':>4s} {'elapsed s':>10s} {'/ limit':>8s}  first stderr line")
        for method in args.methods.split(","):
            t0 = time.perf_counter()
            p = subprocess.run(CLI + ["solve", path, "--method", method,
                                "--time-limit", str(args.limit)], capture_output=True, text=True)
            dt = time.perf_counter() - t0
            line = (p.stderr.strip().splitlines() or [""])[0][:110]
            print(f"{method:18s} {p.returncode:4d} {dt:10.1f} {dt / args.limit:8.2f}  {line}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
