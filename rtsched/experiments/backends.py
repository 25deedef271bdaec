"""Where a grid's runs execute: in this process, in local worker processes, or as Ray tasks.

Every backend runs the same worker entry point (``rtsched.experiments.runner.run_task``), which
takes the run's lock, runs it through the one run pipeline and writes its files atomically; a
backend only decides where that call happens and hands back its small result dicts as they come.
So the result store, the resume rule and the numbers are the same whichever backend ran a grid.

    with open_backend("local", jobs=2) as backend:      # or "ray" (address=None: a local instance)
        backend.submit(tasks)                           # start everything (forks happen here)
        for result in backend.results():                # as runs finish
            ...

On an interrupt (Ctrl-C; SIGTERM, which ``rtsched``'s command line turns into one) the context
manager stops the work at once: local workers are terminated (they hold nothing but their runs'
locks, which the OS releases) and pending Ray tasks are cancelled.  Local workers also die with
their parent if it is killed outright (SIGKILL): Linux's parent-death signal, elsewhere a watchdog
thread, so no orphan keeps computing (and holding run locks) after a killed ``experiment run``.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import threading
import time
import traceback
from pathlib import Path
from typing import Callable, Iterator

from rtsched.cluster import RAY_MISSING, join_ray  # noqa: F401 - RAY_MISSING: the CLI reads it here
from rtsched.errors import OptionError
from rtsched.experiments import store

BACKENDS = ("local", "ray")


def _error_result(task: dict, exc: BaseException) -> dict:
    """The result of a task whose worker died (or whose Ray task failed): recorded like a failed run."""
    message = f"{type(exc).__name__}: {exc}"
    try:
        store.atomic_write_json(store.error_path(Path(task["out_dir"]), task["key"]), {
            "key": task["key"], "label": task["label"], "config": task["config"], "error": message,
            "traceback": "".join(traceback.format_exception(exc))})
    except Exception:  # pragma: no cover - the folder is gone or full
        pass
    return {"key": task["key"], "status": "error", "error": message, "seconds": 0.0}


# ------------------------------------------------------------------------------------ local
def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user (a reused pid): treat as alive
        return True
    return True


def _die_with_parent(main: int) -> None:
    """Make this worker end when the ``experiment run`` process ``main`` dies, even by SIGKILL.

    Linux: the parent-death signal, armed on the worker's parent -- ``main`` itself (fork, spawn)
    or the fork server, which exits when ``main`` does; elsewhere a thread polls ``main``."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl")
    except (OSError, AttributeError):  # not Linux: poll for the main process instead
        def watch() -> None:
            while _alive(main):
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, name="rtsched-parent-watch", daemon=True).start()
    if not _alive(main) or os.getppid() == 1:  # the main process died before the signal was armed
        os._exit(1)


