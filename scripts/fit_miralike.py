#!/usr/bin/env python
"""Fit the Mira-like workload model (``rtsched/generators/miralike_params.json``) to the Mira logs.

Reads the Cobalt/Qsim logs ``../shared/data/traces/mira/{wk1,wk2}.log`` with
``rtsched.io.read_workload(path, "cobalt")`` (the logs are never copied into the repository) and
writes only aggregate, fitted statistics.  Every table is fitted on the same jobs: the arrivals of
the two logs, i.e. the 3,633 jobs submitted inside a log's arrival window [first start, last
submit] (jobs queued before the first start are backlog, not arrivals: the 25 such jobs are mostly
8,192-16,384-node jobs of 6 h and more that had waited for weeks, 1.9 million node-hours, 8 % of
the windows' work; counting them in the job tables but not in the arrival rate made the model
offer 13 % more node-hours than the logs):

* sizes: the empirical distribution of partition sizes (``Resource_List.nodect`` rounded up to a
  Mira partition size);
* per size class (512, 1024, 2048, 4096, 8192, 12288-24576, 32768-49152 nodes): the empirical
  distribution of the requested walltimes (exact values in s, with counts);
* runtimes: the quantile function (51 points) of runtime / walltime (runtimes above the walltime are
  clipped to it by the reader).  Wide jobs (the two classes of 12,288 nodes and more, 87 jobs) have
  one law per class, whatever the walltime: they ran a smaller share of their walltime (mean 0.45
  and 0.30) than narrow jobs of the same walltimes (0.6), and with the narrow jobs' laws the
  32,768-49,152-node class alone offered 6 % of the machine too much.  Narrow jobs have one law per
  requested walltime asked for by at least 50 of them (13 values, 5 min to 12 h), the others are
  pooled in three walltime bands (<= 1 h, 1-6 h, > 6 h).  Conditioning on the walltime rather than
  on the size keeps the joint law of (walltime, runtime): with one ratio law per size class the
  generated runtimes were off by a KS distance of 0.07 from the logs';
* arrivals: an hour-of-day rate profile (US Central local time, circularly smoothed with weights
  1-2-1, mean 1) and the quantile function (119 points, finer in the tail, rescaled to mean 1) of
  the inter-arrival gaps measured in "operational time", i.e. after the hour-of-day profile is
  divided out.  The generator draws gaps from this distribution and maps them back through the
  profile, so bursts (many submissions in the same minute) and the daily cycle are both kept;
* the arrival rate, fitted jointly with the tables above: ``jobs_per_day`` = the logs' offered
  node-seconds per day (over both windows) / the model's mean node-seconds per job
  (``rtsched.generators.miralike.mean_node_seconds``), so the generated offered load (node-hours
  submitted / machine node-hours) is the logs' exactly; the count rate of the windows (jobs per
  day) is recorded beside it.

A gap is only measured between two arrivals of the same log.  ``wk1-10.log`` is not fitted: its
submit times are derived from ``wk1``'s (1,513 of its 1,531 jobs are ``wk1`` jobs with the same
size, walltime and runtime, 91 % of them submitted 0 to 6 h after their ``wk1`` submit time), so it
is not an independent observation.  ``mira_dec_wk1.log`` (December 2014) is not fitted: a sixth of
its jobs ask for fewer than 512 nodes, so it is not the 2018 partition mix the other logs (and
seed 002) describe.  Both are read to record their offered load beside the fitted logs' (in
``fit.offered_load``), when present.  The output is deterministic: running the script twice gives
the same bytes (each list of numbers is written on one line to keep the file short).

    python scripts/fit_miralike.py [--data DIR] [--out PATH]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rtsched.generators.miralike import mean_node_seconds, params_from_dict  # noqa: E402
from rtsched.io import read_workload, trace_extras  # noqa: E402
from rtsched.machines.sizes import MIRA_NODES, MIRA_PARTITION_NODES, round_up_to_partition  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "rtsched" / "generators" / "miralike_params.json"
LOGS = ("wk1.log", "wk2.log")  # fitted: sizes, times, arrivals and offered load
REFERENCE_LOGS = ("wk1-10.log", "mira_dec_wk1.log")  # offered load recorded only (see above)
SIZE_CLASSES: tuple[tuple[int, ...], ...] = (
    (512,), (1024,), (2048,), (4096,), (8192,), (12288, 16384, 24576), (32768, 49152))
WIDE_CLASSES = SIZE_CLASSES[5:]  # one runtime law per class, whatever the walltime
# Quantile grids.  Gaps are heavy-tailed (CV about 2): a uniform grid would spread the top 1 % of
# the mass evenly up to the largest gap and inflate the mean and CV of the piecewise-linear law, so
# the grid is refined in the tail (steps 0.01 to 0.9, 0.005 to 0.99, 0.001 to 1).
GAP_PROBS = np.unique(np.round(np.concatenate([np.linspace(0.0, 0.9, 91), np.linspace(0.9, 0.99, 19),
                                               np.linspace(0.99, 1.0, 11)]), 6))
RATIO_PROBS = np.linspace(0.0, 1.0, 51)  # runtime / walltime lies in [0, 1]: a uniform grid suffices
# Runtime / walltime is fitted per requested walltime: each walltime requested by at least
# MIN_GROUP_JOBS distinct jobs has its own quantiles, the others are pooled in walltime bands (s).
MIN_GROUP_JOBS = 50
ANY_WALLTIME = 10**9  # s: the upper end of the last band, beyond any walltime
POOLED_BANDS = ((0, 3600), (3600, 21600), (21600, ANY_WALLTIME))  # (lo, hi]: <= 1 h, 1-6 h, > 6 h
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
@dataclass(frozen=True)
class LogWindow:
    """One log's arrival window [start, end] (Unix s) and the jobs submitted inside it."""

    log: str
    start: float
    end: float
    submits: np.ndarray  # Unix s, sorted
    nodes: np.ndarray  # partition sizes (requests rounded up), nodes
    walltime: np.ndarray  # s
    runtime: np.ndarray  # s, clipped to the walltime by the reader

    @property
    def days(self) -> float:
        return (self.end - self.start) / 86400.0

    @property
    def node_seconds(self) -> float:
        return float(np.sum(self.nodes.astype(float) * self.runtime))

    @property
    def offered_load(self) -> float:
        """Node-seconds submitted in the window / the machine's node-seconds over it."""
        return self.node_seconds / (MIRA_NODES * (self.end - self.start))


