"""SchedInspector on held-out sequences (issue 24 §4: "gains >= 88 % on both bases, rejection near the
paper's ~30 %"), and the model selection of training runs on validation sequences.

Test sequences: seed 000's protocol, 50 x 256 jobs whose first job is drawn (``--seed``, default 1)
from the test part of the trace, the last 80 % (``--test-range``, default 0.2,1; ``--test-range
all``: the whole trace, the project's earlier inspector table).  For every model: the base policy's
and the inspected mean bsld, the gain 1 - inspected / base (seed 000 Fig. 8 / Table 4: a ratio of
means), its paired 95 % percentile bootstrap interval over the sequences, the mean paired difference
(inspected - base) with its interval, and the rejection ratio (rejections / inspections).

    PYTHONPATH=. python bench/bench_inspector.py                          # the shipped Lublin-1 inspectors
    PYTHONPATH=. python bench/bench_inspector.py --models sjf=RUN/best.pt,f1=...
    PYTHONPATH=. python bench/bench_inspector.py --select RUN ...          # score RUN/snapshots/epoch-*.pt
    PYTHONPATH=. python bench/bench_inspector.py --models sjf=NEW.pt --against shipped   # NEW against the shipped
    PYTHONPATH=. python bench/bench_inspector.py --whole-trace [--trace T --models sjf=M]  # seed 000 §5's ratio

``--against shipped`` (or ``BASE=MODEL,...``): each model is also compared with the reference model of its
base on the same sequences: 1 - sum(model) / sum(reference) and mean(model - reference), paired 95 %
intervals, and the sequences the model wins (the evidence a replacement of a shipped model needs).

``--whole-trace``: seed 000 §5's measurement ("schedule the whole SDSC-SP2 job trace from beginning
to the end", SJF, bsld, no backfilling: 30.57 % of 24,044,629 inspections were rejections): each model
inspects its base over the trace's every job in one run; the rejection ratio, then where the rejections
fall: the share of inspections and of rejections whose job could not start then anyway (seed 000
§4.4.1: such a rejection "does not impact the performance"), the ratio among the inspections of jobs
that could start, rejections per job and the jobs accepted at the 72-rejection cap.

``--validate MODEL`` (repeatable): each model's score on validation sequences only (``--n-validation``
x 256 jobs drawn with ``--validation-seed`` from ``--train-range``), to choose among runs' chosen
snapshots before one of them sees the test sequences.

``--select RUN``: every exported snapshot ``RUN/snapshots/epoch-NNNN.pt`` (as ``--select-every 1``
would score them during training) is scored on the validation sequences of
``rtsched.rl.inspector.select`` (10 x 256 jobs drawn with seed 2 from ``--train-range``, default the
first 20 %); the rows go to ``RUN/selection.json`` (scored snapshots are not scored again) and the
best epoch is printed.  Nothing here looks at the test sequences.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import time

import numpy as np

from benchcli import require_input  # noqa: E402  (bench/ is sys.path[0] when run as a script)
from rtsched.files import atomic_write_text
from rtsched.rl.inspector.select import DEFAULTS, inspector_validation
from rtsched.rl.selection import SELECTION, best_row, validation_starts
from rtsched.rl.sequences import run_sequence
from rtsched.rl.tables import draw_test_starts, inspect_sequences
from rtsched.rl.trace import load_trace

LUBLIN = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "traces", "swf", "lublin_256.swf")
SHIPPED = os.path.join(os.path.dirname(__file__), "..", "rtsched", "rl", "pretrained", "table5")
PAPER_GAIN = {"sjf": 0.916, "f1": 0.88}  # seed 000 Table 4 / §4.4.6, Lublin
BOOT = 10_000


def paired_gain(base: np.ndarray, insp: np.ndarray, samples: int = BOOT, seed: int = 0) -> dict:
    """Gain 1 - sum(insp) / sum(base) and mean(insp - base), each with its 95 % percentile bootstrap
    interval over the sequences (the same resampled indices for both; seeded)."""
    idx = np.random.default_rng(seed).integers(0, len(base), size=(samples, len(base)))
    gains = 1.0 - insp[idx].sum(axis=1) / base[idx].sum(axis=1)
    diffs = (insp - base)[idx].mean(axis=1)
    return {"gain": float(1.0 - insp.sum() / base.sum()),
            "gain_ci": [float(v) for v in np.percentile(gains, [2.5, 97.5])],
            "diff": float((insp - base).mean()),
            "diff_ci": [float(v) for v in np.percentile(diffs, [2.5, 97.5])],
            "wins": int((insp < base).sum())}


def rejection_breakdown(run) -> dict:
    """The rejection ratio (rejections / inspections) of an ``InspectedRun`` and where the rejections
    fall: the share of inspections and of rejections whose job could not start then anyway, and the
    ratio among the inspections of jobs that could start."""
    runnable = run.inspections - run.blocked_inspections

    def share(a, b):
        return a / b if b else 0.0

    return {"inspections": run.inspections, "rejections": run.rejections,
            "rejection_ratio": share(run.rejections, run.inspections),
            "blocked_inspection_share": share(run.blocked_inspections, run.inspections),
            "blocked_share": share(run.blocked_rejections, run.rejections),
            "runnable_rejection_ratio": share(run.rejections - run.blocked_rejections, runnable),
            "forced": run.forced}


def evaluate_models(models: dict[str, str], trace, starts: list[int], seq_len: int,
                    backfill: str = "none") -> list[dict]:
    """One row per (base name -> model path): the test protocol of the module docstring."""
    rows = []
    for base, path in models.items():
        t = time.perf_counter()
        b = np.array([run_sequence(trace, s, seq_len, base, backfill=backfill, goals=("bsld",))["bsld"]
                      for s in starts])
        run = inspect_sequences(path, trace, starts, seq_len, backfill, base, "bsld")
        i = np.array(run.values)
        rows.append({"base": base, "model": path, "base_bsld": float(b.mean()), "inspected_bsld": float(i.mean()),
                     **paired_gain(b, i),
                     **rejection_breakdown(run), "seconds": round(time.perf_counter() - t, 1),
                     "base_per_sequence": b.tolist(), "inspected_per_sequence": i.tolist()})
    return rows


def whole_trace_rows(models: dict[str, str], trace, backfill: str = "none") -> list[dict]:
    """One row per (base name -> model path): the base and the inspected base over the whole trace in
    one run (module docstring, ``--whole-trace``), with the rejections' breakdown."""
    n = len(trace)
    rows = []
    for base, path in models.items():
        t = time.perf_counter()
        b = run_sequence(trace, 0, n, base, backfill=backfill, goals=("bsld",))["bsld"]
        run = inspect_sequences(path, trace, [0], n, backfill, base, "bsld")
        rows.append({"base": base, "model": path, "jobs": n, "base_bsld": float(b), "inspected_bsld": run.value,
                     "gain": 1.0 - run.value / b if b else 0.0, **rejection_breakdown(run),
                     "rejections_per_job": run.rejections / n, "seconds": round(time.perf_counter() - t, 1)})
    return rows


