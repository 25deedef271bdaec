"""Deep Back-Filling's split window (seed 004) on Lublin-256: window-size and head/tail sweeps.

Run:  PYTHONPATH=. nice -n 10 python bench/bench_splitwindow.py [--budget-s 50] [--quick] [--json OUT]
      PYTHONPATH=. python bench/bench_splitwindow.py --speed-only
      PYTHONPATH=. python bench/bench_splitwindow.py --models LABEL=PATH,... [--eval-segments 10 --eval-jobs 200]
      PYTHONPATH=. nice -n 10 python bench/bench_splitwindow.py --recipe clone --mask-invalid --placements 1000 \
          --hidden 1024,512,256 --out runs/sweep-clone --json runs/bench_splitwindow.json   (the M sweep, resumable)

``--models``: no training; the given (already validated) models, the window teachers and the references
FCFS + EASY, SJF + EASY and plain SJF, FCFS, LCFS schedule the held-out segments once, and each row's
paired difference in average wait to FCFS + EASY and to SJF + EASY gets a 95 % percentile bootstrap
interval over the segments (``milp.compare.paired_bootstrap``: 10,000 resamples, seeded).

First, environment steps per second with random actions: the split-window environment beside the
project's picking environment (RLScheduler's), one after the other in the same process.

For every window configuration M_h-M_t (default: M ∈ {8, 10, 16, 20, 32, 64}, each head-only M-0,
one tail slot (M−1)-1 and an even split), a split-window agent is trained with the project's PPO
(``rtsched.rl.api.train``, agent ``splitwindow``) on episodes drawn from the first 80 % of the trace,
for a fixed wall-time budget per configuration; then every agent and the references EASY
(FCFS + EASY backfilling), SJF + EASY and seed 004's SJF (smallest cores first, no backfilling)
schedule the same held-out segments of the last 20 % (``rtsched.rl.evaluate.evaluate_online``:
validated pipeline runs).  Printed: average wait, average queue length and utilization per
configuration; for each M the best split against head-only (the paper's headline at M = 20: the
split cuts the average wait by 49 % and the queue length by 50 %).

The paper trains every configuration for 100,000 episodes of 1,000 placements with [1024, 512, 256]
networks; this benchmark gives each a budget of seconds (defaults: 250-placement episodes,
[256, 128, 64] networks, two episodes per update) on a shared 2-core machine, so the agents are
barely trained: the numbers measure the pipeline and the early learning, not the paper's converged
agents.  ``--recipe clone`` trains each configuration by imitation of its SJF window teacher instead
(the warm start issue 24 §4 allows; ``--mask-invalid`` for the masked action space), resumable: a
configuration already cloned in ``--out`` is reused.  Every configuration's teacher is scored beside it.
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

from benchcli import require_input  # noqa: E402  (bench/ is sys.path[0] when run as a script)
from rtsched.rl.api import train  # noqa: E402
from rtsched.rl.evaluate import evaluate_online  # noqa: E402
from rtsched.rl.trace import load_trace  # noqa: E402
from rtsched.files import atomic_write_text  # noqa: E402

DEFAULT_TRACE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data",
                             "traces", "swf", "lublin_256.swf")
SIZES = (8, 10, 16, 20, 32, 64)
REFERENCES = {"EASY": "fcfs+easy", "SJF+EASY": "sjf+easy", "SJF (cores)": "smallest"}
# --models: the held-out comparison of issue 24 §4 (plain = no backfilling)
HELD_OUT = {"FCFS+EASY": "fcfs+easy", "SJF+EASY": "sjf+easy", "SJF": "sjf", "FCFS": "fcfs", "LCFS": "lcfs"}
PAPER = {"M": 20, "wait_cut": 0.49, "queue_cut": 0.50}


def env_speed(trace, seconds: float = 2.0) -> list[tuple[str, float, float]]:
    """Random-action steps per second of the split-window environment (M = 20, 10-10) beside the project's
    picking environment (masked random, no backfilling), measured one after the other in this process:
    [(label, steps/s, jobs started/s)]."""
    from rtsched.rl.rlscheduler.env import JobPickingEnv
    from rtsched.rl.splitwindow.env import SplitWindowEnv

    out = []
    for label, env in (("split window 10-10, 1000 placements", SplitWindowEnv(trace, head=10, tail=10)),
                       ("picking env (RLScheduler), 256 jobs", JobPickingEnv(trace, seq_len=256))):
        steps, jobs, el = steps_for(env, seconds, masked_random(0),
                                    lambda e, _info: e.placed if hasattr(e, "placed") else e.seq_len)
        jobs += env.placed if hasattr(env, "placed") else env.driver.n_started
        out.append((label, steps / el, jobs / el))
    return out


class _Budget(Exception):
    pass


def configs(sizes, tails=None) -> list[tuple[int, int]]:
    """(M_h, M_t) per size: head-only, one tail slot and an even split, or the given tail sizes."""
    out = []
    for m in sizes:
        choices = ((m, 0), (m - 1, 1), (m - m // 2, m // 2)) if tails is None else [(m - t, t) for t in tails if t <= m]
        for cfg in choices:
            if cfg not in out:
                out.append(cfg)
    return out


def train_config(trace, head: int, tail: int, out: str, budget_s: float, args) -> dict:
    t0 = time.perf_counter()

    def stop(epoch, epochs, stats):
        if time.perf_counter() - t0 > budget_s:
            raise _Budget

    try:
        res = train("splitwindow", trace=trace, epochs=10 ** 6, out=out, progress=stop, head=head, tail=tail,
                    placements=args.placements, hidden=tuple(args.hidden), trajs_per_epoch=args.episodes_per_update,
                    n_envs=args.episodes_per_update, start_range=(0.0, 0.8), seed=args.seed,
                    mask_invalid=args.mask_invalid)
        history = res["history"]
    except _Budget:
        with open(os.path.join(out, "progress.json")) as f:
            history = json.load(f)
    wall = time.perf_counter() - t0
    return {"head": head, "tail": tail, "epochs": len(history), "episodes": sum(h["trajectories"] for h in history),
            "steps": sum(h["steps"] for h in history), "train_s": round(wall, 1),
            "first_return": history[0]["mean_return"], "last_return": float(np.mean([h["mean_return"]
                                                                                      for h in history[-5:]]))}


def clone_config(trace, head: int, tail: int, out: str, args) -> dict:
    """``--recipe clone``: the actor fitted to the SJF window teacher's decisions (``--clone-episodes``
    training episodes, ``--clone-epochs`` passes; ``rtsched.rl.api.train`` with ``epochs=0``), the
    imitation warm start of issue 24 §4 on its own.  A configuration whose ``clone.json`` is already in
    ``out`` (an earlier, interrupted sweep) is reused, not trained again."""
    done = os.path.join(out, "clone.json")
    reused = os.path.exists(done) and os.path.exists(os.path.join(out, "checkpoint.pt"))
    t0, c0 = time.perf_counter(), time.process_time()
    if not reused:
        if os.path.exists(out):
            import shutil

            shutil.rmtree(out)
        train("splitwindow", trace=trace, epochs=0, out=out, head=head, tail=tail, placements=args.placements,
              hidden=tuple(args.hidden), start_range=(0.0, 0.8), seed=args.seed, clone_episodes=args.clone_episodes,
              clone_epochs=args.clone_epochs, clone_lr=1e-3, mask_invalid=args.mask_invalid)
    with open(done) as fh:
        rec = json.load(fh)
    return {"head": head, "tail": tail, "recipe": "clone", "reused": reused, "samples": rec["samples"],
            "clone_accuracy": rec["last"]["accuracy"], "fit_s": rec["fit_s"],
            "train_s": round(time.perf_counter() - t0, 1), "cpu_s": round(time.process_time() - c0, 1)}


def mean_rows(rows, key_fields=("avg_wait", "avg_queue", "utilization", "avg_bsld")) -> dict:
    out = {k: float(np.mean([r[k] for r in rows])) for k in key_fields}
    for k in ("avg_invisible", "partial_fraction", "forced"):
        if k in rows[0]:
            out[k] = float(np.mean([r[k] for r in rows]))
    return out


def segment_starts(n: int, jobs: int, segments: int, protocol: str, seed: int) -> list[int]:
    """The test segments' first jobs: ``held-out`` evenly spaced over the last 20 % of an ``n``-job trace
    (the split the project trains against); ``paper`` drawn at random over the whole trace (seed 004
    evaluates on random start points of the trace it trains on): distinct, seeded, possibly overlapping."""
    if protocol == "paper":
        from rtsched.rl.selection import validation_starts
        return [int(s) for s in validation_starts(n, jobs, segments, [], seed=seed, start_range=(0.0, 1.0))]
    return [int(x) for x in np.linspace(int(0.8 * n), n - jobs, segments)]


def held_out(tr, starts, jobs: int, models: list[tuple[str, str]], teachers: list[tuple[int, int]]) -> list[dict]:
    """``--models``: every model, teacher and ``HELD_OUT`` reference on the same segments; rows with the
    mean average wait and queue length and the paired 95 % intervals of the wait against FCFS + EASY
    and SJF + EASY (printed as a table)."""
    from milp.compare import paired_bootstrap
    from rtsched.rl.splitwindow.policy import WindowTeacherPolicy

    entries = [(lab, name) for lab, name in HELD_OUT.items()] + list(models)
    entries += [(f"teacher sjf {h}-{t}", WindowTeacherPolicy(h, t, "sjf")) for h, t in teachers]
    per = {}
    for lab, pol in entries:
        t = time.perf_counter()
        rows = evaluate_online([pol], tr, starts, jobs)
        per[lab] = {"wait": [r["avg_wait"] for r in rows], "queue": [r["avg_queue"] for r in rows],
                    "forced": sum(r["forced"] for r in rows), "s": time.perf_counter() - t}
    out = []
    print(f"{'policy':>22} {'avg wait (s)':>13} {'avg queue':>10} {'− FCFS+EASY [95 %]':>32} "
          f"{'− SJF+EASY [95 %]':>32} {'forced':>6}")
    for lab, _ in entries:
        w = np.asarray(per[lab]["wait"])
        row = {"policy": lab, "avg_wait": float(w.mean()), "avg_queue": float(np.mean(per[lab]["queue"])),
               "wait_per_segment": w.tolist(), "queue_per_segment": list(per[lab]["queue"]), "forced": per[lab]["forced"],
               "eval_s": round(per[lab]["s"], 1)}
        cells = []
        for ref in ("FCFS+EASY", "SJF+EASY"):
            ci = paired_bootstrap(list(w - np.asarray(per[ref]["wait"])))
            row[f"minus_{ref}"] = ci
            cells.append("—" if ci is None or lab == ref else f"{ci[0]:+10.0f} [{ci[1]:+9.0f}, {ci[2]:+9.0f}]")
        out.append(row)
        print(f"{lab:>22} {row['avg_wait']:13.0f} {row['avg_queue']:10.2f} {cells[0]:>32} {cells[1]:>32} "
              f"{row['forced']:6d}", flush=True)
    return out


def relative_bootstrap(a, b, samples: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """(point, lo, hi): mean(b) / mean(a) − 1 over paired segments (the relative change of b against
    a, as the paper's "−49 %") and its 95 % percentile bootstrap interval (segments resampled in pairs)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    idx = np.random.default_rng(seed).integers(0, a.size, size=(samples, a.size))
    ratios = b[idx].mean(axis=1) / a[idx].mean(axis=1) - 1.0
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(b.mean() / a.mean() - 1.0), float(lo), float(hi)


def versus(rows: list[dict], pairs: list[tuple[str, str]]) -> list[dict]:
    """``--versus A=B``: B against A (e.g. split against head-only) on the same segments: the paired
    difference of average wait and of time-average queue length (``paired_bootstrap``) and the relative
    change (``relative_bootstrap``), printed and returned."""
    from milp.compare import paired_bootstrap

    by = {r["policy"]: r for r in rows}
    out = []
    for a, b in pairs:
        if a not in by or b not in by:
            raise SystemExit(f"bench_splitwindow: --versus: no row labelled {a if a not in by else b!r}")
        row = {"a": a, "b": b}
        for key in ("wait", "queue"):
            xa, xb = by[a][f"{key}_per_segment"], by[b][f"{key}_per_segment"]
            row[key] = {"minus": paired_bootstrap([y - x for x, y in zip(xa, xb)]),
                        "relative": relative_bootstrap(xa, xb)}
            d, r = row[key]["minus"], row[key]["relative"]
            if d is None:  # paired_bootstrap gives no interval on fewer than MIN_PAIRED segments
                print(f"{b} − {a}: {key} {np.mean(xb) - np.mean(xa):+.2f}, relative {100 * r[0]:+.1f} % "
                      f"(no interval: {len(xa)} segments are too few; use more --eval-segments)")
                continue
            print(f"{b} − {a}: {key} {d[0]:+.2f} [{d[1]:+.2f}, {d[2]:+.2f}]; relative {100 * r[0]:+.1f} % "
                  f"[{100 * r[1]:+.1f}, {100 * r[2]:+.1f}]")
        out.append(row)
    return out


def main() -> int:
    """The benchmark's protocol, top to bottom: options, the environment speed, one agent trained per
    window configuration within its budget, every agent and the references on the held-out segments,
    then the printed tables.  One piece on purpose (over 80 lines): it is the protocol a reader checks
    against docs/benchmarks.md in one place."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--tails", help="tail sizes M_t to run for every M, comma-separated (default 0, 1, M/2)")
    ap.add_argument("--budget-s", type=float, default=50.0, help="training wall time per configuration")
    ap.add_argument("--placements", type=int, default=250)
    ap.add_argument("--hidden", default="256,128,64")
    ap.add_argument("--episodes-per-update", type=int, default=2)
    ap.add_argument("--eval-jobs", type=int, default=500)
    ap.add_argument("--eval-segments", type=int, default=4)
    ap.add_argument("--protocol", choices=("held-out", "paper"), default="held-out",
                    help="held-out: test segments evenly spaced over the last 20 %% of the trace (default); paper: "
                    "seed 004's own protocol, segments starting at random points of the whole trace (--seed), the "
                    "training part included (in-sample, as the paper evaluates; no split is described there)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join("runs", "bench_splitwindow"))
    ap.add_argument("--recipe", choices=("ppo", "clone"), default="ppo",
                    help="ppo: PPO for --budget-s per configuration (default); clone: the imitation warm start only "
                    "(--clone-episodes teacher episodes, --clone-epochs passes), resumable per configuration")
    ap.add_argument("--clone-episodes", type=int, default=5)
    ap.add_argument("--clone-epochs", type=int, default=20)
    ap.add_argument("--mask-invalid", action="store_true", help="train with the split window's --mask-invalid")
    ap.add_argument("--quick", action="store_true", help="sizes 8,20; 10 s budget; 2 segments of 300 jobs")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--speed-only", action="store_true", help="only the environment steps per second")
    ap.add_argument("--models", help="LABEL=PATH,...: evaluate these models on the held-out segments (no training)")
    ap.add_argument("--teachers", default="10-10,20-0", help="--models: window teachers M_h-M_t to score beside them")
    ap.add_argument("--versus", help="--models: A=B,...: B against A (labels of rows, e.g. head-only=split): paired "
                    "differences and relative changes of wait and queue length")
    args = ap.parse_args()
    require_input("bench_splitwindow", args.trace)
    if args.quick:
        args.sizes, args.budget_s, args.eval_jobs, args.eval_segments = "8,20", 10.0, 300, 2
    args.hidden = [int(x) for x in args.hidden.split(",")]
    sizes = [int(x) for x in args.sizes.split(",")]
    tr = load_trace(args.trace)
    n = len(tr)
    starts = segment_starts(n, args.eval_jobs, args.eval_segments, args.protocol, args.seed)
    how = (f"imitation of each window's SJF teacher ({args.clone_episodes} episodes, {args.clone_epochs} passes)"
           if args.recipe == "clone" else
           f"PPO, budget {args.budget_s:.0f} s per configuration, {args.episodes_per_update} episodes per update")
    where = ("the paper's protocol: random starts over the whole trace, training part included (in-sample)"
             if args.protocol == "paper" else "held out: the last 20 %")
    print(f"trace {tr.name}: {n} jobs; training starts in the first 80 %; test segments ({where}) {starts} × {args.eval_jobs} "
          "jobs; " + ("no training (--models)" if args.models else
                      f"{how}; episodes of {args.placements} placements, networks {args.hidden}"
                      f"{', masked (--mask-invalid)' if args.mask_invalid else ''}"))
    if args.models:
        models = [tuple(item.split("=", 1)) for item in args.models.split(",")]
        teachers = [tuple(int(x) for x in ht.split("-")) for ht in args.teachers.split(",") if ht]
        rows = held_out(tr, starts, args.eval_jobs, models, teachers)
        pairs = versus(rows, [tuple(item.split("=", 1)) for item in args.versus.split(",")]) if args.versus else []
        if args.json:
            atomic_write_text(args.json, json.dumps({"starts": starts, "eval_jobs": args.eval_jobs, "rows": rows,
                                                     "versus": pairs}, indent=1))
        return 0
    speeds = env_speed(tr, 1.0 if args.quick else 3.0)
    for label, sps, jps in speeds:
        print(f"  env speed, random actions: {label}: {sps:,.0f} steps/s, {jps:,.0f} jobs started/s")
    print(f"  split window / picking env steps/s: {speeds[0][1] / speeds[1][1]:.2f}")
    if args.speed_only:
        return 0
    t_all = time.perf_counter()
    ref_rows = evaluate_online(list(REFERENCES.values()), tr, starts, args.eval_jobs)
    refs = {lab: mean_rows([r for r in ref_rows if r["policy"] == name]) for lab, name in REFERENCES.items()}
    results = []
    tails = [int(x) for x in args.tails.split(",")] if args.tails else None
    from rtsched.rl.splitwindow.policy import WindowTeacherPolicy

    for head, tail in configs(sizes, tails):
        out = os.path.join(args.out, f"{head}-{tail}")
        if args.recipe == "clone":
            info = clone_config(tr, head, tail, out, args)
        else:
            if os.path.exists(os.path.join(out, "checkpoint.pt")):
                import shutil

                shutil.rmtree(out)
            info = train_config(tr, head, tail, out, args.budget_s, args)
        teacher_policy = WindowTeacherPolicy(head, tail)
        rows = evaluate_online([out, teacher_policy], tr, starts, args.eval_jobs)  # the same segments, one pass
        info.update(mean_rows([r for r in rows if r["policy"] == out]))
        teacher = mean_rows([r for r in rows if r["policy"] == teacher_policy.name])
        info["teacher_wait"], info["teacher_queue"] = teacher["avg_wait"], teacher["avg_queue"]
        results.append(info)
        how = (f"clone {info['samples']:>6} decisions, accuracy {info['clone_accuracy']:.3f}, "
               f"{info['cpu_s']:>6.1f} CPU s{' (reused)' if info['reused'] else ''}" if args.recipe == "clone" else
               f"{info['episodes']:>4} episodes {info['steps']:>7} steps {info['train_s']:>6.1f} s  return "
               f"{info['first_return']:8.1f} -> {info['last_return']:8.1f}")
        print(f"  {head:>2}-{tail:<2} {how}   wait {info['avg_wait']:9.0f} s (teacher {info['teacher_wait']:7.0f})  "
              f"queue {info['avg_queue']:6.2f}  util {info['utilization']:.3f}  invisible {info['avg_invisible']:.2f}"
              f"  forced {info['forced']:.1f}", flush=True)
    print(f"\ntotal wall time {time.perf_counter() - t_all:.0f} s\n")
    print(f"{'config':>8} {'avg wait (s)':>13} {'avg queue':>10} {'util':>6} {'bsld':>9} {'invisible':>9} {'L>M':>6} "
          f"{'teacher wait':>12}")
    for lab, r in refs.items():
        print(f"{lab:>8} {r['avg_wait']:13.0f} {r['avg_queue']:10.2f} {r['utilization']:6.3f} {r['avg_bsld']:9.1f}")
    for r in results:
        print(f"{str(r['head']) + '-' + str(r['tail']):>8} {r['avg_wait']:13.0f} {r['avg_queue']:10.2f} "
              f"{r['utilization']:6.3f} {r['avg_bsld']:9.1f} {r['avg_invisible']:9.2f} {r['partial_fraction']:6.2f} "
              f"{r['teacher_wait']:12.0f}")
    print("\nbest split vs head-only (same M), ours beside the paper's headline (M = 20: wait −49 %, queue −50 %):")
    for m in sizes:
        head_only = next((r for r in results if r["head"] == m and r["tail"] == 0), None)
        splits = [r for r in results if r["head"] + r["tail"] == m and r["tail"] > 0]
        if head_only is None or not splits:
            continue
        best = min(splits, key=lambda r: r["avg_wait"])
        dw = 1 - best["avg_wait"] / head_only["avg_wait"] if head_only["avg_wait"] else 0.0
        dq = 1 - best["avg_queue"] / head_only["avg_queue"] if head_only["avg_queue"] else 0.0
        easy = refs["EASY"]
        paper = (f"   paper: wait −{PAPER['wait_cut']:.0%}, queue −{PAPER['queue_cut']:.0%}" if m == PAPER["M"] else "")
        print(f"  M = {m:>2}: best split {best['head']}-{best['tail']}: wait {dw:+.0%} cut, queue {dq:+.0%} cut "
              f"(head-only wait/EASY {head_only['avg_wait'] / easy['avg_wait']:.2f}, best split/EASY "
              f"{best['avg_wait'] / easy['avg_wait']:.2f}){paper}")
    if args.json:
        atomic_write_text(args.json, json.dumps({"references": refs, "configs": results, "starts": starts, "settings": {
                "recipe": args.recipe, "clone_episodes": args.clone_episodes, "clone_epochs": args.clone_epochs,
                "mask_invalid": args.mask_invalid, "budget_s": args.budget_s, "placements": args.placements, "hidden": args.hidden,
                "episodes_per_update": args.episodes_per_update, "eval_jobs": args.eval_jobs}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
