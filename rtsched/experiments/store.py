"""The on-disk layout of an experiment's results, and atomic writes.

::

    OUT_DIR/
      grid.toml                 the grid file as run (report/plot read their defaults from it)
      manifest.json             grid name and every run's key, label and configuration
      runs/KEY.parquet          the run's job table (rtsched.metrics.job_table), written first
      runs/KEY.json             the run's summary (rtsched.metrics.summary_dict + configuration +
                                timings), written last: its presence marks the run finished
      runs/KEY.error.json       why the run failed (exception, traceback); removed on success
      figures/*.png             plot()

Every file is written to a temporary name in the same folder and moved into place with
``os.replace`` (atomic on POSIX), so a crash leaves either the old file, the new file, or a
``.*.tmp-*`` file that the next ``run_grid`` removes -- never half a result.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Callable

from rtsched import files
from rtsched.errors import RtschedError
from rtsched.files import TMP_MARK

RUNS = "runs"
MANIFEST = "manifest.json"
GRID_COPY = "grid.toml"
LOCK = ".lock"


def runs_dir(out_dir: Path) -> Path:
    return Path(out_dir) / RUNS


def summary_path(out_dir: Path, key: str) -> Path:
    return runs_dir(out_dir) / f"{key}.json"


def table_path(out_dir: Path, key: str) -> Path:
    return runs_dir(out_dir) / f"{key}.parquet"


def error_path(out_dir: Path, key: str) -> Path:
    return runs_dir(out_dir) / f"{key}.error.json"


def atomic_write(path: Path, writer: Callable[[Path], None]) -> Path:
    """``rtsched.files.atomic_write``, creating the folder first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return files.atomic_write(path, writer)


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def _jsonable(x: Any) -> Any:
    """Plain JSON types: NumPy scalars to Python, NaN/inf to None, tuples to lists."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):  # NumPy scalar
        try:
            x = x.item()
        except (ValueError, TypeError):
            pass
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if isinstance(x, Path):
        return str(x)
    return str(x)


def to_json_text(obj: Any) -> str:
    return json.dumps(_jsonable(obj), indent=1, sort_keys=True, allow_nan=False)


def atomic_write_json(path: Path, obj: Any) -> Path:
    return atomic_write_bytes(path, (to_json_text(obj) + "\n").encode("utf-8"))


def atomic_write_parquet(path: Path, frame) -> Path:
    return atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def is_finished(out_dir: Path, key: str) -> bool:
    """A run is finished when its summary names it and its job table is there."""
    s, t = summary_path(out_dir, key), table_path(out_dir, key)
    if not (s.exists() and t.exists()):
        return False
    try:
        return read_json(s).get("key") == key
    except (OSError, ValueError):
        return False


def clean_temporaries(out_dir: Path) -> list[Path]:
    """Remove the temporary files a crashed writer left (``.NAME.tmp-PID-XXXX``)."""
    removed = []
    for folder in (Path(out_dir), runs_dir(out_dir), Path(out_dir) / "figures"):
        if not folder.is_dir():
            continue
        for p in folder.iterdir():
            if p.name.startswith(".") and TMP_MARK in p.name:
                try:
                    p.unlink()
                    removed.append(p)
                except FileNotFoundError:
                    pass
    return removed


class DirectoryLock:
    """An exclusive ``flock`` on ``OUT_DIR/.lock``: two ``run_grid`` calls never write one folder."""

    def __init__(self, out_dir: Path) -> None:
        self.path = Path(out_dir) / LOCK
        self.fd: int | None = None

    def __enter__(self) -> "DirectoryLock":
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            self.fd = None
            raise RtschedError(f"{self.path.parent}: another experiment run is writing to this folder") from None
        return self

    def __exit__(self, *exc) -> None:
        import fcntl

        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
