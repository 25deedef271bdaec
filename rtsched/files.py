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


class LockedError(RuntimeError):
    """Another process holds the lock."""


class FileLock:
    """An exclusive ``flock`` on ``path`` (created if missing), held while the ``with`` block
    runs.  Non-blocking by default (a held lock raises ``LockedError``); ``blocking=True`` waits
    for it (short critical sections).  The operating system releases it when the process dies,
    however it dies (SIGKILL included), so a killed run never leaves a stale lock.

    ``remove_if_unused``: when the ``with`` block created the lock's folder and leaves nothing in
    it but the lock file (a run that failed before writing anything), the file and the folder are
    removed on the way out, so a failed run leaves nothing behind.  (A process that opened the
    same new lock file in the microseconds before its removal could then lock a removed file; the
    training folders that use this are created by one command at a time.)
    """

    def __init__(self, path: str | os.PathLike, what: str = "", *, blocking: bool = False,
                 remove_if_unused: bool = False) -> None:
        self.path = Path(path)
        self.what = what or f"{self.path.parent}"
        self.blocking = blocking
        self.remove_if_unused = remove_if_unused
        self.fd: int | None = None
        self._created: Path | None = None  # the outermost folder __enter__ created

    def __enter__(self) -> "FileLock":
        import fcntl

        missing = [d for d in (self.path.parent, *self.path.parent.parents) if not d.exists()]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._created = missing[-1] if missing else None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if self.blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LockedError(f"{self.what}: another process is using it (lock {self.path})") from None
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        import fcntl

        if self.fd is not None:
            if self.remove_if_unused and self._created is not None:
                self._remove_unused()  # still holding the lock
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


    def _remove_unused(self) -> None:
        """Remove the lock file and the folders __enter__ created, if nothing else was put there."""
        folder = self.path.parent
        if any(entry.name != self.path.name for entry in folder.iterdir()):
            return
        self.path.unlink(missing_ok=True)
        while True:
            try:
                folder.rmdir()
            except OSError:  # not empty (or not ours): stop
                return
            if folder == self._created:
                return
            folder = folder.parent

__all__ = ["TMP_MARK", "FileLock", "LockedError", "atomic_write", "atomic_write_bytes", "atomic_write_text",
           "temporary_name"]
