"""General experiment grids: any run option as an axis, paths relative to the grid file, the long
summary.parquet with provenance, the generic report, shards, shared folders (per-run locks), broken
results, option errors, and the local backend's interrupt handling.

Runs use tiny SWF traces written into tmp_path and go through the real run pipeline; numbers are
checked against an independent ``rtsched.pipeline.execute`` of the same RunSpec.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from rtsched import __version__, pipeline
from rtsched.errors import InputError, OptionError
from rtsched.experiments import (broken_runs, config_hash, expand_grid, load_grid, load_results, parse_grid, plot,
                                 report, report_tables, run_grid, store, summary_frame)
from rtsched.experiments.runner import parse_shard, plan, shard_of
from rtsched.pipeline import RunSpec

from conftest import shared_data

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fresh_caches():
    pipeline.clear_caches()


def write_swf(path: Path, n: int = 40, seed: int = 1, procs: int = 64) -> Path:
    """A small SWF trace for a flat machine of ``procs`` processors (header MaxProcs)."""
    rng = random.Random(seed)
    lines = ["; Version: 2.2", f"; MaxNodes: {procs}", f"; MaxProcs: {procs}", "; UnixStartTime: 1516492800"]
    t = 0
    for i in range(1, n + 1):
        t += rng.randint(0, 300)
        run = rng.randint(30, 2400)
        wall = run + rng.randint(0, 900)
        size = rng.choice([1, 2, 4, 8, 16, 32, procs // 2, procs])
        lines.append(f"{i} {t} -1 {run} {size} -1 -1 {size} {wall} -1 1 {rng.randint(1, 5)} 1 -1 1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


BATCH = """
name = "batch-policies"
[[traces]]
path = "lublin_256.swf"
machine = "flat:256"
[grid]
policy = ["fcfs", "sjf", "f1"]
backfill = ["none", "easy"]
seeds = 1
"""


def cli(*argv) -> int:
    from rtsched.cli import main

    return main([str(a) for a in argv])


# ------------------------------------------------------------------------------------ the issue's example
@pytest.mark.slow
def test_the_batch_policies_example_works_as_written_on_the_real_trace(tmp_path, monkeypatch, capsys):
    """The issue's grid file beside a copy of lublin_256.swf, run from another folder: results go
    to ./results/batch-policies of the current directory; report and summary.parquet cover it."""
    src = shared_data("traces", "swf", "lublin_256.swf")
    folder = tmp_path / "study"
    folder.mkdir()
    shutil.copy(src, folder / "lublin_256.swf")
    (folder / "grid.toml").write_text(BATCH)
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)
    assert cli("experiment", "run", folder / "grid.toml", "-j", "2", "--no-progress") == 0
    out = work / "results" / "batch-policies"
    assert len(list(store.runs_dir(out).glob("*.parquet"))) == 6
    assert cli("experiment", "report", out) == 0
    text = capsys.readouterr().out
    for policy in ("fcfs", "sjf", "f1"):
        assert policy in text
    summary = summary_frame(out)
    assert len(summary) == 6 * 15 and set(summary["trace_sha256"]) == {pipeline.file_sha256(src)}


def test_a_grid_over_policies_backfill_and_traces_runs_and_reports(tmp_path, monkeypatch, capsys):
    """Traces x policies x backfilling through the command line: every run's numbers equal an
    independent pipeline run of the same RunSpec; summary.parquet is long (run x group x
    category) with provenance in every row; the generic report has one row per combination."""
    a, b = write_swf(tmp_path / "a.swf", seed=1), write_swf(tmp_path / "b.swf", n=30, seed=2)
    (tmp_path / "g.toml").write_text('name = "pbt"\n[grid]\ntrace = ["a.swf", "b.swf"]\n'
                                     'policy = ["fcfs", "sjf"]\nbackfill = ["none", "easy"]\nseeds = [0, 1]\n')
    monkeypatch.chdir(tmp_path)
    assert cli("experiment", "run", "g.toml", "-j", "1", "--no-progress") == 0
    out = tmp_path / "results" / "pbt"
    runs = expand_grid(tmp_path / "g.toml")
    assert len(runs) == 2 * 2 * 2 * 2
    summary = summary_frame(out)
    assert len(summary) == len(runs) * 3 * 5  # groups all/rt/batch x categories all + 4
    assert summary.equals(__import__("pandas").read_parquet(out / "summary.parquet"))
    for run in runs:
        rows = summary[summary["key"] == run.key]
        assert config_hash(run.config) == run.key
        assert set(rows["rtsched_version"]) == {__version__} and set(rows["seed"]) == {run.config["seed"]}
        path = a if run.label == "a" else b
        assert set(rows["trace_sha256"]) == {pipeline.file_sha256(path)}
        assert set(rows["machine"]) == {"flat:64"}  # the SWF header's size: the pipeline's rule
        c = run.config
        spec = RunSpec(trace=str(path), policy=c["policy"], policy_options=c["policy_options"], seed=c["seed"])
        want = pipeline.execute(spec).summary["summary"]["all"]
        got = rows[(rows["job_group"] == "all") & (rows["category"] == "all")].iloc[0]
        assert got["n"] == want["n"] == (40 if run.label == "a" else 30)
        for m in ("mean_bsld", "median_sd", "p95_wait"):
            assert got[m] == pytest.approx(want[m]), m
        prov = json.loads(store.summary_path(out, run.key).read_text())["provenance"]  # the record says what ran
        assert (prov["trace"], prov["trace_sha256"], prov["policy_options"], prov["seed"], prov["rtsched_version"]) == \
            (str(path.resolve()), pipeline.file_sha256(path), c["policy_options"], c["seed"], __version__)
        assert {"machine_spec", "policy", "scheme", "checkpoint", "rt_percent", "marking", "tau",
                "window_spec"} <= set(prov)
    assert cli("experiment", "report", out) == 0
    text = capsys.readouterr().out
    table = report_tables(out)["summary"]
    assert list(table.attrs["axes"]) == ["trace", "policy", "backfill"]
    assert len(table) == 8 and set(table["runs"]) == {2}  # 2 seeds behind each row
    row = table[(table["trace"] == "a") & (table["policy"] == "sjf") & (table["backfill"] == "easy")].iloc[0]
    sel = summary[(summary["job_group"] == "all") & (summary["category"] == "all") & (summary["trace"] == "a")
                  & (summary["policy"] == "sjf") & (summary["backfill"] == "easy")]
    assert row["p95_bsld"] == pytest.approx(sel["p95_bsld"].mean())
    for needle in ("## All jobs", "SD mean", "BSLD p95", "WAIT median", "sjf", "easy"):
        assert needle in text
    assert "Real-time" not in text  # no RTJs: no RTJ / BJ tables
    from rtsched.experiments.figures import metric_label, summary_bars

    assert metric_label("mean_wait") == ("mean wait (h)", 3600.0)
    assert metric_label("p95_bsld_rl") == ("95th pct. bounded slowdown (τ = 10 s)", 1.0)
    fig = summary_bars(out, metric="mean_wait", log=False, title="wait")
    # no RTJs: the seeds draw nothing, so the runs of a row are identical (issue 26: said, and drawn)
    assert fig._suptitle.get_text() == "wait · all jobs · 2 seeds, identical results (no spread)"
    ax = fig.axes[0]
    assert ax.get_ylabel() == "mean wait (h)" and ax.get_title() == "trace a"
    sel_w = summary[(summary["job_group"] == "all") & (summary["category"] == "all") & (summary["trace"] == "a")
                    & (summary["policy"] == "fcfs") & (summary["backfill"] == "none")]["mean_wait"]
    assert ax.patches[0].get_height() == pytest.approx(sel_w.mean() / 3600.0)  # hours


def test_duckdb_query_from_the_docs_reads_the_summary(tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (the docs' query example needs it)")
    write_swf(tmp_path / "lublin_256.swf", procs=256)
    (tmp_path / "g.toml").write_text(BATCH)
    run_grid(tmp_path / "g.toml", out_dir=tmp_path / "out", jobs=1, progress=False)
    rows = duckdb.sql(f"""
        SELECT policy, backfill, count(*) AS runs, avg(mean_bsld) AS bsld, avg(p95_wait) AS p95_wait
        FROM '{tmp_path / "out" / "summary.parquet"}'
        WHERE job_group = 'all' AND category = 'all'
        GROUP BY policy, backfill ORDER BY policy, backfill""").fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [(p, b, 1) for p in ("f1", "fcfs", "sjf") for b in ("easy", "none")]


# ------------------------------------------------------------------------------------ axes
def test_every_run_option_is_an_axis_and_maps_onto_the_run_spec(tmp_path):
    from rtsched.experiments.runner import spec_of

    write_swf(tmp_path / "t.swf", procs=2048)
    g = parse_grid("""
