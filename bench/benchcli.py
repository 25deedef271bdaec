"""What the bench scripts share with the ``rtsched`` command line: a missing input file is bad data,
reported as one line ``PROG: error: PATH: OPTION: file not found`` with exit status 1, as
``rtsched rl train --trace`` reports it (rtsched.files.require_file; rtsched.cli.common lists the
exit statuses); and how they name policies and model files in their tables (``unique_labels``)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from rtsched.errors import RtschedError
from rtsched.files import require_file

BAD_DATA = 1  # the command line's exit status for an RtschedError (a missing or malformed input)


def require_input(prog: str, path: str | os.PathLike, option: str = "--trace") -> None:
    """Exit with the command line's one-line error and status unless ``path`` exists."""
    try:
        require_file(path, option)
    except RtschedError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        raise SystemExit(BAD_DATA) from None


def one_line_errors(prog: str, main) -> int:
    """Run ``main()``; a bad option or input (an ``RtschedError``, e.g. an unknown policy or policy
    option) ends with the command line's one-line error and status ``BAD_DATA``, not a traceback."""
    try:
        return main()
    except RtschedError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return BAD_DATA


def seed_list(text: str) -> list[int]:
    """Seeds written as ``A-B`` ranges and single values, comma-separated (``9001-9003,9010``)."""
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def unique_labels(names: list[str]) -> dict[str, str]:
    """Each policy name or model path → its table label: the shortest tail of its path that no other
    name shares (``runs/a/round-3.pt`` and ``runs/b/round-3.pt`` stay ``a/round-3.pt`` and
    ``b/round-3.pt``; a name without ``/``, such as ``wcjs-jit:priority=sjf,backfill=sjf``, is itself)."""
    parts = {n: Path(n).parts or (n,) for n in names}
    labels = {}
    for n in names:
        p = parts[n]
        for k in range(1, len(p) + 1):
            label = "/".join(p[-k:])
            if all(o == n or "/".join(parts[o][-k:]) != label for o in parts):
                break
        labels[n] = label
    return labels


__all__ = ["BAD_DATA", "one_line_errors", "require_input", "seed_list", "unique_labels"]
