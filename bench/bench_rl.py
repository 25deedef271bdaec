"""Benchmarks of the RL part of rtsched, with the papers' / issue's reference numbers side by side.

Run:  PYTHONPATH=. python bench/bench_rl.py [--trace PATH] [--quick] [--epoch] [--json OUT]

1. Seed 003's ten Table-V sequences (Lublin-1, 1,024 jobs each) scheduled by SJF in compatibility
   mode, without and with backfilling (authors' code: 0.09 s / 0.14 s).
2. Environment steps per second with a masked random policy (target ≥ 12,000/s without and
   ≥ 20,000/s with backfilling); also jobs started per second and the inspector environment.
3. Decision latency per job: the kernel network on a 128-job window (paper: 0.30 ms), a trained-model
   policy inside the simulator (features + network), and SJF's sort-and-pick (paper: 0.71 ms).
4. (``--epoch``) one PPO epoch with the papers' defaults (100 trajectories × 256 jobs; paper: 123 s).
5. (``--train-to-target``) train RLScheduler on Lublin-1 (``--backfill``, ``--filter-epochs``) for
   ``--epochs`` (25) per seed (``--seeds``, e.g. 0,1,2) under a wall-time cap (``--cap-min``, default
   25, per seed), choose the epoch on validation sequences disjoint from the ten Table-V test
   sequences (``--n-val`` × ``--val-len`` jobs, default 10 × 512), and score the chosen model once on the test sequences (paper: 58.64
   with backfilling, 254.67 without); one line per epoch is printed and appended to ``--log``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envspeed import masked_random, steps_for  # noqa: E402  (bench/ is sys.path[0] when run as a script)

from heuristics.committed import CommittedHeadPolicy  # noqa: E402
from benchcli import require_input  # noqa: E402  (bench/ is sys.path[0] when run as a script)
from rtsched.machines import FlatCluster  # noqa: E402
from rtsched.rl.sequences import run_sequence  # noqa: E402
from rtsched.rl.inspector.env import InspectorEnv  # noqa: E402
from rtsched.rl.rlscheduler.env import JobPickingEnv  # noqa: E402
from rtsched.rl.trace import read_rl_trace  # noqa: E402
from rtsched.files import atomic_write_text  # noqa: E402

DEFAULT_TRACE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data",
                             "traces", "swf", "lublin_256.swf")
TABLE_V_STARTS = [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085]


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench_table_v(trace, repeat: int) -> list[dict]:
    rows = []
    for backfill, ref in (("none", 0.09), ("rlscheduler", 0.14)):
        secs = best_of(lambda: [run_sequence(trace, s, 1024, "sjf", backfill=backfill) for s in TABLE_V_STARTS], repeat)
        rows.append({"bench": f"table-V SJF, 10 x 1024 jobs, backfill={backfill}", "value": round(secs, 4),
                     "unit": "s", "reference": ref, "ratio": round(secs / ref, 2)})
    return rows


def bench_env(trace, seconds: float) -> list[dict]:
    rows = []
    for backfill, target in (("none", 12000), ("rlscheduler", 20000)):
        env = JobPickingEnv(trace, seq_len=256, backfill=backfill)
        steps, jobs, el = steps_for(env, seconds, masked_random(0), lambda e, _info: e.seq_len)
        jobs += env.driver.n_started
        rows.append({"bench": f"pick env steps/s (masked random), backfill={backfill}", "value": round(steps / el),
                     "unit": "steps/s", "reference": target, "ratio": round(steps / el / target, 2)})
        rows.append({"bench": f"pick env jobs started/s, backfill={backfill}", "value": round(jobs / el),
                     "unit": "jobs/s", "reference": None, "ratio": None})
    for backfill in ("none", "rlscheduler"):
        env = InspectorEnv(trace, seq_len=128, backfill=backfill)
        rng = np.random.default_rng(0)
        steps, _, el = steps_for(env, seconds, lambda _env: int(rng.random() < 0.3))
        rows.append({"bench": f"inspector env steps/s (30% rejects), backfill={backfill}",
                     "value": round(steps / el), "unit": "steps/s", "reference": None, "ratio": None})
    return rows


def bench_latency(trace, repeat: int) -> list[dict]:
    import torch

    from rtsched.rl.nets import PickActor
    from rtsched.rl.rlscheduler.policy import RLSchedulerPolicy
    from rtsched.rl.modelfiles import LoadedModel
    from rtsched.rl.nets import PickCritic

    rows = []
    torch.manual_seed(0)
    actor = PickActor(8, 128).eval()
    obs = torch.rand(1, 1024)
    mask = torch.ones(1, 128, dtype=torch.bool)
    n = 2000

    def fwd():
        with torch.no_grad():
            for _ in range(n):
                int(torch.argmax(actor(obs, mask)))

    secs = best_of(fwd, repeat) / n
    rows.append({"bench": "kernel network decision, PyTorch (128-job window)", "value": round(secs * 1e3, 4),
                 "unit": "ms", "reference": 0.30, "ratio": round(secs * 1e3 / 0.30, 2)})
    from rtsched.rl.nets import NumpyActor

    fast = NumpyActor(actor)
    obs_np, mask_np = obs[0].numpy(), mask[0].numpy()

    def fwd_np():
        for _ in range(n):
            int(np.argmax(fast.logits(obs_np, mask_np)))

    secs = best_of(fwd_np, repeat) / n
    rows.append({"bench": "kernel network decision, NumPy copy used by policies (128 jobs)",
                 "value": round(secs * 1e3, 4), "unit": "ms", "reference": 0.30, "ratio": round(secs * 1e3 / 0.30, 2)})
    model = LoadedModel("bench", "rlscheduler", actor, PickCritic(8, 128), {"backfill": "none"}, trace.norms(),
                        {"window": 128}, 0, [])
    decisions = []

    def rl_run():
        pol = RLSchedulerPolicy(model, backfill="none")
        run_sequence(trace, 1981, 1024, pol)
        decisions.append(pol.n_decisions)

    secs = best_of(rl_run, repeat)
    rows.append({"bench": "trained-model policy in the simulator, per decision (features + network + sim)",
                 "value": round(secs / decisions[-1] * 1e3, 4), "unit": "ms", "reference": 0.30,
                 "ratio": round(secs / decisions[-1] * 1e3 / 0.30, 2)})
    machine = FlatCluster(trace.max_nodes)
    counts = []

    def sjf_run():
        pol = CommittedHeadPolicy("sjf", "none")
        trace.simulator(1981, 1024, machine).run(pol)
        counts.append(pol.driver.n_started)  # without backfilling every start is one pick

    secs = best_of(sjf_run, repeat)
    rows.append({"bench": "SJF committed-head policy in the simulator, per decision (sort + pick + sim)",
                 "value": round(secs / counts[-1] * 1e3, 4), "unit": "ms", "reference": 0.71,
                 "ratio": round(secs / counts[-1] * 1e3 / 0.71, 2)})
    return rows


def bench_epoch(trace) -> list[dict]:
    from rtsched.rl.api import train

    t = time.perf_counter()
    res = train("rlscheduler", trace, epochs=1, out=None)
    secs = time.perf_counter() - t
    h = res["history"][0]
    return [{"bench": "PPO epoch, 100 trajectories x 256 jobs (defaults)", "value": round(secs, 1), "unit": "s",
             "reference": 123.0, "ratio": round(secs / 123.0, 2)},
            {"bench": "  of which collection / update", "value": f"{h['collect_s']} / {h['update_s']}", "unit": "s",
             "reference": None, "ratio": None}]


TABLE_V_RL_BACKFILL = 58.64  # seed 003 Table V, RL on Lublin-1 with backfilling
TABLE_V_RL_NO_BACKFILL = 254.67  # seed 003 Table V, RL on Lublin-1 without backfilling


def bench_train_to_target(trace, out: str, cap_min: float, target: float | None = None,
                          log: str | None = None, seeds=(0,), epochs: int = 25, backfill: str = "rlscheduler",
                          filter_epochs: int = 0, **options) -> list[dict]:
    """Train RLScheduler (papers' defaults; ``backfill`` "rlscheduler" or "none") for ``epochs`` epochs (or
    until ``cap_min``) per seed, choose the epoch on validation sequences disjoint from the ten Table-V test
    sequences (``rtsched.rl.selection``: ``n_val`` × ``val_len`` jobs, default 10 × 512, drawn with seed 2), then score the chosen model once
    on the test sequences.  ``filter_epochs`` > 0: the first that many epochs are stage 1 of trajectory
    filtering (R = (median, 2·mean) of SJF), the rest stage 2 on all windows.  The training time excludes
    the per-epoch validation, reported separately."""
    if target is None:
        target = TABLE_V_RL_BACKFILL if backfill != "none" else TABLE_V_RL_NO_BACKFILL
    from rtsched.rl.selection import train_selected

    rows, tests = [], []
    for seed in seeds:
        folder = out if len(seeds) == 1 else f"{out}-seed{seed}"
        t0 = time.perf_counter()
        res = train_selected(trace, folder, epochs, test_starts=TABLE_V_STARTS, test_len=1024, backfill=backfill,
                             cap_s=cap_min * 60, seed=seed, filter_epochs=filter_epochs, **options)
        wall = time.perf_counter() - t0
        tests.append(res["test"])
        for r in res["scores"]:
            line = {"seed": seed, "stage": r["stage"], "epoch": r["epoch"],
                    "validation_bsld": round(r["validation"], 2), "train_return": round(r["train_return"], 2)}
            print(json.dumps(line), flush=True)
            if log:
                with open(log, "a") as fh:
                    fh.write(json.dumps(line) + "\n")
        summary = {"seed": seed, "backfill": backfill, "filter_epochs": filter_epochs,
                   "selected_stage": res["selected_stage"], "selected_epoch": res["selected_epoch"],
                   "validation_bsld": round(res["validation"], 2),
                   "test_bsld": round(res["test"], 2), "epochs": res["epochs"], "train_s": res["train_s"],
                   "validation_s": res["eval_s"], "wall_s": round(wall, 1)}
        print(json.dumps(summary), flush=True)
        if log:
            with open(log, "a") as fh:
                fh.write(json.dumps(summary) + "\n")
        rows.append({"bench": f"seed {seed}: epoch chosen on validation / its test bsld (once)",
                     "value": f"{res['selected_epoch']} / {res['test']:.2f}", "unit": "", "reference": target,
                     "ratio": round(res["test"] / target, 2)})
        rows.append({"bench": f"seed {seed}: epochs / training time (excl. validation) / validation time",
                     "value": f"{res['epochs']} / {res['train_s'] / 60:.1f} / {res['eval_s'] / 60:.1f}", "unit": "min",
                     "reference": None, "ratio": None})
    t = np.asarray(tests)
    rows.append({"bench": f"test bsld of the selected models over {len(t)} seed(s): mean / sd / min / max",
                 "value": f"{t.mean():.2f} / {t.std(ddof=1) if len(t) > 1 else 0.0:.2f} / {t.min():.2f} / {t.max():.2f}",
                 "unit": "", "reference": target, "ratio": round(float(t.mean()) / target, 2)})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=os.path.normpath(DEFAULT_TRACE))
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, shorter timing windows")
    ap.add_argument("--epoch", action="store_true", help="also time one full PPO epoch")
    ap.add_argument("--json", help="write the rows to this JSON file")
    ap.add_argument("--train-to-target", action="store_true",
                    help="only: train, select the epoch on validation sequences, test it once")
    ap.add_argument("--backfill", choices=("rlscheduler", "none"), default="rlscheduler",
                    help="--train-to-target: backfilling during training and test (target 58.64 / 254.67)")
    ap.add_argument("--seq-len", type=int, default=256, help="--train-to-target: jobs per training sequence")
    ap.add_argument("--trajs-per-epoch", type=int, default=100, help="--train-to-target: trajectories per epoch")
    ap.add_argument("--filter-epochs", type=int, default=0,
                    help="--train-to-target: epochs of trajectory-filtering stage 1 (0: no filtering)")
    ap.add_argument("--cap-min", type=float, default=25.0, help="--train-to-target wall-time cap in minutes")
    ap.add_argument("--out", default="runs/bench-train-to-target", help="--train-to-target model folder")
    ap.add_argument("--log", help="--train-to-target: append one JSON line per epoch here")
    ap.add_argument("--n-envs", type=int, default=8, help="--train-to-target: environments stepped together")
    ap.add_argument("--epochs", type=int, default=25, help="--train-to-target: epochs per seed")
    ap.add_argument("--seeds", default="0", help="--train-to-target: training seeds, comma-separated")
    ap.add_argument("--val-len", type=int, default=512,
                    help="--train-to-target: jobs per validation sequence (the test sequences have 1,024)")
    ap.add_argument("--n-val", type=int, default=10, help="--train-to-target: validation sequences")
    ap.add_argument("--pi-lr", type=float, help="--train-to-target: the policy's Adam learning rate (default the "
                    "trainer's 3e-4, as the authors' ppo-pick-jobs.py; the paper's text says 1e-3)")
    ap.add_argument("--init-from", help="--train-to-target: start the first stage from this model's weights "
                    "(a finished run continued with other settings in a new --out)")
    args = ap.parse_args(argv)
    require_input("bench_rl", args.trace)
    trace = read_rl_trace(args.trace)
    if args.train_to_target:
        try:
            rows = bench_train_to_target(trace, args.out, args.cap_min, log=args.log, n_envs=args.n_envs,
                                         seeds=[int(x) for x in args.seeds.split(",")], epochs=args.epochs,
                                         backfill=args.backfill, filter_epochs=args.filter_epochs,
                                         seq_len=args.seq_len, trajs_per_epoch=args.trajs_per_epoch,
                                         val_len=args.val_len, n_val=args.n_val, init_from=args.init_from,
                                         **({} if args.pi_lr is None else {"pi_lr": args.pi_lr}))
        except KeyboardInterrupt:  # Ctrl-C: every finished epoch is checkpointed (checkpoint.pt, snapshots/)
            print(f"bench_rl: interrupted; the finished epochs are in {args.out}: the same command resumes",
                  file=sys.stderr)
            return 130
        _print_rows(rows, args.json)
        return 0
    repeat = 2 if args.quick else 5
    seconds = 1.0 if args.quick else 3.0
    rows = bench_table_v(trace, repeat) + bench_env(trace, seconds) + bench_latency(trace, repeat)
    if args.epoch:
        rows += bench_epoch(trace)
    _print_rows(rows, args.json)
    return 0


def _print_rows(rows: list[dict], json_out: str | None) -> None:
    width = max(len(r["bench"]) for r in rows)
    print(f"{'benchmark':<{width}}  {'value':>12} {'unit':<8} {'reference':>10} {'ratio':>7}")
    for r in rows:
        ref = "" if r["reference"] is None else r["reference"]
        ratio = "" if r["ratio"] is None else r["ratio"]
        print(f"{r['bench']:<{width}}  {r['value']!s:>12} {r['unit']:<8} {ref!s:>10} {ratio!s:>7}")
    print("ratio = value / reference (times: < 1 is faster; rates: >= 1 meets the target)")
    if json_out:
        atomic_write_text(json_out, json.dumps(rows, indent=1))


if __name__ == "__main__":
    raise SystemExit(main())
