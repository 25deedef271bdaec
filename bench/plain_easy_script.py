"""The whole-process baseline of bench_startup: a plain script that reads an SWF trace, runs the
heap-based FCFS+EASY loop of plain_easy.py and prints the mean wait and bounded slowdown as JSON.

    python bench/plain_easy_script.py TRACE.swf PROCESSORS [TAU_S]

Its cleaning is rtsched's default SWF rule for these traces (size = requested processors, else
allocated; requested time -1 -> the runtime; runtime <= 0 dropped; runtime above the walltime
clipped), so the schedule, and hence the mean wait, equals ``rtsched simulate ... --policy fcfs
--backfill easy`` on the same trace (bench_startup checks it).
"""
from __future__ import annotations

import json
import sys

from plain_easy import plain_fcfs_easy


def read_jobs(path: str) -> list[tuple[int, int, int, int, int]]:
    jobs = []
    with open(path) as fh:
        for line in fh:
            f = line.split()
            if not f or f[0].startswith(";"):
                continue
            jid, submit, run, alloc, req, reqt = int(f[0]), int(f[1]), int(f[3]), int(f[4]), int(f[7]), int(f[8])
            if run <= 0:
                continue
            nodes = req if req > 0 else alloc
            wall = reqt if reqt > 0 else run
            jobs.append((jid, submit, min(run, wall), wall, nodes))
    jobs.sort(key=lambda j: (j[1], j[0]))
    return jobs


def main() -> None:
    path, capacity = sys.argv[1], int(sys.argv[2])
    tau = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    jobs = read_jobs(path)
    starts = plain_fcfs_easy(jobs, capacity)
    waits = [starts[j[0]] - j[1] for j in jobs]
    bsld = [max(1.0, (w + j[2]) / max(j[2], tau)) for w, j in zip(waits, jobs)]
    print(json.dumps({"jobs": len(jobs), "mean_wait": sum(waits) / len(waits), "mean_bsld_rl": sum(bsld) / len(bsld)}))


if __name__ == "__main__":
    main()
