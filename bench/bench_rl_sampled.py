"""RLScheduler without backfilling, greedy and sampled (issue 24 §4: "≤ 254.67 and better than F1 by more
than the spread of three seeds").  The authors' test script (``compare-pick-jobs.py``) samples every action
from the masked softmax, so the paper's 254.67 is a sampled-policy figure; ``rtsched rl evaluate`` is greedy
unless ``--sample``.  This script selects one model per run and per mode on the validation sequences only,
then scores the selected models once on seed 003's ten Table-V test sequences.

    PYTHONPATH=. python bench/bench_rl_sampled.py --validate RUN [RUN ...]   # sampled validation of every snapshot
    PYTHONPATH=. python bench/bench_rl_sampled.py --test RUN [RUN ...] [--json OUT]

``--validate``: every snapshot of RUN (``RUN/stage1/snapshots/epoch-NNNN.pt`` and ``RUN/snapshots/...``)
not scored yet is scored *sampled* (``--sample-seed``, one run a sequence) on the run's own validation
sequences (``RUN/selection.json``: ten 1,024-job windows away from the test windows); the rows go to
``RUN[/stage1]/selection-sampled.json`` after each snapshot, so the scan resumes where it stopped and
can run beside the training (which only writes ``selection.json``).  ``--every K`` scores every K-th
epoch of each stage (and its last).

``--test``: per run and mode, the model chosen on validation only —
  greedy:  the lowest greedy validation score in ``selection.json`` (as ``train_selected`` chooses);
  sampled: the ``--shortlist`` snapshots with the lowest one-run sampled validation score are scored again
           on the validation sequences with ``--repeats`` runs (seeds ``--sample-seed`` + 1000 + r, a draw
           the scan did not use) and the lowest mean wins (one run a sequence is noisy; the re-scoring keeps
           the choice from favouring a lucky draw) —
then each chosen model once on the test sequences (sampled: ``--repeats`` runs a sequence, seeds
``--sample-seed`` + r; run 0 alone is the authors' protocol of one sampled run), F1 and SJF beside it, the
paired difference model − F1 / model − SJF over the ten sequences with its 95 % percentile bootstrap
interval, and over the runs (seeds) the mean, standard deviation and range of the test scores.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_inspector import paired_gain  # noqa: E402  (bench/ is on sys.path)
from bench_rl import DEFAULT_TRACE, TABLE_V_RL_NO_BACKFILL, TABLE_V_STARTS  # noqa: E402

from rtsched.files import atomic_write_text  # noqa: E402
from rtsched.rl.evaluate import evaluate  # noqa: E402
from rtsched.rl.selection import SELECTION, SNAPSHOTS, best_row  # noqa: E402
from rtsched.rl.trace import load_trace  # noqa: E402

SAMPLED = "selection-sampled.json"
TEST_LEN = 1024
RESCORE_SEED_OFFSET = 1000  # the shortlist's re-scoring draws with seeds the one-run scan never used


def stages(run: str) -> list[tuple[int, str]]:
    """(stage number, folder) of a run: ``stage1/`` (trajectory filtering) first when present."""
    first = os.path.join(run, "stage1")
    return ([(1, first), (2, run)] if os.path.isdir(os.path.join(first, SNAPSHOTS)) else [(1, run)])


def snapshots(folder: str) -> list[tuple[int, str]]:
    """(epoch, path) of every exported snapshot of a stage folder, by epoch."""
    d = os.path.join(folder, SNAPSHOTS)
    found = [(int(m.group(1)), os.path.join(d, f)) for f in os.listdir(d) if (m := re.fullmatch(r"epoch-(\d+)\.pt", f))]
    return sorted(found)


def validation_of(run: str) -> tuple[list[int], int, str]:
    """The run's validation sequences and backfilling, as its training recorded them."""
    with open(os.path.join(run, SELECTION)) as fh:
        doc = json.load(fh)
    return [int(s) for s in doc["starts"]], int(doc["seq_len"]), doc.get("backfill", "none")


def mean_score(model, trace, starts, seq_len, backfill, *, greedy: bool, sample_seed: int = 0,
               repeats: int = 1) -> tuple[float, list[float]]:
    """Mean bsld over the sequences and the per-sequence values (each the mean over its runs)."""
    rows = evaluate([model], trace, starts=starts, seq_len=seq_len, backfill=backfill, goals=("bsld",),
                    greedy=greedy, sample_seed=sample_seed, repeats=repeats)
    per = [float(np.mean([r["avg_bsld"] for r in rows if r["start"] == s])) for s in starts]
    return float(np.mean(per)), per


