#!/usr/bin/env python
"""Fit the Mira-like workload model (``rtsched/generators/miralike_params.json``) to the Mira logs.

Reads the Cobalt/Qsim logs ``../shared/data/traces/mira/{wk1,wk2,wk1-10}.log`` with
``rtsched.io.read_workload(path, "cobalt")`` (the logs are never copied into the repository) and
writes only aggregate, fitted statistics:

* sizes: the empirical distribution of partition sizes (``Resource_List.nodect`` rounded up to a
  Mira partition size) over the distinct jobs of the three logs: a job id found in several logs
  counts once (1,513 of the 1,531 jobs of ``wk1-10`` are ``wk1`` jobs with the same size, walltime
  and runtime, but different submit times);
* per size class (512, 1024, 2048, 4096, 8192, 12288-24576, 32768-49152 nodes): the empirical
  distribution of the requested walltimes (exact values in s, with counts);
* runtimes: the quantile function (51 points) of runtime / walltime (runtimes above the walltime are
  clipped to it by the reader) per requested walltime: each walltime asked for by at least 50
  distinct jobs (13 values, 5 min to 12 h) has its own, the other jobs are pooled in three walltime
  bands (<= 1 h, 1-6 h, > 6 h).  Conditioning on the walltime rather than on the size keeps the
  joint law of (walltime, runtime): with one ratio law per size class the generated runtimes were
  off by a KS distance of 0.07 from the logs' (median 3,283 s against 2,826 s);
* arrivals: the mean rate (jobs per day) over the logs' arrival windows, an hour-of-day rate profile
  (US Central local time, circularly smoothed with weights 1-2-1, mean 1) and the quantile function
  (119 points, finer in the tail, rescaled to mean 1) of the inter-arrival gaps measured in
  "operational time", i.e. after the hour-of-day profile is divided out.  The generator draws gaps
  from this distribution and maps them back through the profile, so bursts (many submissions in
  the same minute) and the daily cycle are both kept.

Arrivals are measured per log, on ``wk1`` and ``wk2`` only: a log's arrival window is
[first start, last submit] (jobs queued before the first start are backlog, not arrivals), and a gap
is only measured between two arrivals of the same log.  ``wk1-10`` is left out of the arrival fit
because its submit times are derived from ``wk1``'s (1,513 of its 1,531 jobs are ``wk1`` jobs, and 91 %
of those were submitted 0 to 6 h after their ``wk1`` submit time, median 5.0 h), so it is not an
independent observation of the arrival process;
it still adds its 18 jobs of its own to the size and time tables.  ``mira_dec_wk1.log`` (December
2014) is not used: a sixth of its jobs ask for fewer than 512 nodes, so it is not the 2018 partition
mix the three other logs (and seed 002) describe.  The output is deterministic: running the script
twice gives the same bytes (each list of numbers is written on one line to keep the file short).

    python scripts/fit_miralike.py [--data DIR] [--out PATH]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rtsched.io import read_workload, trace_extras  # noqa: E402
from rtsched.machines.sizes import MIRA_NODES, MIRA_PARTITION_NODES, round_up_to_partition  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "rtsched" / "generators" / "miralike_params.json"
LOGS = ("wk1.log", "wk2.log", "wk1-10.log")
ARRIVAL_LOGS = ("wk1.log", "wk2.log")  # wk1-10 submit times are derived from wk1 (see above)
SIZE_CLASSES: tuple[tuple[int, ...], ...] = (
    (512,), (1024,), (2048,), (4096,), (8192,), (12288, 16384, 24576), (32768, 49152))
# Quantile grids.  Gaps are heavy-tailed (CV about 2): a uniform grid would spread the top 1 % of
# the mass evenly up to the largest gap and inflate the mean and CV of the piecewise-linear law, so
# the grid is refined in the tail (steps 0.01 to 0.9, 0.005 to 0.99, 0.001 to 1).
GAP_PROBS = np.unique(np.round(np.concatenate([np.linspace(0.0, 0.9, 91), np.linspace(0.9, 0.99, 19),
                                               np.linspace(0.99, 1.0, 11)]), 6))
RATIO_PROBS = np.linspace(0.0, 1.0, 51)  # runtime / walltime lies in [0, 1]: a uniform grid suffices
# Runtime / walltime is fitted per requested walltime: each walltime requested by at least
# MIN_GROUP_JOBS distinct jobs has its own quantiles, the others are pooled in walltime bands (s).
MIN_GROUP_JOBS = 50
POOLED_BANDS = ((0, 3600), (3600, 21600), (21600, 10**9))  # (lo, hi]: <= 1 h, 1-6 h, > 6 h
SMOOTHING = (0.25, 0.5, 0.25)  # circular smoothing of the hourly rate profile


# ------------------------------------------------------------------------------- local time
def _nth_sunday(year: int, month: int, n: int) -> datetime:
    d = datetime(year, month, 1)
    d += timedelta(days=(6 - d.weekday()) % 7)  # first Sunday
    return d + timedelta(weeks=n - 1)


def central_offset_hours(ts: float) -> int:
    """UTC offset of US Central time at Unix time ``ts``: -5 in daylight time, else -6.

    US rule since 2007: daylight time from the second Sunday of March, 02:00 CST (08:00 UTC), to
    the first Sunday of November, 02:00 CDT (07:00 UTC).  Written out so that the fit does not
    depend on the machine's time-zone database.
    """
    utc = datetime.fromtimestamp(ts, tz=timezone.utc).replace(tzinfo=None)
    start = _nth_sunday(utc.year, 3, 2) + timedelta(hours=8)
    end = _nth_sunday(utc.year, 11, 1) + timedelta(hours=7)
    return -5 if start <= utc < end else -6


def local_hour(ts: np.ndarray) -> np.ndarray:
    """Hour of the day (0-23, US Central) of each Unix time."""
    ts = np.asarray(ts, dtype=np.int64)
    offsets = np.array([central_offset_hours(float(t)) for t in ts], dtype=np.int64)
    return ((ts + offsets * 3600) // 3600) % 24


# ------------------------------------------------------------------------------------ reading
def read_logs(data: Path):
    """Distinct jobs of the logs and each log's arrival window (Unix s)."""
    jobs: dict[int, dict] = {}
    windows: list[tuple[float, float, str, np.ndarray]] = []
    files = {}
    shared = mismatches = 0
    for name in LOGS:
        path = data / "traces" / "mira" / name
        if not path.exists():
            raise SystemExit(f"Mira log not found: {path}")
        files[name] = hashlib.sha256(path.read_bytes()).hexdigest()
        wl = read_workload(str(path), "cobalt")
        t0 = wl.start_time or 0
        extras = trace_extras(wl)
        starts = [extras[j.id].start + t0 for j in wl.jobs if extras[j.id].start is not None]
        lo, hi = float(min(starts)), float(max(j.submit + t0 for j in wl.jobs))
        qtimes = np.array([j.submit + t0 for j in wl.jobs], dtype=np.int64)
        if name in ARRIVAL_LOGS:
            windows.append((lo, hi, name, np.sort(qtimes[(qtimes >= lo) & (qtimes <= hi)])))
        for j in wl.jobs:
            rec = {"nodes": j.nodes, "walltime": j.walltime, "runtime": j.runtime}
            if j.id in jobs:
                shared += 1
                mismatches += jobs[j.id] != rec
                continue
            jobs[j.id] = rec
    return jobs, windows, files, shared, mismatches