def print_whole_trace(rows: list[dict], trace_path: str) -> None:
    print(f"{os.path.basename(trace_path)}: the whole trace in one run (seed 000 §5), greedy, no backfilling")
    print(f"{'base':5} {'jobs':>6} {'base bsld':>10} {'inspected':>10} {'gain':>7} {'inspections':>11} "
          f"{'reject':>7} {'blocked insp':>12} {'blocked rej':>11} {'reject|runnable':>15} {'rej/job':>7} "
          f"{'capped':>6}  model")
    for r in rows:
        print(f"{r['base']:5} {r['jobs']:6d} {r['base_bsld']:10.2f} {r['inspected_bsld']:10.2f} "
              f"{100 * r['gain']:6.1f}% {r['inspections']:11d} {r['rejection_ratio']:7.3f} "
              f"{r['blocked_inspection_share']:12.3f} {r['blocked_share']:11.3f} {r['runnable_rejection_ratio']:15.3f} "
              f"{r['rejections_per_job']:7.2f} {r['forced']:6d}  {os.path.relpath(r['model'])}")


def select_run(run: str, trace, train_range, n_val: int = DEFAULTS["sequences"], seq_len: int = DEFAULTS["seq_len"],
               seed: int = DEFAULTS["seed"]) -> dict:
    """Score every snapshot of ``run`` not yet scored (module docstring); returns the selection document."""
    starts = validation_starts(len(trace), seq_len, n_val, [], seed=seed, start_range=train_range)
    score = inspector_validation(trace, starts, seq_len)
    path = os.path.join(run, SELECTION)
    doc = json.load(open(path)) if os.path.exists(path) else {}
    if doc.get("starts") != starts:
        doc = {"starts": starts, "seq_len": seq_len, "seed": seed, "train_range": list(train_range), "epochs": []}
    done = {r["epoch"] for r in doc["epochs"]}
    progress = {}
    if os.path.exists(os.path.join(run, "progress.json")):
        hist = json.load(open(os.path.join(run, "progress.json")))
        hist = hist.get("history", hist) if isinstance(hist, dict) else hist
        progress = {int(h["epoch"]): h for h in hist if isinstance(h, dict) and "epoch" in h}
    for snap in sorted(glob.glob(os.path.join(run, "snapshots", "epoch-*.pt"))):
        epoch = int(re.search(r"epoch-(\d+)\.pt$", snap).group(1))
        if epoch in done:
            continue
        row = {"epoch": epoch, **score(snap), "snapshot": os.path.relpath(snap, run),
               "train_return": progress.get(epoch, {}).get("mean_return")}
        doc["epochs"].append(row)
        doc["epochs"].sort(key=lambda r: r["epoch"])
        doc["best"] = best_row(doc["epochs"])
        atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    return doc


