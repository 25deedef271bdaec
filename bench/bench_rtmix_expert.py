"""How much of ``replan`` the ``rtmix`` environment can express (issue 23 §3).

``replan`` runs as a policy, then as the expert mapped into ``RtMixEnv`` (every pass's decisions
turned into the environment's actions, ``rtsched.rl.rtmix.teacher.policy_teacher_episode`` with
``every_pass``, as DAgger labels states) under the environment's option sets:

* ``base`` — the DAgger environment of the previous session (submit order, two BJ-preemption slots);
* ``any`` — RTJ candidates under replan's eligibility (``eligibility="any"``: WCJS's criteria 2 and 3
  reject victims replan preempts);
* ``wake`` — a scheduling point when a running BJ becomes splittable (``wake``: replan preempts at
  ⌈W/10⌉ of work, between events);
* ``any+wake`` — both (the environment of the new DAgger recipe).

Printed per set: mean BJ and RTJ bounded slowdowns, the instances where the mapped run has
replan's means exactly, and the expert's decisions mapped/skipped.  Seeds: the validation set of
``bench/bench_rtmix_dagger.py`` (950,000 on, default walltimes; 960,000 on, walltime = runtime),
never an acceptance or test seed.

    PYTHONPATH=. nice python bench/bench_rtmix_expert.py --n 30
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

VARIANTS = {"base": {}, "any": {"eligibility": "any"}, "wake": {"wake": True},
            "any+wake": {"eligibility": "any", "wake": True}}


def main() -> None:
    from bench_rtmix_dagger import VALIDATION_EXACT_SEED, VALIDATION_SEED, instances
    from heuristics.registry import make_policy
    from milp.compare import run_online
    from rtsched.rl.rtmix.env import RtMixEnv
    from rtsched.rl.rtmix.teacher import policy_teacher_episode

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=30, help="validation instances (half default walltimes, half exact)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ", ".join(VARIANTS))
    args = ap.parse_args()
    insts = instances(args.n, VALIDATION_SEED, VALIDATION_EXACT_SEED, "val")
    print("| run | BJ SD | RTJ SD | same means as replan | expert decisions mapped / skipped | wall s |")
    print("|---|---|---|---|---|---|")
    for name in ("replan", "wcjs-jit"):
        t0 = time.perf_counter()
        runs = [run_online(i, name) for i in insts]
        if name == "replan":
            pol = runs
        print(f"| {name} (policy) | {sum(r.bj_sd_mean for r in runs) / len(runs):.3f} | "
              f"{sum(r.rtj_sd_mean for r in runs) / len(runs):.3f} | – | – | {time.perf_counter() - t0:.0f} |", flush=True)
    for v in args.variants.split(","):
        t0 = time.perf_counter()
        res, mapped, skipped = [], 0, 0
        for inst in insts:
            env = RtMixEnv(bj_candidates=2, order="submit", **VARIANTS[v])
            ep = policy_teacher_episode(env, list(inst.workload().jobs), make_policy("replan"), every_pass=True)
            res.append((ep.bj_sd_mean, ep.rtj_sd_mean))
            mapped += ep.mapped
            skipped += ep.skipped
        same = sum(abs(a[0] - b.bj_sd_mean) < 1e-9 and abs(a[1] - b.rtj_sd_mean) < 1e-9 for a, b in zip(res, pol))
        print(f"| replan mapped, env {v} | {sum(r[0] for r in res) / len(res):.3f} | "
              f"{sum(r[1] for r in res) / len(res):.3f} | {same}/{len(insts)} | {mapped} / {skipped} | "
              f"{time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
