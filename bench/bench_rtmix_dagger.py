"""rtmix taught by DAgger (replan as the expert) against the shipped rtmix, WCJS-JIT and replan (issue 23 §3).

Seeds (generator ``milp.instance.table3_instance``: 5 BJs + 2 RTJs on 16 blocks; in each set the
first half has the default walltimes, runtime · U(1, 2), the second half walltime = runtime):

* training (recorded in the model file's history, ``train_seeds``): DAgger episodes 200,000 on,
  PPO 200,000–899,999 (``rtsched.rl.rtmix.dagger``, ``rtsched.rl.rtmix.env``);
* ``--part select`` — validation, to choose a DAgger round and to decide on shipping: seeds
  950,000 on (default walltimes) and 960,000 on (walltime = runtime); no optimum, only the
  policies' runs;
* ``--part test`` — held-out test: seeds 6,000,000 on (default walltimes) and 6,100,000 on
  (walltime = runtime), disjoint from every set above, from ``bench/bench_replan.py``'s (3,000,000
  and 3,100,000 on) and from ``bench/bench_rtmix.py``'s (5,000,000 on).  The optimum (proven,
  ``milp-disjunctive``), every heuristic, the shipped rtmix and replan are compared once and cached
  (``--cache``); the candidate models are then run and scored against the same optima, so a new
  model does not re-solve anything.  Printed: ``milp.compare.table3`` (means, gaps, θ violations,
  paired 95 % bootstrap intervals against WCJS-JIT and against replan) and the candidates' paired
  intervals against the shipped rtmix;
* ``--part speed`` — time per rtmix network decision and per pass (candidates and the shipped
  model side by side, with WCJS-JIT's pass), on the first test instances; target ≤ 1 ms a decision.

    PYTHONPATH=. nice python bench/bench_rtmix_dagger.py --part select --models rtmix,training/rtmix-dagger/round-3.pt
    PYTHONPATH=. nice python bench/bench_rtmix_dagger.py --part test --n 200 -j 2 --models training/rtmix-dagger/round-3.pt
    PYTHONPATH=. nice python bench/bench_rtmix_dagger.py --part speed --models rtmix,training/rtmix-dagger/round-3.pt
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from heuristics.registry import SCHEMES  # noqa: E402

VALIDATION_SEED, VALIDATION_EXACT_SEED = 950_000, 960_000
TEST_SEED, TEST_EXACT_SEED = 6_000_000, 6_100_000
REPLAN = "replan"


def instances(n: int, first: int, exact_first: int, prefix: str):
    """``n`` instances: the first half with default walltimes from seed ``first``, the rest exact."""
    from milp.instance import table3_instance

    half = n // 2
    out = [table3_instance(first + i, name=f"{prefix}-{first + i}") for i in range(half)]
    out += [table3_instance(exact_first + i, walltime_factor=(1.0, 1.0), name=f"{prefix}-exact-{exact_first + i}")
            for i in range(n - half)]
    return out


def _ci(v, key: str) -> str:
    if v is None or v.get(key) is None:
        return "–"
    m, lo, hi = v[key]
    return f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def _means(runs, name: str) -> tuple[float, float]:
    mine = [r for r in runs if r.policy == name]
    bj = [r.bj_sd_mean for r in mine if r.bj_sd_mean is not None]
    rt = [r.rtj_sd_mean for r in mine if r.rtj_sd_mean is not None]
    return sum(bj) / len(bj), sum(rt) / len(rt)


def part_select(args, models: list[str]) -> None:
    from milp.compare import paired, run_online

    insts = instances(args.n, VALIDATION_SEED, VALIDATION_EXACT_SEED, "val")
    runs = []
    for name in ["wcjs-jit", "rtmix", *[m for m in models if m != "rtmix"]]:
        t = time.perf_counter()
        runs += [run_online(i, name) for i in insts]
        bj, rt = _means(runs, name)
        print(f"| {name} | {bj:.3f} | {rt:.3f} | {_ci(paired(runs, name, 'wcjs-jit'), 'bj')} | "
              f"{_ci(paired(runs, name, 'wcjs-jit'), 'rtj')} | {_ci(paired(runs, name, 'rtmix'), 'bj')} | "
              f"{_ci(paired(runs, name, 'rtmix'), 'rtj')} | {time.perf_counter() - t:.0f} s |", flush=True)


def part_test(args, models: list[str]) -> None:
    from milp.compare import compare, run_online, score_against

    insts = instances(args.n, TEST_SEED, TEST_EXACT_SEED, "test")
    t0 = time.perf_counter()
    base = compare(insts, list(SCHEMES) + ["rtmix", REPLAN], method="milp-disjunctive", jobs=args.jobs,
                   cache_dir=args.cache)
    print(f"optimum, {len(SCHEMES)} heuristics, rtmix and {REPLAN} on {len(insts)} instances: "
          f"{time.perf_counter() - t0:.0f} s (cached instances are not re-run)", flush=True)
    opt = {r.instance: r for r in base if r.policy == "optimum"}
    runs = list(base)
    for m in models:
        runs += [score_against(run_online(i, m), opt[i.name]) for i in insts]
    for label, subset in (("all", insts), ("default walltimes", insts[: args.n // 2]),
                          ("walltime = runtime", insts[args.n // 2:])):
        names = {i.name for i in subset}
        sel = [r for r in runs if r.instance in names]
        print(f"\n## {label}: ", end="")
        print_table3(sel)


def print_table3(runs, shipped: str = "rtmix") -> list[dict]:
    """Print ``milp.compare.table3`` of ``runs`` (against WCJS-JIT and replan, and each row's paired
    intervals against the ``shipped`` rtmix) and its reading; returns the rows."""
    from milp.compare import paired, reading, table3

    rows = table3(runs, reference="wcjs-jit", yardstick=REPLAN)
    o = next(r for r in rows if r["algorithm"] == "optimum")
    print(f"{o['instances']} instances, optimum proven on {o['instances'] - o['not_optimal']}")
    print("| policy | BJ SD | RTJ SD | BJ gap | RTJ gap | θ viol. | ΔBJ vs WCJS-JIT | ΔRTJ vs WCJS-JIT "
          f"| ΔBJ vs replan | ΔRTJ vs replan | ΔBJ vs {shipped} | ΔRTJ vs {shipped} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        viol = "–" if r["theta_violations"] is None else r["theta_violations"]
        vs = paired(runs, r["algorithm"], shipped) if r["algorithm"] != "optimum" else None
        print(f"| {r['algorithm']} | {r['bj_sd']:.3f} | {r['rtj_sd']:.3f} | {100 * r['bj_gap_mean']:+.1f} % | "
              f"{100 * r['rtj_gap_mean']:+.1f} % | {viol} | {_ci(r['vs_reference'], 'bj')} | "
              f"{_ci(r['vs_reference'], 'rtj')} | {_ci(r['vs_yardstick'], 'bj')} | {_ci(r['vs_yardstick'], 'rtj')} | "
              f"{_ci(vs, 'bj')} | {_ci(vs, 'rtj')} |")
    print(reading(rows, "wcjs-jit"))
    return rows


def part_speed(args, models: list[str]) -> None:
    from bench_rtmix import per_decision  # noqa: E402 (bench/ is on the path when run as a script)

    insts = instances(args.speed_instances, TEST_SEED, TEST_EXACT_SEED, "test")
    for m in models:
        for rep in range(args.repeats):
            row = per_decision(insts, m)
            a, w = row[m], row["wcjs"]
            print(f"{m} (repeat {rep + 1}): {a['network_decisions']} network decisions, "
                  f"{a['ms_per_network_decision']:.3f} ms each; {a['ms_per_pass']:.3f} ms per pass "
                  f"({w['ms_per_pass']:.3f} ms per WCJS-JIT pass, ratio {a['ms_per_pass'] / w['ms_per_pass']:.2f}); "
                  "target <= 1 ms a decision", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["select", "test", "speed"], required=True)
    ap.add_argument("--models", default="rtmix", help="comma-separated model names or files")
    ap.add_argument("--n", type=int, default=200, help="instances (half default walltimes, half exact)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--cache", default="runs/bench-rtmix-dagger-cache", help="compare's resumable cache folder")
    ap.add_argument("--speed-instances", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    {"select": part_select, "test": part_test, "speed": part_speed}[args.part](args, models)


if __name__ == "__main__":
    from benchcli import one_line_errors  # bench/ is sys.path[0] when run as a script

    raise SystemExit(one_line_errors("bench_rtmix_dagger.py", main))