def read_log(path: Path) -> LogWindow:
    """A log's arrival window: [first start, last submit] and the jobs submitted in it."""
    wl = read_workload(str(path), "cobalt")
    t0 = wl.start_time or 0
    extras = trace_extras(wl)
    starts = [extras[j.id].start + t0 for j in wl.jobs if extras[j.id].start is not None]
    lo, hi = float(min(starts)), float(max(j.submit + t0 for j in wl.jobs))
    inside = sorted((j for j in wl.jobs if lo <= j.submit + t0 <= hi), key=lambda j: (j.submit, j.id))
    return LogWindow(path.name, lo, hi,
                     np.array([j.submit + t0 for j in inside], dtype=np.int64),
                     np.array([round_up_to_partition(j.nodes) for j in inside], dtype=np.int64),
                     np.array([j.walltime for j in inside], dtype=np.int64),
                     np.array([min(j.runtime, j.walltime) for j in inside], dtype=np.int64))


def read_logs(data: Path) -> tuple[list[LogWindow], list[LogWindow], dict[str, str]]:
    """The fitted logs' windows, the reference logs' windows (those present) and the files' SHA-256."""
    files = {}
    fitted, reference = [], []
    for name in LOGS + REFERENCE_LOGS:
        path = data / "traces" / "mira" / name
        if not path.exists():
            if name in REFERENCE_LOGS:
                continue
            raise SystemExit(f"Mira log not found: {path}")
        files[name] = hashlib.sha256(path.read_bytes()).hexdigest()
        (fitted if name in LOGS else reference).append(read_log(path))
    return fitted, reference, files


# -------------------------------------------------------------------------------------- fitting
def quantiles(values: np.ndarray, probs: np.ndarray) -> np.ndarray:
    return np.quantile(values, probs)


def rounded(values) -> list[float]:
    return [round(float(v), 6) for v in values]


def fit_arrivals(windows: list[LogWindow]):
    """Hourly profile and operational-time gap law; the count rate goes into the fit's record."""
    arrivals = []
    exposure = np.zeros(24)
    total_days = 0.0
    for w in windows:
        lo, hi, q = w.start, w.end, w.submits
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
    for w in windows:
        lo, hi, q = w.start, w.end, w.submits
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
        "arrivals": int(len(all_q)),
        "counted_jobs_per_day": round(jobs_per_day, 4),
        "gap_cv": round(float(g.std() / g.mean()), 4),
        "zero_gap_fraction": round(float(np.mean(g == 0)), 4),
    }
    return {
        "jobs_per_day": None,  # fitted jointly with the job tables in main()
        "timezone": "US Central (UTC-6, UTC-5 in daylight time); generated t = 0 is local midnight",
        "hourly_profile": [round(float(v), 6) for v in profile],
        "gap_quantile_probs": rounded(GAP_PROBS),
        "gap_quantiles": rounded(qs),
    }, info


def fit_sizes(nodes: np.ndarray, walltime: np.ndarray):
    """Size frequencies and, per size class, the table of requested walltimes."""
    values, counts = np.unique(nodes, return_counts=True)
    covered = {s for c in SIZE_CLASSES for s in c}
    missing = sorted(set(values.tolist()) - covered)
    if missing:
        raise SystemExit(f"sizes {missing} are in no size class")
    classes = []
    for members in SIZE_CLASSES:
        wt = walltime[np.isin(nodes, members)]
        wv, wc = np.unique(wt, return_counts=True)
        classes.append({"nodes": list(members), "jobs": int(len(wt)),
                        "walltime_s": [int(v) for v in wv], "walltime_count": [int(c) for c in wc]})
    return {"nodes": [int(v) for v in values], "count": [int(c) for c in counts]}, classes


