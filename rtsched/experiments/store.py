"""The on-disk layout of an experiment's results, atomic writes, and per-run locks.

::

    OUT_DIR/
      grid.toml                 the grid file as run (report/plot read their defaults from it)
      manifest.json             grid name and every run's key, label and configuration
      summary.parquet           every finished run's summary, one row per run x job group x category,
                                with its provenance (rtsched.experiments.results.summary_frame)
      runs/KEY.parquet          the run's job table (rtsched.metrics.job_table), written first
      runs/KEY.json             the run's record (configuration, provenance, rtsched.metrics.summary_dict,
                                timings, the job table's size and SHA-256), written last: a record
                                that parses, names KEY and matches its job table (size, SHA-256)
                                marks the run finished
      runs/KEY.error.json       why the run failed (exception, traceback); removed on success
      runs/KEY.lock             the lock of a run in progress (flock; removed when it ends)
      figures/*.png             plot()

Every file is written to a temporary name in the same folder and moved into place with
``os.replace`` (atomic on POSIX), so a crash leaves either the old file, the new file, or a
``.*.tmp-*`` file that the next holder of that run's lock (or of the folder's lock, for the
folder-level files) removes -- never half a result.

Locks.  A process runs a run only while it holds ``runs/KEY.lock`` (``flock``, non-blocking): two
processes, or two machines sharing the folder over a file system with POSIX locks (NFSv4, Lustre,
GPFS), never run the same key twice and never wait for each other; a killed process's locks are
released by the operating system.  Folder-level files (manifest, grid copy, summary) are written
under a short blocking ``flock`` on ``OUT_DIR/.lock``.
"""
from __future__ import annotations

import errno
import json
import math
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

from rtsched import files
from rtsched.errors import RtschedError
from rtsched.files import TMP_MARK, FileLock

RUNS = "runs"
MANIFEST = "manifest.json"
GRID_COPY = "grid.toml"
LOCK = ".lock"
SUMMARY = "summary.parquet"


def runs_dir(out_dir: Path) -> Path:
    return Path(out_dir) / RUNS


def summary_path(out_dir: Path, key: str) -> Path:
    return runs_dir(out_dir) / f"{key}.json"


def table_path(out_dir: Path, key: str) -> Path:
    return runs_dir(out_dir) / f"{key}.parquet"


def error_path(out_dir: Path, key: str) -> Path:
    return runs_dir(out_dir) / f"{key}.error.json"


class DiskFullError(RtschedError):
    """A write of the results folder found the disk (or the user's quota) full."""


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says that no space is left."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, DiskFullError) or (isinstance(exc, OSError) and exc.errno in _NO_SPACE):
            return True
        if "no space left" in str(exc).lower():
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


@contextmanager
def disk_full_names(path: str | os.PathLike):
    """Turn a full disk inside the block into one ``DiskFullError`` line naming ``path``."""
    try:
        yield
    except DiskFullError:
        raise
    except Exception as exc:
        if is_disk_full(exc):
            raise DiskFullError(f"{path}: no space left on device (nothing half-written is kept; free some space "
                                "and run the command again)") from None
        raise


def atomic_write(path: Path, writer: Callable[[Path], None]) -> Path:
    """``rtsched.files.atomic_write``, creating the folder first; a full disk is one
    ``DiskFullError`` naming ``path``."""
    path = Path(path)
    with disk_full_names(path):
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


PARQUET_MAGIC = b"PAR1"


def parquet_problem(path: Path, size: int | None = None, sha256: str | None = None) -> str | None:
    """Why ``path`` is not a whole Parquet file (None if it looks whole): missing, a size other
    than the recorded one, no ``PAR1`` magic at its start and end, or (``sha256`` given) other bytes."""
    try:
        actual = path.stat().st_size
    except FileNotFoundError:
        return "its job table (.parquet) is missing"
    if size is not None and actual != size:
        return f"its job table has {actual} bytes, its record says {size}"
    if actual < 12:
        return f"its job table is truncated ({actual} bytes)"
    with open(path, "rb") as fh:
        head = fh.read(4)
        fh.seek(-4, os.SEEK_END)
        tail = fh.read(4)
    if head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
        return "its job table is not a whole Parquet file"
    if sha256 is not None:
        from rtsched.experiments.grid import file_digest

        if file_digest(path) != sha256:
            return "its job table's SHA-256 differs from the one its record holds"
    return None


