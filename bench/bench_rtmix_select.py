"""Model selection for the rtmix agent on validation data only (issue 13's curriculum).

Two validation sets, neither used in training nor in the benchmarks:

* Table-3-style instances of generator seeds 950000 .. 950000 + N − 1 (5 BJs + 2 RTJs on 16
  blocks, ``rtsched.generators.smallmix``; training used 100000–899999, the 50-instance benchmark
  5000000 on): per model the mean BJ and RTJ slowdowns and the reward's objective
  −BJ − 10 · max(0, RTJ − 1.2), through the run pipeline (``milp.compare.run_online``);
* generated Mira-like weeks (``rtsched.rl.rtmix.train.CURRICULUM_VALIDATION_SEEDS``, 9000 on; the
  curriculum trains on 7000 on), 10 % RTJs, on the real partition file when ``../shared/data`` has
  it (else ``mira``): mean bounded slowdown (τ = 600 s) of RTJs and BJs, as the wk1 criterion reads
  it (``bench/bench_rtmix_wk1.py --miralike``).

WCJS-JIT and JIT-CKPT are measured beside the models in the same run; each model's ratio to
WCJS-JIT is printed.

    PYTHONPATH=. nice python bench/bench_rtmix_select.py --models rtmix,runs/cur/round-3.pt [--small 100] [--weeks 9001-9006]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from milp.compare import run_online  # noqa: E402
from milp.instance import table3_instance  # noqa: E402

VALIDATION_SEED_BASE = 950_000


def small_validation(name: str, n: int) -> dict:
    bj = rt = obj = 0.0
    for s in range(VALIDATION_SEED_BASE, VALIDATION_SEED_BASE + n):
        r = run_online(table3_instance(s, name=f"val-{s}"), name)
        bj += r.bj_sd_mean
        rt += r.rtj_sd_mean
        obj += -r.bj_sd_mean - 10.0 * max(0.0, r.rtj_sd_mean - 1.2)
    return {"bj": bj / n, "rtj": rt / n, "objective": obj / n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="rtmix", help="comma-separated rtmix models (the name rtmix or .pt files)")
    ap.add_argument("--small", type=int, default=100, help="Table-3-style validation instances (default 100)")
    ap.add_argument("--weeks", default="9001-9006", help="Mira-like validation week seeds (default 9001-9006)")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m.strip()]
    t0 = time.perf_counter()
    print(f"Table-3-style validation instances, seeds {VALIDATION_SEED_BASE}..{VALIDATION_SEED_BASE + args.small - 1}; "
          "objective = −BJ − 10 · max(0, RTJ − 1.2)")
    for name in models + ["wcjs-jit", "jit-ckpt"]:
        v = small_validation(name, args.small)
        print(f"  {Path(name).name[:30]:<30} BJ SD {v['bj']:.3f}  RTJ SD {v['rtj']:.3f}  objective {v['objective']:.3f}",
              flush=True)
    here = os.path.dirname(os.path.abspath(__file__))
    xml = Path(here).parents[1] / "shared" / "data" / "mira" / "mira-partitions.xml"
    machine = str(xml) if xml.exists() else "mira"
    cmd = [sys.executable, os.path.join(here, "bench_rtmix_wk1.py"), "--miralike", args.weeks, "--models",
           ",".join(models), "--others", "wcjs-jit,jit-ckpt", "--machine", machine]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    print(f"Mira-like validation weeks {args.weeks} (machine {Path(machine).name}):")
    keep = False
    for line in out.splitlines():
        keep = keep or line.startswith("means over")
        if keep and not line.startswith("wall time"):
            print("  " + line.strip())
    print(f"wall time: {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
