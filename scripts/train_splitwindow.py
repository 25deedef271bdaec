"""Seed 004's long split-window training in resumable steps (issue 24 §3, §4): the paper's settings
where they fit, an imitation warm start, validation on the training part of the trace, a clean stop.

Run (a step of a few hours; ``--resume`` continues OUT/checkpoint.pt):

    nice -n 19 nohup python scripts/train_splitwindow.py --out training/splitwindow-m20-10-10 \
        --until 01:30 [--resume] >> OUT/train.log 2>&1 &

The run is ``rtsched rl train --agent splitwindow`` with the settings below (``COMMAND`` prints the
equivalent command line, which resumes the same checkpoint too, without the validation):
M = 20 split 10-10 (the best M = 20 split measured here, docs/benchmarks.md "Split window"), episodes
of 1,000 placements starting in the first 80 % of Lublin-256, [1024, 512, 256] networks, one update
per episode on minibatches of 128 (10 + 10 passes), and an imitation term (weight 1 for
``IMITATION_HOLD`` epochs, then linearly to 0 at ``IMITATION_END``) whose teacher starts the shortest
window job that fits (``rtsched.rl.splitwindow.observation.teacher_slot``).

Files in OUT: ``checkpoint.pt`` and ``progress.json`` (every epoch, by the trainer), ``budget.json``
(CPU and wall seconds spent over all steps), ``validation.json`` (every ``--validate-every`` epochs:
the greedy policy's average wait on ``VAL_SEGMENTS`` segments of ``VAL_JOBS`` jobs drawn from the
training part, beside FCFS + EASY, SJF + EASY and the teacher on the same segments) and
``best.pt`` (the policy of the best validated epoch: ``rtsched rl export``'s policy-only file).
The run stops after the epoch during which ``--until`` (UTC, HH:MM) passes or a file OUT/STOP
appears, with the checkpoint of that epoch written.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from rtsched.files import atomic_write_text  # noqa: E402
from rtsched.rl.selection import validation_starts  # noqa: E402
from rtsched.rl.splitwindow.observation import teacher_slot, window_slots  # noqa: E402
from rtsched.sim.decisions import Start  # noqa: E402

TRACE = os.path.join(REPO, "..", "shared", "data", "traces", "swf", "lublin_256.swf")
HEAD, TAIL, PLACEMENTS, HIDDEN = 10, 10, 1000, (1024, 512, 256)
TRAIN_PART = (0.0, 0.8)  # episodes start in the first 80 %; the last 20 % is the test part
IMITATION, IMITATION_HOLD, IMITATION_END, TEACHER = 1.0, 200, 1000, "sjf"
VAL_SEGMENTS, VAL_JOBS, VAL_SEED = 4, 1000, 0
REFERENCES = ("fcfs+easy", "sjf+easy")
COMMAND = (f"rtsched rl train --agent splitwindow --trace ../shared/data/traces/swf/lublin_256.swf --head {HEAD} "
           f"--tail {TAIL} --placements {PLACEMENTS} --hidden {','.join(map(str, HIDDEN))} --start-range 0,0.8 "
           f"--imitation {IMITATION} --imitation-hold {IMITATION_HOLD} --imitation-end {IMITATION_END} "
           f"--teacher {TEACHER} --epochs N --out OUT --resume")


class TeacherPolicy:
    """The imitation teacher as a core policy: at each scheduling point, the window job it picks,
    until none fits (on an idle machine the first window job, as ``SplitWindowPolicy`` does)."""

    preemptive = False

    def __init__(self, head: int, tail: int, rule: str) -> None:
        self.head, self.tail, self.rule = head, tail, rule
        self.name = f"teacher-{rule}-{head}-{tail}"
        self.n_forced = 0

    def decide(self, view) -> list:
        queue, free, out = list(view.queue), view.state.free_nodes, []
        while queue:
            vis = window_slots(queue, self.head, self.tail)
            a = teacher_slot(vis, free, self.rule)
            if a < 0:
                if out or view.running:
                    break
                a = 0
                self.n_forced += 1
            js = vis[a]
            out.append(Start(js.info.id, None))
            free -= js.info.nodes
            queue.remove(js)
        return out


class _Stop(Exception):
    pass


def mean_wait(rows: list[dict], policy) -> float:
    return float(np.mean([r["avg_wait"] for r in rows if r["policy"] == policy]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--trace", default=TRACE)
    ap.add_argument("--until", help="UTC HH:MM: stop after the epoch during which this time passes")
    ap.add_argument("--epochs", type=int, default=100_000, help="total epochs (episodes), the paper's 100,000")
    ap.add_argument("--validate-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resume", action="store_true", help="continue the checkpoint in --out")
    args = ap.parse_args(argv)

    from rtsched.rl.api import train
    from rtsched.rl.evaluate import evaluate_online
    from rtsched.rl.modelfiles import CHECKPOINT, export_model
    from rtsched.rl.trace import load_trace

    ckpt = os.path.join(args.out, CHECKPOINT)
    if os.path.exists(ckpt) != args.resume:  # as ``rtsched rl train``: never overwrite, never start afresh silently
        print(f"train_splitwindow: {ckpt}: " + ("a checkpoint exists; pass --resume to continue it" if not args.resume
                                                else "no checkpoint to continue (drop --resume to start)"),
              file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    tr = load_trace(args.trace)
    deadline = None
    if args.until:
        now = dt.datetime.now(dt.timezone.utc)
        hh, mm = (int(x) for x in args.until.split(":"))
        deadline = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
        if deadline <= now:
            deadline += dt.timedelta(days=1)
    budget_path = os.path.join(args.out, "budget.json")
    budget = json.load(open(budget_path)) if os.path.exists(budget_path) else {"cpu_s": 0.0, "wall_s": 0.0, "steps": []}
    val_path = os.path.join(args.out, "validation.json")
    if os.path.exists(val_path):
        val = json.load(open(val_path))
    else:
        starts = validation_starts(len(tr), VAL_JOBS, VAL_SEGMENTS, [], seed=VAL_SEED, start_range=TRAIN_PART)
        teacher = TeacherPolicy(HEAD, TAIL, TEACHER)
        rows = evaluate_online([*REFERENCES, teacher], tr, starts, VAL_JOBS)
        val = {"segments": starts, "jobs": VAL_JOBS, "references": {p: mean_wait(rows, p) for p in REFERENCES},
               "teacher": mean_wait(rows, teacher.name), "epochs": [], "best": None}
        atomic_write_text(val_path, json.dumps(val, indent=1) + "\n")
    print(f"validation segments {val['segments']} x {val['jobs']} jobs: references {val['references']}, "
          f"teacher {val['teacher']:.0f}", flush=True)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    step = {"started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "cpu_s": 0.0, "wall_s": 0.0}
    budget["steps"].append(step)

    def account() -> None:
        step["cpu_s"] = round(time.process_time() - cpu0, 1)
        step["wall_s"] = round(time.perf_counter() - wall0, 1)
        budget["cpu_s"] = round(sum(s["cpu_s"] for s in budget["steps"]), 1)
        budget["wall_s"] = round(sum(s["wall_s"] for s in budget["steps"]), 1)
        atomic_write_text(budget_path, json.dumps(budget, indent=1) + "\n")

    def progress(epoch: int, epochs: int, row: dict) -> None:
        line = (f"{dt.datetime.now(dt.timezone.utc):%H:%M:%S} epoch {epoch}: return {row['mean_return']:.1f}, "
                f"{row['steps']} steps, collect {row['collect_s']:.1f} s, update {row['update_s']:.1f} s, "
                f"pi iters {row['pi_iters']}, kl {row['kl']:.4f}, imitation {row.get('imitation_weight', 0):.2f} "
                f"(loss {row.get('loss_imitation', float('nan')):.3f})")
        if epoch % args.validate_every == 0:
            snap = os.path.join(args.out, "latest-policy.pt")
            export_model(os.path.join(args.out, CHECKPOINT), snap)
            rows = evaluate_online([snap], tr, val["segments"], val["jobs"])
            w = mean_wait(rows, snap)
            val["epochs"].append({"epoch": epoch, "avg_wait": w, "forced": int(sum(r["forced"] for r in rows)),
                                  "cpu_s": round(budget["cpu_s"] - step["cpu_s"] + time.process_time() - cpu0, 1)})
            if val["best"] is None or w < val["best"]["avg_wait"]:
                val["best"] = {"epoch": epoch, "avg_wait": w}
                os.replace(snap, os.path.join(args.out, "best.pt"))
            else:
                os.remove(snap)
            atomic_write_text(val_path, json.dumps(val, indent=1) + "\n")
            line += f" | validation avg wait {w:.0f} s (best {val['best']['avg_wait']:.0f} at {val['best']['epoch']})"
        print(line, flush=True)
        account()
        if (deadline is not None and dt.datetime.now(dt.timezone.utc) >= deadline) or \
                os.path.exists(os.path.join(args.out, "STOP")):
            raise _Stop

    try:
        train("splitwindow", tr, epochs=args.epochs, out=args.out, progress=progress, resume=args.resume, head=HEAD,
              tail=TAIL, placements=PLACEMENTS, hidden=HIDDEN, start_range=TRAIN_PART, imitation=IMITATION,
              imitation_hold=IMITATION_HOLD, imitation_end=IMITATION_END, teacher=TEACHER, seed=args.seed)
    except _Stop:
        print("stopped cleanly; the checkpoint holds the last epoch (run the same command with --resume to continue)", flush=True)
    account()
    print(f"spent in all: {budget['cpu_s'] / 3600:.2f} CPU h, {budget['wall_s'] / 3600:.2f} wall h", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
