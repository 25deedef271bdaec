"""Experiment grids (rtsched.experiments): expansion and stable hashing, resume, atomic writes,
recorded errors, a killed grid, report/plot output and their numbers against the library, the CLI.

Runs use a tiny SWF trace written into tmp_path (24 jobs, aligned 4-block Mira) and go through the
real library: rtsched.io, rtsched.rtmarking, heuristics.registry, the core, the validator and
rtsched.metrics.  (The study notebook is executed by tests/test_notebooks.py.)
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rtsched.experiments import (canonical_json, category_matrix, config_hash, expand_grid, load_grid, load_job_tables, load_results,
                                 parse_grid, plot, report, report_tables, run_grid)
from rtsched.experiments import runner, store
from rtsched import pipeline
from rtsched.experiments.grid import portable_path
from rtsched.window import WindowSpec
from rtsched.errors import InputError

REPO = Path(__file__).resolve().parents[1]
START = 1516492800  # 2018-01-21T00:00:00Z


@pytest.fixture
def comp():
    """Fresh per-process caches of the run pipeline for each test; the pipeline module (whose
    ``scheme`` a test may replace to inject failures)."""
    pipeline.clear_caches()
    return pipeline


# ------------------------------------------------------------------------------------ tiny inputs
def write_trace(path: Path, n: int = 24, seed: int = 1) -> Path:
    """A tiny SWF trace for the aligned 4-block Mira (2048 nodes): 512/1024-node jobs."""
    rng = random.Random(seed)
    lines = ["; Version: 2.2", "; MaxNodes: 2048", "; MaxProcs: 2048", f"; UnixStartTime: {START}"]
    t = 0
    for i in range(1, n + 1):
        t += rng.randint(0, 400)
        run = rng.randint(60, 3000)
        wall = run + rng.randint(0, 1200)
        nodes = rng.choice([512, 512, 1024])
        lines.append(f"{i} {t} -1 {run} {nodes} -1 -1 {nodes} {wall} -1 1 1 1 -1 1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


GRID = """
name = "tiny"
[trace]
name = "tiny"
path = "{trace}"
format = "swf"
machine = "mira:4"
window = {{ offset = 0, days = 1 }}
[grid]
rt_percent = [10, 25]
marking = ["random"]
schemes = ["baseline", "wcjs-jit"]
seeds = {seeds}
[options]
tau = 600
[report]
headline = {{ rt_percent = 10, baseline = "baseline", heuristic = "wcjs-jit", marking = "random" }}
"""


@pytest.fixture
def tiny(tmp_path):
    trace = write_trace(tmp_path / "tiny.swf")
    grid = tmp_path / "tiny.toml"
    grid.write_text(GRID.format(trace=trace.as_posix(), seeds=1))
    return grid


def run_quiet(grid, out, jobs=1):
    return run_grid(grid, out_dir=out, jobs=jobs, progress=False)


def mtimes(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in store.runs_dir(out).iterdir()}


# ------------------------------------------------------------------------------------ grid & hashing
def test_expansion_is_the_cartesian_product_in_fixed_order(tiny):
    runs = expand_grid(tiny)
    assert len(runs) == 2 * 1 * 2 * 1
    got = [(r.config["rt_percent"], r.config["scheme"], r.config["seed"]) for r in runs]
    assert got == [(10, "baseline", 0), (10, "wcjs-jit", 0), (25, "baseline", 0), (25, "wcjs-jit", 0)]
    assert len({r.key for r in runs}) == len(runs)
    assert all(len(r.key) == 16 for r in runs)
    assert runs[0].config["window"] == {"offset": 0, "days": 1}
    assert runs[0].config["inputs"]["trace"]  # content digest is part of the configuration


def test_hash_is_stable_and_canonical():
    a = {"b": [1.0, 2], "a": {"y": 10.0, "x": "s"}}
    b = {"a": {"x": "s", "y": 10}, "b": [1, 2.0]}
    assert canonical_json(a) == canonical_json(b) == '{"a":{"x":"s","y":10},"b":[1,2]}'
    # pinned: the key of a result file must not change between versions of the code
    assert config_hash(a) == config_hash(b) == "6a69f23b81836b34"
    assert config_hash({**a, "seed": 1}) != config_hash({**a, "seed": 2})


def test_hash_ignores_key_order_labels_and_path_spelling(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    write_trace(data / "t.swf")
    monkeypatch.setenv("SHARED_DATA", str(data))
    body = """[grid]\nrt_percent = [10.0]\nschemes = ["baseline"]\nseeds = [3]\n"""
    g1 = parse_grid(f'name = "a"\n[trace]\npath = "${{SHARED_DATA}}/t.swf"\nmachine = "mira:4"\n{body}')
    g2 = parse_grid(f'name = "b"\n{body}[trace]\nmachine = "mira:4"\nname = "other"\npath = "{data}/t.swf"\n'
                    .replace("10.0", "10"))
    (r1,), (r2,) = g1.expand(), g2.expand()
    assert r1.config["trace"]["path"] == "${SHARED_DATA}/t.swf"
    assert r1.key == r2.key
    # the trace's content is part of the key: a changed trace never reuses old results
    write_trace(data / "t.swf", seed=2)
    (r3,) = parse_grid(g1.text).expand()
    assert r3.key != r1.key
    assert portable_path(REPO / "traces" / "x.swf") == "traces/x.swf"


def test_grid_errors_name_the_file_and_key(tmp_path, tiny):
    bad = tmp_path / "bad.toml"
    bad.write_text(tiny.read_text().replace("[options]", "[options]\ntua = 5"))
    with pytest.raises(InputError, match=r"bad\.toml.*tua"):
        load_grid(bad)
    bad.write_text(tiny.read_text().replace('marking = ["random"]', 'marking = ["sometimes"]'))
    with pytest.raises(InputError, match="sometimes"):
        load_grid(bad)
    bad.write_text(tiny.read_text().replace("tiny.swf", "missing.swf"))
    with pytest.raises(FileNotFoundError, match="missing.swf"):
        expand_grid(bad)
    miss = parse_grid('name = "m"\n[trace]\npath = "${SHARED_DATA}/nope/x.log"\n[grid]\nrt_percent = 1\n'
                      'schemes = ["baseline"]\n')
    with pytest.raises(FileNotFoundError, match="SHARED_DATA"):
        miss.expand()


def test_window_start_iso_epoch_and_offset():
    w = WindowSpec.from_dict({"start": "2018-01-21", "days": 7})
    assert w.seconds(START - 3 * 86400) == (3 * 86400, 10 * 86400)
    assert WindowSpec.from_dict({"start": START, "days": 1}).seconds(START) == (0, 86400)
    assert WindowSpec.from_dict({"offset": 100, "days": 0.5}).seconds(None) == (100, 100 + 43200)
    with pytest.raises(ValueError):
        WindowSpec.from_dict({"start": "2018-01-21", "offset": 3, "days": 1})
    with pytest.raises(ValueError, match="absolute start"):
        w.seconds(None)


def test_shipped_grid_files_parse():
    grids = {p.stem: load_grid(p) for p in (REPO / "experiments").glob("*.toml")}  # every one parses
    assert {"paper_wk1", "paper_curie", "miralike", "headline_wk1", "smoke"} <= set(grids)
    for name in ("paper_wk1", "paper_curie", "miralike"):  # the paper's axes on the three traces
        g = grids[name]
        assert (g.rt_percent, g.marking, len(g.seeds)) == ([5, 10, 15, 20], ["random", "short", "aps"], 10), name
    assert {t.machine for t in grids["headline_wk1"].traces} == {"mira", "${SHARED_DATA}/mira/mira-partitions.xml"}
    assert grids["paper_curie"].traces[0].window.start == "1971-08-20"
    assert grids["paper_curie"].scheme_options["wcjs-jit"] == {"config": "curie"}
    g = load_grid(REPO / "experiments" / "paper_wk1.toml")
    assert g.rt_percent == [5, 10, 15, 20] and g.marking == ["random", "short", "aps"] and len(g.seeds) == 10
    assert {"baseline", "wcjs-app-5", "wcjs-app-10", "wcjs-jit", "no-ckpt", "sys-ckpt", "highpq"} == set(g.schemes)
    assert g.traces[0].window.start == "2018-01-21" and g.traces[0].machine.endswith("mira-partitions.xml")


# ------------------------------------------------------------------------------------ running
def test_run_writes_one_result_per_run_and_resumes(comp, tiny, tmp_path):
    out = tmp_path / "out"
    s = run_quiet(tiny, out)
    assert (s["runs"], s["completed"], s["skipped"], s["failed"]) == (4, 4, 0, [])
    keys = [r.key for r in expand_grid(tiny)]
    for k in keys:
        assert store.is_finished(out, k)
        rec = json.loads(store.summary_path(out, k).read_text())
        assert rec["key"] == k and rec["metrics"]["summary"]["rt"]["n"] >= 1
    assert (out / "manifest.json").exists() and (out / "grid.toml").exists()
    before = mtimes(out)
    # nothing to do: nothing is rewritten
    s = run_quiet(tiny, out)
    assert (s["completed"], s["skipped"]) == (0, 4)
    assert mtimes(out) == before
    # delete one result: only that run is recomputed, the others' files are untouched
    victim = keys[2]
    store.summary_path(out, victim).unlink()
    s = run_quiet(tiny, out)
    assert (s["completed"], s["skipped"]) == (1, 3)
    after = mtimes(out)
    for name, t in before.items():
        if not name.startswith(victim):
            assert after[name] == t, name
    assert after[f"{victim}.json"] >= before[f"{victim}.json"]
    # adding a seed to the grid runs only the new runs
    tiny.write_text(tiny.read_text().replace("seeds = 1", "seeds = 2"))
    s = run_quiet(tiny, out)
    assert (s["runs"], s["completed"], s["skipped"]) == (8, 4, 4)


def test_parallel_workers_give_the_same_numbers(comp, tiny, tmp_path):
    run_quiet(tiny, tmp_path / "serial", jobs=1)
    s = run_quiet(tiny, tmp_path / "parallel", jobs=2)
    assert s["completed"] == 4 and not s["failed"]
    cols = ["key", "rt_mean_bsld", "batch_mean_bsld", "rt_mean_sd", "batch_mean_sd"]
    a = load_results(tmp_path / "serial")[cols]
    b = load_results(tmp_path / "parallel")[cols]
    assert a.equals(b)


def test_failed_run_is_recorded_and_retried(comp, tiny, tmp_path, monkeypatch):
    out = tmp_path / "out"
    real_execute = runner.run_pipeline

    def flaky(spec, **kw):  # the run fails inside the pipeline (the up-front policy check passes)
        if spec.scheme == "wcjs-jit":
            raise RuntimeError("injected failure")
        return real_execute(spec, **kw)

    monkeypatch.setattr(runner, "run_pipeline", flaky)
    s = run_quiet(tiny, out)
    assert s["completed"] == 2 and len(s["failed"]) == 2
    assert all("injected failure" in f["error"] for f in s["failed"])
    for f in s["failed"]:
        err = json.loads(store.error_path(out, f["key"]).read_text())
        assert "RuntimeError: injected failure" in err["error"] and "Traceback" in err["traceback"]
        assert not store.summary_path(out, f["key"]).exists()
        assert not store.table_path(out, f["key"]).exists()
    assert "injected failure" in report(out)  # reported, not swallowed
    # fixed: the next run retries exactly the failed runs and clears their error files
    monkeypatch.setattr(runner, "run_pipeline", real_execute)
    s = run_quiet(tiny, out)
    assert (s["completed"], s["skipped"], s["failed"]) == (2, 2, [])
    assert not list(store.runs_dir(out).glob("*.error.json"))


def test_crash_while_writing_leaves_no_partial_result(comp, tiny, tmp_path, monkeypatch):
    import pandas as pd

    out = tmp_path / "out"
    real_to_parquet = pd.DataFrame.to_parquet

    def crash_midway(self, path, *a, **kw):
        Path(path).write_bytes(b"PAR1 half a file")
        raise OSError("disk died mid-write")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", crash_midway)
    s = run_quiet(tiny, out)
    assert s["completed"] == 0 and len(s["failed"]) == 4
    names = sorted(p.name for p in store.runs_dir(out).iterdir())
    assert all(n.endswith(".error.json") for n in names), names  # no result, no temporary left behind
    # a crash between the job table and the summary: the run is not counted as finished
    monkeypatch.setattr(pd.DataFrame, "to_parquet", real_to_parquet)
    real_json = store.atomic_write_json

    def crash_on_summary(path, obj):
        p = Path(path)
        if p.parent.name == store.RUNS and not p.name.endswith(".error.json"):
            raise KeyboardInterrupt  # the process is killed here
        return real_json(path, obj)

    monkeypatch.setattr(store, "atomic_write_json", crash_on_summary)
    with pytest.raises(KeyboardInterrupt):
        run_quiet(tiny, out)
    monkeypatch.setattr(store, "atomic_write_json", real_json)
    key = expand_grid(tiny)[0].key
    assert store.table_path(out, key).exists() and not store.is_finished(out, key)
    # a temporary file from a killed writer is cleaned up; the resumed grid completes every run
    (store.runs_dir(out) / f".{key}.json.tmp-999-deadbeef").write_text("{partial")
    s = run_quiet(tiny, out)
    assert (s["completed"], s["failed"]) == (4, [])
    assert not [p for p in store.runs_dir(out).iterdir() if store.TMP_MARK in p.name]
    assert len(load_results(out)) == 4


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "x.json"
    store.atomic_write_json(target, {"v": 1})

    def boom(tmp):
        tmp.write_text('{"v": 2, "trunc')
        raise OSError("crash")

    with pytest.raises(OSError):
        store.atomic_write(target, boom)
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_run_lock_is_exclusive_and_released_when_its_holder_dies(tmp_path):
    """One holder per run key; the OS frees a killed holder's lock; a released lock leaves no file."""
    store.runs_dir(tmp_path).mkdir()
    a, b = store.RunLock(tmp_path, "k1"), store.RunLock(tmp_path, "k1")
    assert a.acquire() and store.is_running(tmp_path, "k1")
    assert not b.acquire()  # another open file description: refused at once, no waiting
    assert store.RunLock(tmp_path, "k2").acquire()  # other keys are independent
    a.release()
    assert not store.lock_path(tmp_path, "k1").exists() and not store.is_running(tmp_path, "k1")
    assert b.acquire()
    b.release()
    code = ("import sys, time; from pathlib import Path; from rtsched.experiments import store; "
            "assert store.RunLock(Path(sys.argv[1]), 'k3').acquire(); print('held', flush=True); time.sleep(60)")
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        assert store.is_running(tmp_path, "k3") and not store.RunLock(tmp_path, "k3").acquire()
        proc.kill()
    finally:
        proc.wait()
    assert store.lock_path(tmp_path, "k3").exists() and not store.is_running(tmp_path, "k3")  # left, but free
    c = store.RunLock(tmp_path, "k3")
    assert c.acquire()
    c.release()
    assert not store.lock_path(tmp_path, "k3").exists()


