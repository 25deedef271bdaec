"""RLSchert's environment speed against the project's picking environment, measured side by side.

Run:  PYTHONPATH=. python bench/bench_rlschert.py [--seconds S] [--trace PATH] [--json OUT]

Steps per second and jobs finished per second of ``rtsched/RLSchert-v0`` driven by the SAF heuristic
on its action space (``env.heuristic("saf")``: the agent's own decision loop without a network) in
the event mode and the paper's slotted mode, with and without the rule kill, on the VASP-like
workload; and of RLScheduler's ``JobPickingEnv`` (masked random picks, 256-job Lublin sequences, no
backfilling) in the same run.  Ratios are to the picking environment's steps/s.  The slotted mode
also builds the 120 × 72 image at every step.
"""
from __future__ import annotations

import argparse
import json
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envspeed import masked_random, steps_for  # noqa: E402  (bench/ is sys.path[0] when run as a script)

from rtsched.rl.rlscheduler.env import JobPickingEnv  # noqa: E402
from rtsched.rl.rlschert.env import RLSchertEnv  # noqa: E402
from rtsched.files import atomic_write_text  # noqa: E402

DEFAULT_TRACE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data",
                             "traces", "swf", "lublin_256.swf")


def run_rlschert(mode: str, rule_kill: bool, seconds: float) -> dict:
    env = RLSchertEnv(mode=mode)
    steps, jobs, el = steps_for(env, seconds, lambda e: e.heuristic("saf", rule_kill=rule_kill),
                                lambda _e, info: info.get("jobs", 0))
    return {"env": f"RLSchert-v0 {mode}{' + rule kill' if rule_kill else ''} (SAF)", "steps_s": steps / el,
            "jobs_s": jobs / el}


def run_pick(trace: str, seconds: float) -> dict:
    env = JobPickingEnv(trace, seq_len=256, backfill="none")
    steps, jobs, el = steps_for(env, seconds, masked_random(0), lambda e, _info: e.seq_len)
    return {"env": "JobPicking-v0 (masked random, Lublin-1, 256 jobs)", "steps_s": steps / el, "jobs_s": jobs / el}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    if os.path.exists(args.trace):
        rows.append(run_pick(args.trace, args.seconds))
    else:
        print(f"{args.trace}: not found, the picking environment is not measured")
    for mode in ("event", "slotted"):
        for rk in (False, True):
            rows.append(run_rlschert(mode, rk, args.seconds))
    base = rows[0]["steps_s"] if rows and rows[0]["env"].startswith("JobPicking") else None
    for r in rows:
        r["ratio"] = r["steps_s"] / base if base else None
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "–"
        print(f"{r['env']:52} {r['steps_s']:>9,.0f} steps/s {r['jobs_s']:>8,.0f} jobs/s  ratio {ratio}")
    if args.json:
        atomic_write_text(args.json, json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
