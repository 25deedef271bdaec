"""Issue 23 §3's acceptance check on the 200 fresh instances, from ``rtsched compare --json`` outputs.

The instances (never trained or selected on): generator seeds 3,000,000–3,000,099 with the default
walltimes and 3,100,000–3,100,099 with walltime = runtime, each half scored once by
``rtsched compare`` (optimum proven, every heuristic, replan, the shipped rtmix and the candidate):

    S=wcjs-no,wcjs-sys,wcjs-app,wcjs-jit,...   # every scheme (rtsched compare --help)
    rtsched compare --seeds 3000000 --count 100 --policies $S,rtmix,CAND.pt,replan -j 2 \\
        --cache runs/accept-cache --json > runs/accept-default.json
    rtsched compare --seeds 3100000 --count 100 --walltime-factor 1,1 --policies ... --json > runs/accept-exact.json
    PYTHONPATH=. python bench/bench_rtmix_accept.py runs/accept-default.json runs/accept-exact.json --model CAND.pt

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


def main() -> None:
    from bench_rtmix_dagger import _ci, print_table3
    from milp.compare import PolicyRun, paired, run_online, score_against
    from milp.instance import table3_instance

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outputs", nargs="+", help="rtsched compare --json outputs")
    ap.add_argument("--candidate", action="append", default=[],
                    help="a candidate's policy name as in the outputs (repeatable; --model files are candidates too)")
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
    rows = print_table3(runs, args.shipped)
    by = {r["algorithm"]: r for r in rows}
    candidates = args.candidate + args.model
    for name in candidates + [args.shipped]:
        if name not in by:
            continue
        me, rp = by[name], by["replan"]
        v = paired(runs, name, "wcjs-jit")
        if v is None or v["bj"] is None or v["rtj"] is None:
            print(f"\n{name}: too few instances for paired intervals against wcjs-jit")
            continue
        (mb, _lob, hib), (mr, _lor, hir) = v["bj"], v["rtj"]
        # better on both means (differences below 0), the interval of at least one below 0
        better = mb < 0 and mr < 0 and (hib < 0 or hir < 0)
        within = me["bj_sd"] <= 1.05 * rp["bj_sd"]
        viol = me["theta_violations"] <= rp["theta_violations"]
        print(f"\n{name}: vs WCJS-JIT ΔBJ {_ci(v, 'bj')}, ΔRTJ {_ci(v, 'rtj')} → better on both means, one "
              f"interval excluding 0: {'yes' if better else 'no'}; "
              f"BJ {me['bj_sd']:.3f} vs replan {rp['bj_sd']:.3f} ({100 * (me['bj_sd'] / rp['bj_sd'] - 1):+.1f} %, "
              f"within 5 %: {'yes' if within else 'no'}); θ violations {me['theta_violations']} vs replan "
              f"{rp['theta_violations']} ({'met' if viol else 'not met'})")
    for name in candidates:
        if name in by and args.shipped in by:
            v = paired(runs, name, args.shipped)
            print(f"{name} − {args.shipped}: ΔBJ {_ci(v, 'bj')}, ΔRTJ {_ci(v, 'rtj')}")


if __name__ == "__main__":
    from benchcli import one_line_errors  # bench/ is sys.path[0] when run as a script

    raise SystemExit(one_line_errors("bench_rtmix_accept.py", main))
