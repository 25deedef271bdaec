"""The rtmix deferral rule (``RtMixSpec.defer_weight``, issue 23 fourteenth session) on Table-3-style instances.

A base model (default: the rollout model without the rule, ``training/rtmix-rollout-improvement/round-1.pt``,
shipped as ``rtmix`` until the fourteenth session) is exported with its mask settings changed (``rtsched rl export
--set``, the same network; the defaults give the shipped ``rtmix``) and run beside the base and WCJS-JIT on the same
instances, through the run pipeline (``milp.compare.run_online``): per policy the mean BJ and RTJ slowdowns, the
instances whose mean RTJ slowdown is above θ = 1.2 (the compare's θ violations, without its optimum's θ* > 1.2
cases: no instance is solved here), and paired 95 % bootstrap intervals of the differences against WCJS-JIT and
the base.  The fourteenth session's validation set is the default (generator seeds 3,200,000 on with walltime
factor 1–2 and 3,300,000 on with exact walltimes, ``--count`` each); the Mira-like weeks are
``bench/bench_rtmix_wk1.py --miralike``'s.

    PYTHONPATH=. nice python bench/bench_rtmix_defer.py [--count 500] [--base MODEL] \
        [--set defer_weight=7.5 --set shield_theta=1.2] [-j 2]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

THETA = 1.2
SETS = (("default walltimes", 3_200_000, (1.0, 2.0)), ("walltime = runtime", 3_300_000, (1.0, 1.0)))
DEFAULT_SETTINGS = ["defer_weight=7.5", "shield_theta=1.2"]
BASE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "training",
                    "rtmix-rollout-improvement", "round-1.pt")


def _one(task: tuple[str, int, tuple[float, float]]) -> tuple[float, float]:
    from milp.compare import run_online
    from milp.instance import table3_instance

    name, seed, factor = task
    run = run_online(table3_instance(seed, walltime_factor=factor, name=f"table3-{seed}"), name, "jit")
    return run.bj_sd_mean, run.rtj_sd_mean


def main() -> int:
    import numpy as np

    from milp.compare import paired_bootstrap
    from rtsched.cli import main as rtsched_main

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=500, help="instances per half (default 500)")
    ap.add_argument("--set", action="append", default=None, metavar="NAME=VALUE",
                    help=f"the changed mask settings (default {' '.join(DEFAULT_SETTINGS)})")
    ap.add_argument("--base", default=BASE, help="the rtmix model the settings change (default: the rollout model "
                    "without the rule, training/rtmix-rollout-improvement/round-1.pt)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="parallel processes (default 2)")
    args = ap.parse_args()
    if args.count < 5:
        ap.error("--count: at least 5 instances per half (a paired interval needs them)")
    if args.jobs < 1:
        ap.error(f"-j/--jobs: at least 1 process, got {args.jobs}")
    settings = args.set or DEFAULT_SETTINGS
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "rtmix-defer.pt")
        cmd = ["rl", "export", args.base, model]
        for pair in settings:
            cmd += ["--set", pair]
        if rtsched_main(cmd) != 0:
            return 2
        base = f"base {os.path.basename(args.base)}"
        policies = {"wcjs-jit": "wcjs-jit", base: args.base, f"base + {' '.join(settings)}": model}
        tasks = [(seed0 + i, factor) for _label, seed0, factor in SETS for i in range(args.count)]
        rows = {}
        t0 = time.perf_counter()
        with cf.ProcessPoolExecutor(args.jobs) as pool:
            for label, name in policies.items():
                rows[label] = np.array(list(pool.map(_one, [(name, s, f) for s, f in tasks], chunksize=10)))
        seconds = time.perf_counter() - t0
    print(f"{len(tasks)} Table-3-style instances: seeds {SETS[0][1]}..+{args.count - 1} (walltime factor 1-2) and "
          f"{SETS[1][1]}..+{args.count - 1} (exact walltimes); JIT checkpointing; θ = {THETA}")
    ref, without = rows["wcjs-jit"], rows[base]

    def ci(diff) -> str:
        mean, lo, hi = paired_bootstrap(list(diff))
        return f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"

    for label, r in rows.items():
        over = int((r[:, 1] > THETA + 1e-9).sum())
        line = f"  {label[:44]:44s} BJ {r[:, 0].mean():.3f}  RTJ {r[:, 1].mean():.3f}  RTJ mean > θ on {over:4d}"
        if label != "wcjs-jit":
            line += f"  ΔBJ/WCJS-JIT {ci(r[:, 0] - ref[:, 0])}  ΔRTJ/WCJS-JIT {ci(r[:, 1] - ref[:, 1])}"
        if label not in ("wcjs-jit", base):
            line += f"  ΔBJ/base {ci(r[:, 0] - without[:, 0])}"
        print(line)
    print(f"wall time: {len(tasks) * len(rows)} runs in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    from benchcli import one_line_errors

    sys.exit(one_line_errors("bench_rtmix_defer", main))
