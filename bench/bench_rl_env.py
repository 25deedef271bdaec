"""Job-picking environment speed against RLScheduler's own environment, side by side in one run
(issue 11: ours with backfilling >= 10x the authors' steps per second).

    RLSCHEDULER_DIR=/work/peer PYTHONPATH=. python bench/bench_rl_env.py [--trace PATH] [--episodes 40]
        [--rlscheduler-dir DIR] [--seed 0] [--json OUT]

Setting up the peer: see bench/peer_rlscheduler.py (a checkout of DIR-LAB/deep-batch-scheduler; its
2019 ``gym``/``tensorflow`` imports are shimmed when missing, nothing of its environment is changed).

Both environments get the same episodes (256 consecutive jobs of lublin_256 from the same first
jobs, drawn with ``--seed`` from the authors' range) and the same action policy: at every step a
uniform draw u from one seeded stream picks slot ``floor(u·k)`` among the k occupied window slots
(random masked actions).  Reported, for each backfilling setting:

* steps/s counting the whole episode loop (``reset`` + ``step`` calls): what training sees.  The
  authors' ``reset`` also schedules the sequence twice (SJF and F1) for its reward baseline;
* steps/s counting only the ``step`` calls (the reset time left out of both);
* the ratios ours / theirs.  The environments alternate episode by episode so that load changes on
  a shared machine hit both alike.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from peer_rlscheduler import PeerPickEnv  # noqa: E402
from rtsched.rl.env_pick import JobPickingEnv  # noqa: E402
from rtsched.rl.trace import read_rl_trace  # noqa: E402

DEFAULT_TRACE = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "traces", "swf", "lublin_256.swf"))


def run_ours(env: JobPickingEnv, start: int, draws: np.ndarray) -> tuple[int, float, float]:
    """One episode; returns (steps, total seconds, seconds in step())."""
    t0 = time.process_time()
    env.reset(options={"start": start})
    t1 = time.process_time()
    steps = 0
    done = False
    while not done:
        k = len(env._vis)
        _, _, done, _, _ = env.step(int(draws[steps] * k))
        steps += 1
    t2 = time.process_time()
    return steps, t2 - t0, t2 - t1


def run_peer(env: PeerPickEnv, start: int, draws: np.ndarray) -> tuple[int, float, float]:
    t0 = time.process_time()
    env.reset(start)
    t1 = time.process_time()
    steps = 0
    done = False
    while not done:
        k = env.valid_count()
        _, _, done = env.step(int(draws[steps] * k))
        steps += 1
    t2 = time.process_time()
    return steps, t2 - t0, t2 - t1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--rlscheduler-dir", default=None, help="the peer checkout (default: $RLSCHEDULER_DIR)")
    ap.add_argument("--episodes", type=int, default=40, help="episodes per environment and setting")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the rows to this JSON file")
    args = ap.parse_args(argv)
    if not os.path.exists(args.trace):
        print(f"trace not found: {args.trace}", file=sys.stderr)
        return 2
    trace = read_rl_trace(args.trace)
    rows = []
    print(f"{time.strftime('%Y-%m-%d %H:%M')} · {platform.node()} · {os.cpu_count()} cores · load "
          f"{os.getloadavg()[0]:.2f} · Python {platform.python_version()} · {args.episodes} episodes x 256 jobs")
    for backfill in ("none", "rlscheduler"):
        ours = JobPickingEnv(trace, seq_len=256, window=128, backfill=backfill)
        ours.reset(seed=args.seed)
        peer = PeerPickEnv(args.trace, backfill=backfill != "none", path=args.rlscheduler_dir)
        n = peer.env.loads.size()
        rng = np.random.default_rng(args.seed)
        starts = rng.integers(256, n - 256 - 1, size=args.episodes)
        tot = {"ours": [0, 0.0, 0.0], "peer": [0, 0.0, 0.0]}
        for i, s in enumerate(starts.tolist()):
            draws = np.random.default_rng([args.seed, i]).random(4096)
            for name, fn, env in (("ours", run_ours, ours), ("peer", run_peer, peer)):
                st, total, in_step = fn(env, s, draws)
                t = tot[name]
                t[0] += st
                t[1] += total
                t[2] += in_step
        o, p = tot["ours"], tot["peer"]
        row = {"backfill": backfill, "episodes": args.episodes,
               "ours_steps": o[0], "peer_steps": p[0],
               "ours_steps_per_s": o[0] / o[1], "peer_steps_per_s": p[0] / p[1],
               "ratio": (o[0] / o[1]) / (p[0] / p[1]),
               "ours_step_only_per_s": o[0] / o[2], "peer_step_only_per_s": p[0] / p[2],
               "ratio_step_only": (o[0] / o[2]) / (p[0] / p[2])}
        rows.append(row)
        print(f"backfill={backfill:<12} steps/s (reset+step): ours {row['ours_steps_per_s']:9.0f}  RLScheduler "
              f"{row['peer_steps_per_s']:8.0f}  ratio {row['ratio']:6.2f}   (target >= 10 with backfilling)")
        print(f"{'':21} steps/s (step only):  ours {row['ours_step_only_per_s']:9.0f}  RLScheduler "
              f"{row['peer_step_only_per_s']:8.0f}  ratio {row['ratio_step_only']:6.2f}   "
              f"steps: {o[0]} / {p[0]}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