# ------------------------------------------------------------------------------------ report & plot
@pytest.mark.slow
def test_report_and_plot_produce_output(comp, tiny, tmp_path):
    out = tmp_path / "out"
    tiny.write_text(tiny.read_text().replace("seeds = 1", "seeds = 2"))
    run_quiet(tiny, out)
    res = load_results(out)
    assert len(res) == 8
    assert {"key", "rt_percent", "marking", "scheme", "seed", "rt_mean_bsld", "batch_mean_bsld"} <= set(res.columns)
    jobs = load_job_tables(out)
    assert {"kind", "bsld", "turnaround", "category", "scheme", "rt_percent"} <= set(jobs.columns)
    tables = report_tables(out)
    sd = tables["slowdown"]
    assert len(sd) == 4 and set(sd["runs"]) == {2}
    # the table's mean over seeds is the mean of the runs' own means (from the metrics summary)
    r = res[(res["scheme"] == "baseline") & (res["rt_percent"] == 10)]
    row = sd[(sd["scheme"] == "baseline") & (sd["rt_percent"] == 10)].iloc[0]
    assert row["rt_mean_bsld"] == pytest.approx(r["rt_mean_bsld"].mean())
    head = tables["headline"]
    assert list(head["kind"][:2]) == ["RTJ", "BJ"] and list(head["category"][:2]) == ["all", "all"]
    assert head["paper_baseline"].iloc[0] == 1.94 and head["paper_heuristic"].iloc[1] == 2.51
    text = report(out)
    for needle in ("Mean bounded slowdown", "Headline", "1.94", "2.26", "2.51", "narrow-short"):
        assert needle in text
    figs = plot(out, tmp_path / "figs", dpi=40)
    # the tiny trace's jobs are all narrow and short: no blank figure for the other categories
    assert set(load_job_tables(out)["category"]) == {"narrow-short"}
    assert sorted(p.name for p in figs) == sorted(f"tiny_random_{c}.png" for c in ("overall", "narrow-short"))
    for p in figs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 2000
    assert not [p for p in (tmp_path / "figs").iterdir() if store.TMP_MARK in p.name]
    # seed 002's per-scheme bars: the bar heights are the table's means over seeds, the error bars
    # its standard deviations; the title says what ran
    from rtsched.experiments import scheme_bars

    fig = scheme_bars(out)
    ax_rt, ax_bj, ax_u = fig.axes
    assert "2 seeds" in fig._suptitle.get_text() and "tiny" in fig._suptitle.get_text()
    assert ax_u.get_ylim() == (0.0, 1.0) and "τ = 10 min" in ax_rt.get_ylabel()
    order = list(dict.fromkeys(sd["scheme"]))
    first = sd[sd["rt_percent"] == min(sd["rt_percent"])].set_index("scheme")
    heights = [b.get_height() for b in ax_bj.patches][:: len(set(sd["rt_percent"]))]
    assert heights == pytest.approx([first.loc[s, "batch_mean_bsld"] for s in order])
    from matplotlib.container import BarContainer

    bars = [c for c in ax_rt.containers if isinstance(c, BarContainer)]
    assert len(bars) == len(order) and all(b.errorbar is not None for b in bars)  # ± std over the 2 seeds
    with pytest.raises(ValueError, match="marking 'nope'"):
        scheme_bars(out, marking="nope")


