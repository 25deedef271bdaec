"""Option text to values, with the one-line errors every layer gives (``OptionError`` naming the option).

A base-layer module so that the command line and the layers below it (the RL agents' option tables)
parse lists the same way without importing each other.
"""
from __future__ import annotations

from rtsched.errors import OptionError


def int_list(text: str, option: str) -> list[int]:
    """A comma-separated list of whole numbers; an empty list (``--sizes ""``) is an error naming
    ``option``, never a silent fall-back to the default."""
    items = [x.strip() for x in str(text).split(",") if x.strip()]
    if not items:
        raise OptionError(f"{option}: no number given (got {text!r}); leave the option out for the default")
    try:
        return [int(x) for x in items]
    except ValueError:
        raise OptionError(f"{option}: expected comma-separated whole numbers, got {text!r}") from None
