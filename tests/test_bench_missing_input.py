"""The bench scripts report a missing --trace as ``rtsched`` itself does (bench/benchcli.py): one
line "PROG: error: PATH: --trace: file not found" and the command line's exit status for it (was 1
for bench_inspector and bench_splitwindow, 2 for bench_rl, bench_rl_env and bench_startup)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO

SCRIPTS = ["bench_inspector", "bench_rl", "bench_rl_env", "bench_splitwindow", "bench_startup"]


def _cli_missing_trace(path, capsys) -> tuple[int, str]:
    """What ``rtsched rl train --trace PATH`` returns and prints after its "rtsched rl train: " prefix."""
    from rtsched.cli import main

    status = main(["rl", "train", "--agent", "rlscheduler", "--trace", str(path), "--epochs", "1"])
    err = capsys.readouterr().err
    prefix = "rtsched rl train: "
    assert err.startswith(prefix) and err.count("\n") == 1, err
    return status, err[len(prefix):]


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_a_missing_trace_is_reported_as_the_command_line_does(script, tmp_path, capsys):
    missing = tmp_path / "no-such-trace.swf"
    status, message = _cli_missing_trace(missing, capsys)
    assert status == 1 and message == f"error: {missing}: --trace: file not found\n"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / f"{script}.py"), "--trace", str(missing)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert (proc.returncode, proc.stderr) == (status, f"{script}: {message}")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_bench_tables_label_each_policy_by_the_shortest_path_tail_no_other_shares(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    from benchcli import unique_labels

    names = ["runs/a/round-3.pt", "training/b/round-3.pt", "training/b/round-4.pt", "wcjs-jit",
             "wcjs-jit:priority=sjf,backfill=sjf", "wcjs-jit:priority=sjf"]
    assert unique_labels(names) == {
        "runs/a/round-3.pt": "a/round-3.pt", "training/b/round-3.pt": "b/round-3.pt",
        "training/b/round-4.pt": "round-4.pt", "wcjs-jit": "wcjs-jit",
        "wcjs-jit:priority=sjf,backfill=sjf": "wcjs-jit:priority=sjf,backfill=sjf",
        "wcjs-jit:priority=sjf": "wcjs-jit:priority=sjf"}
    # the same tail under two roots: the whole path
    assert unique_labels(["x/m.pt", "y/x/m.pt"]) == {"x/m.pt": "x/m.pt", "y/x/m.pt": "y/x/m.pt"}