# -------------------------------------------------------------------------------------- fitting
def quantiles(values: np.ndarray, probs: np.ndarray) -> np.ndarray:
    return np.quantile(values, probs)


def rounded(values) -> list[float]:
    return [round(float(v), 6) for v in values]


def fit_arrivals(windows):
    arrivals = []
    exposure = np.zeros(24)
    total_days = 0.0
    for lo, hi, _, q in windows:
        arrivals.append(q)
        grid = np.arange(int(lo), int(hi), 60, dtype=np.int64)  # 1-minute exposure grid
        exposure += np.bincount(local_hour(grid), minlength=24) / 60.0  # hours
        total_days += (hi - lo) / 86400.0
    all_q = np.concatenate(arrivals)
    counts = np.bincount(local_hour(all_q), minlength=24).astype(float)
    rate = counts / exposure  # jobs per hour, per hour of day
    k = np.array(SMOOTHING)
    smooth = k[0] * np.roll(rate, 1) + k[1] * rate + k[2] * np.roll(rate, -1)
    profile = smooth / smooth.mean()
    jobs_per_day = len(all_q) / total_days

    # gaps in operational time: d tau = profile(local hour) dt, scaled so the mean gap is 1
    gaps = []
    for lo, hi, _, q in windows:
        grid = np.arange(int(lo), int(hi) + 61, 60, dtype=np.int64)
        w = profile[local_hour(grid[:-1])]
        lam = np.concatenate([[0.0], np.cumsum(w * 60.0)])
        tau = np.interp(q, grid, lam)
        gaps.append(np.diff(tau))
    g = np.concatenate(gaps) * jobs_per_day / 86400.0
    qs = quantiles(g, GAP_PROBS)
    mean_pl = float(np.sum(np.diff(GAP_PROBS) * (qs[1:] + qs[:-1]) / 2.0))  # mean of the piecewise-linear law
    qs = qs / mean_pl
    info = {
        "windows": [{"log": name, "start_unix": int(lo), "end_unix": int(hi),
                     "days": round((hi - lo) / 86400.0, 4), "arrivals": int(len(q))}
                    for lo, hi, name, q in windows],
        "arrivals": int(len(all_q)),
        "gap_cv": round(float(g.std() / g.mean()), 4),
        "zero_gap_fraction": round(float(np.mean(g == 0)), 4),
    }
    return {
        "jobs_per_day": round(jobs_per_day, 4),
        "timezone": "US Central (UTC-6, UTC-5 in daylight time); generated t = 0 is local midnight",
        "hourly_profile": [round(float(v), 6) for v in profile],
        "gap_quantile_probs": rounded(GAP_PROBS),
        "gap_quantiles": rounded(qs),
    }, info


