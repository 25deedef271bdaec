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

``--against shipped`` (or ``BASE=MODEL,...``): each model is also compared with the reference model of its
base on the same sequences: 1 - sum(model) / sum(reference) and mean(model - reference), paired 95 %
intervals, and the sequences the model wins (the evidence a replacement of a shipped model needs).

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
from rtsched.rl.sequences import run_sequence, start_bounds
from rtsched.rl.tables import inspect_sequences
from rtsched.rl.trace import load_trace

LUBLIN = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "traces", "swf", "lublin_256.swf")
SHIPPED = os.path.join(os.path.dirname(__file__), "..", "rtsched", "rl", "pretrained", "table5")
PAPER_GAIN = {"sjf": 0.916, "f1": 0.88}  # seed 000 Table 4 / §4.4.6, Lublin
BOOT = 10_000


def test_starts(trace, n: int, seq_len: int, seed: int, start_range) -> list[int]:
    """``n`` first jobs drawn uniformly (``seed``) among the starts ``start_range`` allows (None: the
    authors' whole-trace bounds), as ``rtsched rl evaluate`` draws them."""
    lo, hi = start_bounds(len(trace), seq_len, start_range)
    return [int(s) for s in np.random.default_rng(seed).integers(lo, hi + 1, size=n)]


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
                     "rejection_ratio": run.rejections / run.inspections if run.inspections else 0.0,
                     "blocked_share": run.blocked_rejections / run.rejections if run.rejections else 0.0,
                     "inspections": run.inspections, "seconds": round(time.perf_counter() - t, 1),
                     "base_per_sequence": b.tolist(), "inspected_per_sequence": i.tolist()})
    return rows


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
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    require_input("bench_inspector", args.trace)
    trace = load_trace(args.trace)
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
    starts = test_starts(trace, args.n_sequences, args.seq_len, args.seed, _range(args.test_range))
    rows = evaluate_models(models, trace, starts, args.seq_len)
    print(f"{os.path.basename(args.trace)}: {len(starts)} x {args.seq_len} jobs, starts drawn with seed {args.seed} "
          f"from {args.test_range}; greedy; paired 95 % bootstrap intervals over the sequences")
    print(f"{'base':5} {'base bsld':>10} {'inspected':>10} {'gain [95 %]':>26} {'insp - base [95 %]':>32} "
          f"{'wins':>5} {'reject':>7} {'paper':>6}  model")
    for r in rows:
        print(f"{r['base']:5} {r['base_bsld']:10.2f} {r['inspected_bsld']:10.2f} "
              f"{100 * r['gain']:7.1f} % [{100 * r['gain_ci'][0]:5.1f}, {100 * r['gain_ci'][1]:5.1f}] "
              f"{r['diff']:9.2f} [{r['diff_ci'][0]:8.2f}, {r['diff_ci'][1]:8.2f}] "
              f"{r['wins']:3d}/{len(starts)} {r['rejection_ratio']:7.3f} "
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