def fit_runtimes(nodes: np.ndarray, wall: np.ndarray, runtime: np.ndarray):
    """Quantiles of runtime / walltime per group; the groups partition the jobs, most specific first:
    a wide size class (any walltime); a narrow size class and a walltime asked for by at least
    MIN_GROUP_JOBS of its jobs; a walltime asked for by at least MIN_GROUP_JOBS of the other narrow
    jobs; a pooled walltime band of the rest."""
    ratio = np.minimum(runtime, wall) / wall
    groups = []
    left = np.ones(len(nodes), dtype=bool)  # jobs not yet in a group

    def add(key: dict, sel: np.ndarray) -> None:
        nonlocal left
        groups.append({**key, "jobs": int(sel.sum()), "at_walltime_fraction": round(float(np.mean(ratio[sel] >= 1.0)), 4),
                       "ratio_quantiles": rounded(quantiles(ratio[sel], RATIO_PROBS))})
        left &= ~sel

    for members in SIZE_CLASSES:
        in_class = np.isin(nodes, members)
        if members in WIDE_CLASSES:
            if not in_class.any():
                raise SystemExit(f"no job in the wide size class {list(members)}")
            add({"nodes": list(members), "walltime_band_s": [0, ANY_WALLTIME]}, in_class)
            continue
        values, counts = np.unique(wall[in_class], return_counts=True)
        for w in values[counts >= MIN_GROUP_JOBS].tolist():
            add({"nodes": list(members), "walltime_s": int(w)}, in_class & (wall == w))
    values, counts = np.unique(wall[left], return_counts=True)
    for w in values[counts >= MIN_GROUP_JOBS].tolist():
        add({"walltime_s": int(w)}, left & (wall == w))
    pooled = left.copy()
    for lo, hi in POOLED_BANDS:
        sel = pooled & (wall > lo) & (wall <= hi)
        if not sel.any():
            raise SystemExit(f"no job in the pooled walltime band ({lo}, {hi}] s")
        add({"walltime_band_s": [lo, hi]}, sel)
    return {"ratio_quantile_probs": rounded(RATIO_PROBS), "min_group_jobs": MIN_GROUP_JOBS, "groups": groups}


def _load_record(w: LogWindow) -> dict:
    return {"log": w.log, "start_unix": int(w.start), "end_unix": int(w.end), "days": round(w.days, 4),
            "arrivals": int(len(w.submits)), "node_hours": round(w.node_seconds / 3600.0),
            "offered_load": round(w.offered_load, 4)}


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
    windows, reference, files = read_logs(args.data)
    arrivals, arrival_info = fit_arrivals(windows)
    nodes, wall, runtime = (np.concatenate([getattr(w, k) for w in windows]) for k in ("nodes", "walltime", "runtime"))
    sizes, classes = fit_sizes(nodes, wall)
    runtimes = fit_runtimes(nodes, wall, runtime)
    params = {
        "model": "miralike",
        "version": 3,
        "machine_nodes": MIRA_NODES,
        "partition_sizes": list(MIRA_PARTITION_NODES),
        "arrivals": arrivals,
        "sizes": sizes,
        "size_classes": classes,
        "runtime": runtimes,
    }
    # The rate, fitted jointly with the tables: the logs' node-seconds per day / the model's per job.
    days = sum(w.days for w in windows)
    load = sum(w.node_seconds for w in windows) / (MIRA_NODES * days * 86400.0)
    per_job = mean_node_seconds(params_from_dict({**params, "arrivals": {**arrivals, "jobs_per_day": 1.0}}))
    arrivals["jobs_per_day"] = round(load * MIRA_NODES * 86400.0 / per_job, 4)
    params["fit"] = {
        "jobs": int(len(nodes)),
        "offered_load": round(load, 4),
        "offered_load_definition": "node-seconds submitted in the arrival windows / (49152 nodes x the windows' seconds)",
        "model_mean_node_hours_per_job": round(per_job / 3600.0, 1),
        "logs_mean_node_hours_per_job": round(float(np.sum(nodes.astype(float) * runtime)) / len(nodes) / 3600.0, 1),
        **arrival_info,
        "windows": [_load_record(w) for w in windows],
        "reference_windows": [_load_record(w) for w in reference],
        "smoothing": list(SMOOTHING),
    }
    params["source"] = {
        "logs": {f"traces/mira/{name} (../shared/data)": sha for name, sha in files.items()},
        "origin": "ALCF Mira job logs (2018 windows; December 2014 for the reference), via "
                  "samnickolay/qsim-scheduling-january-paper-v2 @ d5b2b86",
    }
    params["generated_by"] = "scripts/fit_miralike.py"
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(compact_json(params) + "\n")
    os.replace(tmp, args.out)  # atomic: a reader never sees half a file
    print(f"{args.out}: {len(nodes)} jobs, offered load {load:.4f}, {arrivals['jobs_per_day']} jobs/day "
          f"(counted {arrival_info['counted_jobs_per_day']}), {len(classes)} size classes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
