"""Input files of a grid: where ``${SHARED_DATA}`` and relative paths point, the portable spelling
of a path that run keys hash, and content digests (cached per path, size and mtime)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_SUFFIXES = (".pt",)  # a policy value with one of these names a model file


def shared_data_dir() -> Path:
    """Where ``${SHARED_DATA}`` points: ``$SHARED_DATA`` if set, else ``../shared/data`` of the repo."""
    env = os.environ.get("SHARED_DATA")
    return Path(env).expanduser().resolve() if env else (REPO_ROOT.parent / "shared" / "data").resolve()


def resolve_path(text: str, base: Path | None = None) -> Path:
    """Resolve a grid path: ``${SHARED_DATA}`` (or ``$SHARED_DATA``) expanded, ``~`` expanded,
    relative paths taken from ``base`` (default: the repository root, where portable paths start)."""
    s = text.replace("${SHARED_DATA}", str(shared_data_dir())).replace("$SHARED_DATA", str(shared_data_dir()))
    p = Path(s).expanduser()
    if not p.is_absolute():
        p = (base or REPO_ROOT) / p
    return p.resolve()


def portable_path(path: Path) -> str:
    """The machine-independent spelling of a resolved path used in hashes: ``${SHARED_DATA}/...``
    in the shared data, repository-relative in the project, else the file's name alone -- the
    content's SHA-256 beside it in the run's ``inputs`` tells files apart, so a study copied with
    its traces to another folder or machine keeps its keys (before 2026-11-27 the absolute path
    was hashed; ``rtsched.experiments.migrate`` adopts such runs)."""
    path = path.resolve()
    for root, prefix in ((shared_data_dir(), "${SHARED_DATA}"), (REPO_ROOT, "")):
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue
        return f"{prefix}/{rel.as_posix()}" if prefix else rel.as_posix()
    return path.name


def is_file_machine(spec: str | None) -> bool:
    return spec is not None and spec.strip().lower().endswith(".xml")


_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_digest(path: Path) -> str:
    """SHA-256 of a file's content (cached per path, size and mtime)."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def format_from_extension(path: str) -> str | None:
    p = path.lower().removesuffix(".gz")
    return {".swf": "swf", ".log": "cobalt", ".csv": "alcf"}.get(os.path.splitext(p)[1])


def looks_like_path(name: str, base: Path) -> bool:
    """A policy value names a model file or training folder (not a registry name or a class)."""
    if name.endswith(MODEL_SUFFIXES) or "/" in name or os.sep in name or "SHARED_DATA" in name:
        return True
    return ":" not in name and resolve_path(name, base).exists()


__all__ = ["MODEL_SUFFIXES", "REPO_ROOT", "file_digest", "format_from_extension", "is_file_machine", "looks_like_path",
           "portable_path", "resolve_path", "shared_data_dir"]