def validate_run(run: str, trace, sample_seed: int, every: int) -> None:
    """Score the run's snapshots sampled on its validation sequences (module docstring)."""
    starts, seq_len, backfill = validation_of(run)
    for stage, folder in stages(run):
        path = os.path.join(folder, SAMPLED)
        doc = json.load(open(path)) if os.path.exists(path) else {}
        if (doc.get("starts"), doc.get("sample_seed")) != (starts, sample_seed):
            doc = {"starts": starts, "seq_len": seq_len, "backfill": backfill, "greedy": False,
                   "sample_seed": sample_seed, "repeats": 1, "epochs": []}
        done = {r["epoch"] for r in doc["epochs"]}
        snaps = snapshots(folder)
        last = snaps[-1][0] if snaps else None
        for epoch, snap in snaps:
            if epoch in done or (epoch % every and epoch != last):
                continue
            t = time.perf_counter()
            value, _ = mean_score(snap, trace, starts, seq_len, backfill, greedy=False, sample_seed=sample_seed)
            doc["epochs"] = sorted(doc["epochs"] + [{"epoch": epoch, "validation": value,
                                                     "snapshot": os.path.relpath(snap, folder)}],
                                   key=lambda r: r["epoch"])
            doc["best"] = best_row(doc["epochs"])
            atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
            print(f"{run} stage {stage} epoch {epoch:4d}: sampled validation bsld {value:9.2f} "
                  f"({time.perf_counter() - t:.1f} s)", flush=True)


def candidates(run: str, file: str) -> list[dict]:
    """Every scored snapshot of a run in ``file`` (selection.json or selection-sampled.json), both stages,
    with ``stage`` and the snapshot's path."""
    rows = []
    for stage, folder in stages(run):
        path = os.path.join(folder, file)
        if os.path.exists(path):
            with open(path) as fh:
                rows += [dict(r, stage=stage, path=os.path.join(folder, r["snapshot"])) for r in json.load(fh)["epochs"]]
    return rows


def choose(run: str, trace, mode: str, sample_seed: int, repeats: int, shortlist: int) -> dict:
    """The run's model for ``mode`` chosen on validation only (module docstring)."""
    if mode == "greedy":
        rows = candidates(run, SELECTION)
        best = min(rows, key=lambda r: (r["validation"], r["stage"], r["epoch"]))
        return {**best, "rescored": None}
    rows = candidates(run, SAMPLED)
    if not rows:
        raise SystemExit(f"{run}: no sampled validation scores; run --validate {run} first")
    starts, seq_len, backfill = validation_of(run)
    short = sorted(rows, key=lambda r: (r["validation"], r["stage"], r["epoch"]))[:shortlist]
    for r in short:
        r["rescored"], _ = mean_score(r["path"], trace, starts, seq_len, backfill, greedy=False,
                                      sample_seed=sample_seed + RESCORE_SEED_OFFSET, repeats=repeats)
    return min(short, key=lambda r: (r["rescored"], r["stage"], r["epoch"]))


def test_runs(runs: list[str], trace, sample_seed: int, repeats: int, shortlist: int) -> dict:
    """Choose on validation, then score once on the test sequences (module docstring)."""
    starts = TABLE_V_STARTS
    heur = {h: mean_score(h, trace, starts, TEST_LEN, "none", greedy=True) for h in ("f1", "sjf")}
    out = {"test_starts": starts, "seq_len": TEST_LEN, "sample_seed": sample_seed, "repeats": repeats,
           "shortlist": shortlist, "heuristics": {h: {"bsld": v, "per_sequence": p} for h, (v, p) in heur.items()},
           "runs": []}
    for run in runs:
        for mode in ("greedy", "sampled"):
            pick = choose(run, trace, mode, sample_seed, repeats, shortlist)
            greedy = mode == "greedy"
            value, per = mean_score(pick["path"], trace, starts, TEST_LEN, "none", greedy=greedy,
                                    sample_seed=sample_seed, repeats=1 if greedy else repeats)
            row = {"run": run, "mode": mode, "stage": pick["stage"], "epoch": pick["epoch"],
                   "validation": pick["validation"], "validation_rescored": pick["rescored"],
                   "snapshot": pick["path"], "test": value, "per_sequence": per}
            if not greedy:  # the authors' protocol: one sampled run a sequence (run 0)
                row["test_run0"], _ = mean_score(pick["path"], trace, starts, TEST_LEN, "none", greedy=False,
                                                 sample_seed=sample_seed)
            for h, (_, hper) in heur.items():
                row[f"vs_{h}"] = paired_gain(np.array(hper), np.array(per))
            out["runs"].append(row)
    for mode in ("greedy", "sampled"):
        t = np.array([r["test"] for r in out["runs"] if r["mode"] == mode])
        out[f"spread_{mode}"] = {"mean": float(t.mean()), "sd": float(t.std(ddof=1)) if len(t) > 1 else 0.0,
                                 "min": float(t.min()), "max": float(t.max()),
                                 "range": float(t.max() - t.min())}
    return out


