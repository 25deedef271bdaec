"""Run a grid: parallel local processes, one result file per run, resumable, errors recorded.

``run_grid`` expands the grid, skips every run whose summary already exists (resume), and runs the
rest in a ``ProcessPoolExecutor`` of ``jobs`` workers (``jobs <= 1``: in this process), with a rich
progress bar.  Each run goes through the one run pipeline (``rtsched.pipeline``: trace and machine
cached per worker process, RTJ marking, the scheme's policy and checkpoint model from the
heuristics registry, the one event core, the independent validator, the one metrics module).  A run that raises leaves ``runs/KEY.error.json`` with the
traceback and is reported at the end; the other runs go on.  The next ``run_grid`` retries it.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import platform
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from heuristics.registry import SCHEMES
from rtsched.version import __version__
from rtsched.errors import InputError
from rtsched.experiments import store
from rtsched.experiments.grid import Grid, GridRun, load_grid
from rtsched.pipeline import RunSpec, load_machine, load_trace, machine_spec_for
from rtsched.pipeline import execute as run_pipeline
from rtsched.window import WindowSpec


# ------------------------------------------------------------------------------------ one run
def spec_of(task: dict) -> RunSpec:
    """The pipeline's ``RunSpec`` of a grid task (its configuration with resolved paths)."""
    cfg = task["config"]
    first_n = cfg["trace"]["first_n"]
    return RunSpec(trace=task["trace_path"], trace_format=cfg["trace"]["format"],
                   reader_options={"first_n": first_n} if first_n else {}, rt_percent=cfg["rt_percent"],
                   marking=cfg["marking"], marking_options=cfg.get("marking_options", {}),
                   aps_path=task.get("aps_path"), seed=cfg["seed"], machine=task["machine"], scheme=cfg["scheme"],
                   policy_options=cfg["scheme_options"], window=WindowSpec.from_dict(cfg["window"]), tau=cfg["tau"],
                   validate=bool(task.get("validate", True)))


def execute(task: dict) -> tuple[dict, Any]:
    """Compute one run through the run pipeline: (summary record, job table DataFrame).  Writes nothing."""
    cfg = task["config"]
    rec = run_pipeline(spec_of(task))
    summary = rec.summary
    t = time.perf_counter()
    table = rec.job_table()
    timings = dict(rec.timings)
    timings["metrics_s"] += time.perf_counter() - t
    record = {
        "key": task["key"],
        "label": task["label"],
        "config": cfg,
        "resolved": {
            "trace_path": task["trace_path"],
            "trace_sha256": rec.provenance["trace_sha256"],
            "machine": task["machine"],
            "machine_name": rec.machine.name,
            "aps_path": task.get("aps_path"),
            "workload_start_time": rec.workload.start_time,
            "window_s": list(rec.window) if rec.window else None,
            "jobs": rec.provenance["jobs"],
            "rt_jobs": rec.provenance["rt_jobs"],
            "batch_jobs": rec.provenance["batch_jobs"],
            "jobs_in_table": int(len(table)),
            "policy": rec.policy_name,
            "checkpoint": rec.checkpoint.label,
            "validated": rec.spec.validate,
        },
        "metrics": summary,
        "timings": timings,
        "env": {"python": platform.python_version(), "rtsched": __version__, "pid": os.getpid(),
                "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")},
    }
    return record, table