name = "all-axes"
[[traces]]
path = "t.swf"
[grid]
machine = ["mira:4", "flat:2048"]
rt_percent = [0, 20]
marking = ["random", "short"]
policy = ["wcjs"]
scheme = ["baseline"]
checkpoint = ["jit", "app-5"]
tau = [600, 60]
seed = [3]
wcjs.rt_narrow = [1.1, 1.5]
""", tmp_path / "g.toml")
    runs = g.expand()
    # per trace: 2 machines x 2 RT % x 2 markings x (wcjs x 2 option values + baseline) x 2 checkpoints x 2 τ
    assert len(runs) == 2 * 2 * 2 * 3 * 2 * 2 and len({r.key for r in runs}) == len(runs)
    wcjs = [r for r in runs if r.config.get("policy") == "wcjs"]
    assert {r.config["policy_options"]["rt_narrow"] for r in wcjs} == {1.1, 1.5}
    assert all("scheme_options" not in r.config for r in wcjs)
    base = [r for r in runs if r.config.get("scheme") == "baseline"]
    assert all(r.config["scheme_options"] == {} for r in base)  # the option axis is wcjs's only
    r = next(r for r in wcjs if r.config["machine"] == "mira:4" and r.config["tau"] == 60
             and r.config["checkpoint"] == "app-5" and r.config["rt_percent"] == 20 and r.config["marking"] == "short")
    spec = spec_of(r.task(tmp_path / "out", validate=True))
    assert (spec.machine, spec.policy, spec.scheme, spec.checkpoint, spec.tau, spec.rt_percent, spec.marking,
            spec.seed) == ("mira:4", "wcjs", None, "app-5", 60, 20, "short", 3)
    assert dict(spec.policy_options) == {"rt_narrow": r.config["policy_options"]["rt_narrow"]}
    assert "machine=mira:4" in r.describe() and "checkpoint=app-5" in r.describe() and "tau=60" in r.describe()
    assert g.varying_axes() == ["machine", "rt_percent", "marking", "policy", "checkpoint", "tau", "options"]


@pytest.mark.slow
def test_option_sets_user_classes_and_scheme_backfill(tmp_path, monkeypatch):
    """A list of option tables is one axis of whole option sets; ``package.module:Class`` is a
    policy; a backfill axis reaches a scheme's options; everything runs and is reported."""
    write_swf(tmp_path / "t.swf", procs=2048)
    pkg = tmp_path / "mypolicies.py"
    pkg.write_text("from heuristics.batch import BatchPolicy\nfrom heuristics.priorities import get_priority\n"
                   "class Smallest(BatchPolicy):\n"
                   "    def __init__(self, backfill='none'):\n"
                   "        super().__init__(get_priority('saf'), backfill)\n        self.name = 'smallest'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    grid = tmp_path / "g.toml"
    grid.write_text("""
name = "sets"
[trace]
path = "t.swf"
machine = "mira:4"
[grid]
scheme = ["baseline", "wcjs-jit"]
policy = ["mypolicies:Smallest"]
backfill = ["none", "ff"]
rt_percent = 10
"wcjs-jit" = [{ threshold_estimate = "current" }, { config = "curie" }]
""")
    runs = expand_grid(grid)
    assert len(runs) == (1 + 2 + 1) * 2
    jit = [r.config["scheme_options"] for r in runs if r.config.get("scheme") == "wcjs-jit"]
    assert {"threshold_estimate": "current", "backfill": "ff"} in jit and {"config": "curie", "backfill": "none"} in jit
    out = tmp_path / "out"
    s = run_grid(grid, out_dir=out, jobs=1, progress=False)
    assert (s["completed"], s["failed"]) == (8, [])
    res = load_results(out)
    assert set(res["policy"].dropna()) == {"mypolicies:Smallest"} and set(res["backfill"]) == {"none", "ff"}
    table = report_tables(out)["summary"]
    assert {"scheme", "policy", "backfill", "policy_options"} <= set(table.attrs["axes"])
    assert set(table["group"]) == {"all", "rt", "batch"}  # RTJs present: their own tables
    assert "Real-time jobs" in report(out)
    figs = plot(out, tmp_path / "figs", dpi=30)  # generic figures: a box group per scheme/policy x backfill ...
    from rtsched.experiments import load_job_tables

    # one figure per category that has jobs (no blank figure for an empty one)
    assert {p.stem.rsplit("_", 1)[1] for p in figs} == {"overall"} | set(load_job_tables(out)["category"])
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in figs)


