"""RLSchert's results table (seed 001 Table 7) on the synthetic VASP-like workload and on Lublin-1.

Run:  PYTHONPATH=. python bench/bench_rlschert_table.py [--models DIR] [--lublin-models DIR]
      [--params calibrated|stated] [--sequences N] [--no-lublin] [--json OUT]

Average slowdown (Eq. 13) over all jobs of N (default 16) held-out VASP-like sequences (seeds
1,000,000 + 0..N−1, never used in training; 200 arrival slots at rate 0.7 on 20 units) and of 10 held-out 256-job
windows of Lublin-1 (from its last 20 %, where neither the predictor nor the agents were trained),
for: RLSchert with the learned kill, RLSchert (no-kill model) with the rule kill, RLSchert without
kill, the DeepRM-like agent (pre-run lengths only), SJF and SAF, with and without the rule kill, and
SJF with the remaining-time kill (``RLSchertCore.remaining_kill``, the PPO-kill model's kill teacher).
Model folders hold ``kill.pt``, ``nokill.pt`` and ``deeprm.pt`` (default: the shipped
``rtsched/rl/pretrained/rlschert``, names ``rlschert-vasplike-*.pt`` for the calibrated set,
``rlschert-vasplike-stated-*.pt`` for the stated one; Lublin: ``rlschert-lublin*.pt``).
Every run goes through the run pipeline and the validator.  The paper's numbers are printed beside
ours; ratios are to SAF measured in the same run.  Each VASP-like row's paired difference to SAF and
to SJF: the job-weighted mean slowdown's difference on the same sequences with its 95 % bootstrap
interval (10,000 resamples of the sequences, seeded).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from rtsched.generators.vasplike import PARAM_SETS  # noqa: E402
from rtsched.rl.hook import PRETRAINED_DIRS  # noqa: E402
from rtsched.rl.rlschert.results import (PAPER_TABLE7, evaluate_rlschert, trace_sequences,  # noqa: E402
                                         vasplike_sequences)
from rtsched.files import atomic_write_text  # noqa: E402

LUBLIN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data", "traces",
                      "swf", "lublin_256.swf")
# the shipped RLSchert models' folder (PRETRAINED_DIRS[0] is rtmix's, which held none of them)
SHIPPED = next(d for d in PRETRAINED_DIRS if os.path.basename(d) == "rlschert")
LUBLIN_TEST_STARTS = [8000 + 170 * k for k in range(10)]  # inside the last 20 % (jobs 8,000–9,999)


def rows_for(models: dict[str, str]) -> list[tuple[str, str, str]]:
    """(label, scheduler name, paper key) in the paper's order; models missing are left out."""
    out = []
    if "kill" in models:
        out.append(("RLSchert (PPO kill)", f"model:{models['kill']}", "RLSchert (PPO kill)"))
    if "nokill" in models:
        out.append(("RLSchert + rule kill", f"model:{models['nokill']}+kill", "RLSchert + rule kill"))
        out.append(("RLSchert without kill", f"model:{models['nokill']}", "RLSchert without kill"))
    if "deeprm" in models:
        out.append(("DeepRM-like", f"model:{models['deeprm']}", "DeepRM"))
    out += [("SJF", "sjf", "SJF"), ("SAF", "saf", "SAF"), ("SJF + rule kill", "sjf+kill", "SJF + rule kill"),
            ("SAF + rule kill", "saf+kill", "SAF + rule kill"),
            ("SJF + remaining-time kill", "sjf+rkill", "SJF + remaining-time kill")]
    return out


def paired_interval(row: dict, other: dict, samples: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """(difference, lo, hi): ``row``'s job-weighted mean slowdown minus ``other``'s on the same sequences
    and its 95 % percentile bootstrap interval over the sequences."""
    jobs = np.asarray(row["jobs_per_sequence"], dtype=float)
    if list(jobs) != list(other["jobs_per_sequence"]):
        raise ValueError("paired rows must come from the same sequences")
    d = (np.asarray(row["slowdown_per_sequence"]) - np.asarray(other["slowdown_per_sequence"])) * jobs
    idx = np.random.default_rng(seed).integers(0, len(d), size=(samples, len(d)))
    boot = d[idx].sum(axis=1) / jobs[idx].sum(axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(d.sum() / jobs.sum()), float(lo), float(hi)


def find_models(folder: str, prefix: str) -> dict[str, str]:
    out = {}
    for key, suffix in (("kill", "-kill"), ("nokill", "-nokill"), ("deeprm", "-deeprm")):
        for name in (f"{key}.pt", f"{prefix}{suffix}.pt"):
            p = os.path.join(folder, name)
            if os.path.exists(p):
                out[key] = p
                break
    return out


def table(title: str, sequences, nodes: int, models: dict[str, str], paired: bool = False) -> list[dict]:
    spec = rows_for(models)
    got = {r["scheduler"]: r for r in evaluate_rlschert([s for _, s, _ in spec], sequences, nodes)}
    saf = got["saf"]["slowdown"]
    print(f"\n{title}")
    print(f"{'scheduler':26} {'slowdown':>9} {'/SAF':>6} {'completion':>10} {'kills':>6} {'lost slots':>10} "
          f"{'paper':>6}" + (f" {'− SAF [95 %]':>26} {'− SJF [95 %]':>26}" if paired else ""))
    rows = []
    for label, name, key in spec:
        r = got[name]
        paper = PAPER_TABLE7.get(key)
        extra, diffs = "", {}
        if paired:
            for ref in ("saf", "sjf"):
                m, lo, hi = diffs[ref] = paired_interval(r, got[ref])
                extra += f" {f'{m:+.3f} [{lo:+.3f}, {hi:+.3f}]':>26}"
        print(f"{label:26} {r['slowdown']:>9.3f} {r['slowdown'] / saf:>6.3f} {r['completion']:>10.2f} "
              f"{r['kills']:>6} {r['lost_slots']:>10.1f} {paper if paper is not None else '–':>6}" + extra)
        rows.append({"label": label, "paper": paper, **r, **({"paired": diffs} if paired else {})})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=SHIPPED, help="folder of the VASP-like models")
    ap.add_argument("--lublin-models", default=SHIPPED, help="folder of the Lublin-1 models")
    ap.add_argument("--sequences", type=int, default=16)
    ap.add_argument("--params", choices=sorted(PARAM_SETS), default="calibrated",
                    help="VASP-like parameter set (default calibrated: the shipped rlschert-vasplike-* models' "
                         "training workload; stated: the rlschert-vasplike-stated-* models'; docs/rl.md, Calibration)")
    ap.add_argument("--no-lublin", action="store_true", help="the VASP-like table only")
    ap.add_argument("--json")
    args = ap.parse_args()
    out = {}
    out["vasplike"] = table(f"VASP-like workload ({args.params} set): {args.sequences} held-out sequences, 20 units, "
                            f"event mode", vasplike_sequences(args.sequences, **asdict(PARAM_SETS[args.params])), 20,
                            find_models(args.models, "rlschert-vasplike" + ("-stated" if args.params == "stated"
                                                                             else "")), paired=True)
    if args.no_lublin:
        pass
    elif os.path.exists(LUBLIN):
        out["lublin"] = table("Lublin-1 (lublin_256): 10 held-out 256-job windows, 256 processors, event mode",
                              trace_sequences(LUBLIN, LUBLIN_TEST_STARTS), 256,
                              find_models(args.lublin_models, "rlschert-lublin"))
    else:
        print(f"{LUBLIN}: not found, Lublin-1 skipped")
    if args.json:
        atomic_write_text(args.json, json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
