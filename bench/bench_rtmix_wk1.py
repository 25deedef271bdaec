"""The rtmix agent on Mira wk1 against WCJS-JIT (issue 13's second quality criterion).

Issue 13: "on Mira wk1, 10 % RTJs, real partition file, results window 7 days from 2018-01-21,
5 seeds: the agent's mean RTJ and mean BJ bounded slowdown (τ = 600 s) each no worse than
WCJS-JIT's".  Every run goes through the one run pipeline (``rtsched.pipeline.RunSpec`` →
``execute``: random RTJ marking with the seed, the real partition file, the schedule re-checked by
the validator, bounded slowdown from ``rtsched.metrics``), exactly as ``rtsched simulate
../shared/data/traces/mira/wk1.log --machine ../shared/data/mira/mira-partitions.xml --scheme
wcjs-jit --rt-percent 10 --seed S --window 2018-01-21/7 --tau 600`` runs it.  The agent runs under
JIT checkpointing (``--policy rtmix --checkpoint jit``), beside the seed-002 schemes ``wcjs-jit``,
``jit-ckpt`` and ``baseline`` (for reference).

Printed: per seed and policy the mean bounded slowdown of RTJs and BJs in the window, the means
over seeds, each policy's ratio to WCJS-JIT, and the verdict (agent's mean RTJ and mean BJ each ≤
WCJS-JIT's).  ``--miralike SEEDS`` runs generated Mira-like weeks instead of wk1 (validation of a
model without touching the test trace; ``rtsched.generators.generate_miralike(days=7, seed=S)``,
every job in the results, the RTJ marking seed = the week's seed).

    PYTHONPATH=. nice python bench/bench_rtmix_wk1.py [--seeds 1-5] [--models rtmix[,MODEL.pt]] [--json out.json]
    PYTHONPATH=. nice python bench/bench_rtmix_wk1.py --miralike 9001-9003 [--machine mira]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from heuristics.registry import SCHEMES  # noqa: E402
from rtsched.pipeline import RunSpec, execute  # noqa: E402
from rtsched.window import WindowSpec  # noqa: E402
from rtsched.files import atomic_write_text  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
WK1 = SHARED_DATA / "traces" / "mira" / "wk1.log"
PARTITIONS = SHARED_DATA / "mira" / "mira-partitions.xml"
REFERENCE = "wcjs-jit"


def seed_list(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def spec_for(name: str, seed: int, args, trace: str | None) -> RunSpec:
    common = dict(trace=trace, trace_format="cobalt" if trace else None, machine=args.machine,
                  rt_percent=args.rt_percent, marking="random", seed=seed, tau=args.tau,
                  window=WindowSpec.parse(args.window) if trace else None)
    if name.strip().lower() in SCHEMES:
        return RunSpec(scheme=name, **common)
    return RunSpec(policy=name, checkpoint="jit", **common)


def run_one(name: str, seed: int, args) -> dict:
    if args.miralike:
        from rtsched.generators import generate_miralike

        wl = generate_miralike(days=7.0, seed=seed)
        spec = spec_for(name, seed, args, None)
        t = time.perf_counter()
        rec = execute(spec, workload=wl, time_decisions=True)
    else:
        spec = spec_for(name, seed, args, str(args.trace))
        t = time.perf_counter()
        rec = execute(spec, time_decisions=True)
    s = rec.summary
    if s["unfinished"]:
        raise SystemExit(f"{name}, seed {seed}: {s['unfinished']} jobs of the window never finished")
    rt, bj = s["summary"]["rt"], s["summary"]["batch"]
    return {"policy": name, "seed": seed, "rtj_bsld": rt["mean_bsld_seed002"], "bj_bsld": bj["mean_bsld_seed002"],
            "rtj_sd": rt["mean_sd"], "bj_sd": bj["mean_sd"], "n_rt": rt["n"], "n_bj": bj["n"],
            "utilization": s["utilization"], "preemptions": sum(o.n_preemptions for o in rec.outcomes),
            "seconds": time.perf_counter() - t, "decide_s": rec.timings.get("decide_s")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1-5", help="RTJ marking seeds (default 1-5)")
    ap.add_argument("--models", default="rtmix", help="comma-separated rtmix models: the name rtmix or .pt files")
    ap.add_argument("--others", default="wcjs-jit,jit-ckpt,baseline", help="reference schemes (wcjs-jit first)")
    ap.add_argument("--trace", default=str(WK1))
    ap.add_argument("--machine", default=str(PARTITIONS), help="partition XML or mira[:BLOCKS]")
    ap.add_argument("--window", default="2018-01-21/7")
    ap.add_argument("--rt-percent", type=float, default=10.0)
    ap.add_argument("--tau", type=int, default=600)
    ap.add_argument("--miralike", help="generated Mira-like weeks of these seeds instead of the trace (validation)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.miralike:
        seeds = seed_list(args.miralike)
        where = f"generated Mira-like weeks (generate_miralike(days=7, seed=S)), every job"
    else:
        for p in (Path(args.trace), Path(args.machine) if args.machine.endswith(".xml") else None):
            if p is not None and not p.exists():
                print(f"skipped: {p} not found (the wk1 bench needs ../shared/data)", file=sys.stderr)
                return 0
        seeds = seed_list(args.seeds)
        where = f"{Path(args.trace).name}, window {args.window}"
    models = [m for m in args.models.split(",") if m.strip()]
    others = [o for o in args.others.split(",") if o.strip()]
    if REFERENCE not in others:
        others.insert(0, REFERENCE)
    names = models + others
    t0 = time.perf_counter()
    rows = [run_one(name, seed, args) for seed in seeds for name in names]
    wall = time.perf_counter() - t0
    print(f"{where}; machine {Path(args.machine).name}; {args.rt_percent:g} % RTJs (random); bounded slowdown "
          f"τ = {args.tau} s (seed 002 form); agent under JIT checkpointing")
    print(f"{'seed':>5} {'policy':<22}{'RTJ bsld':>9}{'BJ bsld':>9}{'RTJ SD':>8}{'BJ SD':>8}{'util':>7}{'preempt':>8}"
          f"{'n RT/BJ':>10}{'s':>6}")
    for r in rows:
        print(f"{r['seed']:>5} {Path(r['policy']).name[:22]:<22}{r['rtj_bsld']:9.3f}{r['bj_bsld']:9.3f}{r['rtj_sd']:8.3f}"
              f"{r['bj_sd']:8.3f}{r['utilization']:7.3f}{r['preemptions']:8d}{r['n_rt']:>5}/{r['n_bj']:<4}"
              f"{r['seconds']:6.1f}")
    means = {}
    for name in names:
        sel = [r for r in rows if r["policy"] == name]
        means[name] = {k: sum(r[k] for r in sel) / len(sel) for k in ("rtj_bsld", "bj_bsld", "rtj_sd", "bj_sd",
                                                                        "utilization")}
    ref = means[REFERENCE]
    print(f"means over {len(seeds)} seeds ({', '.join(map(str, seeds))}); ratio = policy / {REFERENCE}")
    for name in names:
        m = means[name]
        print(f"      {Path(name).name[:22]:<22}RTJ bsld {m['rtj_bsld']:8.3f} ({m['rtj_bsld'] / ref['rtj_bsld']:5.2f}x)  "
              f"BJ bsld {m['bj_bsld']:8.3f} ({m['bj_bsld'] / ref['bj_bsld']:5.2f}x)  util {m['utilization']:.3f}")
    verdicts = {}
    for name in models:
        m = means[name]
        ok_rt, ok_bj = m["rtj_bsld"] <= ref["rtj_bsld"], m["bj_bsld"] <= ref["bj_bsld"]
        verdicts[name] = ok_rt and ok_bj
        print(f"verdict {Path(name).name}: RTJ {'met' if ok_rt else 'NOT met'} ({m['rtj_bsld']:.3f} vs "
              f"{ref['rtj_bsld']:.3f}), BJ {'met' if ok_bj else 'NOT met'} ({m['bj_bsld']:.3f} vs {ref['bj_bsld']:.3f})"
              f" -> {'PASS' if verdicts[name] else 'FAIL'}")
    print(f"wall time: {len(rows)} runs in {wall:.1f} s")
    if args.json:
        record = {"where": where, "rows": rows, "means": means, "verdicts": verdicts, "wall_s": wall}
        atomic_write_text(args.json, json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
