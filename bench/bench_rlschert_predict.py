"""RLSchert's runtime predictors (rtsched.rl.rlschert.predict) on held-out jobs of the shared real traces.

Run:  PYTHONPATH=. python bench/bench_rlschert_predict.py [--json OUT]

For each trace: train on the first 80 % of the jobs (by submit), report MAPE (%) on the last 20 %
(in the paper's 5-min units, ``rtsched.rl.rlschert.predict.mape``) of walltime as the estimate, the user's
history (mean of the last two finished runtimes), our pre-run model, and our running model
(conditional on elapsed time) averaged over the prefixes 10 %, …, 100 % of each run.  The paper's
numbers (seed 001 Table 5, USTC VASP jobs, input parameters and per-step run features): XGBoost
pre-run 39.8 %, RLSchert running 10.3 %.  Ratios are to the walltime baseline, measured in the same
run.  Traces absent from ../shared/data are skipped with a message.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rtsched.io import read_workload  # noqa: E402
from rtsched.rl.rlschert.predict import evaluate_predictors  # noqa: E402
from rtsched.files import atomic_write_text  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data", "traces")
TRACES = ["swf/sdsc-sp2-1998-first4961.swf", "mira/wk1.log", "mira/wk2.log", "mira/mira_dec_wk1.log",
          "curie/cea-curie-cobalt.log", "swf/lublin_256.swf"]
PAPER = {"prerun": 39.8, "running": 10.3}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    rows = []
    print(f"{'trace':34} {'jobs':>5} {'test':>5} {'walltime':>9} {'user hist':>9} {'pre-run':>8} {'running':>8} "
          f"{'pre/wall':>8} {'s':>5}")
    print(f"{'paper (USTC VASP, Table 5)':34} {'':>5} {'':>5} {'':>9} {'':>9} {PAPER['prerun']:>8.1f} "
          f"{PAPER['running']:>8.1f}")
    for rel in TRACES:
        path = os.path.join(DATA, rel)
        if not os.path.exists(path):
            print(f"{rel}: not found under ../shared/data, skipped")
            continue
        t0 = time.perf_counter()
        r = evaluate_predictors(read_workload(path))
        r["seconds"] = time.perf_counter() - t0
        r["trace"] = rel
        rows.append(r)
        note = "" if r["use_walltime"] else "  (requested time = runtime: not a feature)"
        print(f"{rel:34} {r['jobs']:>5} {r['test']:>5} {r['walltime']:>9.1f} {r['user_history']:>9.1f} "
              f"{r['prerun']:>8.1f} {r['running']:>8.1f} {r['prerun'] / max(r['walltime'], 1e-9):>8.3f} "
              f"{r['seconds']:>5.1f}{note}")
        print(f"{'':34} running by prefix: " + " ".join(f"{k:.0%}:{v:.1f}" for k, v in r["running_by_prefix"].items()))
    if args.json:
        atomic_write_text(args.json, json.dumps({"paper": PAPER, "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
