"""Writing files so that nothing half-written is ever left behind.

``atomic_write(path, writer)`` lets ``writer`` fill a temporary file in the same folder, flushes it
to disk, gives it the permissions a plain ``open(path, "w")`` would have given (the existing file's
mode when overwriting, else 0666 minus the umask — ``tempfile`` alone would leave 0600), and
renames it over ``path`` (``os.replace``: atomic on POSIX).  On any error, Ctrl-C included, the
temporary file is removed and ``path`` keeps its old content.  Temporary names start with
``.NAME.tmp-`` so that a folder's owner (an experiment store) can find and remove leftovers of a
killed process.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Callable

TMP_MARK = ".tmp-"


def temporary_name(path: Path) -> Path:
    """A unique temporary name beside ``path`` (same folder, so the final rename is atomic)."""
    return path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _default_mode(path: Path) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp)`` to fill a temporary file beside ``path``, then move it onto ``path``."""
    path = Path(path)
    tmp = temporary_name(path)
    try:
        writer(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, _default_mode(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


__all__ = ["TMP_MARK", "atomic_write", "atomic_write_bytes", "atomic_write_text", "temporary_name"]
