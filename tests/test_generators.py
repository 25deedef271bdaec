"""Workload generators: determinism, ranges, hand-computed pieces of both models, statistics against
the real traces they model (skipped without ../shared/data), and the shipped traces byte for byte."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import gamma as gamma_dist
from scipy.stats import ks_2samp

from rtsched import generators
from rtsched.cli import main as cli_main
from rtsched.generators import default_trace, generate_lublin, generate_miralike, regenerate_shipped_traces
from rtsched.generators.lublin import LublinParams, bucket_weights, lublin_arrivals, lublin_sizes
from rtsched.generators.miralike import (load_params, mean_node_seconds, offered_load, operational_clock,
                                         quantile_draw)
from rtsched.io import read_workload
from rtsched.io.swf import read_swf
from rtsched.machines.sizes import MIRA_PARTITION_NODES, round_up_to_partition
from conftest import REPO, shared_data


def _jobs(wl):
    return [(j.id, j.submit, j.runtime, j.walltime, j.nodes) for j in wl.jobs]


# ----------------------------------------------------------------------------------- determinism
def test_lublin_same_seed_same_jobs_other_seed_other_jobs():
    a, b = generate_lublin(800, 256, seed=3), generate_lublin(800, 256, seed=3)
    assert _jobs(a) == _jobs(b)
    assert _jobs(a) != _jobs(generate_lublin(800, 256, seed=4))


def test_miralike_same_seed_same_jobs_other_seed_other_jobs():
    a, b = generate_miralike(days=2.0, seed=5), generate_miralike(days=2.0, seed=5)
    assert _jobs(a) == _jobs(b)
    assert _jobs(a) != _jobs(generate_miralike(days=2.0, seed=6))


def test_generators_are_deterministic_across_processes():
    code = ("from rtsched.generators import generate_lublin, generate_miralike;"
            "print(sum(j.submit * 7 + j.runtime * 3 + j.nodes for j in generate_lublin(300, 128, seed=9).jobs),"
            "sum(j.submit * 7 + j.walltime * 3 + j.nodes for j in generate_miralike(1.5, seed=9).jobs))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    here = (sum(j.submit * 7 + j.runtime * 3 + j.nodes for j in generate_lublin(300, 128, seed=9).jobs),
            sum(j.submit * 7 + j.walltime * 3 + j.nodes for j in generate_miralike(1.5, seed=9).jobs))
    assert out.split() == [str(v) for v in here]


def test_longer_traces_extend_shorter_ones():
    assert _jobs(generate_lublin(1000, 256, seed=2))[:400] == _jobs(generate_lublin(400, 256, seed=2))
    short, long_ = generate_miralike(days=2.0, seed=2), generate_miralike(days=4.0, seed=2)
    assert _jobs(long_)[:len(short)] == _jobs(short)
    assert long_.jobs[len(short)].submit >= 2 * 86400


# --------------------------------------------------------------------------------------- ranges
def test_miralike_shapes_and_ranges():
    wl = generate_miralike(days=3.0, seed=1)
    c = wl.columns()
    assert wl.max_nodes == 49152 and len(wl) > 100
    assert c["id"].tolist() == list(range(1, len(wl) + 1))
    assert set(c["nodes"].tolist()) <= set(MIRA_PARTITION_NODES)
    assert np.all(c["walltime"] >= c["runtime"]) and np.all(c["runtime"] >= 1)
    assert np.all(np.diff(c["submit"]) >= 0) and c["submit"][0] >= 0 and c["submit"][-1] < 3 * 86400
    assert all(isinstance(v, int) for j in wl.jobs[:50] for v in (j.submit, j.runtime, j.walltime, j.nodes))


def test_miralike_mean_node_seconds_matches_a_large_sample():
    """The analytic mean node-seconds per job (the rate fit's denominator) against 365 generated days."""
    p = load_params()
    c = generate_miralike(days=365.0, seed=1).columns()
    sample = float(np.mean(c["nodes"].astype(float) * c["runtime"]))
    assert abs(sample / mean_node_seconds(p) - 1) < 0.03  # 0.994 measured
    load = float(np.sum(c["nodes"].astype(float) * c["runtime"])) / (49152 * 365 * 86400)
    assert abs(load / offered_load(p) - 1) < 0.03  # 0.9325 against 0.9317


def test_miralike_load_scales_the_arrival_rate_only():
    base, double = generate_miralike(days=20.0, seed=4), generate_miralike(days=20.0, seed=4, load=2.0)
    assert 1.85 < len(double) / len(base) < 2.15
    assert abs(np.mean(double.columns()["nodes"]) / np.mean(base.columns()["nodes"]) - 1) < 0.15


def test_lublin_shapes_and_walltime_factors():
    wl = generate_lublin(2000, 128, seed=1)
    c = wl.columns()
    assert wl.max_nodes == 128 and len(wl) == 2000
    assert c["nodes"].min() >= 1 and c["nodes"].max() <= 128
    assert np.array_equal(c["walltime"], c["runtime"])  # the model has no estimates: factor 1
    assert np.all(np.diff(c["submit"]) >= 0)
    assert c["runtime"].max() <= math.exp(12)  # TOO_MUCH_TIME
    f = generate_lublin(500, 128, seed=1, walltime_factor=(1.0, 2.0)).columns()
    r = f["walltime"] / f["runtime"]
    assert np.all(f["walltime"] >= f["runtime"]) and r.max() <= 2.0 + 1.0 / f["runtime"].min() and r.mean() > 1.3


def test_bad_arguments_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="days"):
        generate_miralike(days=0)
    with pytest.raises(ValueError, match="load"):
        generate_miralike(days=1, load=-1)
    with pytest.raises(ValueError, match="walltime_factor"):
        generate_lublin(10, walltime_factor=0.5)
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"model": "miralike"}))
    with pytest.raises(ValueError, match=r"p\.json.*malformed"):
        generate_miralike(days=1, params=bad)


