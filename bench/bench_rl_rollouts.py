"""Parallel RL rollouts: PPO collection steps per second with N rollout workers against one process.

Run:  PYTHONPATH=. python bench/bench_rl_rollouts.py [--trace PATH]
          [--setups lockstep:1,lockstep:2,trajectories:1,trajectories:2] [--trajs 32] [--seq-len 256]
          [--n-envs 8] [--backfill none] [--repeat 3] [--backend local|ray] [--json OUT]

One RLScheduler trainer per set-up (rollout mode x workers), built alike (same seed, the papers'
128-job window and kernel network, ``n_envs`` environments); each collects the same epochs
(``trainer.collect``: environment steps, forward passes, the hand-offs to the workers, and in the
trajectories mode the batched log-probability and value passes), alternating between the set-ups
``--repeat`` times so that load changes on a shared machine hit all of them.  Reported: the best
collection time, its steps per second, the speed-up against the first set-up (by default one
process in the default lock-step mode: what ``rtsched rl train`` does without options) measured in
the same run, and the CPU time of all the set-up's processes per 1,000 steps (its
cost, which a busy shared machine does not change much; the wall times show how much of the
machine the set-up was given).  The collected batches are compared too: within a mode, any worker count must give
the same actions (the run stops with an error otherwise).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rtsched.rl.trainer import PPOConfig, PPOTrainer  # noqa: E402
from rtsched.rl.agents import EnvFactory  # noqa: E402
from rtsched.rl.trace import read_rl_trace  # noqa: E402
from rtsched.files import atomic_write_text  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data", "traces", "swf", "lublin_256.swf")
SAMPLE = os.path.join(REPO, "traces", "lublin_256_sample.swf")


def cpu_seconds(trainer) -> float:
    """CPU seconds (user + system) used so far by this process and the trainer's rollout subprocesses."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    total = ru.ru_utime + ru.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for p in getattr(trainer.pool, "procs", []):
        with open(f"/proc/{p.pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def build(trace, rollout: str, workers: int, args) -> PPOTrainer:
    opts = {"seq_len": args.seq_len, "window": 128}
    factory = EnvFactory("rlscheduler", trace, "bsld", args.backfill, None, opts)
    cfg = PPOConfig(trajs_per_epoch=args.trajs, n_envs=args.n_envs, seed=0, workers=workers, backend=args.backend,
                    rollout=rollout)
    env0 = factory()
    return PPOTrainer("rlscheduler", factory, cfg, {"agent": "rlscheduler"}, env0.norms, first_env=env0)


def parse_setups(text: str) -> list[tuple[str, int]]:
    out = []
    for part in text.split(","):
        mode, _, workers = part.strip().partition(":")
        out.append((mode, int(workers or 1)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=SHARED if os.path.exists(SHARED) else SAMPLE)
    ap.add_argument("--setups", default="lockstep:1,lockstep:2,trajectories:1,trajectories:2",
                    help="comma-separated MODE:WORKERS (MODE lockstep or trajectories); the first is the baseline")
    ap.add_argument("--trajs", type=int, default=32, help="trajectories per collected epoch")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--n-envs", type=int, default=8)
    ap.add_argument("--backfill", default="none")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backend", default="local", choices=["local", "ray"])
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    setups = parse_setups(args.setups)
    trace = read_rl_trace(args.trace)
    print(f"trace {os.path.basename(args.trace)} ({len(trace)} jobs) · {args.trajs} trajectories x {args.seq_len} jobs "
          f"per epoch · {args.n_envs} environments · backfill {args.backfill} · backend {args.backend} · "
          f"{os.cpu_count()} CPUs · load {os.getloadavg()[0]:.2f}")
    trainers = {}
    for su in setups:
        t0 = time.perf_counter()
        trainers[su] = build(trace, su[0], su[1], args)
        print(f"  {su[0]:>12} x {su[1]} worker(s): started in {time.perf_counter() - t0:.2f} s")
    best = {su: float("inf") for su in setups}
    cpu = {su: float("inf") for su in setups}
    steps = {}
    acts = {}
    try:
        for rep in range(args.repeat):
            for su in setups:
                c0 = cpu_seconds(trainers[su])
                t0 = time.perf_counter()
                batch = trainers[su].collect(rep + 1)
                dt = time.perf_counter() - t0
                best[su] = min(best[su], dt)
                cpu[su] = min(cpu[su], cpu_seconds(trainers[su]) - c0)
                steps[su] = batch.steps
                if rep == 0:
                    acts[su] = batch.act
        first_of_mode = {}
        for su in setups:
            ref = first_of_mode.setdefault(su[0], su)
            if not np.array_equal(acts[su], acts[ref]):
                raise SystemExit(f"{su} collected other actions than {ref}: results must not depend on the workers")
    finally:
        for t in trainers.values():
            t.close()
    rows = []
    base = setups[0]
    for su in setups:
        rate = steps[su] / best[su]
        cpu_ms = 1000 * cpu[su] / steps[su] * 1000
        rows.append({"rollout": su[0], "workers": su[1], "steps": steps[su], "best_s": round(best[su], 3),
                     "steps_per_s": round(rate), "speedup": round(rate / (steps[base] / best[base]), 2),
                     "cpu_ms_per_1000_steps": round(cpu_ms, 1)})
        print(f"  {su[0]:>12} x {su[1]} worker(s): {steps[su]:,} steps in {best[su]:.3f} s (best of {args.repeat}) = "
              f"{rate:,.0f} steps/s · x{rate / (steps[base] / best[base]):.2f} vs {base[0]} x {base[1]} · "
              f"CPU {cpu_ms:.0f} ms per 1,000 steps (all processes)")
    print(f"  same actions for every worker count of a mode: yes · load after: {os.getloadavg()[0]:.2f}")
    if args.json:
        atomic_write_text(args.json, json.dumps({"args": vars(args), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