def test_box_stats_whiskers_are_5_and_95_percentiles():
    import numpy as np

    from rtsched.plots import box_stats

    v = np.arange(1, 101, dtype=float)
    st = box_stats(v)
    assert st["whislo"] == pytest.approx(np.percentile(v, 5)) and st["whishi"] == pytest.approx(np.percentile(v, 95))
    assert (st["q1"], st["med"], st["q3"]) == pytest.approx(tuple(np.percentile(v, [25, 50, 75])))
    assert st["mean"] == pytest.approx(50.5) and st["fliers"] == []
    assert box_stats([float("nan")]) is None


@pytest.mark.slow
def test_cli_run_report_plot(comp, tiny, tmp_path, capsys):
    from rtsched.cli import main as cli_main

    out = tmp_path / "out"

    def main(*argv):
        return cli_main(list(argv))

    assert main("experiment", "run", str(tiny), "--out", str(out), "-j", "1", "--no-progress") == 0
    assert main("experiment", "run", str(tiny), "--out", str(out), "--dry-run") == 0
    assert "done" in capsys.readouterr().out
    assert main("experiment", "report", str(out), "--csv", str(tmp_path / "csv")) == 0
    assert "Headline" in capsys.readouterr().out
    assert (tmp_path / "csv" / "slowdown.csv").exists()
    assert main("experiment", "plot", str(out), "--dpi", "40") == 0
    assert len(list((out / "figures").glob("*.png"))) == 2  # overall and narrow-short (the only category)