def result_problem(out_dir: Path, key: str, *, deep: bool = True) -> str | None:
    """Why run ``key`` has no valid result in ``out_dir``, or None when it is finished.

    A run is finished when its record parses, names ``key``, and its job table is a whole Parquet
    file of the recorded size and (``deep``, the default) SHA-256: hashing a job table costs less
    than parsing its record.  Returns ``"missing"`` when there is no record; any other text
    describes a broken result (a corrupt record or job table).
    """
    s = summary_path(out_dir, key)
    try:
        text = s.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "missing"
    except (OSError, UnicodeDecodeError) as exc:
        return f"its record cannot be read ({exc})"
    try:
        rec = json.loads(text)
    except ValueError:
        return "its record (.json) is not valid JSON"
    if not isinstance(rec, dict) or rec.get("key") != key:
        return "its record names another run"
    table = rec.get("table") or {}  # records written before size/sha256 were kept: magic check only
    return parquet_problem(table_path(out_dir, key), table.get("bytes"), table.get("sha256") if deep else None)


def is_finished(out_dir: Path, key: str) -> bool:
    """A run is finished when its record names it and its job table is whole and the one it
    recorded (``result_problem``)."""
    return result_problem(out_dir, key) is None


def _remove_temporaries(folder: Path, prefix: str = ".") -> list[Path]:
    removed = []
    if not folder.is_dir():
        return removed
    for p in folder.iterdir():
        if p.name.startswith(prefix) and TMP_MARK in p.name:
            try:
                p.unlink()
                removed.append(p)
            except FileNotFoundError:
                pass
    return removed


def clean_temporaries(out_dir: Path) -> list[Path]:
    """Remove the temporary files a killed writer left (``.NAME.tmp-PID-XXXX``) among the
    folder-level files; call it holding ``FolderLock`` (a run's own are ``clean_run_temporaries``)."""
    out_dir = Path(out_dir)
    return _remove_temporaries(out_dir) + _remove_temporaries(out_dir / "figures")


def run_temporaries(out_dir: Path) -> dict[str, list[str]]:
    """The temporary files in ``runs/`` by run key (``.KEY.json.tmp-...``): one listing of the
    folder for a whole grid, so that no run lists it again (10,000 runs: 30,000 files)."""
    found: dict[str, list[str]] = {}
    folder = runs_dir(out_dir)
    if folder.is_dir():
        for p in folder.iterdir():
            if p.name.startswith(".") and TMP_MARK in p.name:
                found.setdefault(p.name[1:].split(".", 1)[0], []).append(p.name)
    return found


def clean_run_temporaries(out_dir: Path, key: str, names: list[str] | None = None) -> None:
    """Remove temporaries of run ``key`` that a killed writer left (``names``: those found by
    ``run_temporaries``; None: list the folder).  Call it holding the run's ``RunLock``: a live
    writer holds it for as long as its temporary files exist, so none of its files goes."""
    if names is None:
        names = run_temporaries(out_dir).get(key, [])
    for name in names:
        (runs_dir(out_dir) / name).unlink(missing_ok=True)


def lock_path(out_dir: Path, key: str) -> Path:
    return runs_dir(out_dir) / f"{key}.lock"


class RunLock:
    """An exclusive, non-blocking ``flock`` on ``runs/KEY.lock``: the right to run ``KEY``.

    ``acquire()`` returns False at once when another process holds it.  ``release()`` removes the
    file while still holding the lock; a process that opened the old file meanwhile notices (the
    path then names another file, or none) and tries again, so two holders never coexist.
    """

    def __init__(self, out_dir: Path, key: str) -> None:
        self.path = lock_path(Path(out_dir), key)
        self.fd: int | None = None

    def acquire(self) -> bool:
        import fcntl

        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                try:  # who holds it, for people looking at the folder (not used by the lock itself)
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{os.uname().nodename} {os.getpid()}\n".encode())
                except OSError:
                    pass
                return True
            os.close(fd)  # the previous holder removed the file between our open and flock: retry

    def release(self) -> None:
        if self.fd is None:
            return
        import fcntl

        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> "RunLock":
        if not self.acquire():
            raise RtschedError(f"{self.path}: another process is running this run")
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def is_running(out_dir: Path, key: str) -> bool:
    """Whether some process holds run ``key``'s lock now (creates no file)."""
    import fcntl

    try:
        fd = os.open(lock_path(Path(out_dir), key), os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the lock if we took it
    return False


class FolderLock(FileLock):
    """A short, blocking ``flock`` on ``OUT_DIR/.lock`` around writes of the folder-level files
    (manifest, grid copy, summary) and the removal of their leftover temporaries."""

    def __init__(self, out_dir: Path) -> None:
        super().__init__(Path(out_dir) / LOCK, blocking=True)