def _worker_init(main: int) -> None:
    """Pool worker set-up: Ctrl-C is the parent's to handle (it stops the workers); SIGTERM ends a
    worker at once (its run's lock is released by the OS, its temporary file removed by the next
    holder); the worker dies with the main process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent(main)


# Modules whose presence makes fork unsafe: torch's OpenMP runtime (libgomp) keeps a thread pool
# once the parent has run a parallel operation (loading a model to check a grid does), and a forked
# child that enters a parallel region waits forever for threads that did not come with it.
FORK_UNSAFE_MODULES = ("torch",)
# What a fork server imports once, so each worker it forks starts with the run pipeline loaded.
FORKSERVER_PRELOAD = ["rtsched.experiments.runner"]


def start_method() -> str:
    """How local workers start: ``fork`` (they inherit the parent's preloaded traces and machines)
    unless the parent has loaded a module that makes forking unsafe (``FORK_UNSAFE_MODULES``),
    then ``forkserver`` (workers fork from a fresh, single-threaded server process); ``spawn``
    where neither exists.  docs/benchmarks.md ("Grid worker start") measures the three."""
    import multiprocessing as mp
    import sys

    methods = mp.get_all_start_methods()
    if "fork" in methods and not any(m in sys.modules for m in FORK_UNSAFE_MODULES):
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


class LocalBackend:
    """``jobs <= 1``: runs in this process, one after another; else a pool of ``jobs`` worker
    processes started by ``method`` (default ``start_method()``: fork where safe, and then the
    traces and machines preloaded by ``preload`` are inherited; else a fork server)."""

    def __init__(self, run: Callable[[dict], dict], jobs: int, preload: Callable[[list[dict]], None] | None = None,
                 method: str | None = None):
        self.run = run
        self.jobs = max(1, int(jobs))
        self.preload = preload
        self.method = method
        self.pool: cf.ProcessPoolExecutor | None = None
        self.futures: dict[cf.Future, dict] = {}
        self.tasks: list[dict] = []

    def submit(self, tasks: list[dict]) -> None:
        self.tasks = list(tasks)
        if self.jobs <= 1 or not self.tasks:
            return
        import multiprocessing as mp

        method = self.method or start_method()
        ctx = mp.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(FORKSERVER_PRELOAD)
        if method == "fork" and self.preload is not None:
            try:
                self.preload(self.tasks)
            except Exception:  # noqa: BLE001 - each run will load (and report) for itself
                pass
        self.pool = cf.ProcessPoolExecutor(max_workers=self.jobs, mp_context=ctx, initializer=_worker_init,
                                           initargs=(os.getpid(),))
        # every task is submitted (and so every worker forked) before the caller starts threads
        self.futures = {self.pool.submit(self.run, task): task for task in self.tasks}

    def results(self) -> Iterator[dict]:
        if self.pool is None:
            for task in self.tasks:
                yield self.run(task)
            return
        for fut in cf.as_completed(self.futures):
            task = self.futures[fut]
            try:
                yield fut.result()
            except Exception as exc:  # a worker died (BrokenProcessPool, ...): recorded as that run's error
                yield _error_result(task, exc)

    def abort(self) -> None:
        """Stop at once: terminate the workers (SIGTERM ends them, see ``_worker_init``)."""
        if self.pool is None:
            return
        processes = list((getattr(self.pool, "_processes", None) or {}).values())
        for p in processes:
            try:
                p.terminate()
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.pool.shutdown(wait=True, cancel_futures=True)
        for p in processes:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
        self.pool = None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def describe(self) -> str:
        return f"{self.jobs} local worker process(es)" if self.jobs > 1 else "this process"


# ------------------------------------------------------------------------------------ ray
class RayBackend:
    """Each run a Ray task (one CPU).  ``address``: an existing cluster (``auto`` or HOST:PORT);
    None: this session's Ray if one is initialised, else ``$RAY_ADDRESS``'s cluster or the one
    started on this node, else a local instance of ``jobs`` CPUs (``rtsched.cluster.join_ray``).  The
    results folder must be visible at the same path on every node (a shared file system)."""

    def __init__(self, run: Callable[[dict], dict], jobs: int, address: str | None = None):
        self.ray, self.started, self.where = join_ray(address, jobs)
        self.run = run
        self.refs: dict = {}
        self.jobs = jobs
        self.address = address

    def submit(self, tasks: list[dict]) -> None:
        remote = self.ray.remote(num_cpus=1)(self.run)
        self.refs = {remote.remote(task): task for task in tasks}

    def results(self) -> Iterator[dict]:
        pending = list(self.refs)
        while pending:
            done, pending = self.ray.wait(pending, num_returns=len(pending), timeout=0.2)
            for ref in done:
                task = self.refs.pop(ref)
                try:
                    yield self.ray.get(ref)
                except Exception as exc:  # the task's worker or node died (after Ray's retries)
                    yield _error_result(task, exc)

    def abort(self) -> None:
        if self.started:
            # Our own local instance: shutting it down stops every task.  Force-cancelling hundreds of
            # refs first races with tasks finishing meanwhile, and Ray's core worker then fails a
            # check ("Tried to complete task that was not pending") and ends the process with exit 1
            # instead of the interruption's 130 (seen once in CI, 2026-11-28).
            self.refs.clear()
            self.close()
            return
        for ref in list(self.refs):
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - finished meanwhile
                pass
        self.refs.clear()
        self.close()

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False

    def describe(self) -> str:
        return f"Ray ({self.where}, {int(self.ray.cluster_resources().get('CPU', 0))} CPUs)"


class open_backend:
    """Context manager: the backend named ``name`` (``BACKENDS``); aborts it on an exception
    (KeyboardInterrupt included), closes it otherwise."""

    def __init__(self, name: str, run: Callable[[dict], dict], *, jobs: int = 1, address: str | None = None,
                 preload: Callable[[list[dict]], None] | None = None) -> None:
        if name not in BACKENDS:
            raise OptionError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
        if address and name != "ray":
            raise OptionError("--address names a Ray cluster: use it with --backend ray")
        self.backend = (LocalBackend(run, jobs, preload) if name == "local" else RayBackend(run, jobs, address))

    def __enter__(self):
        return self.backend

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.backend.abort()
        else:
            self.backend.close()


__all__ = ["BACKENDS", "FORK_UNSAFE_MODULES", "LocalBackend", "RayBackend", "open_backend", "start_method"]