def test_main_cli_has_experiment_commands():
    from rtsched.cli import build_parser

    args = build_parser().parse_args(["experiment", "report", "somewhere"])
    assert args.func.__module__ == "rtsched.cli.experiment"


# ------------------------------------------------------------------------------------ numbers
def test_run_numbers_are_the_library_numbers_over_the_window(comp, tmp_path):
    """A stored run equals the same simulation done by hand with the library, measured over the
    results window (only jobs submitted inside it)."""
    from heuristics.registry import scheme
    from rtsched import metrics
    from rtsched.io import read_workload
    from rtsched.machines import machine_from_spec
    from rtsched.rtmarking import RtMarking, mark_realtime
    from rtsched.sim.core import Simulator

    trace = write_trace(tmp_path / "t.swf", n=40, seed=3)
    grid = tmp_path / "w.toml"
    grid.write_text(GRID.format(trace=trace.as_posix(), seeds=[4])
                    .replace("offset = 0, days = 1", "offset = 1800, days = 0.05")  # [1800, 6120) s
                    .replace("rt_percent = [10, 25]", "rt_percent = [25]"))
    out = tmp_path / "out"
    assert run_quiet(grid, out)["completed"] == 2
    wl = mark_realtime(read_workload(trace, "swf"), RtMarking(percent=25, mode="random", seed=4))
    res = load_results(out)
    for name in ("baseline", "wcjs-jit"):
        policy, ckpt = scheme(name)
        result = Simulator(wl, machine_from_spec("mira:4"), checkpoint=ckpt).run(policy)
        want = metrics.summary_dict(result, (1800, 6120), tau_seed002=600)["summary"]
        row = res[res["scheme"] == name].iloc[0]
        for kind in ("rt", "batch"):
            assert row[f"{kind}_n"] == want[kind]["n"]
            assert row[f"{kind}_mean_bsld"] == pytest.approx(want[kind]["mean_bsld"])
            assert row[f"{kind}_mean_sd"] == pytest.approx(want[kind]["mean_sd"])
        in_window = sum(1 for j in wl.jobs if 1800 <= j.submit < 6120)
        assert 0 < row["jobs_in_table"] == in_window < len(wl)
    # the job tables hold exactly the window's jobs, with the seed-002 bounded slowdown (τ = 600 s)
    jobs = load_job_tables(out, where={"scheme": "baseline"})
    assert len(jobs) == in_window
    b = jobs.iloc[0]
    assert b["bsld"] == pytest.approx((b["wait"] + max(b["runtime"], 600)) / max(b["runtime"], 600))


