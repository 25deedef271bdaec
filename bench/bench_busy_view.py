"""The committed-head policy and the inspector environment reading the core's sorted ``SimView.busy``
instead of building and sorting the running-job list at every reservation: CPU time of the same work
on two source trees, side by side (each measurement in a fresh process, the trees alternating).

    python bench/bench_busy_view.py --baseline DIR [--rounds 3] [--trace PATH]

DIR: a copy of the tree before the change (``git archive REV | tar -x -C DIR``); the other tree is
this script's.  Work, the same on both:
* committed: SJF under the committed-head rule (RLScheduler's Table-V runs), the ten Table-V
  sequences of 1,024 jobs, with backfilling ``rlscheduler`` and ``easy``;
* inspector: the SchedInspector environment on 128-job episodes with ``rlscheduler`` backfilling,
  30 % seeded rejections, 6,000 steps (its backfilling-contribution feature reserves at each step).
Printed: CPU seconds per round and tree, and the ratio branch / baseline of the medians.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchcli import require_input  # noqa: E402

DEFAULT_TRACE = os.path.join(HERE, "..", "..", "shared", "data", "traces", "swf", "lublin_256.swf")
TABLE_V_STARTS = [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085]
INSPECTOR_STEPS = 6000


def work(which: str, trace_path: str) -> float:
    """CPU seconds of ``which`` in this process (the tree is whatever ``rtsched`` imports from)."""
    from rtsched.rl.trace import read_rl_trace

    trace = read_rl_trace(trace_path)
    if which.startswith("committed-"):
        from rtsched.rl.sequences import run_sequence

        backfill = which.removeprefix("committed-")
        t = time.process_time()
        for s in TABLE_V_STARTS:
            run_sequence(trace, s, 1024, "sjf", backfill=backfill)
        return time.process_time() - t
    import numpy as np

    from rtsched.rl.inspector.env import InspectorEnv

    env = InspectorEnv(trace, seq_len=128, backfill="rlscheduler")
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    t = time.process_time()
    for _ in range(INSPECTOR_STEPS):
        _, _, term, trunc, _ = env.step(int(rng.random() < 0.3))
        if term or trunc:
            env.reset()
    return time.process_time() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="the tree before the change")
    ap.add_argument("--trace", default=os.path.normpath(DEFAULT_TRACE))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # internal: the work to time in this process
    args = ap.parse_args(argv)
    require_input("bench_busy_view", args.trace)
    if args.worker:
        print(json.dumps(work(args.worker, args.trace)))
        return 0
    if not args.baseline:
        ap.error("--baseline DIR is required")
    require_input("bench_busy_view", args.baseline, "--baseline")
    trees = {"baseline": os.path.abspath(args.baseline), "branch": os.path.dirname(HERE)}
    print(f"# bench_busy_view  load average {os.getloadavg()[0]:.1f} (other processes share the cores)")
    for which in ("committed-rlscheduler", "committed-easy", "inspector"):
        secs: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": tree}
                out = subprocess.run([sys.executable, __file__, "--worker", which, "--trace", args.trace],
                                     env=env, capture_output=True, text=True, check=True).stdout
                secs[name].append(json.loads(out))
        ratio = statistics.median(secs["branch"]) / statistics.median(secs["baseline"])
        print(f"{which:22s} baseline {' '.join(f'{s:.3f}' for s in secs['baseline'])} s | "
              f"branch {' '.join(f'{s:.3f}' for s in secs['branch'])} s | branch/baseline {ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
