"""The Ray backend: a grid run as Ray tasks on a local Ray instance (started here, on loopback, 2
CPUs) writes the same result store as the local backend, byte for byte in summary.parquet and
the job tables.  Skipped only when the ``ray`` extra is not installed; CI installs it."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]'); "
                                        "the Ray backend test needs it")

from rtsched import pipeline  # noqa: E402
from rtsched.experiments import expand_grid, run_grid, store  # noqa: E402


def write_swf(path: Path, n: int = 50, seed: int = 3, procs: int = 64) -> Path:
    rng = random.Random(seed)
    lines = [f"; MaxProcs: {procs}", "; UnixStartTime: 1516492800"]
    t = 0
    for i in range(1, n + 1):
        t += rng.randint(0, 300)
        run = rng.randint(30, 2400)
        size = rng.choice([1, 4, 16, 32, procs])
        lines.append(f"{i} {t} -1 {run} {size} -1 -1 {size} {run + rng.randint(0, 900)} -1 1 1 1 -1 1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def local_ray():
    """A Ray instance for this module only: 2 CPUs, no dashboard, on the loopback address."""
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=128 * 1024 * 1024,
             _node_ip_address="127.0.0.1", logging_level="WARNING", log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.mark.slow  # starting Ray takes 10-15 s on 2 cores
def test_a_grid_on_ray_gives_the_local_backends_results(local_ray, tmp_path):
    write_swf(tmp_path / "t.swf")
    grid = tmp_path / "g.toml"
    grid.write_text('name = "r"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs", "sjf"]\n'
                    'backfill = ["none", "easy"]\nrt_percent = 10\nseeds = 2\n')
    pipeline.clear_caches()
    local = run_grid(grid, out_dir=tmp_path / "local", jobs=1, progress=False)
    on_ray = run_grid(grid, out_dir=tmp_path / "ray", jobs=2, progress=False, backend="ray")
    assert local["completed"] == on_ray["completed"] == 8 and not on_ray["failed"]
    assert ray.is_initialized()  # the test's instance was used, and left running for its owner
    a, b = (tmp_path / "local" / store.SUMMARY).read_bytes(), (tmp_path / "ray" / store.SUMMARY).read_bytes()
    assert a == b
    for r in expand_grid(grid):
        assert store.table_path(tmp_path / "local", r.key).read_bytes() == \
            store.table_path(tmp_path / "ray", r.key).read_bytes()
    # resumable the same way: nothing left to run
    again = run_grid(grid, out_dir=tmp_path / "ray", jobs=2, progress=False, backend="ray")
    assert (again["skipped"], again["completed"]) == (8, 0)