def run_task(task: dict) -> dict:
    """Run one task and write its files (worker entry point).  Never raises for a failed run:
    returns ``{"key", "status": "ok" | "error", "error", "seconds"}``."""
    out = Path(task["out_dir"])
    key = task["key"]
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        record, table = execute(task)
        record["timings"]["total_s"] = time.perf_counter() - t0
        # CPU seconds of this process: the run's cost even when other processes share the cores
        record["timings"]["cpu_s"] = time.process_time() - cpu0
        store.atomic_write_parquet(store.table_path(out, key), table)
        store.atomic_write_json(store.summary_path(out, key), record)  # last: marks the run finished
        try:
            store.error_path(out, key).unlink()
        except FileNotFoundError:
            pass
        return {"key": key, "status": "ok", "error": None, "seconds": time.perf_counter() - t0}
    except Exception as exc:  # recorded and reported, never swallowed
        message = f"{type(exc).__name__}: {exc}"
        try:
            store.atomic_write_json(store.error_path(out, key), {
                "key": key, "label": task.get("label"), "config": task.get("config"), "error": message,
                "traceback": traceback.format_exc(),
                "time": datetime.now(timezone.utc).isoformat(timespec="seconds")})
        except Exception as exc2:  # pragma: no cover - disk full etc.
            message += f" (and the error file could not be written: {exc2})"
        return {"key": key, "status": "error", "error": message, "seconds": time.perf_counter() - t0}


# ------------------------------------------------------------------------------------ the grid
def plan(grid: Grid | str | os.PathLike, out_dir: str | os.PathLike | None = None):
    """The runs of a grid and their state in ``out_dir``: a DataFrame with key, label, rt_percent,
    marking, scheme, seed and status (``done`` / ``failed`` / ``pending``)."""
    import pandas as pd

    g = grid if isinstance(grid, Grid) else load_grid(grid)
    out = Path(out_dir) if out_dir else g.default_out_dir()
    rows = []
    for r in g.expand():
        status = "done" if store.is_finished(out, r.key) else \
            "failed" if store.error_path(out, r.key).exists() else "pending"
        c = r.config
        rows.append({"key": r.key, "trace": r.label, "rt_percent": c["rt_percent"], "marking": c["marking"],
                     "scheme": c["scheme"], "seed": c["seed"], "status": status})
    return pd.DataFrame(rows)


def _check_schemes(grid: Grid) -> None:
    """Fail before launching anything if a scheme name is unknown to the registry."""
    bad = [name for name in grid.schemes if name not in SCHEMES]
    if bad:
        raise InputError(f"unknown scheme(s) {bad}; known: {sorted(SCHEMES)}", path=str(grid.source or grid.name))


def _write_manifest(out: Path, grid: Grid, runs: list[GridRun]) -> None:
    if grid.text:
        store.atomic_write_bytes(out / store.GRID_COPY, grid.text.encode("utf-8"))
    store.atomic_write_json(out / store.MANIFEST, {
        "grid": grid.name, "description": grid.description,
        "source": str(grid.source) if grid.source else None, "report": grid.report,
        "runs": [{"key": r.key, "label": r.label, "config": r.config} for r in runs]})


def _preload(tasks: list[dict]) -> None:
    """Read each distinct trace and machine once in the parent, so forked workers inherit them."""
    for task in tasks:
        spec = spec_of(task)
        trace = load_trace(spec)
        load_machine(machine_spec_for(spec, trace))