def test_category_table_is_mean_of_run_means(comp, tiny, tmp_path):
    """Per category: each run's mean over its jobs of the category, then the mean over seeds."""
    out = tmp_path / "out"
    tiny.write_text(tiny.read_text().replace("seeds = 1", "seeds = 3"))
    run_quiet(tiny, out)
    jobs = load_job_tables(out)
    cats = report_tables(out)["categories"]
    sel = jobs[(jobs["scheme"] == "baseline") & (jobs["rt_percent"] == 25) & (jobs["kind"] == "batch")
               & (jobs["category"] == "narrow-short")]
    per_seed = [g["bsld"].mean() for _, g in sel.groupby("seed")]
    row = cats[(cats["scheme"] == "baseline") & (cats["rt_percent"] == 25) & (cats["kind"] == "batch")
               & (cats["category"] == "narrow-short")].iloc[0]
    assert row["runs"] == len(per_seed) == 3
    assert row["mean_bsld"] == pytest.approx(sum(per_seed) / 3)
    matrix = category_matrix(cats, "mean_bsld", scheme_order=["wcjs-jit", "baseline"])
    assert list(matrix.index.get_level_values("scheme")[:2]) == ["wcjs-jit", "baseline"]
    assert matrix.loc[("tiny", "random", 25, "baseline"), ("batch", "narrow-short")] == row["mean_bsld"]


