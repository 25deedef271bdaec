"""Writing files so that nothing half-written is ever left behind, and no special file is lost.

``atomic_write(path, writer)`` lets ``writer`` fill a temporary file, flushes it to disk, then puts
it in place.  How depends on what ``path`` is now:

* a regular file or a new path: the temporary file sits in the same folder, gets the permissions a
  plain ``open(path, "w")`` would have given (the existing file's mode when overwriting, else 0666
  minus the umask — ``tempfile`` alone would leave 0600) and is renamed over ``path``
  (``os.replace``: atomic on POSIX).  On any error, Ctrl-C included, the temporary file is removed
  and ``path`` keeps its old content.  Temporary names start with ``.NAME.tmp-`` so that a folder's
  owner (an experiment store) can find and remove leftovers of a killed process.
* a symbolic link: the same, on the file it points to (the link stays a link, as with ``open``).
* a character device or a FIFO (``/dev/null``, ``/dev/stdout``, a named pipe): written to directly,
  never replaced — the content is first made in a temporary file in the system's temporary folder
  (so a writer that seeks, Parquet or zip, works), then copied into the special file.  A write
  error is reported as for a file (``/dev/full``: "no space left on device").  Renaming over them
  would replace, as root, the system's ``/dev/null`` with a regular file.
* a block device or a socket: refused (``WriteError``); writing a result over a disk is never meant.

Every ``OSError`` met while writing (a full disk: ENOSPC, a quota: EDQUOT, EIO, a read-only file
system, ...) becomes one ``WriteError`` that names the file and the reason, e.g.
``out.parquet: cannot write: no space left on device (nothing written)``; the command line prints
it as one line (exit status 1).
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
import uuid
from pathlib import Path
from typing import BinaryIO, Callable

from rtsched.errors import InputError, RtschedError

TMP_MARK = ".tmp-"
COPY_CHUNK = 1 << 20  # bytes per write() when copying into a special file


class WriteError(RtschedError, OSError):
    """A file could not be written (full disk, quota, I/O error, a path that must not be written).

    An ``OSError`` too (``errno`` kept), so code that catches ``OSError`` still does; its message
    is one line naming the file."""

    def __init__(self, path: str | os.PathLike, reason: str, code: int | None = None) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        OSError.__init__(self, code if code is not None else 0, reason)
        self.errno = code
        self.filename = self.path

    def __str__(self) -> str:
        return f"{self.path}: cannot write: {self.reason}"


# why a write failed, said so that a user knows what to do; other errors use the system's words
_REASONS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "no space left: disk quota exceeded",
    errno.EFBIG: "file too large for the file system",
    errno.EIO: "input/output error (the device failed)",
    errno.EROFS: "read-only file system",
}


def _write_error(path: Path, exc: OSError, written: str) -> WriteError:
    reason = _REASONS.get(exc.errno) or (exc.strerror or str(exc)).lower()
    return WriteError(path, f"{reason} ({written})", exc.errno)


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


def _through_proc(path: Path) -> bool:
    """Whether following ``path``'s chain of links passes through ``/proc`` (``/dev/stdout`` ->
    ``/proc/self/fd/1``): a process's open file, to be written through, never replaced."""
    current = str(path)
    for _ in range(40):  # the kernel's own limit on nested links
        if not os.path.islink(current):
            return False
        current = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(current)), os.readlink(current)))
        if current == "/proc" or current.startswith("/proc/"):
            return True
    return False


def target_kind(path: str | os.PathLike) -> str:
    """What writing ``path`` does: ``"replace"`` (regular file or new path: atomic replacement),
    ``"direct"`` (character device, FIFO, a process's open file: written to directly) or
    ``"refuse"`` (block device, socket)."""
    try:
        mode = os.stat(path).st_mode  # follows links
    except (FileNotFoundError, NotADirectoryError):
        return "replace"
    if stat.S_ISREG(mode):
        return "direct" if _through_proc(Path(path)) else "replace"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "direct"
    if stat.S_ISDIR(mode):
        return "replace"  # os.replace refuses it: IsADirectoryError, as open() would
    return "refuse"


def _replace(path: Path, writer: Callable[[Path], None]) -> None:
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


def _copy_into(tmp: Path, path: Path) -> None:
    """Copy ``tmp``'s bytes into the special file ``path`` (opened for writing, never created;
    appending, so that ``/dev/stdout`` redirected to a file adds to it instead of writing over
    what is already there)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        with open(tmp, "rb") as src:
            while chunk := src.read(COPY_CHUNK):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _direct(path: Path, writer: Callable[[Path], None]) -> None:
    with tempfile.TemporaryDirectory(prefix="rtsched-out-") as folder:
        tmp = Path(folder) / path.name
        try:
            writer(tmp)
        except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError):
            raise
        except OSError as exc:
            raise _write_error(path, exc, f"while making it in the temporary folder {folder}; "
                                          "nothing written") from exc
        try:
            _copy_into(tmp, path)
        except OSError as exc:
            raise _write_error(path, exc, "not all of it was written") from exc


def atomic_write(path: str | os.PathLike, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp)`` to fill a temporary file, then put it at ``path`` (see the module's
    docstring: replaced atomically if a regular file or new, written into if a character device
    or FIFO).  Raises ``WriteError`` naming ``path`` on any other ``OSError`` while writing
    (a missing folder or no permission keep their own ``OSError`` subclass)."""
    path = Path(path)
    kind = target_kind(path)
    if kind == "refuse":
        what = "a block device" if stat.S_ISBLK(os.stat(path).st_mode) else "a socket"
        raise WriteError(path, f"it is {what}, not a file; give a file name")
    if kind == "direct":
        _direct(path, writer)
        return path
    if path.is_symlink():
        path = Path(os.path.realpath(path))  # write the file the link points to; keep the link
    try:
        _replace(path, writer)
    except (WriteError, FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError):
        raise  # the command line has its own one-line messages for a missing folder, no permission
    except OSError as exc:
        raise _write_error(path, exc, "nothing written") from exc
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_stream(path: str | os.PathLike, fill: Callable[[BinaryIO], None]) -> Path:
    """``atomic_write`` for a writer that takes an open binary file: ``fill(fh)``.  Use it for
    writers that report a failed write as something else when given a name (``torch.save`` gives
    a RuntimeError, "unexpected pos", on a full disk; with a file object the OSError comes through)."""
    def writer(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            fill(fh)

    return atomic_write(path, writer)


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


def require_file(path: str | os.PathLike, option: str) -> None:
    """Raise ``InputError`` "PATH: OPTION: file not found" unless ``path`` exists: a missing input is
    bad data (exit status 1), reported the same way by every command (``rl train --trace``) and by the
    bench scripts (bench/benchcli.py)."""
    if not os.path.exists(path):
        raise InputError(f"{option}: file not found", path=str(path))


__all__ = ["require_file", "TMP_MARK", "FileLock", "LockedError", "WriteError", "atomic_write", "atomic_write_bytes",
           "atomic_write_stream", "atomic_write_text", "target_kind", "temporary_name"]
