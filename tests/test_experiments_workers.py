"""Local grid workers start safely whatever the parent has loaded (issue 26): a parent that built a
trained model to check the grid has torch's OpenMP thread pool running, and a forked worker would
wait forever inside libgomp; such a parent starts its workers from a fork server."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtsched.experiments import backends, store

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "rtsched" / "rl" / "pretrained" / "table5" / "rl-lublin-1-none.pt"


def test_fork_is_kept_unless_a_fork_unsafe_module_is_loaded(monkeypatch):
    import multiprocessing as mp

    for name in backends.FORK_UNSAFE_MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert backends.start_method() == ("fork" if "fork" in mp.get_all_start_methods() else "forkserver")
    monkeypatch.setitem(sys.modules, "torch", sys)  # any module object: only its presence counts
    assert backends.start_method() in ("forkserver", "spawn")


@pytest.mark.slow  # two worker processes load and run a model: 10-60 s on 2 busy cores
def test_a_model_grid_runs_with_two_workers(tmp_path):
    grid = tmp_path / "model.toml"
    grid.write_text(f'name = "model"\n[[traces]]\nname = "sample"\npath = "{REPO}/traces/lublin_256_sample.swf"\n'
                    f'machine = "flat:256"\nfirst_n = 48\n[grid]\npolicy = ["fcfs", "{MODEL}"]\nseeds = 2\n')
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OMP_NUM_THREADS", None)  # the hang needed OpenMP's thread pool: keep it
    try:  # a hang fails the test (generous limit for loaded CI cores) instead of hanging the suite
        proc = subprocess.run([sys.executable, "-m", "rtsched", "experiment", "run", str(grid), "--out", str(out),
                               "-j", "2", "--no-progress"], env=env, capture_output=True, text=True, timeout=300,
                              start_new_session=True)
    except subprocess.TimeoutExpired:
        pytest.fail("a model grid with -j 2 did not finish in 300 s (workers stuck after fork?)")
    assert proc.returncode == 0, proc.stderr
    assert "4 completed" in proc.stderr
    finished = [p for p in store.runs_dir(out).glob("*.json") if not p.name.endswith(".error.json")]
    assert len(finished) == 4