def run_grid(grid_path: str | os.PathLike | Grid, out_dir: str | os.PathLike | None = None, jobs: int = 2,
             progress: bool = True, *, only=None, console=None) -> dict:
    """Run every unfinished run of a grid; return a summary.

    Args:
        grid_path: the grid TOML file (or a parsed ``Grid``).
        out_dir: results folder (default: the grid's ``out_dir``, else ``results/<name>``).
        jobs: worker processes (``<= 1``: run in this process, one after another).
        progress: show a rich progress bar and a final report on the console.
        only: run only these run keys (a subset of the grid; the others are left as they are).

    Returns:
        ``{"grid", "out_dir", "runs", "skipped", "completed", "failed": [{"key", "label", "error"}],
        "seconds"}``; ``skipped`` counts runs already finished before this call.
    """
    from rich.console import Console

    grid = grid_path if isinstance(grid_path, Grid) else load_grid(grid_path)
    out = Path(out_dir) if out_dir else grid.default_out_dir()
    console = console or Console(stderr=True, quiet=not progress)
    t_start = time.perf_counter()
    runs = grid.expand()
    _check_schemes(grid)
    out.mkdir(parents=True, exist_ok=True)
    store.runs_dir(out).mkdir(exist_ok=True)
    with store.DirectoryLock(out):
        store.clean_temporaries(out)
        _write_manifest(out, grid, runs)
        selected = runs if only is None else [r for r in runs if r.key in set(only)]
        pending = [r for r in selected if not store.is_finished(out, r.key)]
        skipped = len(selected) - len(pending)
        tasks = [r.task(out, grid.validate) for r in pending]
        by_key = {r.key: r for r in pending}
        console.print(f"[bold]{grid.name}[/]: {len(selected)} runs, {skipped} already finished, "
                      f"{len(pending)} to run on {max(1, jobs)} worker(s) -> {out}")
        results: list[dict] = []
        if tasks:
            results = _execute_all(tasks, jobs, progress, console, by_key)
    failed = [{"key": r["key"], "label": by_key[r["key"]].describe(), "error": r["error"]}
              for r in results if r["status"] != "ok"]
    completed = sum(1 for r in results if r["status"] == "ok")
    summary = {"grid": grid.name, "out_dir": str(out), "runs": len(selected), "skipped": skipped,
               "completed": completed, "failed": failed, "seconds": time.perf_counter() - t_start}
    if failed:
        console.print(f"[bold red]{len(failed)} run(s) failed[/] (details in {store.runs_dir(out)}/KEY.error.json):")
        for f in failed[:20]:
            console.print(f"  {f['key']}  {f['label']}: {f['error'].splitlines()[0] if f['error'] else ''}")
        if len(failed) > 20:
            console.print(f"  ... and {len(failed) - 20} more")
    console.print(f"{grid.name}: {completed} completed, {skipped} skipped, {len(failed)} failed "
                  f"in {summary['seconds']:.1f} s")
    return summary


def _execute_all(tasks: list[dict], jobs: int, progress: bool, console, by_key: dict) -> list[dict]:
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    results: list[dict] = []
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[failed]}"),
                   console=console, disable=not progress, transient=False)
    n_failed = 0

    def note(res: dict, tid) -> None:
        nonlocal n_failed
        results.append(res)
        if res["status"] != "ok":
            n_failed += 1
        bar.update(tid, advance=1, failed=f"[red]{n_failed} failed[/]" if n_failed else "")

    if jobs <= 1:
        with bar:
            tid = bar.add_task("runs", total=len(tasks), failed="")
            for task in tasks:
                bar.update(tid, description=by_key[task["key"]].describe())
                note(run_task(task), tid)
        return results
    import multiprocessing as mp

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    if ctx is not None:
        try:
            _preload(tasks)
        except Exception:  # noqa: BLE001 - each run will load (and report) for itself
            pass
    pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
    futures: dict[cf.Future, dict] = {}
    try:
        for task in tasks:  # submit everything before the progress thread starts (fork safety)
            futures[pool.submit(run_task, task)] = task
        with bar:
            tid = bar.add_task(f"{len(tasks)} runs", total=len(tasks), failed="")
            for fut in cf.as_completed(futures):
                task = futures[fut]
                try:
                    res = fut.result()
                except Exception as exc:  # a worker died (BrokenProcessPool, ...): record it
                    res = {"key": task["key"], "status": "error", "error": f"{type(exc).__name__}: {exc}",
                           "seconds": 0.0}
                    try:
                        store.atomic_write_json(store.error_path(Path(task["out_dir"]), task["key"]), {
                            "key": task["key"], "label": task["label"], "config": task["config"],
                            "error": res["error"], "traceback": traceback.format_exc()})
                    except Exception:  # pragma: no cover
                        pass
                note(res, tid)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        console.print("[yellow]interrupted[/]: finished runs are kept; run the grid again to resume")
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results


def clear_failed(out_dir: str | os.PathLike) -> int:
    """Remove the error files of a results folder; returns how many."""
    n = 0
    for p in store.runs_dir(Path(out_dir)).glob("*.error.json"):
        p.unlink()
        n += 1
    return n


__all__ = ["run_grid", "plan", "execute", "run_task", "clear_failed", "spec_of"]

