"""Run a grid: one result file per run, resumable, shareable between processes and machines.

``run_grid`` expands the grid, checks every policy/scheme and its options once, skips every run
whose result is already there and whole (resume; a broken result is named and run again), and
hands the rest to a backend (``rtsched.experiments.backends``: this process, local worker
processes, or Ray tasks).  Each run goes through the one run pipeline (``rtsched.pipeline``:
trace and machine cached per worker process, RTJ marking, the policy and checkpoint model from
the heuristics registry, the one event core, the independent validator, the one metrics module)
inside ``run_task``, which holds the run's lock (``store.RunLock``) while it computes and writes.
A run that raises leaves ``runs/KEY.error.json`` with the traceback and is reported at the end;
the other runs go on; the next ``run_grid`` retries it.  At the end the folder's
``summary.parquet`` is rebuilt from every finished run.

``shard=(I, N)`` runs only runs I, I+N, I+2N, ... of the grid (in expansion order): N processes
or Slurm array tasks with I = 0..N-1 cover the grid exactly once between them.
"""
from __future__ import annotations

import os
import platform
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rtsched.errors import InputError, OptionError
from rtsched.experiments import store
from rtsched.experiments.backends import open_backend
from rtsched.experiments.grid import Grid, GridRun, canonical_json, file_digest, load_grid
from rtsched.experiments.migrate import adopt_moved_runs
from rtsched.pipeline import RunSpec, build_policy, load_machine, load_trace, machine_spec_for
from rtsched.pipeline import execute as run_pipeline
from rtsched.version import __version__
from rtsched.window import WindowSpec


# ------------------------------------------------------------------------------------ one run
def spec_of(task: dict) -> RunSpec:
    """The pipeline's ``RunSpec`` of a grid task (its configuration with resolved paths)."""
    cfg = task["config"]
    first_n = cfg["trace"]["first_n"]
    scheme = cfg.get("scheme")
    policy = task.get("policy") or cfg.get("policy") or RunSpec.policy
    options = cfg.get("scheme_options" if scheme is not None else "policy_options") or {}
    return RunSpec(trace=task["trace_path"], trace_format=cfg["trace"]["format"],
                   reader_options={"first_n": first_n} if first_n else {}, rt_percent=cfg["rt_percent"],
                   marking=cfg["marking"], marking_options=cfg.get("marking_options", {}),
                   aps_path=task.get("aps_path"), seed=cfg["seed"], machine=task["machine"], scheme=scheme,
                   policy=policy, policy_options=options, checkpoint=cfg.get("checkpoint"),
                   window=WindowSpec.from_dict(cfg["window"]), tau=cfg["tau"],
                   validate=bool(task.get("validate", True)))


def execute(task: dict) -> tuple[dict, Any]:
    """Compute one run through the run pipeline: (its record, job table DataFrame).  Writes nothing."""
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
        "provenance": rec.provenance,
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
                "host": platform.node(), "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")},
    }
    return record, table


def run_task(task: dict) -> dict:
    """Run one task and write its files (the worker entry point of every backend).

    Holds the run's lock while it works: when another process holds it, returns at once with
    status ``busy``; when the run turns out finished meanwhile, ``skipped``.  Never raises for a
    failed run: returns ``{"key", "status": "ok" | "error" | "busy" | "skipped", "error", "seconds"}``.
    """
    out = Path(task["out_dir"])
    key = task["key"]
    t0, cpu0 = time.perf_counter(), time.process_time()
    lock = store.RunLock(out, key)
    if not lock.acquire():
        return {"key": key, "status": "busy", "error": None, "seconds": 0.0}
    try:
        problem = store.result_problem(out, key)
        if problem is None:
            return {"key": key, "status": "skipped", "error": None, "seconds": 0.0}
        store.clean_run_temporaries(out, key, task.get("leftovers"))
        if problem != "missing":  # a broken record must not stand for a result if this run fails
            store.summary_path(out, key).unlink(missing_ok=True)
        return _compute(task, out, key, t0, cpu0)
    finally:
        lock.release()


