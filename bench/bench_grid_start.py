"""How local grid workers start (issue 26): fork, forkserver and spawn side by side.

A parent that has loaded torch (a grid whose policy is a trained model: the parent builds it to
check the grid) cannot fork its workers safely, so ``rtsched.experiments.backends.start_method``
picks ``forkserver`` then.  This measures what each start method costs on a small grid: the wall
time from creating the pool of 2 workers to the last result, for 8 runs of 64 jobs (FCFS on the
shipped Lublin sample: the runs themselves take milliseconds, so start-up dominates).  Each case
runs in a fresh Python process (a fork server outlives its first pool), the cases alternate over
``--repeat`` rounds, and the median and the spread are printed with the ratio against fork.

    python bench/bench_grid_start.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
METHODS = ("fork", "forkserver", "spawn")

CHILD = r"""
import json, sys, time
from pathlib import Path
from rtsched.experiments import load_grid
from rtsched.experiments.backends import LocalBackend
from rtsched.experiments.runner import _preload, run_task
method, grid_path, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
(out / "runs").mkdir(parents=True)
tasks = [r.task(out, True) for r in load_grid(grid_path).expand()]
t0 = time.perf_counter()
backend = LocalBackend(run_task, 2, preload=_preload, method=method)
backend.submit(tasks)
results = list(backend.results())
backend.close()
print(json.dumps({"seconds": time.perf_counter() - t0, "ok": sum(r["status"] == "ok" for r in results)}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        grid = Path(tmp) / "start.toml"
        grid.write_text(f'name = "start"\n[[traces]]\npath = "{REPO}/traces/lublin_256_sample.swf"\n'
                        'machine = "flat:256"\nfirst_n = 64\n[grid]\npolicy = ["fcfs"]\nseeds = 8\n')
        times: dict[str, list[float]] = {m: [] for m in METHODS}
        for round_ in range(args.repeat):
            for method in METHODS:
                out = Path(tmp) / f"{method}-{round_}"
                proc = subprocess.run([sys.executable, "-c", CHILD, method, str(grid), str(out)], cwd=REPO,
                                      capture_output=True, text=True, check=True)
                result = json.loads(proc.stdout.strip().splitlines()[-1])
                assert result["ok"] == 8, proc.stdout + proc.stderr
                times[method].append(result["seconds"])
    load = os.getloadavg()[0]
    print(f"# bench_grid_start  python {sys.version.split()[0]}  cpus={os.cpu_count()}  repeat={args.repeat}  "
          f"load average {load:.1f}")
    base = statistics.median(times["fork"])
    for method in METHODS:
        med = statistics.median(times[method])
        print(f"{method:10s} pool of 2 workers, 8 runs: median {med:.2f} s (min {min(times[method]):.2f}, "
              f"max {max(times[method]):.2f}); ratio vs fork {med / base:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
