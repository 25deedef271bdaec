"""Merging results folders of one grid (shards run into separate folders, e.g. one per node's
local disk) into one study folder: ``rtsched experiment merge DIR... [--out OUT]``.

Every folder must hold the same grid (``manifest.json``: the same name and the same run keys); a
folder of another grid is refused with one line naming both.  Each finished run (a whole result,
``store.result_problem``) that the target lacks is copied into it -- job table first, record last,
each atomically and under the run's lock, as a run writes them -- and ``summary.parquet`` is written
once at the end.  Failed runs' error files are copied only for runs finished nowhere.  Merging is
idempotent: merging again copies nothing.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from rtsched.errors import InputError
from rtsched.experiments import store


def _manifest(folder: Path) -> dict:
    path = folder / store.MANIFEST
    if not folder.exists():
        raise InputError("no such folder (give the results folders of `rtsched experiment run`)", path=str(folder))
    if not store.runs_dir(folder).is_dir() or not path.is_file():
        raise InputError(f"not a results folder (no {store.RUNS}/ or {store.MANIFEST}: run a grid into it first)",
                         path=str(folder))
    try:
        manifest = store.read_json(path)
        keys = {r["key"] for r in manifest["runs"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"unreadable manifest ({type(exc).__name__}: {exc})", path=str(path)) from None
    return {"name": manifest.get("grid"), "keys": keys, "manifest": manifest}


def _check_same_grid(folders: list[Path]) -> dict:
    first = _manifest(folders[0])
    for folder in folders[1:]:
        other = _manifest(folder)
        if other["name"] != first["name"] or other["keys"] != first["keys"]:
            only = len(first["keys"] ^ other["keys"])
            raise InputError(f"holds grid {other['name']!r} ({len(other['keys'])} runs), {folders[0]} holds grid "
                             f"{first['name']!r} ({len(first['keys'])} runs); {only} run(s) are in one only: merge "
                             "only folders of one grid", path=str(folder))
    return first


def _copy_run(src: Path, out: Path, key: str) -> bool:
    lock = store.RunLock(out, key)
    if not lock.acquire():  # being run there now: its holder writes it
        return False
    try:
        if store.result_problem(out, key) is None:
            return False
        store.atomic_write(store.table_path(out, key), lambda tmp: shutil.copyfile(store.table_path(src, key), tmp))
        store.atomic_write(store.summary_path(out, key),
                           lambda tmp: shutil.copyfile(store.summary_path(src, key), tmp))  # last: finished
        store.error_path(out, key).unlink(missing_ok=True)
        return True
    finally:
        lock.release()


def merge(folders: list[str | os.PathLike], out_dir: str | os.PathLike | None = None) -> dict:
    """Merge the finished runs of ``folders`` (results folders of one grid) into ``out_dir``
    (default: the first folder).  Returns ``{"out_dir", "copied", "present", "errors", "runs"}``:
    runs copied, runs the target had already, error files copied, finished runs in the target."""
    from rtsched.experiments.results import write_summary

    sources = [Path(f) for f in folders]
    if not sources:
        raise InputError("give the results folders to merge")
    first = _check_same_grid(sources)
    out = Path(out_dir) if out_dir is not None else sources[0]
    if out.exists() and (out / store.MANIFEST).exists() and out not in sources:
        _check_same_grid([sources[0], out])
    store.runs_dir(out).mkdir(parents=True, exist_ok=True)
    with store.FolderLock(out):
        store.clean_temporaries(out)
        if not (out / store.MANIFEST).exists():
            store.atomic_write_json(out / store.MANIFEST, first["manifest"])
        grid_copy = sources[0] / store.GRID_COPY
        if grid_copy.exists() and not (out / store.GRID_COPY).exists():
            store.atomic_write_bytes(out / store.GRID_COPY, grid_copy.read_bytes())
    copied = present = 0
    for src in sources:
        if src.resolve() == out.resolve():
            continue
        for key in sorted(first["keys"]):
            if store.result_problem(src, key) is not None:
                continue
            if _copy_run(src, out, key):
                copied += 1
            else:
                present += 1
    errors = 0
    for src in sources:
        for key in sorted(first["keys"]):
            err = store.error_path(src, key)
            if (src.resolve() != out.resolve() and err.exists() and not store.error_path(out, key).exists()
                    and store.result_problem(out, key) is not None):
                store.atomic_write_bytes(store.error_path(out, key), err.read_bytes())
                errors += 1
    with store.FolderLock(out):
        write_summary(out)
    finished = sum(1 for key in first["keys"] if store.result_problem(out, key, deep=False) is None)
    return {"out_dir": str(out), "copied": copied, "present": present, "errors": errors, "runs": finished,
            "grid_runs": len(first["keys"])}


__all__ = ["merge"]
