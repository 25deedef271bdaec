"""Start-up and whole-command speed (issue 11 "Fast start-up"), measured side by side in one run.

1. ``rtsched simulate lublin_256.swf --machine flat:256 --policy fcfs --backfill easy --json`` as a
   whole process against a plain heap-based FCFS+EASY script (bench/plain_easy_script.py) reading
   the same trace, alternating runs; target ratio <= 1.5.  The two must report the same mean wait
   (the same schedule).
2. ``rtsched --help`` and ``rtsched simulate --help`` (target < 0.3 s each).
3. A heuristic-only ``rtsched rl evaluate`` never imports PyTorch (the modules loaded are listed
   by the process itself).

    python bench/bench_startup.py [--repeat 7] [--trace PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
from benchcli import require_input  # noqa: E402  (bench/ is sys.path[0] when run as a script)
DEFAULT_TRACE = REPO.parent / "shared" / "data" / "traces" / "swf" / "lublin_256.swf"


CPU: dict[str, list[float]] = {}  # command name -> CPU seconds (user + system) of each run


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], name: str | None = None) -> tuple[float, str]:
    """Wall seconds and stdout of one run; its CPU seconds go to ``CPU[name]`` (on a shared,
    loaded machine the CPU time is the steadier figure: waiting for a core does not count)."""
    c = _children_cpu()
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t
    if name:
        CPU.setdefault(name, []).append(_children_cpu() - c)
    return wall, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--trace", default=str(DEFAULT_TRACE))
    args = ap.parse_args(argv)
    require_input("bench_startup", args.trace)
    py = sys.executable
    rtsched = [py, "-m", "rtsched"]
    sim = rtsched + ["simulate", args.trace, "--machine", "flat:256", "--policy", "fcfs", "--backfill", "easy",
                     "--json"]
    plain = [py, str(REPO / "bench" / "plain_easy_script.py"), args.trace, "256"]
    timed(sim), timed(plain)  # warm the file cache and the bytecode
    ours, theirs = [], []
    for _ in range(args.repeat):
        t, out = timed(sim, "sim")
        ours.append(t)
        t, ref = timed(plain, "plain")
        theirs.append(t)
    a, b = json.loads(out), json.loads(ref)
    same = abs(a["summary"]["all"]["mean_wait"] - b["mean_wait"]) < 1e-6
    rows = [("rtsched simulate lublin_256 fcfs+easy --json (whole process)", statistics.median(ours), "s"),
            ("plain heap FCFS+EASY script (whole process)", statistics.median(theirs), "s")]
    ratio = statistics.median(ours) / statistics.median(theirs)
    helps = {}
    for name, cmd in (("rtsched --help", rtsched + ["--help"]), ("rtsched simulate --help", rtsched + ["simulate", "--help"])):
        helps[name] = statistics.median(timed(cmd, name)[0] for _ in range(args.repeat))
    probe = ("import sys\nfrom rtsched.cli import main\n"
             f"rc = main(['rl', 'evaluate', '--trace', {args.trace!r}, '--policies', 'fcfs,sjf,f1', '--starts', "
             "'1981,2756', '--json'])\n"
             "sys.stdout = sys.__stdout__\nprint('TORCH' if 'torch' in sys.modules else 'NO-TORCH')")
    torch_state = subprocess.run([py, "-c", probe], cwd=REPO, capture_output=True, text=True).stdout.split()[-1]
    cpu = {k: statistics.median(v) for k, v in CPU.items()}
    print(f"date {time.strftime('%Y-%m-%d')} · {platform.node()} · {os.cpu_count()} cores · load "
          f"{os.getloadavg()[0]:.2f} · Python {platform.python_version()} · median of {args.repeat} alternating runs "
          "· wall s / CPU s (user + system)")
    for (name, value, unit), key in zip(rows, ("sim", "plain")):
        print(f"{name:<62} {value:8.3f} {unit} / {cpu[key]:.3f} {unit} CPU")
    print(f"{'ratio rtsched / plain (target <= 1.5)':<62} {ratio:8.2f}   / {cpu['sim'] / cpu['plain']:.2f} CPU"
          f"   same schedule: {same}")
    for name, value in helps.items():
        print(f"{name + ' (target < 0.3 s)':<62} {value:8.3f} s / {cpu[name]:.3f} s CPU")
    print(f"{'heuristic-only rtsched rl evaluate imports torch?':<62} {'no' if torch_state == 'NO-TORCH' else 'YES'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
