"""Job-picking environment speed against RLScheduler's own environment, side by side in one run
(issue 11: ours with backfilling >= 10x the authors' steps per second).

    RLSCHEDULER_DIR=/work/peer PYTHONPATH=. python bench/bench_rl_env.py [--trace PATH] [--episodes 60]
        [--rounds 3] [--rlscheduler-dir DIR] [--seed 0] [--json OUT]

Setting up the peer: see bench/peer_rlscheduler.py (a checkout of DIR-LAB/deep-batch-scheduler, e.g.
``git clone https://github.com/DIR-LAB/deep-batch-scheduler /work/peer``; its 2019 ``gym`` /
``tensorflow`` imports are shimmed when missing, nothing of its environment is changed; no separate
venv is needed).

Both environments get the same episodes (256 consecutive jobs of lublin_256 from the same first
jobs, drawn with ``--seed`` from the authors' range) and the same action policy: at every step a
uniform draw u from one seeded stream (one stream per episode) picks slot ``floor(u·k)`` among the
k occupied window slots (random masked actions; k costs O(1) in both).  Each environment runs in
its own fresh process (so neither's objects weigh on the other's garbage collector), the two
alternating in ``--rounds`` rounds; the time is each process's CPU time (on a shared, loaded
machine the steadier figure).  Reported, for each backfilling setting:

* steps/s counting the whole episode loop (``reset`` + ``step`` calls): what training sees.  The
  authors' ``reset`` also schedules the sequence twice (SJF and F1) for its reward baseline;
* steps/s counting only the ``step`` calls (the reset time left out of both);
* the ratios ours / theirs.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from peer_rlscheduler import PeerPickEnv  # noqa: E402
from benchcli import require_input  # noqa: E402  (bench/ is sys.path[0] when run as a script)
from rtsched.rl.rlscheduler.env import JobPickingEnv  # noqa: E402
from rtsched.rl.trace import read_rl_trace  # noqa: E402
from rtsched.files import atomic_write_text  # noqa: E402

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


def worker(which: str, backfill: str, trace_path: str, peer_path: str | None, starts: list[int], seed: int,
           first: int) -> dict:
    """One environment in this process: the episodes ``starts`` (episode i draws its actions from
    the stream (seed, first + i)); returns the step count and CPU seconds."""
    if which == "ours":
        env = JobPickingEnv(read_rl_trace(trace_path), seq_len=256, window=128, backfill=backfill)
        env.reset(seed=seed)
        fn = run_ours
    else:
        env = PeerPickEnv(trace_path, backfill=backfill != "none", path=peer_path)
        fn = run_peer
    steps, total, in_step = 0, 0.0, 0.0
    for i, s in enumerate(starts):
        draws = np.random.default_rng([seed, first + i]).random(4096)
        st, t, t_step = fn(env, s, draws)
        steps += st
        total += t
        in_step += t_step
    return {"steps": steps, "total_s": total, "step_s": in_step}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--rlscheduler-dir", default=None, help="the peer checkout (default: $RLSCHEDULER_DIR)")
    ap.add_argument("--episodes", type=int, default=60, help="episodes per environment and setting")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (the episodes are split among them)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the rows to this JSON file")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # internal: ours|peer,backfill,first,start,start,...
    args = ap.parse_args(argv)
    if args.worker:
        which, backfill, first, *starts = args.worker.split(",")
        print(json.dumps(worker(which, backfill, args.trace, args.rlscheduler_dir, [int(s) for s in starts],
                                args.seed, int(first))))
        return 0
    require_input("bench_rl_env", args.trace)
    from peer_rlscheduler import peer_dir

    try:
        peer = peer_dir(args.rlscheduler_dir)
    except FileNotFoundError as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 2
    n_jobs = len(read_rl_trace(args.trace).jobs)
    rows = []
    print(f"{time.strftime('%Y-%m-%d %H:%M')} · {platform.node()} · {os.cpu_count()} cores · load "
          f"{os.getloadavg()[0]:.2f} · Python {platform.python_version()} · {args.episodes} episodes x 256 jobs "
          f"per environment, {args.rounds} alternating rounds, CPU time of each environment's own process")
    for backfill in ("none", "rlscheduler"):
        rng = np.random.default_rng(args.seed)
        starts = rng.integers(256, n_jobs - 256 - 1, size=args.episodes).tolist()
        chunks = np.array_split(np.arange(args.episodes), args.rounds)
        tot = {"ours": [0, 0.0, 0.0], "peer": [0, 0.0, 0.0]}
        for chunk in chunks:
            if not len(chunk):
                continue
            for which in ("ours", "peer"):
                spec = ",".join([which, backfill, str(int(chunk[0]))] + [str(starts[i]) for i in chunk])
                cmd = [sys.executable, os.path.abspath(__file__), "--trace", args.trace, "--rlscheduler-dir", peer,
                       "--seed", str(args.seed), "--worker", spec]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                r = json.loads(out.strip().splitlines()[-1])
                t = tot[which]
                t[0] += r["steps"]
                t[1] += r["total_s"]
                t[2] += r["step_s"]
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
    print(f"load at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        atomic_write_text(args.json, json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
