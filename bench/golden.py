"""Golden harness: snapshot every number a refactor or a speed-up must leave unchanged.

    python bench/golden.py --out /tmp/golden-before.json            # on the reference commit
    python bench/golden.py --check /tmp/golden-before.json          # after the change: exit 1 on any difference

It runs the command line only (``rtsched simulate/compare/rl evaluate --json``), so the snapshot
does not depend on where a function lives.  What it records (each a JSON document, compared exactly):

* every batch policy × backfilling rule on the shipped Lublin sample (``flat:256``);
* every seed-002 scheme on the embedded default and, where ``../shared/data`` exists, on Mira wk1
  (real partition file, 10 % RTJs, seed 1, the 2018-01-21 7-day window);
* ``rtsched compare --json`` on the shipped Table-3 instances (every scheme, WCJS variant and rtmix);
* every shipped model's evaluation: the Table-V models on the paper's ten Lublin-1 sequences (with the
  heuristic cells beside them), SchedInspector, the split-window and RLSchert models (``rl evaluate``).

Nothing here is timed; ``--jobs`` runs that many commands at once (2 on this machine).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")
SAMPLE = os.path.join(ROOT, "traces", "lublin_256_sample.swf")
LUBLIN = os.path.join(DATA, "traces", "swf", "lublin_256.swf")
SDSC = os.path.join(DATA, "traces", "swf", "sdsc-sp2-1998-first4961.swf")
WK1 = os.path.join(DATA, "traces", "mira", "wk1.log")
PARTITIONS = os.path.join(DATA, "mira", "mira-partitions.xml")
PRETRAINED = os.path.join(ROOT, "rtsched", "rl", "pretrained")
PAPER_LUBLIN1_STARTS = "1981,2756,4299,8850,3316,2714,5228,7762,4022,7085"
BATCH = ("fcfs", "sjf", "f1", "wfp3", "unicep", "wfp2", "lcfs", "saf")
BACKFILLS = ("none", "easy", "rlscheduler")
SCHEMES = ("baseline", "highpq", "no-ckpt", "sys-ckpt", "app-ckpt-5", "app-ckpt-10", "jit-ckpt",
           "wcjs-jit", "wcjs-app-5", "wcjs-app-10", "wcjs-sys", "wcjs-no")
# Fields that say when or how fast a run went, not what it computed.
VOLATILE = {"elapsed_s", "seconds", "wall_s", "time_s", "started", "finished", "rtsched_version", "version",
            "solve_s", "solve_time_s", "time", "runtime_s", "duration_s", "progress",
            "decision_seconds"}


def commands() -> dict[str, list[str]]:
    """label -> argv (after ``rtsched``)."""
    cmds: dict[str, list[str]] = {}
    for pol in BATCH:
        for bf in BACKFILLS:
            cmds[f"sample/{pol}/{bf}"] = ["simulate", SAMPLE, "--machine", "flat:256", "--policy", pol,
                                          "--backfill", bf, "--json"]
    for sc in SCHEMES:
        cmds[f"default/{sc}"] = ["simulate", "--scheme", sc, "--json"]
    cmds["compare/shipped"] = ["compare", "--json"]
    if os.path.exists(WK1):
        for sc in SCHEMES:
            cmds[f"wk1/{sc}"] = ["simulate", WK1, "--machine", PARTITIONS, "--scheme", sc, "--rt-percent", "10",
                                 "--seed", "1", "--window", "2018-01-21/7", "--json"]
    if os.path.exists(LUBLIN):
        t5 = os.path.join(PRETRAINED, "table5")
        heur = "fcfs,wfp3-authors,unicep-authors,sjf,f1"
        for bf in ("none", "rlscheduler"):
            cmds[f"tableV/lublin/{bf}"] = ["rl", "evaluate", "--trace", LUBLIN, "--starts", PAPER_LUBLIN1_STARTS,
                                           "--policies", f"{heur},{os.path.join(t5, f'rl-lublin-1-{bf}.pt')}",
                                           "--backfill", bf, "--json"]
        if os.path.exists(SDSC):
            for bf in ("none", "rlscheduler"):
                cmds[f"tableV/sdsc/{bf}"] = ["rl", "evaluate", "--trace", SDSC, "--n-sequences", "5",
                                             "--policies", f"{heur},{os.path.join(t5, f'rl-sdsc-sp2-{bf}.pt')}",
                                             "--backfill", bf, "--json"]
        for base in ("sjf", "f1"):
            model = os.path.join(t5, f"inspector-lublin-1-{base}.pt")
            cmds[f"inspector/lublin/{base}"] = ["rl", "evaluate", "--trace", LUBLIN, "--n-sequences", "4",
                                                "--policies", f"{base},{model}", "--json"]
        for name in sorted(os.listdir(os.path.join(PRETRAINED, "splitwindow"))):
            if name.endswith(".pt"):
                cmds[f"splitwindow/{name}"] = ["rl", "evaluate", "--trace", LUBLIN, "--n-sequences", "2",
                                               "--seq-len", "500", "--policies",
                                               os.path.join(PRETRAINED, "splitwindow", name), "--json"]
        for name in sorted(os.listdir(os.path.join(PRETRAINED, "rlschert"))):
            if name.endswith(".pt") and "lublin" in name:
                cmds[f"rlschert/{name}"] = ["rl", "evaluate", "--trace", LUBLIN, "--n-sequences", "3",
                                            "--seq-len", "256", "--policies",
                                            os.path.join(PRETRAINED, "rlschert", name), "--json"]
    return cmds


def scrub(value):
    """Drop the volatile fields and absolute paths' checkout prefix (a clone elsewhere compares equal)."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        return value.replace(ROOT, "<repo>").replace(os.path.realpath(DATA), "<data>").replace(DATA, "<data>")
    return value


def run(argv: list[str]) -> object:
    exe = os.path.join(os.path.dirname(sys.executable), "rtsched")
    proc = subprocess.run([exe, *argv], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "RTSCHED_NO_PROGRESS": "1"})
    if proc.returncode != 0:
        return {"exit": proc.returncode, "stderr": proc.stderr.strip().splitlines()[-1:]}
    try:
        return scrub(json.loads(proc.stdout))
    except json.JSONDecodeError:
        return {"exit": 0, "stdout": proc.stdout.strip().splitlines()}


def diff(a, b, path="") -> list[str]:
    if type(a) is not type(b):
        return [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, dict):
        out = [f"{path}/{k}: only in {'old' if k in a else 'new'}" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += diff(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the snapshot here")
    ap.add_argument("--check", help="compare with this snapshot; exit 1 on any difference")
    ap.add_argument("--only", default="", help="labels starting with this prefix only")
    ap.add_argument("--jobs", type=int, default=2, help="commands run at once (default 2)")
    args = ap.parse_args()
    if not (args.out or args.check):
        ap.error("give --out FILE or --check FILE")
    cmds = {k: v for k, v in commands().items() if k.startswith(args.only)}
    with ThreadPoolExecutor(args.jobs) as pool:
        results = dict(zip(cmds, pool.map(run, cmds.values())))
    failed = [k for k, v in results.items() if isinstance(v, dict) and v.get("exit")]
    print(f"golden: {len(results)} commands, {len(failed)} exited non-zero {failed}", file=sys.stderr)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1, sort_keys=True)
    if args.check:
        with open(args.check) as fh:
            old = json.load(fh)
        old = {k: v for k, v in old.items() if k in results}
        problems = diff(old, results)
        for p in problems[:50]:
            print(p)
        print(f"golden: {len(results)} snapshots, {len(problems)} differences", file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
