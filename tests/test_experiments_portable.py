"""Run keys depend on the input files' content, not where they lie (issue 26): a study folder copied
with its traces to another folder resumes; runs written under the old keys (absolute paths) are
adopted, not recomputed; a changed trace is never adopted."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import write_swf

from rtsched import pipeline
from rtsched.experiments import expand as expand_module, expand_grid, grid as grid_module, run_grid, store


@pytest.fixture(autouse=True)
def fresh_caches():
    pipeline.clear_caches()
    grid_module._DIGESTS.clear()




def make_study(folder: Path) -> Path:
    folder.mkdir(parents=True)
    write_swf(folder / "t.swf")
    (folder / "g.toml").write_text('name = "p"\nout_dir = "results"\n[trace]\npath = "t.swf"\n[grid]\n'
                                   'policy = ["fcfs", "sjf"]\nrt_percent = 10\nseeds = 2\n')
    return folder / "g.toml"


def test_a_study_copied_with_its_trace_resumes_instead_of_recomputing(tmp_path):
    grid = make_study(tmp_path / "a")
    first = run_grid(grid, jobs=1, progress=False)
    assert first["completed"] == 4
    shutil.copytree(tmp_path / "a", tmp_path / "elsewhere" / "b")
    copied = tmp_path / "elsewhere" / "b" / "g.toml"
    again = run_grid(copied, jobs=1, progress=False)
    assert (again["completed"], again["skipped"]) == (0, 4)
    assert {r.key for r in expand_grid(grid)} == {r.key for r in expand_grid(copied)}
    a = pd.read_parquet(tmp_path / "a" / "results" / store.SUMMARY)
    b = pd.read_parquet(tmp_path / "elsewhere" / "b" / "results" / store.SUMMARY)
    pd.testing.assert_frame_equal(a, b)


def test_runs_under_the_old_absolute_path_keys_are_adopted(tmp_path, monkeypatch):
    grid = make_study(tmp_path / "a")
    new_keys = {r.key for r in expand_grid(grid)}
    with monkeypatch.context() as m:  # the rule before 2026-11-27: an absolute path outside the project
        m.setattr(expand_module, "portable_path", lambda path: Path(path).resolve().as_posix())
        old_runs = expand_grid(grid)
        assert run_grid(grid, jobs=1, progress=False)["completed"] == 4
    old_keys = {r.key for r in old_runs}
    assert not old_keys & new_keys
    out = tmp_path / "a" / "results"
    tables = {r.key: store.table_path(out, r.key).read_bytes() for r in old_runs}
    again = run_grid(grid, jobs=1, progress=False)
    assert (again["completed"], again["skipped"]) == (0, 4)
    finished = {p.stem for p in store.runs_dir(out).glob("*.json")}
    assert finished == new_keys  # the old files are gone, each run once
    for run in expand_grid(grid):
        rec = json.loads(store.summary_path(out, run.key).read_text())
        assert rec["key"] == run.key and rec["config"] == run.config
        assert store.table_path(out, run.key).read_bytes() == tables[rec["migrated_from"]["key"]]
    assert set(pd.read_parquet(out / store.SUMMARY)["key"]) == new_keys


def test_a_changed_trace_is_never_adopted(tmp_path, monkeypatch):
    grid = make_study(tmp_path / "a")
    with monkeypatch.context() as m:
        m.setattr(expand_module, "portable_path", lambda path: Path(path).resolve().as_posix())
        assert run_grid(grid, jobs=1, progress=False)["completed"] == 4
    write_swf(tmp_path / "a" / "t.swf", seed=2)  # other content under the same name
    grid_module._DIGESTS.clear()
    pipeline.clear_caches()
    assert run_grid(grid, jobs=1, progress=False)["completed"] == 4