def _compute(task: dict, out: Path, key: str, t0: float, cpu0: float) -> dict:
    try:
        record, table = execute(task)
        record["timings"]["total_s"] = time.perf_counter() - t0
        # CPU seconds of this process: the run's cost even when other processes share the cores
        record["timings"]["cpu_s"] = time.process_time() - cpu0
        path = store.atomic_write_parquet(store.table_path(out, key), table)
        record["table"] = {"bytes": path.stat().st_size, "sha256": file_digest(path)}
        store.atomic_write_json(store.summary_path(out, key), record)  # last: marks the run finished
        store.error_path(out, key).unlink(missing_ok=True)
        return {"key": key, "status": "ok", "error": None, "seconds": time.perf_counter() - t0}
    except Exception as exc:  # recorded and reported, never swallowed
        if store.is_disk_full(exc):  # no run can be written: the grid stops (``_collect``) with one line
            return {"key": key, "status": "error", "error": str(exc), "seconds": time.perf_counter() - t0,
                    "disk_full": True}
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
def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (0 <= I < N) -> (I, N); an OptionError naming ``--shard`` otherwise."""
    index, sep, count = str(text).strip().partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = -1
    if not sep or n < 1 or not 0 <= i < n:
        raise OptionError(f"--shard: expected I/N with N >= 1 and 0 <= I < N (e.g. 0/10 for the first of 10 "
                          f"shards; Slurm: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT), got {text!r}")
    return i, n


def shard_of(runs: list, shard: tuple[int, int] | None) -> list:
    """Runs I, I+N, I+2N, ... (expansion order) of ``shard = (I, N)``; all runs for None."""
    if shard is None:
        return list(runs)
    i, n = shard
    if n < 1 or not 0 <= i < n:
        raise OptionError(f"shard: expected (I, N) with 0 <= I < N, got {shard!r}")
    return list(runs)[i::n]


def run_state(out: Path, key: str) -> tuple[str, str | None]:
    """(status, problem) of a run in ``out``: done / running / failed / corrupt / pending."""
    problem = store.result_problem(out, key)
    if problem is None:
        return "done", None
    if store.is_running(out, key):
        return "running", None
    if problem != "missing":
        return "corrupt", problem
    if store.error_path(out, key).exists():
        return "failed", None
    return "pending", None


def plan(grid: Grid | str | os.PathLike, out_dir: str | os.PathLike | None = None, *, shard=None):
    """The runs of a grid and their state in ``out_dir``: a DataFrame with key, trace, the axis
    values (machine, rt_percent, marking, scheme, policy, backfill, checkpoint, options, tau,
    seed), status (``done`` / ``running`` / ``failed`` / ``corrupt`` / ``pending``) and problem
    (why a ``corrupt`` run's result is broken)."""
    import pandas as pd

    g = grid if isinstance(grid, Grid) else load_grid(grid)
    out = Path(out_dir) if out_dir else g.default_out_dir()
    rows = []
    for r in shard_of(g.expand(), shard):
        status, problem = run_state(out, r.key)
        c = r.config
        options = dict(c.get("scheme_options" if "scheme" in c else "policy_options") or {})
        rows.append({"key": r.key, "trace": r.label, "machine": c["machine"], "rt_percent": c["rt_percent"],
                     "marking": c["marking"], "scheme": c.get("scheme"), "policy": c.get("policy"),
                     "backfill": options.pop("backfill", None), "checkpoint": c.get("checkpoint"),
                     "options": canonical_json(options) if options else "", "tau": c["tau"], "seed": c["seed"],
                     "status": status, "problem": problem})
    frame = pd.DataFrame(rows)
    if len(frame):  # leave out the axes this grid does not use
        frame = frame.drop(columns=[c for c in ("scheme", "policy", "backfill", "checkpoint", "options")
                                    if frame[c].isna().all() or (frame[c] == "").all()])
    return frame


def check_runners(grid: Grid, runs: list[GridRun]) -> None:
    """Build each distinct policy/scheme of the grid once with its options and checkpoint model,
    so that an unknown name or option fails before anything runs (InputError naming the grid)."""
    seen = set()
    for r in runs:
        task = r.task(Path("."), validate=False)
        spec = spec_of(task)
        ident = (spec.scheme, spec.policy, canonical_json(dict(spec.policy_options)), spec.checkpoint)
        if ident in seen:
            continue
        seen.add(ident)
        try:
            build_policy(spec)
        except Exception as exc:  # noqa: BLE001 - a user class may raise anything: name it, no traceback
            what = f"scheme {spec.scheme!r}" if spec.scheme else f"policy {spec.policy!r}"
            opts = f" with options {dict(spec.policy_options)}" if spec.policy_options else ""
            raise InputError(f"{what}{opts}: {exc}", path=str(grid.source or grid.name)) from None


def _write_manifest(out: Path, grid: Grid, runs: list[GridRun]) -> None:
    if grid.text:
        store.atomic_write_bytes(out / store.GRID_COPY, grid.text.encode("utf-8"))
    store.atomic_write_json(out / store.MANIFEST, {
        "grid": grid.name, "description": grid.description,
        "source": str(grid.source) if grid.source else None, "report": grid.report,
        "axes": grid.varying_axes(),
        "runs": [{"key": r.key, "label": r.label, "detail": r.detail, "config": r.config} for r in runs]})


def _preload(tasks: list[dict]) -> None:
    """Read each distinct trace and machine once in the parent, so forked workers inherit them."""
    for task in tasks:
        spec = spec_of(task)
        trace = load_trace(spec)
        load_machine(machine_spec_for(spec, trace))


def _pending(out: Path, grid: Grid, runs: list[GridRun], selected: list[GridRun]) -> dict:
    """What ``selected`` leaves to run in ``out``: ``{"pending": runs without a whole result,
    "corrupt": [{"key", "label", "problem"}], "adopted": {new key: old key} (finished under an
    older key, ``migrate``), "tasks": the pending runs' work items}``."""
    problems = {r.key: store.result_problem(out, r.key) for r in selected}
    adopted = adopt_moved_runs(out, {r.key for r in runs}, [r for r in selected if problems[r.key] == "missing"])
    for key in adopted:  # finished under an older key (an input file moved): kept, not recomputed
        problems[key] = None
    pending = [r for r in selected if problems[r.key] is not None]
    corrupt = [{"key": r.key, "label": r.describe(), "problem": problems[r.key]} for r in pending
               if problems[r.key] != "missing"]
    # A holder killed between finishing its run and releasing the lock leaves the lock file of a
    # finished run behind; nothing would take that lock again, so remove it (only when free).
    finished = {r.key for r in selected if problems[r.key] is None}
    stale = {p.stem for p in store.runs_dir(out).glob("*.lock")} & finished
    for key in stale:
        lock = store.RunLock(out, key)
        if lock.acquire():
            lock.release()  # removes the file
    tasks = [r.task(out, grid.validate) for r in pending]
    leftovers = store.run_temporaries(out)  # a killed writer's temporaries, removed by the run's next holder
    for task in tasks:
        task["leftovers"] = leftovers.get(task["key"], [])
    return {"pending": pending, "corrupt": corrupt, "adopted": adopted, "tasks": tasks}


def run_grid(grid_path: str | os.PathLike | Grid, out_dir: str | os.PathLike | None = None, jobs: int = 2,
             progress: bool = True, *, only=None, console=None, backend: str = "local", address: str | None = None,
             shard: tuple[int, int] | None = None, summary: bool = True) -> dict:
    """Run every unfinished run of a grid; return a summary.

    Args:
        grid_path: the grid TOML file (or a parsed ``Grid``).
        out_dir: results folder (default: the grid's ``out_dir``, else ``./results/<name>``).
        jobs: worker processes (local backend; ``<= 1``: run in this process) or CPUs of a local
            Ray instance.
        progress: show a rich progress bar and the final report on the console (``console``
            given: the report goes there whatever ``progress`` says).
        only: run only these run keys (a subset of the grid; the others are left as they are).
        backend: ``local`` or ``ray`` (``rtsched.experiments.backends``).
        address: the Ray cluster to join (``auto``, ``HOST:PORT``); None: a local instance.
        shard: ``(I, N)``: only runs I, I+N, ... of the grid.
        summary: rewrite ``summary.parquet`` at the end (False: leave it to ``report`` or
            ``merge``, e.g. for the shards of a job array, which would otherwise each rebuild it
            from every record of the folder under the folder's lock as they finish).

    Returns:
        ``{"grid", "out_dir", "runs", "skipped", "completed", "failed": [{"key", "label", "error"}],
        "busy": [keys run by another process], "corrupt": [{"key", "label", "problem"}], "seconds"}``;
        ``skipped`` counts runs already finished (before this call or by another process meanwhile).
    """
    from rich.console import Console

    grid = grid_path if isinstance(grid_path, Grid) else load_grid(grid_path)
    out = Path(out_dir) if out_dir else grid.default_out_dir()
    console = console or Console(stderr=True, quiet=not progress, soft_wrap=True)
    t_start = time.perf_counter()
    runs = grid.expand()
    check_runners(grid, runs)
    selected = runs if only is None else [r for r in runs if r.key in set(only)]
    selected = shard_of(selected, shard)
    results: list[dict] = []
    adopted: dict[str, str] = {}
    # the backend first: an unreachable Ray cluster fails before the folder is touched
    with open_backend(backend, run_task, jobs=jobs, address=address, preload=_preload) as executor:
        with store.disk_full_names(store.runs_dir(out)):
            store.runs_dir(out).mkdir(parents=True, exist_ok=True)
        with store.disk_full_names(out / store.LOCK), store.FolderLock(out):
            store.clean_temporaries(out)
            _write_manifest(out, grid, runs)
        plan_ = _pending(out, grid, runs, selected)
        pending, corrupt, adopted, tasks = plan_["pending"], plan_["corrupt"], plan_["adopted"], plan_["tasks"]
        skipped = len(selected) - len(pending)
        by_key = {r.key: r for r in pending}
        where = f" (shard {shard[0]}/{shard[1]})" if shard else ""
        console.print(f"[bold]{grid.name}[/]{where}: {len(selected)} runs, {skipped} already finished, "
                      f"{len(pending)} to run on {executor.describe()} -> {out}")
        if adopted:
            console.print(f"{len(adopted)} finished run(s) found under their keys before an input file moved "
                          "(or before the keys named files by their name alone): kept under the new keys")
        for c in corrupt:
            console.print(f"[yellow]broken result[/] {c['key']}  {c['label']}: {c['problem']}; running it again")
        if tasks:
            executor.submit(tasks)  # before the progress bar's thread starts (fork safety)
            results = _collect(executor, len(tasks), progress, console, by_key)
    failed = [{"key": r["key"], "label": by_key[r["key"]].describe(), "error": r["error"]}
              for r in results if r["status"] == "error"]
    busy = [r["key"] for r in results if r["status"] == "busy"]
    completed = sum(1 for r in results if r["status"] == "ok")
    skipped += sum(1 for r in results if r["status"] == "skipped")
    if summary and (completed or adopted or not (out / store.SUMMARY).exists()):
        from rtsched.experiments.results import write_summary

        with store.FolderLock(out):
            write_summary(out)
    outcome = {"grid": grid.name, "out_dir": str(out), "runs": len(selected), "skipped": skipped,
               "completed": completed, "failed": failed, "busy": busy, "corrupt": corrupt,
               "seconds": time.perf_counter() - t_start}
    _print_outcome(console, grid, out, outcome)
    return outcome


def _collect(executor, total: int, progress: bool, console, by_key: dict) -> list[dict]:
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    results: list[dict] = []
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[failed]}"),
                   console=console, disable=not progress, transient=False)
    n_failed = 0
    try:
        with bar:
            tid = bar.add_task(f"{total} runs", total=total, failed="")
            for res in executor.results():
                if res.get("disk_full"):
                    raise store.DiskFullError(f"{res['error'].split(' (nothing half-written')[0]} (finished runs "
                                              "are kept; free some space and run the grid again to resume)")
                results.append(res)
                if res["status"] == "error":
                    n_failed += 1
                bar.update(tid, advance=1, description=by_key[res["key"]].describe(),
                           failed=f"[red]{n_failed} failed[/]" if n_failed else "")
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: finished runs are kept; run the grid again to resume")
        raise
    return results


