"""Issue 23 §3's acceptance check on the 200 fresh instances, from ``rtsched compare --json`` outputs.

The instances (never trained or selected on): generator seeds 3,000,000–3,000,099 with the default
walltimes and 3,100,000–3,100,099 with walltime = runtime, each half scored once by
``rtsched compare`` (optimum proven, every heuristic, replan, the shipped rtmix and the candidate):

    S=wcjs-no,wcjs-sys,wcjs-app,wcjs-jit,...   # every scheme (rtsched compare --help)
    rtsched compare --seeds 3000000 --count 100 --policies $S,rtmix,CAND.pt,replan -j 2 \\
        --cache runs/accept-cache --json > runs/accept-default.json
    rtsched compare --seeds 3100000 --count 100 --walltime-factor 1,1 --policies ... --json > runs/accept-exact.json
    PYTHONPATH=. python bench/bench_rtmix_accept.py runs/accept-default.json runs/accept-exact.json --candidate CAND.pt

A candidate the outputs do not hold (``--model FILE``, repeatable) is run here on the same instances
(regenerated from the outputs' seeds and walltime factor, ``rtsched compare --seeds``'s generator and
names) and scored against the outputs' optima (``milp.compare.score_against``), so that the optima
and the other policies are solved and run once.

Printed: the 200 instances' ``milp.compare.table3`` (means, gaps, θ violations, paired 95 % bootstrap
intervals against WCJS-JIT and replan), the candidate's and the shipped rtmix's intervals against
each other, and each acceptance criterion with its figures: better than WCJS-JIT on both means
(interval excluding 0 on at least one, the other not above 0), mean BJ within 5 % of replan's, θ
violations no more than replan's.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _ci(v, key: str) -> str:
    if v is None or v.get(key) is None:
        return "–"
    m, lo, hi = v[key]
    return f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def main() -> None:
    from milp.compare import PolicyRun, paired, reading, run_online, score_against, table3
    from milp.instance import table3_instance

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outputs", nargs="+", help="rtsched compare --json outputs")
    ap.add_argument("--candidate", required=True, help="the candidate's policy name as in the outputs")
    ap.add_argument("--shipped", default="rtmix")
    ap.add_argument("--model", action="append", default=[], help="a model file to run and score here (repeatable)")
    args = ap.parse_args()
    runs: list = []
    for path in args.outputs:
        with open(path, encoding="utf-8") as fh:
            out = json.load(fh)
        mine = [PolicyRun.from_json(r) for r in out["runs"]]
        runs += mine
        if args.model:
            lo, hi = (float(x) for x in (out["walltime_factor"] or "1,2").split(","))
            opt = {r.instance: r for r in mine if r.policy == "optimum"}
            for name in opt:
                inst = table3_instance(int(name.split("-")[-1]), walltime_factor=(lo, hi), name=name)
                runs += [score_against(run_online(inst, m), opt[name]) for m in args.model]
    rows = table3(runs, reference="wcjs-jit", yardstick="replan")
    n = len({r.instance for r in runs})
    opt = next(r for r in rows if r["algorithm"] == "optimum")
    print(f"{n} instances, optimum proven on {opt['instances'] - opt['not_optimal']}")
    print("| policy | BJ SD | RTJ SD | BJ gap | RTJ gap | θ viol. | ΔBJ vs WCJS-JIT | ΔRTJ vs WCJS-JIT "
          "| ΔBJ vs replan | ΔRTJ vs replan |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        viol = "–" if r["theta_violations"] is None else r["theta_violations"]
        print(f"| {r['algorithm']} | {r['bj_sd']:.3f} | {r['rtj_sd']:.3f} | {100 * r['bj_gap_mean']:+.1f} % | "
              f"{100 * r['rtj_gap_mean']:+.1f} % | {viol} | {_ci(r['vs_reference'], 'bj')} | "
              f"{_ci(r['vs_reference'], 'rtj')} | {_ci(r['vs_yardstick'], 'bj')} | {_ci(r['vs_yardstick'], 'rtj')} |")
    print(reading(rows, "wcjs-jit"))
    by = {r["algorithm"]: r for r in rows}
    for name in (args.candidate, args.shipped):
        if name not in by:
            continue
        me, rp = by[name], by["replan"]
        v = paired(runs, name, "wcjs-jit")
        (_mb, lob, hib), (_mr, lor, hir) = v["bj"], v["rtj"]
        better = (hib < 0 and hir <= 0) or (hir < 0 and hib <= 0)
        # "not worse on the other": its interval's upper end not above 0 would be strict; the issue asks
        # for the mean difference not above 0 on the other, with its interval shown
        better_means = (hib < 0 and v["rtj"][0] <= 0) or (hir < 0 and v["bj"][0] <= 0)
        within = me["bj_sd"] <= 1.05 * rp["bj_sd"]
        viol = me["theta_violations"] <= rp["theta_violations"]
        print(f"\n{name}: vs WCJS-JIT ΔBJ {_ci(v, 'bj')}, ΔRTJ {_ci(v, 'rtj')} → better on both with an interval "
              f"excluding 0: {'yes' if better_means else 'no'} (both intervals at or below 0: {'yes' if better else 'no'}); "
              f"BJ {me['bj_sd']:.3f} vs replan {rp['bj_sd']:.3f} ({100 * (me['bj_sd'] / rp['bj_sd'] - 1):+.1f} %, "
              f"within 5 %: {'yes' if within else 'no'}); θ violations {me['theta_violations']} vs replan "
              f"{rp['theta_violations']} ({'met' if viol else 'not met'})")
    if args.candidate in by and args.shipped in by:
        v = paired(runs, args.candidate, args.shipped)
        print(f"{args.candidate} − {args.shipped}: ΔBJ {_ci(v, 'bj')}, ΔRTJ {_ci(v, 'rtj')}")


if __name__ == "__main__":
    main()