def print_test(doc: dict) -> None:
    h = doc["heuristics"]
    print(f"ten Table-V test sequences x {doc['seq_len']} jobs, no backfilling; F1 {h['f1']['bsld']:.2f}, "
          f"SJF {h['sjf']['bsld']:.2f}, paper RL {TABLE_V_RL_NO_BACKFILL}; sampled: {doc['repeats']} runs a sequence "
          f"(seeds {doc['sample_seed']}..), chosen among the {doc['shortlist']} best one-run validation scores")
    print(f"{'run':42} {'mode':7} {'stage/epoch':>11} {'val':>8} {'val R':>8} {'test':>8} {'run 0':>8} "
          f"{'test - F1 [95 %]':>28} {'test - SJF [95 %]':>28} wins F1")
    for r in doc["runs"]:
        f1, sjf = r["vs_f1"], r["vs_sjf"]
        rescored = "" if r["validation_rescored"] is None else f"{r['validation_rescored']:.2f}"
        print(f"{r['run']:42} {r['mode']:7} {r['stage']:>5}/{r['epoch']:<5} {r['validation']:8.2f} {rescored:>8} "
              f"{r['test']:8.2f} {r.get('test_run0', float('nan')):8.2f} "
              f"{f1['diff']:8.2f} [{f1['diff_ci'][0]:8.2f}, {f1['diff_ci'][1]:8.2f}] "
              f"{sjf['diff']:8.2f} [{sjf['diff_ci'][0]:8.2f}, {sjf['diff_ci'][1]:8.2f}] {f1['wins']:3d}/10")
    for mode in ("greedy", "sampled"):
        s = doc[f"spread_{mode}"]
        print(f"{mode}: over the runs mean {s['mean']:.2f}, sd {s['sd']:.2f}, min {s['min']:.2f}, max {s['max']:.2f}, "
              f"range {s['range']:.2f}; mean - F1 {s['mean'] - h['f1']['bsld']:.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=os.path.normpath(DEFAULT_TRACE))
    ap.add_argument("--validate", nargs="+", metavar="RUN", help="score the runs' snapshots sampled on validation")
    ap.add_argument("--test", nargs="+", metavar="RUN", help="choose on validation, score once on the test sequences")
    ap.add_argument("--every", type=int, default=1, help="--validate: every K-th epoch of each stage (and the last)")
    ap.add_argument("--sample-seed", type=int, default=0, help="seed of the sampled actions (run r: seed + r)")
    ap.add_argument("--repeats", type=int, default=5, help="--test: sampled runs a sequence (default 5)")
    ap.add_argument("--shortlist", type=int, default=5, help="--test: snapshots re-scored on validation (default 5)")
    ap.add_argument("--json", help="--test: write the result document here")
    args = ap.parse_args(argv)
    if not (args.validate or args.test):
        ap.error("give --validate RUN ... or --test RUN ...")
    if min(args.every, args.repeats, args.shortlist) < 1:
        ap.error("--every, --repeats and --shortlist must be at least 1")
    if not os.path.exists(args.trace):
        print(f"{args.trace}: trace not found (../shared/data)", file=sys.stderr)
        return 1
    trace = load_trace(args.trace)
    for run in args.validate or []:
        validate_run(run, trace, args.sample_seed, args.every)
    if args.test:
        doc = test_runs(args.test, trace, args.sample_seed, args.repeats, args.shortlist)
        print_test(doc)
        if args.json:
            atomic_write_text(args.json, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