def test_marking_alias_and_marking_options(tiny):
    text = tiny.read_text()
    (a, *_), (b, *_) = parse_grid(text).expand(), parse_grid(text.replace('["random"]', '["default"]')).expand()
    assert a.key == b.key and b.config["marking"] == "random"  # "default" is seed 002's name for random
    c = parse_grid(text + "[marking_options]\nnoncheckpointable_percent = 20\n").expand()[0]
    assert c.key != a.key and c.config["marking_options"] == {"noncheckpointable_percent": 20}
    with pytest.raises(InputError, match="noncheckpointable"):
        parse_grid(text + "[marking_options]\nnoncheckpointable = 20\n")


def _process_group_gone(pgid: int, timeout: float = 20.0) -> bool:
    """Whether every process of the group has ended (orphaned workers would still be in it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("sig, jobs, group", [(signal.SIGKILL, 1, False), (signal.SIGKILL, 2, False),
                                              (signal.SIGTERM, 2, False), (signal.SIGTERM, 2, True)],
                         ids=["sigkill-j1", "sigkill-j2", "sigterm-j2", "sigterm-group-j2"])
def test_killed_grid_keeps_finished_runs_and_resumes(comp, tmp_path, sig, jobs, group):
    """Kill ``rtsched experiment run`` in the middle -- the main process only, or (``group``) its
    whole process group as ``timeout`` and batch systems do: no worker outlives it (none keeps
    computing or holding run locks), every result file left is whole, SIGTERM exits like Ctrl-C
    (130), and the resumed grid recomputes none of the finished runs."""
    trace = write_trace(tmp_path / "k.swf", n=60, seed=5)
    grid = tmp_path / "k.toml"
    grid.write_text(GRID.format(trace=trace.as_posix(), seeds=12))  # 48 runs
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "rtsched", "experiment", "run", str(grid), "--out", str(out),
                             "-j", str(jobs), "--no-progress"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if len(list(store.runs_dir(out).glob("*.json"))) >= 3 if store.runs_dir(out).is_dir() else False:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "the grid finished before it could be killed"
        (os.killpg if group else os.kill)(proc.pid, sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    gone = _process_group_gone(proc.pid)
    if not gone:  # leave no orphan behind, even when failing
        os.killpg(proc.pid, signal.SIGKILL)
    assert gone, "worker processes outlived the killed grid"
    if sig == signal.SIGTERM:
        assert proc.returncode == 130 and "interrupted" in err, (proc.returncode, err)
    keys = [r.key for r in expand_grid(grid)]
    finished = [k for k in keys if store.is_finished(out, k)]
    assert 3 <= len(finished) < len(keys)
    for p in store.runs_dir(out).glob("*.json"):  # whole files only: each parses and names its run
        assert json.loads(p.read_text())["key"] == p.name.split(".")[0]
    before = {k: store.summary_path(out, k).stat().st_mtime_ns for k in finished}
    s = run_quiet(grid, out)
    assert (s["skipped"], s["completed"], s["failed"], s["busy"]) == (len(finished), len(keys) - len(finished), [], [])
    assert {k: store.summary_path(out, k).stat().st_mtime_ns for k in finished} == before
    assert not [p for p in store.runs_dir(out).iterdir() if store.TMP_MARK in p.name or p.suffix == ".lock"]
    assert len(load_results(out)) == len(keys)


def test_two_grids_in_one_folder_never_pool_different_scheme_options(comp, tiny, tmp_path):
    """Runs of the same scheme with other options (a second grid written into the same folder) get
    their own label: tables never average them together."""
    out = tmp_path / "out"
    run_quiet(tiny, out)
    variant = tmp_path / "variant.toml"
    variant.write_text(tiny.read_text().replace('name = "tiny"\n', 'name = "variant"\n', 1)
                       + '[scheme_options.wcjs-jit]\nthreshold_estimate = "current"\n')
    s = run_quiet(variant, out)
    assert (s["skipped"], s["completed"]) == (2, 2)  # the baseline runs are the same runs (same keys)
    res = load_results(out)
    assert sorted(set(res["scheme"])) == ["baseline", "wcjs-jit", "wcjs-jit[threshold_estimate=current]"]
    assert set(report_tables(out)["slowdown"]["runs"]) == {1}