def test_model_files_are_paths_from_the_grid_file_and_hashed_by_content(tmp_path):
    model_dir = tmp_path / "models"
    model_dir.mkdir()
    (model_dir / "m.pt").write_bytes(b"not really a model")
    write_swf(tmp_path / "t.swf")
    grid = tmp_path / "g.toml"
    grid.write_text('name = "m"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["models/m.pt", "fcfs"]\n')
    (run, _) = expand_grid(grid)
    assert run.config["policy"] == "m.pt"  # outside the project and the shared data: the name (content hashed)
    assert run.config["inputs"]["policy"] == pipeline.file_sha256(model_dir / "m.pt")
    assert run.task(tmp_path, True)["policy"] == str((model_dir / "m.pt").resolve())
    (model_dir / "m.pt").write_bytes(b"retrained")
    assert expand_grid(grid)[0].key != run.key  # a retrained model never reuses old results
    (model_dir / "m.pt").unlink()
    with pytest.raises(FileNotFoundError, match="m.pt"):
        expand_grid(grid)


def test_seed002_grid_spellings_keep_their_keys(tmp_path):
    """``schemes`` / ``scheme``, ``seeds`` list / ``seed`` list, tau in [options] or [grid]: the same runs."""
    write_swf(tmp_path / "t.swf", procs=2048)
    head = 'name = "x"\n[trace]\npath = "t.swf"\nmachine = "mira:4"\n'
    a = parse_grid(head + '[grid]\nrt_percent = [10]\nschemes = ["baseline"]\nseeds = [0, 4]\n[options]\ntau = 600\n',
                   tmp_path / "a.toml").expand()
    b = parse_grid(head + '[grid]\nrt_percent = 10\nscheme = "baseline"\nseed = [0, 4]\ntau = 600\n',
                   tmp_path / "b.toml").expand()
    assert [r.key for r in a] == [r.key for r in b]
    assert set(a[0].config) == {"schema", "trace", "machine", "window", "rt_percent", "marking", "aps_path",
                                "marking_options", "seed", "tau", "inputs", "scheme", "scheme_options"}


