"""What the bench scripts share with the ``rtsched`` command line: a missing input file is bad data,
reported as one line ``PROG: error: PATH: OPTION: file not found`` with exit status 1, as
``rtsched rl train --trace`` reports it (rtsched.files.require_file; rtsched.cli.common lists the
exit statuses)."""
from __future__ import annotations

import os
import sys

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


__all__ = ["BAD_DATA", "one_line_errors", "require_input"]