def _range(text: str):
    if text == "all":
        return None
    lo, hi = text.split(",")
    return (float(lo), float(hi))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default=LUBLIN)
    ap.add_argument("--models", help="BASE=MODEL,... (default: the shipped inspector-lublin-1-{sjf,f1}.pt)")
    ap.add_argument("--n-sequences", type=int, default=50)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--test-range", default="0.2,1", help="LO,HI fractions of the trace, or all (default 0.2,1)")
    ap.add_argument("--train-range", default="0,0.2", help="--select: where validation sequences lie (default 0,0.2)")
    ap.add_argument("--select", action="append", default=[], help="a run folder to score (repeatable)")
    ap.add_argument("--against", help="shipped, or BASE=MODEL,...: compare each model with this reference on the "
                    "same sequences (paired)")
    ap.add_argument("--validate", action="append", default=[], help="a model to score on validation sequences "
                    "only (repeatable)")
    ap.add_argument("--n-validation", type=int, default=DEFAULTS["sequences"], help="--validate: sequences")
    ap.add_argument("--validation-seed", type=int, default=DEFAULTS["seed"], help="--validate: their seed")
    ap.add_argument("--whole-trace", action="store_true", help="seed 000 §5: each model over the whole trace in "
                    "one run, with the rejections' breakdown")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    require_input("bench_inspector", args.trace)
    trace = load_trace(args.trace)
    if args.validate:
        starts = validation_starts(len(trace), DEFAULTS["seq_len"], args.n_validation, [], seed=args.validation_seed,
                                   start_range=_range(args.train_range))
        score = inspector_validation(trace, starts, DEFAULTS["seq_len"])
        print(f"validation: {len(starts)} x {DEFAULTS['seq_len']} jobs drawn with seed {args.validation_seed} "
              f"from {args.train_range}")
        rows = []
        for model in args.validate:
            r = {"model": model, **score(model)}
            rows.append(r)
            print(f"{r['value']:9.2f} bsld  gain {100 * r['gain']:5.1f} %  rejection {r['rejection_ratio']:.3f}  {model}")
        if args.json:
            atomic_write_text(args.json, json.dumps({"starts": starts, "rows": rows}, indent=1) + "\n")
        return 0
    if args.select:
        for run in args.select:
            doc = select_run(run, trace, _range(args.train_range))
            for r in doc["epochs"]:
                print(f"{run} epoch {r['epoch']:3d}: validation bsld {r['validation']:8.2f} gain {r['gain']:6.3f} "
                      f"rejection {r['rejection_ratio']:.3f} train return {r['train_return']}")
            best = doc.get("best")
            print(f"{run}: best epoch {best['epoch'] if best else None} "
                  f"(validation {best['validation'] if best else float('nan'):.2f})")
        return 0
    shipped = {b: os.path.join(SHIPPED, f"inspector-lublin-1-{b}.pt") for b in ("sjf", "f1")}
    models = dict(p.split("=", 1) for p in args.models.split(",")) if args.models else shipped
    refs = (None if not args.against else
            {b: shipped[b] for b in models if b in shipped} if args.against == "shipped" else
            dict(p.split("=", 1) for p in args.against.split(",")))
    if args.whole_trace:
        rows = whole_trace_rows(models, trace)
        print_whole_trace(rows, args.trace)
        if args.json:
            atomic_write_text(args.json, json.dumps({"trace": args.trace, "rows": rows}, indent=1) + "\n")
        return 0
    starts = draw_test_starts(trace, args.n_sequences, args.seq_len, args.seed, _range(args.test_range))
    rows = evaluate_models(models, trace, starts, args.seq_len)
    print(f"{os.path.basename(args.trace)}: {len(starts)} x {args.seq_len} jobs, starts drawn with seed {args.seed} "
          f"from {args.test_range}; greedy; paired 95 % bootstrap intervals over the sequences")
    print(f"{'base':5} {'base bsld':>10} {'inspected':>10} {'gain [95 %]':>26} {'insp - base [95 %]':>32} "
          f"{'wins':>5} {'reject':>7} {'blocked rej':>11} {'rej|runnable':>12} {'paper':>6}  model")
    for r in rows:
        print(f"{r['base']:5} {r['base_bsld']:10.2f} {r['inspected_bsld']:10.2f} "
              f"{100 * r['gain']:7.1f} % [{100 * r['gain_ci'][0]:5.1f}, {100 * r['gain_ci'][1]:5.1f}] "
              f"{r['diff']:9.2f} [{r['diff_ci'][0]:8.2f}, {r['diff_ci'][1]:8.2f}] "
              f"{r['wins']:3d}/{len(starts)} {r['rejection_ratio']:7.3f} {r['blocked_share']:11.3f} "
              f"{r['runnable_rejection_ratio']:12.3f} "
              f"{100 * PAPER_GAIN.get(r['base'], float('nan')):5.1f}%"
              f"  {os.path.relpath(r['model'])}")
    against = []
    if refs:
        ref_rows = {r["base"]: r for r in evaluate_models(refs, trace, starts, args.seq_len)}
        print(f"against the reference (paired over the same {len(starts)} sequences; gain = 1 - model / reference)")
        for r in rows:
            ref = ref_rows.get(r["base"])
            if ref is None:
                continue
            cmp = paired_gain(np.array(ref["inspected_per_sequence"]), np.array(r["inspected_per_sequence"]))
            against.append({"base": r["base"], "model": r["model"], "reference": ref["model"],
                            "reference_bsld": ref["inspected_bsld"], **cmp})
            print(f"{r['base']:5} model {r['inspected_bsld']:9.2f} reference {ref['inspected_bsld']:9.2f} "
                  f"gain {100 * cmp['gain']:6.1f} % [{100 * cmp['gain_ci'][0]:6.1f}, {100 * cmp['gain_ci'][1]:6.1f}] "
                  f"model - reference {cmp['diff']:8.2f} [{cmp['diff_ci'][0]:8.2f}, {cmp['diff_ci'][1]:8.2f}] "
                  f"wins {cmp['wins']}/{len(starts)}  {os.path.relpath(ref['model'])}")
    if args.json:
        atomic_write_text(args.json, json.dumps({"trace": args.trace, "starts": starts, "seq_len": args.seq_len,
                                                 "rows": rows, "against": against}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