# --------------------------------------------------------------------- Lublin, computed by hand
def test_lublin_sizes_by_hand():
    # 256 processors: ulow 0.8, umed 8 - 2.5 = 5.5, uhi 8; serial if u0 <= 0.244, power of 2 if
    # u0 <= 0.82; first stage [0.8, 5.5] if u1 <= 0.86.
    u = np.array([[0.10, 0.5, 0.5],    # serial
                  [0.50, 0.5, 0.5],    # pow2: 0.8 + 0.5 * 4.7 = 3.15 -> 3 -> 8
                  [0.90, 0.95, 0.0],   # not pow2, second stage at 5.5: round(2^5.5 = 45.25) = 45
                  [0.90, 0.95, 1.0],   # 2^8 = 256
                  [0.50, 0.90, 0.79]])  # pow2, second stage: 5.5 + 0.79 * 2.5 = 7.475 -> 7 -> 128
    assert lublin_sizes(u, 256, LublinParams()).tolist() == [1, 8, 45, 256, 128]


def test_lublin_daily_cycle_matches_the_gamma_cdf():
    p = LublinParams()
    w = bucket_weights(p)
    # bucket b (0-based, b >= 10) is the C code's i = b + 1 (b + 49 before CYCLIC_DAY_START - 1)
    raw = np.array([gamma_dist.cdf(i + 0.5, p.anum, scale=p.bnum) - gamma_dist.cdf(i - 0.5, p.anum, scale=p.bnum)
                    for i in [(b + 1) if b + 1 >= 11 else (b + 49) for b in range(48)]])
    np.testing.assert_allclose(w, raw / raw.mean(), rtol=1e-9)
    assert abs(w.mean() - 1) < 1e-12 and 24 <= int(np.argmax(w)) <= 30  # busiest half hour: 12:00-15:00