def fit_sizes(jobs: dict[int, dict]):
    """Size frequencies and, per size class, the table of requested walltimes."""
    sizes = np.array([round_up_to_partition(j["nodes"]) for j in jobs.values()])
    values, counts = np.unique(sizes, return_counts=True)
    covered = {s for c in SIZE_CLASSES for s in c}
    missing = sorted(set(values.tolist()) - covered)
    if missing:
        raise SystemExit(f"sizes {missing} are in no size class")
    classes = []
    for members in SIZE_CLASSES:
        wt = np.array([j["walltime"] for j, s in zip(jobs.values(), sizes) if s in members], dtype=np.int64)
        wv, wc = np.unique(wt, return_counts=True)
        classes.append({"nodes": list(members), "jobs": int(len(wt)),
                        "walltime_s": [int(v) for v in wv], "walltime_count": [int(c) for c in wc]})
    return {"nodes": [int(v) for v in values], "count": [int(c) for c in counts]}, classes


def fit_runtimes(jobs: dict[int, dict]):
    """Quantiles of runtime / walltime per requested walltime (or pooled walltime band)."""
    wall = np.array([j["walltime"] for j in jobs.values()], dtype=np.int64)
    ratio = np.array([min(j["runtime"], j["walltime"]) / j["walltime"] for j in jobs.values()])
    values, counts = np.unique(wall, return_counts=True)
    own = values[counts >= MIN_GROUP_JOBS]
    groups = []
    for w in own.tolist():
        sel = wall == w
        groups.append({"walltime_s": int(w), "jobs": int(sel.sum()),
                       "at_walltime_fraction": round(float(np.mean(ratio[sel] >= 1.0)), 4),
                       "ratio_quantiles": rounded(quantiles(ratio[sel], RATIO_PROBS))})
    pooled = ~np.isin(wall, own)
    for lo, hi in POOLED_BANDS:
        sel = pooled & (wall > lo) & (wall <= hi)
        if not sel.any():
            raise SystemExit(f"no job in the pooled walltime band ({lo}, {hi}] s")
        groups.append({"walltime_band_s": [lo, hi], "jobs": int(sel.sum()),
                       "at_walltime_fraction": round(float(np.mean(ratio[sel] >= 1.0)), 4),
                       "ratio_quantiles": rounded(quantiles(ratio[sel], RATIO_PROBS))})
    return {"ratio_quantile_probs": rounded(RATIO_PROBS), "min_group_jobs": MIN_GROUP_JOBS, "groups": groups}


def compact_json(obj, indent: str = "") -> str:
    """JSON with one key a line but each list of numbers or strings on a single line."""
    step = indent + "  "
    if isinstance(obj, dict):
        items = [f"{step}{json.dumps(k)}: {compact_json(v, step)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        return "[\n" + ",\n".join(step + compact_json(v, step) for v in obj) + "\n" + indent + "]"
    return json.dumps(obj, separators=(", ", ": "))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    jobs, windows, files, shared, mismatches = read_logs(args.data)
    arrivals, arrival_info = fit_arrivals(windows)
    sizes, classes = fit_sizes(jobs)
    runtimes = fit_runtimes(jobs)
    params = {
        "model": "miralike",
        "version": 2,
        "machine_nodes": MIRA_NODES,
        "partition_sizes": list(MIRA_PARTITION_NODES),
        "arrivals": arrivals,
        "sizes": sizes,
        "size_classes": classes,
        "runtime": runtimes,
        "fit": {
            "distinct_jobs": len(jobs),
            "ids_in_more_than_one_log": int(shared),
            "of_which_with_other_size_walltime_or_runtime": int(mismatches),
            **arrival_info,
            "smoothing": list(SMOOTHING),
        },
        "source": {
            "logs": {f"traces/mira/{name} (../shared/data)": sha for name, sha in files.items()},
            "origin": "ALCF Mira 2018 job log windows, via samnickolay/qsim-scheduling-january-paper-v2 @ d5b2b86",
        },
        "generated_by": "scripts/fit_miralike.py",
    }
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(compact_json(params) + "\n")
    os.replace(tmp, args.out)  # atomic: a reader never sees half a file
    print(f"{args.out}: {len(jobs)} distinct jobs, {arrivals['jobs_per_day']} jobs/day, "
          f"{len(classes)} size classes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
