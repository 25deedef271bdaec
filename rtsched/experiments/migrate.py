"""Runs whose key changed only because an input file moved: found and adopted, not recomputed.

Run keys hash the input files' content and their portable names (``grid.portable_path``).  Until
2026-11-27 a file outside the shared data and the project was named by its absolute path, so a
study folder copied with its traces to another folder or machine lost every run.  Keys now use the
file's name there; the runs written under the old keys are recognised by their *identity* -- the
configuration with every input path reduced to its file name, the content digests kept -- and
adopted by ``run_grid`` under the new key: the job table copied, the record rewritten with the new
key and configuration (and ``migrated_from``), the old files removed.  A changed file (another
digest) is another identity: its old runs are never adopted.
"""
from __future__ import annotations

import copy
import shutil
from pathlib import Path, PurePosixPath

from rtsched.experiments import store
from rtsched.experiments.grid import GridRun, config_hash, is_file_machine


def _name(path: str) -> str:
    return PurePosixPath(path.replace("\\", "/")).name


def identity(config: dict) -> str:
    """The run's configuration hash with every input path reduced to its file name."""
    c = copy.deepcopy(config)
    c["trace"]["path"] = _name(c["trace"]["path"])
    if is_file_machine(c.get("machine")):
        c["machine"] = _name(c["machine"])
    if c.get("aps_path"):
        c["aps_path"] = _name(c["aps_path"])
    if c.get("policy") is not None and "policy" in (c.get("inputs") or {}):
        c["policy"] = _name(c["policy"])
    return config_hash(c)


def _record_keys(out: Path) -> set[str]:
    folder = store.runs_dir(out)
    return {p.name.removesuffix(".json") for p in folder.glob("*.json") if not p.name.endswith(".error.json")}


def adopt_moved_runs(out: Path, grid_keys: set[str], pending: list[GridRun]) -> dict[str, str]:
    """Adopt, for each of ``pending`` (runs of the grid without a result), a finished run of the
    folder that is not a run of the grid (``grid_keys``) and has the same identity.  Returns
    ``{new key: old key}`` of the runs adopted.  Reads only the records of keys foreign to the grid."""
    from rtsched.experiments.results import read_record

    foreign = sorted(_record_keys(out) - grid_keys) if pending else []
    if not foreign:
        return {}
    by_identity: dict[str, dict] = {}
    for key in foreign:
        rec, problem = read_record(out, key)
        if rec is not None and isinstance(rec.get("config"), dict):
            by_identity.setdefault(identity(rec["config"]), rec)
    adopted: dict[str, str] = {}
    for run in pending:
        rec = by_identity.pop(identity(run.config), None)
        if rec is not None and _adopt(out, rec, run):
            adopted[run.key] = rec["key"]
    return adopted


def _adopt(out: Path, rec: dict, run: GridRun) -> bool:
    """Move run ``rec`` to ``run.key``, holding both runs' locks (False when either is busy)."""
    new_lock, old_lock = store.RunLock(out, run.key), store.RunLock(out, rec["key"])
    if not new_lock.acquire():
        return False
    try:
        if not old_lock.acquire():
            return False
        try:
            old = rec["key"]
            store.atomic_write(store.table_path(out, run.key),
                               lambda tmp: shutil.copyfile(store.table_path(out, old), tmp))
            moved = {**rec, "key": run.key, "config": run.config, "label": run.label,
                     "migrated_from": {"key": old, "config": rec["config"]}}
            store.atomic_write_json(store.summary_path(out, run.key), moved)  # last: the new run is finished
            store.summary_path(out, old).unlink(missing_ok=True)
            store.table_path(out, old).unlink(missing_ok=True)
            store.error_path(out, old).unlink(missing_ok=True)
            return True
        finally:
            old_lock.release()
    finally:
        new_lock.release()


__all__ = ["adopt_moved_runs", "identity"]