class _FixedGammas:
    """A stand-in Generator whose gamma draws are given (the arrival walk is then hand-computable)."""

    def __init__(self, values):
        self.values = np.asarray(values, dtype=float)

    def gamma(self, shape, scale, size):
        return self.values[:size]


def test_lublin_arrival_walk_by_hand():
    p = LublinParams()
    w = bucket_weights(p)
    # gap 1: exp(g) = 900 s -> 0.5 points < w[0]: t = 1800 * 0.5 / w[0]
    # gap 2: exp(g) = 1800 * (w[0] + 0.25 * w[1]) s -> pays the rest of bucket 0, ends a quarter into bucket 1
    g1 = math.log(900.0)
    g2 = math.log(1800.0 * (w[0] - 0.5 + 0.25 * w[1]))
    t = lublin_arrivals(2, p, _FixedGammas([g1, g2]))
    t1 = int(1800 * 0.5 / w[0])
    assert t.tolist() == [t1, int(t1 + 1800 + 1800 * (0.25 - 0.5 / w[0]))]


# ------------------------------------------------------------------ Mira-like, computed by hand
def test_quantile_draw_and_operational_clock_by_hand():
    assert quantile_draw(np.array([0, 0.5, 1]), np.array([0.0, 1.0, 3.0]), np.array([0, 0.25, 0.75, 1])).tolist() \
        == [0.0, 0.5, 2.0, 3.0]
    profile = np.array([0.5] * 12 + [1.5] * 12)
    t, tau = operational_clock(profile, 1.0)
    assert tau[12] == 12 * 0.5 * 3600 and tau[24] == 86400 and tau[25] == 86400 + 1800
    assert np.array_equal(t[:3], [0, 3600, 7200])


def test_miralike_params_are_consistent():
    p = load_params()
    assert abs(p.hourly_profile.mean() - 1) < 1e-5
    mean_gap = np.sum(np.diff(p.gap_probs) * (p.gap_quantiles[1:] + p.gap_quantiles[:-1]) / 2)
    assert abs(mean_gap - 1) < 1e-4  # gaps are in units of the mean gap
    for c in p.classes:  # every (size, walltime) a class can draw has a runtime group
        assert all(p.ratio_groups[p.ratio_group_of(w, n)].holds(w, n) for w in c.walltime_s.tolist() for n in c.nodes)

    def group(walltime, nodes):
        g = p.ratio_groups[p.ratio_group_of(walltime, nodes)]
        return g.nodes, g.lo, g.hi

    assert group(5400, 1024) == ((1024,), 5400, 5400)  # 811 jobs of 1024 nodes asked for 1.5 h
    assert group(5400, 512) == ((), 3600, 21600)  # too few others: the (1 h, 6 h] band
    assert group(1200, 2048) == ((), 1200, 1200)  # a walltime of its own, for every narrow size
    assert group(5399, 8192) == ((), 3600, 21600)  # no job asked for 5399 s
    assert group(14400, 32768)[0] == group(300, 49152)[0] == (32768, 49152)  # wide: any walltime
    # the rate is fitted so that the model offers the logs' node-hours (recorded by the fit)
    fit = json.loads(Path(generators.miralike.PARAMS_PATH).read_text())["fit"]
    assert abs(offered_load(p) - fit["offered_load"]) < 1e-4
    assert abs(mean_node_seconds(p) / 3600 - fit["model_mean_node_hours_per_job"]) < 0.1