def test_paths_are_relative_to_the_grid_file_and_old_grids_still_resolve(tmp_path, monkeypatch):
    sub = tmp_path / "study"
    sub.mkdir()
    write_swf(sub / "t.swf")
    (sub / "g.toml").write_text('name = "rel"\nout_dir = "../where"\n[trace]\npath = "t.swf"\n'
                                '[grid]\npolicy = "fcfs"\n')
    monkeypatch.chdir(tmp_path)
    g = load_grid("study/g.toml")
    assert g.default_out_dir() == (tmp_path / "where").resolve()
    assert g.expand()[0].config["trace"]["path"] == "t.swf"  # the name: the content's digest tells files apart
    assert g.expand()[0].task(tmp_path, True)["trace_path"] == str((sub / "t.swf").resolve())
    (sub / "g.toml").write_text('name = "rel"\n[trace]\npath = "t.swf"\n[grid]\npolicy = "fcfs"\n')
    assert load_grid("study/g.toml").default_out_dir() == Path("results") / "rel"  # ./results of the cwd
    # a grid written for the old rule (paths from the repository root) still finds its trace, and says so
    old = sub / "old.toml"
    old.write_text((REPO / "experiments" / "smoke.toml").read_text().replace("../traces/", "traces/"))
    with pytest.warns(FutureWarning, match="relative to the grid file"):
        keys = [r.key for r in expand_grid(old)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert keys == [r.key for r in expand_grid(REPO / "experiments" / "smoke.toml")]


@pytest.mark.parametrize("grid_body, message", [
    ('policy = "fcfs"\nseeds = [-1]', r"seeds.*non-negative integers.*-1"),
    ('policy = "fcfs"\nseeds = [1.5]', r"seeds.*non-negative integers.*1\.5"),
    ('policy = "fcfs"\nseeds = 0', r"seeds.*count >= 1"),
    ('policy = "fcfs"\nseed = true', r"seed.*non-negative integers.*True"),
    ('policy = "fcfs"\nseeds = ["3"]', r"seeds.*non-negative integers.*'3'"),
    ('policy = ["fcfs", "nosuch"]', r"policy.*unknown policy 'nosuch'.*fcfs"),
    ('scheme = ["wcjs-jat"]', r"scheme.*unknown scheme 'wcjs-jat'.*wcjs-jit"),
    ('policy = "fcfs"\nbackfill = ["sometimes"]', r"backfill.*'sometimes'.*easy"),
    ('policy = "fcfs"\ncheckpoint = ["sys:abc"]', r"checkpoint.*'sys:abc'.*jit"),
    ('policy = "fcfs"\ntau = [0]', r"tau.*positive integer"),
    ('policy = "fcfs"\nrt_percent = [120]', r"rt_percent.*120.*\[0, 100\]"),
    ('policy = "fcfs"\nmachine = ["flat:0"]', r"machine.*flat:N"),
    ('policy = "fcfs"\npolcy = 3', r"unknown key 'polcy'.*backfill"),
    ('policy = "fcfs"\nsjf.backfill = ["easy"]', r"sjf.*not an axis.*policy or scheme of the grid"),
    ('policy = ["fcfs", "fcfs"]', r"repeated"),
    ('seeds = 2', r"give the policies"),
])
def test_bad_grid_values_name_the_key_and_the_allowed_values(tmp_path, grid_body, message):
    write_swf(tmp_path / "t.swf")
    with pytest.raises(InputError, match=message):
        parse_grid(f'name = "bad"\n[trace]\npath = "t.swf"\n[grid]\n{grid_body}\n', tmp_path / "bad.toml")


def test_machine_axis_and_trace_machine_exclude_each_other(tmp_path):
    with pytest.raises(InputError, match=r"machine is an axis.*trace 't'"):
        parse_grid('name = "m"\n[trace]\npath = "t.swf"\nmachine = "flat:8"\n[grid]\nmachine = ["flat:4"]\n'
                   'policy = "fcfs"\n', tmp_path / "g.toml")


def test_a_policy_option_the_policy_does_not_take_fails_before_any_run(tmp_path):
    write_swf(tmp_path / "t.swf")
    grid = tmp_path / "g.toml"
    grid.write_text('name = "o"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs"]\nfcfs.alpha = [1, 2]\n')
    with pytest.raises(InputError, match=r"g\.toml.*policy 'fcfs' with options \{'alpha': 1\}.*alpha"):
        run_grid(grid, out_dir=tmp_path / "out", jobs=1, progress=False)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------ failures, corruption
def test_a_grid_whose_runs_all_fail_says_why_without_progress(tmp_path, capsys):
    write_swf(tmp_path / "t.swf", procs=64)
    grid = tmp_path / "g.toml"
    grid.write_text('name = "f"\n[trace]\npath = "t.swf"\nmachine = "flat:8"\n[grid]\npolicy = ["fcfs", "sjf"]\n'
                    "seeds = 3\n")
    assert cli("experiment", "run", grid, "--out", tmp_path / "out", "-j", "1", "--no-progress") == 1
    err = capsys.readouterr().err
    assert "6 run(s) failed" in err
    assert "6 x InputError:" in err and "more than flat-8 (8 nodes) has" in err  # the reason, once, with its count


def test_a_broken_result_is_named_not_counted_done_and_run_again(tmp_path, capsys):
    write_swf(tmp_path / "t.swf")
    grid = tmp_path / "g.toml"
    grid.write_text('name = "c"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs", "sjf", "f1"]\n')
    out = tmp_path / "out"
    run_grid(grid, out_dir=out, jobs=1, progress=False)
    k_table, k_json, k_size = [r.key for r in expand_grid(grid)]
    good = store.table_path(out, k_table).read_bytes()
    store.table_path(out, k_table).write_bytes(good[: len(good) // 2])  # truncated Parquet
    store.summary_path(out, k_json).write_text('{"key": "' + k_json)  # truncated JSON
    bad = bytearray(store.table_path(out, k_size).read_bytes())
    store.table_path(out, k_size).write_bytes(bytes(bad[:-12]) + b"PAR1")  # the magic, another size
    frame = plan(grid, out).set_index("key")
    assert list(frame.loc[[k_table, k_json, k_size], "status"]) == ["corrupt"] * 3
    assert cli("experiment", "status", grid, "--out", out) == 0
    text = capsys.readouterr().out
    assert "corrupt" in text and k_table in text and "done" not in text.split("corrupt:")[0]
    assert len(load_results(out)) == 0
    rep = report(out)
    for k in (k_table, k_json, k_size):
        assert k in rep
    assert "broken result" in rep and "not valid JSON" in rep
    summary = run_grid(grid, out_dir=out, jobs=1, progress=False)
    assert summary["completed"] == 3 and {c["key"] for c in summary["corrupt"]} == {k_table, k_json, k_size}
    assert set(plan(grid, out)["status"]) == {"done"} and len(load_results(out)) == 3
    # a record written before the size and digest were kept still counts when its table is whole
    rec = json.loads(store.summary_path(out, k_table).read_text())
    del rec["table"]
    store.summary_path(out, k_table).write_text(json.dumps(rec))
    assert store.is_finished(out, k_table)
    # the same size and magic but other bytes inside: caught by the recorded SHA-256
    data = bytearray(store.table_path(out, k_size).read_bytes())
    data[100] ^= 0xFF
    store.table_path(out, k_size).write_bytes(bytes(data))
    assert not store.is_finished(out, k_size) and "SHA-256" in store.result_problem(out, k_size)
    assert store.result_problem(out, k_size, deep=False) is None  # the quick check alone misses it
    assert plan(grid, out).set_index("key").loc[k_size, "status"] == "corrupt"
    assert [b["key"] for b in broken_runs(out)] == [k_size]


# ------------------------------------------------------------------------------------ shards, shared folders
def test_shards_cover_the_grid_once(tmp_path):
    write_swf(tmp_path / "t.swf")
    grid = tmp_path / "g.toml"
    grid.write_text('name = "s"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs", "sjf", "f1"]\n'
                    'backfill = ["none", "easy"]\nseeds = 2\n')
    keys = [r.key for r in expand_grid(grid)]
    parts = [[r.key for r in shard_of(expand_grid(grid), (i, 5))] for i in range(5)]
    assert sorted(k for p in parts for k in p) == sorted(keys) and all(len(p) in (2, 3) for p in parts)
    assert parts[1] == keys[1::5]  # deterministic: expansion order
    out = tmp_path / "out"
    done = 0
    for i in range(5):
        s = run_grid(grid, out_dir=out, jobs=1, progress=False, shard=(i, 5))
        assert s["runs"] == len(parts[i]) and s["completed"] == len(parts[i])
        done += s["completed"]
        assert len(summary_frame(out)) == done * 15  # each shard rewrites the folder's summary
    assert done == len(keys) and set(plan(grid, out)["status"]) == {"done"}
    before = (out / store.SUMMARY).read_bytes()
    (out / store.SUMMARY).unlink()
    assert cli("experiment", "report", out) == 0  # report brings a missing or stale summary up to date
    assert (out / store.SUMMARY).read_bytes() == before
    assert parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "-1/4", "1", "a/b", "0/0"):
        with pytest.raises(OptionError, match="--shard"):
            parse_shard(bad)


@pytest.mark.slow
def test_two_processes_sharing_a_folder_run_each_key_once(tmp_path):
    """Two ``rtsched experiment run`` on one folder at once (as two machines would): both finish,
    and between them every run is computed exactly once."""
    write_swf(tmp_path / "t.swf", n=120)
    grid = tmp_path / "g.toml"
    grid.write_text('name = "two"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs", "sjf", "f1", "wfp3"]\n'
                    'backfill = ["none", "easy"]\nseeds = 3\n')  # 24 runs
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "rtsched", "experiment", "run", str(grid), "--out", str(out), "-j", "1", "--json"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(2)]
    summaries = []
    for p in procs:
        stdout, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        summaries.append(json.loads(stdout))
    assert sum(s["completed"] for s in summaries) == 24  # no run computed twice, none left out
    pids = {json.loads(store.summary_path(out, r.key).read_text())["env"]["pid"] for r in expand_grid(grid)}
    assert pids <= {p.pid for p in procs}
    assert not list(store.runs_dir(out).glob("*.lock"))


def test_a_run_held_by_another_process_is_left_to_it(tmp_path):
    write_swf(tmp_path / "t.swf")
    grid = tmp_path / "g.toml"
    grid.write_text('name = "b"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs", "sjf"]\n')
    out = tmp_path / "out"
    store.runs_dir(out).mkdir(parents=True)
    held = expand_grid(grid)[0].key
    lock = store.RunLock(out, held)
    assert lock.acquire()
    try:
        assert plan(grid, out).set_index("key").loc[held, "status"] == "running"
        s = run_grid(grid, out_dir=out, jobs=1, progress=False)
        assert (s["completed"], s["busy"]) == (1, [held]) and not store.is_finished(out, held)
    finally:
        lock.release()
    assert run_grid(grid, out_dir=out, jobs=1, progress=False)["completed"] == 1


# ------------------------------------------------------------------------------------ the command line
def test_cli_option_errors_name_the_option(tmp_path, capsys):
    write_swf(tmp_path / "t.swf")
    grid = tmp_path / "g.toml"
    grid.write_text('name = "e"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs"]\n')
    out = tmp_path / "out"
    assert cli("experiment", "run", grid, "--out", out, "-j", "1", "--no-progress") == 0
    capsys.readouterr()
    for argv, needle in ((("plot", out, "--dpi", "0"), "--dpi: must be in [1, 1,200]"),
                         (("run", grid, "-j", "0"), "--jobs: must be in [1, 1,024]"),
                         (("run", grid, "--backend", "dask"), "--backend: invalid choice: 'dask'")):
        with pytest.raises(SystemExit) as exc:
            cli("experiment", *argv)
        assert exc.value.code == 2 and needle in capsys.readouterr().err
    for argv, needle in ((("plot", out, "--schemes", " , "), "--schemes: no name given"),
                         (("run", grid, "--shard", "2/2"), "--shard: expected I/N"),
                         (("status", grid, "--shard", "x"), "--shard: expected I/N"),
                         (("run", grid, "--address", "auto"), "--address names a Ray cluster")):
        assert cli("experiment", *argv) == 2
        assert needle in capsys.readouterr().err
    assert cli("experiment", "run", grid, "--out", out, "--dry-run", "--shard", "0/1") == 0
    assert "done" in capsys.readouterr().out


def test_cli_backend_choices_match_the_library():
    from rtsched.cli import experiment
    from rtsched.experiments import backends

    assert experiment.BACKENDS == backends.BACKENDS


# ------------------------------------------------------------------------------------ local backend
def _sleep_and_report(task):
    time.sleep(30)
    return {"key": task["key"], "status": "ok", "error": None, "seconds": 30.0}


def test_interrupting_the_local_pool_stops_its_workers_at_once():
    from rtsched.experiments.backends import open_backend

    tasks = [{"key": f"k{i}", "label": "x", "config": {}, "out_dir": "."} for i in range(4)]
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with open_backend("local", _sleep_and_report, jobs=2) as backend:
            backend.submit(tasks)
            workers = list(backend.pool._processes.values())
            time.sleep(0.5)
            raise KeyboardInterrupt
    assert time.monotonic() - t0 < 10  # not the 30 s a worker sleeps
    assert workers and not any(p.is_alive() for p in workers)


def test_ray_backend_without_ray_says_how_to_install_it(monkeypatch):
    from rtsched.experiments.backends import open_backend

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(OptionError, match=r"pip install -e '\.\[ray\]'"):
        open_backend("ray", _sleep_and_report, jobs=1)


def test_the_grid_files_in_the_docs_parse(tmp_path):
    """Every ```toml block of docs/study.md is a valid grid (the keys and values it shows exist)."""
    import re

    blocks = re.findall(r"```toml\n(.*?)```", (REPO / "docs" / "study.md").read_text(), flags=re.S)
    assert len(blocks) >= 2
    for text in blocks:
        if 'path = "lublin_256.swf"' in text:
            g = parse_grid(text, tmp_path / "g.toml")
            assert (g.policies, g.axes["backfill"], g.seeds) == (["fcfs", "sjf", "f1"], ["none", "easy"], [0])
            continue
        g = parse_grid(text, tmp_path / "g.toml")
        assert {"rt_percent", "marking", "backfill", "checkpoint", "tau", "seed"} <= set(g.axes)
        assert set(g.option_axes) == {"wcjs", "wcjs-jit"} and len(g.option_axes["wcjs"]) == 4
        assert g.policy_options == {"wcjs": {"blocking": "backfill"}}


def test_the_10000_run_grid_of_the_scaling_docs_expands_to_10000_runs(tmp_path):
    import re

    (text,) = re.findall(r"```toml\n(.*?)```", (REPO / "docs" / "scaling.md").read_text(), flags=re.S)
    grid = parse_grid(text, tmp_path / "big.toml")
    for i, t in enumerate(grid.traces):
        write_swf(tmp_path / t.path, n=5, seed=i)
    runs = grid.expand()
    assert len(runs) == 10_000 and len({r.key for r in runs}) == 10_000
    parts = [shard_of(runs, (i, 50)) for i in range(50)]
    assert {len(p) for p in parts} == {200}


def test_the_seed002_attributes_of_a_grid_stay_readable_and_settable():
    """Scripts (bench/bench_realtime.py) and the notebook read and narrow a grid by its old names."""
    g = load_grid(REPO / "experiments" / "smoke.toml")
    full = {r.describe(): r.key for r in g.expand()}
    assert (g.rt_percent, g.marking, g.schemes, g.seeds, g.tau) == ([10, 20], ["random"], ["baseline", "wcjs-jit"],
                                                                   [0], 600)
    g.schemes, g.rt_percent = ["wcjs-jit"], [20]
    (run,) = g.expand()
    assert full[run.describe()] == run.key
    g.seeds = [0, 1]
    assert [r.config["seed"] for r in g.expand()] == [0, 1]
