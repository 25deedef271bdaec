"""`report` warns about seeds that give identical runs and inputs that changed under a finished study,
and lists failures that a later run fixed as fixed (issue 26)."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_swf

from rtsched import pipeline
from rtsched.experiments import grid as grid_module, report, run_grid, store
from rtsched.experiments.checks import folder_checks


@pytest.fixture(autouse=True)
def fresh_caches():
    pipeline.clear_caches()
    grid_module._DIGESTS.clear()




def grid(tmp_path: Path, axes: str) -> Path:
    if not (tmp_path / "t.swf").exists():
        write_swf(tmp_path / "t.swf")
    path = tmp_path / "g.toml"
    path.write_text(f'name = "c"\n[trace]\npath = "t.swf"\n[grid]\n{axes}\n')
    return path


def test_seeds_that_change_nothing_are_named(tmp_path):
    g = grid(tmp_path, 'policy = "fcfs"\nrt_percent = [0, 20]\nseeds = 3')
    out = tmp_path / "out"
    run_grid(g, out_dir=out, jobs=1, progress=False)
    checks = folder_checks(out)
    assert [c["seeds"] for c in checks["identical"]] == [[0, 1, 2]]  # the 0 % runs only: RTJ draws differ at 20 %
    assert "fcfs" in checks["identical"][0]["run"] and "20%" not in checks["identical"][0]["run"]
    text = report(out)
    assert "seeds gave identical runs" in text and "seeds 0, 1, 2" in text


def test_a_trace_changed_under_a_finished_study_is_named(tmp_path):
    g = grid(tmp_path, 'policy = "fcfs"\nrt_percent = 10\nseeds = 2')
    out = tmp_path / "out"
    run_grid(g, out_dir=out, jobs=1, progress=False)
    assert folder_checks(out)["changed"] == []
    write_swf(tmp_path / "t.swf", seed=7)  # the trace regenerated in place
    grid_module._DIGESTS.clear()
    pipeline.clear_caches()
    assert run_grid(g, out_dir=out, jobs=1, progress=False)["completed"] == 2
    changed = folder_checks(out)["changed"]
    assert len(changed) == 1 and changed[0]["versions"] == 2 and len(changed[0]["keys"]) == 4
    assert "finished with different input files" in report(out)


def test_a_failure_a_later_run_fixed_is_listed_as_fixed(tmp_path, monkeypatch):
    g = grid(tmp_path, 'policy = ["fcfs", "sjf"]\nseeds = 1')
    out = tmp_path / "out"
    run_grid(g, out_dir=out, jobs=1, progress=False)
    runs = sorted(p.stem for p in store.runs_dir(out).glob("*.json"))
    # an error file left beside a finished run (a worker reported dead after its run was written),
    # and one of the same configuration on an older version of the trace
    store.atomic_write_json(store.error_path(out, runs[0]), {"key": runs[0], "label": "t", "error": "Boom: first"})
    rec = store.read_json(store.summary_path(out, runs[1]))
    old_config = {**rec["config"], "inputs": {"trace": "0" * 64}}
    store.atomic_write_json(store.error_path(out, "0123456789abcdef"),
                            {"key": "0123456789abcdef", "label": "t", "config": old_config, "error": "Boom: older"})
    store.atomic_write_json(store.error_path(out, "fedcba9876543210"),
                            {"key": "fedcba9876543210", "label": "t", "config": {**old_config, "seed": 5},
                             "error": "Boom: still failing"})
    checks = folder_checks(out)
    assert sorted(e["error"] for e in checks["fixed"]) == ["Boom: first", "Boom: older"]
    assert [e["error"] for e in checks["failed"]] == ["Boom: still failing"]
    text = report(out)
    assert "2 failure(s) fixed by a later run" in text and "1 failed run(s)" in text


# ------------------------------------------------------------------ summary.parquet's layout (issue 26)
SQL_RESERVED = {"group", "window", "order", "select", "from", "where", "table", "user", "end", "range", "rows"}


def test_summary_columns_avoid_sql_words_record_units_and_the_rl_tau(tmp_path):
    import json

    import pyarrow.parquet as pq

    from rtsched.experiments.results import SUMMARY_RENAMES, read_summary, summary_is_stale

    g = grid(tmp_path, 'policy = "fcfs"\nrt_percent = 10\nseeds = 1')
    out = tmp_path / "out"
    run_grid(g, out_dir=out, jobs=1, progress=False)
    path = out / store.SUMMARY
    schema = pq.read_schema(path)
    assert not SQL_RESERVED & set(schema.names)
    assert {"job_group", "results_window", "tau", "tau_rl"} <= set(schema.names)
    units = json.loads(schema.metadata[b"rtsched.units"])
    assert units["mean_wait"] == units["p95_turnaround"] == "s"
    assert units["tau_rl"].startswith("s") and "tau_rl" in units["mean_bsld_rl"]
    frame = read_summary(path)
    assert set(frame["tau_rl"]) == {10} and set(frame["tau"]) == {600}  # the RL papers' τ; seed 002's
    # a summary written before: old names read as today's, and report rewrites it in the new layout
    old = frame.rename(columns={new: old for old, new in SUMMARY_RENAMES.items()}).drop(columns="tau_rl")
    old.to_parquet(path, index=False)
    assert list(read_summary(path).columns) == [c for c in frame.columns if c != "tau_rl"]
    assert summary_is_stale(out)
    from rtsched.cli import main

    assert main(["experiment", "report", str(out)]) == 0
    assert "job_group" in pq.read_schema(path).names and not summary_is_stale(out)