def test_mean_node_seconds_by_hand(tmp_path):
    """Two sizes, one walltime each, one ratio law: E[nodes x runtime] worked out by hand."""
    d = json.loads(Path(generators.miralike.PARAMS_PATH).read_text())
    d["sizes"] = {"nodes": [512, 1024], "count": [3, 1]}
    d["size_classes"] = [{"nodes": [512], "walltime_s": [3600], "walltime_count": [1]},
                         {"nodes": [1024], "walltime_s": [7200], "walltime_count": [1]}]
    d["runtime"]["ratio_quantile_probs"] = [0.0, 1.0]
    d["runtime"]["groups"] = [{"walltime_band_s": [0, 10**9], "ratio_quantiles": [0.0, 1.0]},  # mean 0.5
                              {"nodes": [1024], "walltime_s": 7200, "ratio_quantiles": [1.0, 1.0]}]  # always 1
    d["arrivals"]["jobs_per_day"] = 10.0
    path = tmp_path / "p.json"
    path.write_text(json.dumps(d))
    p = load_params(path)
    per_job = 0.75 * 512 * 3600 * 0.5 + 0.25 * 1024 * 7200 * 1.0  # 2,534,400 node-s
    assert mean_node_seconds(p) == pytest.approx(per_job)
    assert offered_load(p) == pytest.approx(10.0 * per_job / (86400 * 49152))
    assert offered_load(p, load=2.0) == pytest.approx(2 * offered_load(p))


# -------------------------------------------------------------------- statistics vs real traces
def test_lublin_matches_lublin_256_swf():
    ref = read_swf(str(shared_data("traces", "swf", "lublin_256.swf"))).columns()
    gen = generate_lublin(10_000, 256, seed=0).columns()
    for c in (ref, gen):
        n = c["nodes"]
        c["serial"] = np.mean(n == 1)
        c["pow2"] = np.mean((n > 1) & ((n & (n - 1)) == 0))
        c["rate"] = len(n) / ((c["submit"][-1] - c["submit"][0]) / 86400)
    assert abs(ref["serial"] - gen["serial"]) < 0.02  # 0.249 in the file
    assert abs(ref["pow2"] - gen["pow2"]) < 0.03  # 0.612
    assert ks_2samp(ref["nodes"], gen["nodes"]).statistic < 0.04
    assert ks_2samp(ref["runtime"], gen["runtime"]).statistic < 0.04
    assert abs(np.median(np.log(gen["runtime"])) - np.median(np.log(ref["runtime"]))) < 0.3
    assert 0.8 < gen["rate"] / ref["rate"] < 1.25  # 112 jobs/day in the file; gaps are heavy-tailed
    assert ks_2samp(np.diff(ref["submit"]), np.diff(gen["submit"])).statistic < 0.05


