"""`rtsched experiment merge` and `run --no-summary` (issue 26): shards written into separate folders
merge into one study folder with the summary of a single run; folders of other grids are refused;
a shard can leave summary.parquet to report/merge."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_swf

from rtsched import pipeline
from rtsched.cli import main
from rtsched.experiments import expand_grid, run_grid, store


@pytest.fixture(autouse=True)
def fresh_caches():
    pipeline.clear_caches()




def grid_file(tmp_path: Path, name: str = "m", seeds: int = 2) -> Path:
    write_swf(tmp_path / "t.swf")
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs", "sjf"]\nrt_percent = 10\n'
                    f'seeds = {seeds}\n')
    return path


def test_shards_in_separate_folders_merge_into_the_whole_study(tmp_path, capsys):
    grid = grid_file(tmp_path)
    whole = tmp_path / "whole"
    run_grid(grid, out_dir=whole, jobs=1, progress=False)
    shards = [tmp_path / f"shard{i}" for i in range(3)]
    for i, folder in enumerate(shards):
        result = run_grid(grid, out_dir=folder, jobs=1, progress=False, shard=(i, 3), summary=False)
        assert result["completed"] >= 1
        assert not (folder / store.SUMMARY).exists()  # --no-summary: left to merge/report
    merged = tmp_path / "merged"
    assert main(["experiment", "merge", *map(str, shards), "--out", str(merged)]) == 0
    assert "4 run(s) copied" in capsys.readouterr().out
    assert (merged / store.SUMMARY).read_bytes() == (whole / store.SUMMARY).read_bytes()
    for run in expand_grid(grid):
        assert store.table_path(merged, run.key).read_bytes() == store.table_path(whole, run.key).read_bytes()
    # idempotent, and into the first folder by default
    assert main(["experiment", "merge", *map(str, shards)]) == 0
    assert "4 run(s) copied" not in capsys.readouterr().out
    assert (shards[0] / store.SUMMARY).read_bytes() == (whole / store.SUMMARY).read_bytes()


def test_merge_refuses_folders_of_another_grid(tmp_path, capsys):
    a = run_grid(grid_file(tmp_path, "a"), out_dir=tmp_path / "a", jobs=1, progress=False)
    b = run_grid(grid_file(tmp_path, "b", seeds=3), out_dir=tmp_path / "b", jobs=1, progress=False)
    assert a["completed"] == 4 and b["completed"] == 6
    assert main(["experiment", "merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out",
                 str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "grid 'b' (6 runs)" in err[0] and "grid 'a' (4 runs)" in err[0] and str(tmp_path / "b") in err[0]
    assert not (tmp_path / "m").exists()
    assert main(["experiment", "merge", str(tmp_path / "nothing")]) == 1
    assert "nothing: no such folder" in capsys.readouterr().err  # missing is said as missing (issue 26)
    (tmp_path / "empty").mkdir()
    assert main(["experiment", "merge", str(tmp_path / "empty")]) == 1
    assert "not a results folder" in capsys.readouterr().err


def test_cli_run_no_summary_and_report_writes_it(tmp_path, capsys):
    grid = grid_file(tmp_path)
    out = tmp_path / "out"
    assert main(["experiment", "run", str(grid), "--out", str(out), "-j", "1", "--no-progress", "--no-summary"]) == 0
    assert not (out / store.SUMMARY).exists()
    assert main(["experiment", "report", str(out)]) == 0
    assert (out / store.SUMMARY).exists()


# ------------------------------------------------------------------ a full disk (issue 26)
import errno  # noqa: E402

from rtsched import files  # noqa: E402


def _full_disk(monkeypatch, when=lambda path: True):
    real = files.atomic_write

    def atomic_write(path, writer):
        if when(Path(path)):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, writer)

    monkeypatch.setattr(files, "atomic_write", atomic_write)


def test_run_on_a_full_disk_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    grid = grid_file(tmp_path)
    _full_disk(monkeypatch)
    out = tmp_path / "out"
    assert main(["experiment", "run", str(grid), "--out", str(out), "-j", "1", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"rtsched experiment run: error: {out / store.GRID_COPY}: no space left on device (nothing "
                   "half-written is kept; free some space and run the command again)"]


def test_a_disk_that_fills_during_a_run_stops_the_grid_in_one_line(tmp_path, capsys, monkeypatch):
    grid = grid_file(tmp_path)
    _full_disk(monkeypatch, when=lambda path: path.suffix == ".parquet" and path.parent.name == store.RUNS)
    out = tmp_path / "out"
    assert main(["experiment", "run", str(grid), "--out", str(out), "-j", "1", "--no-progress"]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"rtsched experiment run: error: {store.runs_dir(out)}/") and ".parquet: no space left" in last
    assert not list(store.runs_dir(out).glob("*.json"))  # no run recorded as failed, nothing half-written


def test_plot_on_a_full_disk_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    import rtsched.plots

    grid = grid_file(tmp_path)
    run_grid(grid, out_dir=tmp_path / "out", jobs=1, progress=False)
    def full(path, writer):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rtsched.plots, "atomic_write", full)
    assert main(["experiment", "plot", str(tmp_path / "out"), "--out", str(tmp_path / "figs"), "--dpi", "20"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no space left on device" in err[0] and str(tmp_path / "figs") in err[0]
    assert err[0].split(": error: ")[1].split(":")[0].endswith(".png")
