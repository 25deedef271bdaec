"""``replan`` against rtmix, WCJS-JIT and every heuristic, and its speed (issue 23 §3 of the benchmarks).

Part ``table3``: fresh Table-3 instances (5 BJs + 2 RTJs, 16 blocks) from generator seeds
3,000,000 on (default walltimes, runtime · U(1, 2)) and 3,100,000 on (walltime = runtime), half each —
disjoint from every seed docs/rl.md records for rtmix (expert plans 100,000–199,999, PPO
200,000–899,999, selection 950,000–950,099, benchmarks 5,000,000 on; its DAgger retraining: episodes
200,000–299,999, validation 950,000 / 960,000, test 6,000,000 / 6,100,000) —; the optimum proven on
all (``milp-disjunctive``); per policy the means, gaps, θ violations and the paired 95 % bootstrap
intervals against WCJS-JIT and against replan, then against WCJS-JIT and rtmix
(``milp.compare.table3``, what ``rtsched compare`` prints), for all and for each half; then
replan's time per decision (wall and CPU of each solve, passes that followed the last plan) on the
first instances of each half.  The optimum, the schemes and rtmix are cached in ``--cache`` by
``milp.compare.compare``; replan's rows in ``--cache``/replan under a key that includes the bytes
of the modules deciding its plans, so a changed re-planner re-runs only its own rows
(``--no-replan`` fills the first cache alone).

Part ``mira``: Mira wk1 (the real partition file, 10 % RTJs, seed 1, τ = 600 s) under
``replan:k=K,ms=MS`` beside WCJS-JIT and rtmix, on the jobs submitted before the end of the results
window (``--days`` from 2018-01-21; the jobs before it are the warm-up): per-decision and total
time (wall and CPU), the mean RTJ / BJ bounded slowdown in the window; a progress line every
``--progress-every`` passes.

    PYTHONPATH=. nice python bench/bench_replan.py --part table3 [--n 200] [-j 2] [--cache DIR]
    PYTHONPATH=. nice python bench/bench_replan.py --part mira [--days 7] [--k 8] [--ms 20] [--only-replan]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from heuristics.registry import SCHEMES  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
WK1 = SHARED_DATA / "traces" / "mira" / "wk1.log"
PARTITIONS = SHARED_DATA / "mira" / "mira-partitions.xml"
FIRST_SEED = 3_000_000  # default walltimes: seeds FIRST_SEED + i
EXACT_FIRST_SEED = 3_100_000  # walltime = runtime: seeds EXACT_FIRST_SEED + i (a larger --n reuses the cache)


def fresh_instances(n: int):
    from milp.instance import table3_instance

    half = n // 2
    out = [table3_instance(FIRST_SEED + i, name=f"fresh-{FIRST_SEED + i}") for i in range(half)]
    out += [table3_instance(EXACT_FIRST_SEED + i, walltime_factor=(1.0, 1.0), name=f"fresh-exact-{EXACT_FIRST_SEED + i}")
            for i in range(n - half)]
    return out


def per_decision(instances, name: str) -> tuple[list, int, int]:
    """Every re-solve of ``name`` on ``instances`` (the policy's own record, ``DecisionStats``), the
    scheduling passes and the passes that followed the last plan without solving."""
    from heuristics.registry import make_policy
    from milp.compare import online_spec
    from rtsched.pipeline import execute

    out, passes, followed = [], 0, 0
    for inst in instances:
        pol = make_policy(name)
        execute(online_spec(inst, name), workload=inst.workload(), policy=pol)
        out += pol.stats
        passes += len(pol.log)
        followed += pol.skipped
    return out, passes, followed


def decision_line(name: str, stats, passes: int, followed: int, where: str) -> str:
    wall = [s.seconds for s in stats]
    cpu = [s.cpu_seconds for s in stats]
    return (f"{name}: {passes} passes on {where}, {followed} followed the last plan, {len(stats)} re-solves "
            f"({sum(s.status == 'optimal' for s in stats)} proven): wall mean {statistics.mean(wall):.3f} s, median "
            f"{statistics.median(wall):.3f} s, max {max(wall):.3f} s; CPU mean {statistics.mean(cpu):.3f} s, median "
            f"{statistics.median(cpu):.3f} s, max {max(cpu):.3f} s; target <= 1 s per decision")


def replan_runs(instances, base, name: str, cache: Path) -> list:
    """``name`` on every instance, scored against the instance's optimum row in ``base``; each
    instance's row is cached in ``cache`` under a key of the instance, every option of the policy
    and the bytes of the modules that decide its plans (a changed re-planner must not reuse rows)."""
    import hashlib
    import json

    from milp.compare import OPTIMUM, PolicyRun, run_online, score_against
    from milp.replan_hook import replan_identity
    from rtsched.files import atomic_write_text

    here = Path(__file__).resolve().parents[1] / "milp"
    code = hashlib.sha256(b"".join((here / f).read_bytes() for f in ("replan.py", "cpsat.py", "disjunctive_milp.py")))
    opt = {r.instance: r for r in base if r.policy == OPTIMUM}
    cache.mkdir(parents=True, exist_ok=True)
    out = []
    for inst in instances:
        key = hashlib.sha256(json.dumps({"instance": inst.to_dict(), "io": repr(inst.io), "policy": replan_identity(name),
                                         "code": code.hexdigest()}, sort_keys=True, default=str).encode()).hexdigest()
        path = cache / f"{inst.name}-{key[:16]}.json"
        if path.exists():
            out.append(PolicyRun.from_json(json.loads(path.read_text())))
            continue
        run = score_against(run_online(inst, name), opt[inst.name])
        atomic_write_text(path, json.dumps(run.to_json(), allow_nan=False))
        out.append(run)
    return out


def print_table(rows, reference: str, yardstick: str) -> None:
    """``milp.compare.table3``'s rows as markdown: means, gaps, θ violations, paired intervals."""
    print(f"| policy | BJ SD | RTJ SD | BJ gap | BJ gap range | RTJ gap | θ viol. | =opt | ΔBJ vs {reference} | "
          f"ΔRTJ vs {reference} | ΔBJ vs {yardstick} | ΔRTJ vs {yardstick} | s/inst |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def ci(v, k):
        if v is None or v.get(k) is None:
            return "–"
        m, lo, hi = v[k]
        return f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]"

    for r in rows:
        viol = "–" if r["theta_violations"] is None else r["theta_violations"]
        print(f"| {r['algorithm']} | {r['bj_sd']:.3f} | {r['rtj_sd']:.3f} | {100 * r['bj_gap_mean']:+.1f} % | "
              f"{100 * r['bj_gap_best']:+.0f}..{100 * r['bj_gap_worst']:+.0f} % | {100 * r['rtj_gap_mean']:+.1f} % | "
              f"{viol} | {r['matches_optimum']}/{r['instances']} | {ci(r['vs_reference'], 'bj')} | "
              f"{ci(r['vs_reference'], 'rtj')} | {ci(r['vs_yardstick'], 'bj')} | {ci(r['vs_yardstick'], 'rtj')} | "
              f"{r['decision_seconds']:.3f} |")


def part_table3(args) -> None:
    from milp.compare import compare, reading, table3

    instances = fresh_instances(args.n)
    t0 = time.perf_counter()
    # The optimum, every scheme and rtmix (milp.compare.compare, resumable); replan apart, cached by
    # its code too, so that a change to the re-planner re-runs only its rows.
    runs = compare(instances, list(SCHEMES) + ["rtmix"], method="milp-disjunctive", jobs=args.jobs,
                   cache_dir=args.cache)
    print(f"optimum, schemes and rtmix: {time.perf_counter() - t0:.1f} s ({args.jobs} processes; cached instances "
          "are not re-run)", flush=True)
    if args.no_replan:
        return
    t1 = time.perf_counter()
    runs += replan_runs(instances, runs, args.replan, Path(args.cache) / "replan")
    print(f"{args.replan}: {time.perf_counter() - t1:.1f} s (cached instances are not re-run)")
    half = args.n // 2
    for label, subset in (("all", instances), ("default walltimes", instances[:half]),
                          ("walltime = runtime", instances[half:])):
        names = {i.name for i in subset}
        sel = [r for r in runs if r.instance in names]
        for yard in (args.replan, "rtmix"):
            rows = table3(sel, reference="wcjs-jit", yardstick=yard)
            opt = next(r for r in rows if r["algorithm"] == "optimum")
            print(f"\n## {label}: {len(subset)} instances, optimum proven on {opt['instances'] - opt['not_optimal']}; "
                  f"paired against wcjs-jit and {yard}")
            print_table(rows, "wcjs-jit", yard)
            print(reading(rows, "wcjs-jit"))
    half, k = args.n // 2, args.timing_instances // 2
    timed = instances[:k] + instances[half: half + args.timing_instances - k]
    print("\n" + decision_line(args.replan, *per_decision(timed, args.replan),
                               f"{len(timed)} instances (the first of each half)"))


def part_mira(args) -> None:
    from heuristics.registry import make_policy
    from rtsched.io import read_workload
    from rtsched.jobs import Workload
    from rtsched.pipeline import RunSpec, execute
    from rtsched.window import WindowSpec

    window = WindowSpec.parse(f"2018-01-21/{args.days:g}")
    full = read_workload(str(WK1))
    _, end = window.seconds(full.start_time)
    jobs = [j for j in full.jobs if j.submit < end]
    workload = Workload(jobs, name=f"wk1-until-window-end-{args.days:g}d", max_nodes=full.max_nodes,
                        start_time=full.start_time, header=dict(full.header))
    name = f"replan:k={args.k},ms={args.ms}"
    print(f"wk1: {len(jobs)} of {len(full.jobs)} jobs (submitted before the end of the {args.days:g}-day window)")
    for policy in (["wcjs-jit", "rtmix", name] if not args.only_replan else [name]):
        scheme = policy if policy in SCHEMES else None
        spec = RunSpec(trace=str(WK1), machine=str(PARTITIONS), scheme=scheme, policy=None if scheme else policy,
                       checkpoint=None if scheme else "jit", rt_percent=10, seed=1, window=window, tau=600)
        pol = make_policy(policy) if policy.startswith("replan") else None
        if pol is not None:
            _log_progress(pol, args.progress_every)
        t, cpu = time.perf_counter(), time.process_time()
        rec = execute(spec, workload=workload, policy=pol, time_decisions=True)
        secs, cpu = time.perf_counter() - t, time.process_time() - cpu
        s = rec.summary["summary"]
        line = (f"{policy}: RTJ bsld {s['rt']['mean_bsld']:.3f} (n {s['rt']['n']}), BJ bsld {s['batch']['mean_bsld']:.3f} "
                f"(n {s['batch']['n']}); {secs:.1f} s in all ({cpu:.1f} s CPU), deciding {rec.timings['decide_s']:.1f} s")
        if pol is not None:
            line += "; " + decision_line(policy, pol.stats, len(pol.log), pol.skipped, "the week")
            line += f"; largest plan {max(x.jobs for x in pol.stats)} jobs"
        print(line, flush=True)


def _log_progress(pol, every: int) -> None:
    """Print a line every ``every`` scheduling passes of ``pol`` (simulated time, re-solves, wall and
    CPU seconds so far): a week-long run shows where it is."""
    decide, t0, c0 = pol.decide, time.perf_counter(), time.process_time()

    def logged(view):
        out = decide(view)
        if len(pol.log) % every == 0 and pol.log and pol.log[-1][0] == view.now:
            print(f"  pass {len(pol.log)}: t = {view.now} s, {len(view.queue)} waiting, {len(pol.stats)} re-solves, "
                  f"{pol.skipped} followed; {time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU",
                  flush=True)
        return out

    pol.decide = logged


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["table3", "mira"], required=True)
    ap.add_argument("--n", type=int, default=200, help="fresh instances (half default walltimes, half exact)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--cache", default="runs/bench-replan-cache", help="compare's resumable cache folder")
    ap.add_argument("--replan", default="replan", help="the replan policy name (options in it)")
    ap.add_argument("--timing-instances", type=int, default=10)
    ap.add_argument("--days", type=float, default=7.0)
    ap.add_argument("--k", type=int, default=8, help="mira: the window K")
    ap.add_argument("--ms", type=int, default=20, help="mira: the budget of one decision, ms of deterministic time")
    ap.add_argument("--only-replan", action="store_true")
    ap.add_argument("--progress-every", type=int, default=100, help="mira: a progress line every N passes")
    ap.add_argument("--no-replan", action="store_true", help="table3: only the optimum, the schemes and rtmix (fills the cache)")
    args = ap.parse_args()
    (part_table3 if args.part == "table3" else part_mira)(args)


if __name__ == "__main__":
    main()