def _print_outcome(console, grid: Grid, out: Path, summary: dict) -> None:
    """The failures grouped by their error (so a grid whose runs all fail says why in one line),
    runs left to another process, and the counts."""
    failed = summary["failed"]
    if failed:
        console.print(f"[bold red]{len(failed)} run(s) failed[/] (details in {store.runs_dir(out)}/KEY.error.json):")
        by_error: dict[str, list[dict]] = {}
        for f in failed:
            first = (f["error"] or "").splitlines()[0] if f["error"] else "(no message)"
            by_error.setdefault(first, []).append(f)
        for i, (error, items) in enumerate(sorted(by_error.items(), key=lambda kv: -len(kv[1]))):
            if i == 10:
                console.print(f"  ... and {len(by_error) - 10} other error(s)")
                break
            console.print(f"  {len(items)} x {error}", markup=False, highlight=False)
            for f in items[:3]:
                console.print(f"      {f['key']}  {f['label']}", markup=False, highlight=False)
            if len(items) > 3:
                console.print(f"      ... and {len(items) - 3} more")
    if summary["busy"]:
        console.print(f"{len(summary['busy'])} run(s) were being run by another process (their locks are held); "
                      "they are left to it")
    console.print(f"{grid.name}: {summary['completed']} completed, {summary['skipped']} skipped, "
                  f"{len(failed)} failed in {summary['seconds']:.1f} s")


def clear_failed(out_dir: str | os.PathLike) -> int:
    """Remove the error files of a results folder; returns how many."""
    n = 0
    for p in store.runs_dir(Path(out_dir)).glob("*.error.json"):
        p.unlink()
        n += 1
    return n


__all__ = ["run_grid", "plan", "execute", "run_task", "clear_failed", "spec_of", "check_runners", "parse_shard",
           "shard_of", "run_state"]