def _mira_logs():
    """The jobs the model is fitted on (those submitted in the arrival windows [first start, last
    submit] of wk1 and wk2) and their arrivals (local hour, count per day)."""
    cols = []
    hours, days = [], 0.0
    # Chicago: wk1 (January 2018) is UTC-6, wk2 (15-26 March 2018, after 11 March) UTC-5
    for name, utc_offset in (("wk1.log", -6), ("wk2.log", -5)):
        wl = read_workload(str(shared_data("traces", "mira", name)), "cobalt")
        lo = min(e.start for e in wl.header.extras.values() if e.start is not None)
        inside = [j for j in wl.jobs if lo <= j.submit]
        cols += [(round_up_to_partition(j.nodes), j.walltime, j.runtime) for j in inside]
        sub = np.array([j.submit for j in inside])
        days += (sub.max() - lo) / 86400
        hours.append(((sub + wl.start_time + utc_offset * 3600) // 3600) % 24)
    cols = np.array(cols)
    hours = np.concatenate(hours)
    return cols[:, 0], cols[:, 1], cols[:, 2], hours, len(hours) / days


def test_miralike_matches_the_mira_logs():
    nodes, wall, run, hours, per_day = _mira_logs()
    gen = generate_miralike(days=120.0, seed=11).columns()
    # 173.9 jobs/day in wk1 + wk2; the model's 179.0 (+2.9 %) is fitted to the logs' node-hours
    assert abs(len(gen["submit"]) / 120.0 / per_day - 1) < 0.05
    sizes = sorted(set(nodes.tolist()) | set(gen["nodes"].tolist()))
    p_data = np.array([np.mean(nodes == s) for s in sizes])
    p_gen = np.array([np.mean(gen["nodes"] == s) for s in sizes])
    assert 0.5 * np.abs(p_data - p_gen).sum() < 0.025  # total variation distance (0.006 measured, 365 days)
    assert ks_2samp(wall, gen["walltime"]).statistic < 0.015  # 0.002 measured (365 days)
    assert ks_2samp(np.minimum(run, wall), gen["runtime"]).statistic < 0.03  # 0.016 measured
    assert abs(np.mean(gen["runtime"]) / np.mean(np.minimum(run, wall)) - 1) < 0.04
    # daily cycle: hour-of-day arrival shares correlate, and the afternoon peak is kept
    h_data = np.bincount(hours, minlength=24) / len(hours)
    h_gen = np.bincount((gen["submit"] // 3600) % 24, minlength=24) / len(gen["submit"])
    assert np.corrcoef(h_data, h_gen)[0, 1] > 0.9
    assert h_gen[12:18].sum() / h_gen[0:6].sum() > 1.8 and h_data[12:18].sum() / h_data[0:6].sum() > 1.8
    # burstiness: the clock-time gap CV is kept within 25 % (2.3 in the logs)
    gaps = np.diff(gen["submit"])
    assert 1.75 < gaps.std() / gaps.mean() < 2.9


def _log_offered_load(name: str) -> tuple[float, int]:
    """Offered load of a Mira log's arrival window [first start, last submit], computed here
    independently of the fit script: node-seconds of the jobs submitted in it (sizes rounded up to a
    partition) over 49,152 nodes x the window; and the window's length (s)."""
    wl = read_workload(str(shared_data("traces", "mira", name)), "cobalt")
    lo = min(e.start for e in wl.header.extras.values() if e.start is not None)
    hi = max(j.submit for j in wl.jobs)
    work = sum(round_up_to_partition(j.nodes) * min(j.runtime, j.walltime) for j in wl.jobs if lo <= j.submit <= hi)
    return work / (49152 * (hi - lo)), (hi - lo)


def test_miralike_offers_the_logs_node_hours():
    """The fitted model, a long sample and the shipped week offer the node-hours of wk1 + wk2
    (the old model, with the logs' backlog jobs in its tables, offered 1.05 of the machine: failed)."""
    (l1, d1), (l2, d2) = _log_offered_load("wk1.log"), _log_offered_load("wk2.log")
    assert 0.80 < l1 < 0.83 and 1.04 < l2 < 1.06  # 0.813 and 1.050 measured
    logs = (l1 * d1 + l2 * d2) / (d1 + d2)  # 0.932: both windows together
    assert abs(offered_load(load_params()) / logs - 1) < 0.005  # the rate is fitted to it
    c = generate_miralike(days=365.0, seed=2).columns()
    assert abs(float(np.sum(c["nodes"].astype(float) * c["runtime"])) / (49152 * 365 * 86400) / logs - 1) < 0.03
    week = read_swf(str(REPO / "traces" / "mira_like_week.swf")).columns()
    week_load = float(np.sum(week["nodes"].astype(float) * week["runtime"])) / (49152 * 7 * 86400)
    assert abs(week_load / logs - 1) < 0.10  # 0.990: +6 % (a 7-day sample; the old week: 1.123, +20 %)


@pytest.mark.slow
def test_shipped_miralike_params_are_what_the_fit_script_writes(tmp_path):
    shared_data("traces", "mira", "wk1.log")
    out = tmp_path / "p.json"
    subprocess.run([sys.executable, str(REPO / "scripts" / "fit_miralike.py"), "--out", str(out)], cwd=REPO,
                   check=True, capture_output=True)
    assert out.read_bytes() == (REPO / "rtsched" / "generators" / "miralike_params.json").read_bytes()


def test_shipped_aps_model_is_what_the_fit_script_writes(tmp_path):
    shared_data("aps", "aps_runtimes_seconds.txt")
    out = tmp_path / "a.json"
    subprocess.run([sys.executable, str(REPO / "scripts" / "fit_aps.py"), "--out", str(out)], cwd=REPO,
                   check=True, capture_output=True)
    assert out.read_bytes() == (REPO / "rtsched" / "generators" / "aps_model.json").read_bytes()


# ------------------------------------------------------------------------------ shipped traces
def test_shipped_traces_regenerate_byte_for_byte(tmp_path):
    written = regenerate_shipped_traces(tmp_path / "a")
    assert [Path(p).name for p in written] == ["mira_like_week.swf", "lublin_256_sample.swf"]
    for path in written:
        assert Path(path).read_bytes() == (REPO / "traces" / Path(path).name).read_bytes(), path
    assert cli_main(["traces", "generate", "--shipped", "--out", str(tmp_path / "b")]) == 0
    for path in written:
        assert (tmp_path / "b" / Path(path).name).read_bytes() == Path(path).read_bytes()


def test_shipped_traces_say_how_they_were_made():
    week = read_swf(str(REPO / "traces" / "mira_like_week.swf"))
    assert week.header["Seed"] == "0" and "generate_miralike(days=7.0, seed=0)" in week.header["Call"]
    assert week.header["Machine"] == "mira"
    assert week.header["Regenerate"].startswith("rtsched traces generate --shipped")
    assert 300 <= len(week) <= 1500 and week.max_nodes == 49152
    sample = read_swf(str(REPO / "traces" / "lublin_256_sample.swf"))
    assert len(sample) == 2000 and sample.max_nodes == 256 and "n_jobs=2000" in sample.header["Parameters"]


def test_default_trace_reads_or_regenerates_the_week(tmp_path, monkeypatch):
    from_file = default_trace()
    assert _jobs(from_file) == _jobs(read_swf(str(REPO / "traces" / "mira_like_week.swf")))
    monkeypatch.setattr(generators, "SHIPPED_DIR", tmp_path)  # no file there: regenerated in memory
    in_memory = default_trace()
    assert _jobs(in_memory) == _jobs(from_file)
    assert in_memory.header["Seed"] == "0"


def test_generated_mira_like_traces_run_on_mira(tmp_path):
    """The header line ``; Machine: mira`` makes a run of the file pick Mira, not a flat cluster."""
    from rtsched.pipeline import RunSpec, execute

    assert (REPO / "traces" / "mira_like_week.swf").read_text().splitlines()[1] == "; Machine: mira"
    rec = execute(RunSpec(trace=str(REPO / "traces" / "mira_like_week.swf"), reader_options={"first_n": 40}))
    assert rec.machine.name == "mira-aligned-96"
    out = tmp_path / "w.swf"
    assert cli_main(["traces", "generate", "--model", "miralike", "--days", "0.5", "--seed", "1", "--out", str(out)]) == 0
    assert execute(RunSpec(trace=str(out))).machine.name == "mira-aligned-96"
    lublin = execute(RunSpec(trace=str(REPO / "traces" / "lublin_256_sample.swf"), reader_options={"first_n": 40}))
    assert lublin.machine.name.startswith("flat")  # no Machine line: a flat cluster of MaxProcs


# --------------------------------------------------------------------------------------- CLI
@pytest.mark.parametrize("model, extra, max_nodes", [("lublin", ["--jobs", "500"], 256),
                                                      ("miralike", ["--days", "2"], 49152)])
def test_cli_generate_writes_readable_swf(tmp_path, capsys, model, extra, max_nodes):
    out = tmp_path / f"{model}.swf"
    assert cli_main(["traces", "generate", "--model", model, *extra, "--seed", "3", "--out", str(out)]) == 0
    wl = read_swf(str(out))
    assert wl.max_nodes == max_nodes and wl.header["Seed"] == "3"
    if model == "lublin":
        assert _jobs(wl) == _jobs(generate_lublin(500, 256, seed=3))
    else:
        assert _jobs(wl) == _jobs(generate_miralike(days=2.0, seed=3))
    assert f"{out}: {len(wl)} jobs" in capsys.readouterr().out
