"""The Ray backend: a grid run as Ray tasks on a local Ray instance (started here, on loopback, 2
CPUs) writes the same result store as the local backend, byte for byte in summary.parquet and
the job tables.  Skipped only when the ``ray`` extra is not installed; CI installs it."""
from __future__ import annotations

from pathlib import Path

import pytest

import conftest

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]'); "
                                        "the Ray backend test needs it")

from rtsched import pipeline  # noqa: E402
from rtsched.experiments import expand_grid, run_grid, store  # noqa: E402


def write_swf(path: Path, n: int = 50, seed: int = 3, procs: int = 64) -> Path:
    return conftest.write_swf(path, n=n, seed=seed, procs=procs)


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


# ------------------------------------------------------------------ reaching a cluster (issue 26)
import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from rtsched import cluster  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(args: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtsched", "experiment", "run", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=REPO)


@pytest.mark.parametrize("how", ["option", "RAY_ADDRESS"])
def test_an_address_with_no_cluster_gives_up_with_one_line(tmp_path, how):
    write_swf(tmp_path / "t.swf", n=10)
    grid = tmp_path / "g.toml"
    grid.write_text('name = "r"\n[trace]\npath = "t.swf"\n[grid]\npolicy = "fcfs"\n')
    address = f"127.0.0.1:{_unused_port()}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [str(grid), "--out", str(tmp_path / "out"), "--backend", "ray", "--no-progress"]
    if how == "option":
        args += ["--address", address]
    else:
        env["RAY_ADDRESS"] = address
    # Ray alone retries for many minutes: the limit here is far above CONNECT_TIMEOUT_S (10 s)
    proc = _cli(args, env, timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot reach the Ray cluster at {address}" in lines[0], proc.stderr
    assert "connection refused" in lines[0] and ("RAY_ADDRESS" in lines[0]) == (how == "RAY_ADDRESS")
    assert not (tmp_path / "out").exists()  # nothing touched


@pytest.mark.parametrize("server", ["silent", "http"])
def test_an_address_that_is_not_a_ray_head_gives_up_with_one_line(tmp_path, server):
    """A port that accepts connections but is not a Ray head (issue 26: Ray retried for minutes,
    still retrying after 400 s): given up after at most CONNECT_TIMEOUT_S, with one line."""
    import threading

    write_swf(tmp_path / "t.swf", n=10)
    grid = tmp_path / "g.toml"
    grid.write_text('name = "r"\n[trace]\npath = "t.swf"\n[grid]\npolicy = "fcfs"\n')
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # "silent": the kernel accepts the connection, nobody ever answers
        if server == "http":  # a web server's answer to anything it does not understand
            def answer():
                while True:
                    try:
                        conn, _ = listener.accept()
                    except OSError:
                        return
                    with conn:
                        conn.recv(1024)
                        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

            threading.Thread(target=answer, daemon=True).start()
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("RAY_ADDRESS", None)
        proc = _cli([str(grid), "--out", str(tmp_path / "out"), "--backend", "ray", "--no-progress", "--address",
                     address], env, timeout=120)  # s: Ray alone retries for many minutes
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{address} (--address {address}) is not a Ray cluster's head" in lines[0], proc.stderr
    says = (f"it accepts connections but gave no answer within {cluster.CONNECT_TIMEOUT_S:g} s" if server == "silent"
            else "it answers, but not as a Ray head does (gRPC)")
    assert says in lines[0] and "ray start --head" in lines[0]
    assert not (tmp_path / "out").exists()  # nothing touched


def test_the_cluster_to_join_follows_rays_rule(monkeypatch):
    import ray._private.services as services

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(services, "canonicalize_bootstrap_address", lambda addr, temp_dir=None: None)
    assert cluster.cluster_address(None) == (None, "a local Ray instance")
    with pytest.raises(cluster.RtschedError, match="no Ray cluster runs on this node"):
        cluster.cluster_address("auto")
    # a cluster started with `ray start` on this node
    monkeypatch.setattr(services, "canonicalize_bootstrap_address", lambda addr, temp_dir=None: "10.1.2.3:6379")
    assert cluster.cluster_address(None)[0] == cluster.cluster_address("auto")[0] == "10.1.2.3:6379"
    monkeypatch.setenv("RAY_ADDRESS", "10.9.9.9:6380")  # the environment wins over the node's cluster
    assert cluster.cluster_address(None) == ("10.9.9.9:6380", "RAY_ADDRESS=10.9.9.9:6380")
    assert cluster.cluster_address("10.0.0.1:1")[0] == "10.0.0.1:1"  # and --address over both


@pytest.mark.slow  # joins the module's Ray instance from a second process
def test_ray_address_joins_a_running_cluster(local_ray, tmp_path):
    write_swf(tmp_path / "t.swf", n=20)
    grid = tmp_path / "g.toml"
    grid.write_text('name = "r"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs", "sjf"]\nseeds = 1\n')
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_ADDRESS": local_ray.get_runtime_context().gcs_address}
    proc = _cli([str(grid), "--out", str(tmp_path / "out"), "--backend", "ray", "-j", "2", "--no-progress"], env,
                timeout=300)
    assert proc.returncode == 0, proc.stderr  # was: "num_cpus must not be provided"
    assert "2 completed" in proc.stderr and "from RAY_ADDRESS" in proc.stderr


@pytest.mark.slow  # starts a Ray instance of its own (10-20 s on 2 busy cores)
def test_sigterm_ends_a_ray_run_like_the_local_backend(tmp_path):
    write_swf(tmp_path / "t.swf", n=50)
    grid = tmp_path / "g.toml"
    grid.write_text('name = "r"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs", "sjf"]\nrt_percent = 10\n'
                    'seeds = 200\n')
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen([sys.executable, "-m", "rtsched", "experiment", "run", str(grid), "--out",
                             str(tmp_path / "out"), "--backend", "ray", "-j", "2"], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not list((tmp_path / "out" / "runs").glob("*.parquet")) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "rtsched experiment run: interrupted"
    assert "Traceback" not in err and "SIGTERM" not in err
