"""Training options as data: what each agent's ``options.py`` declares and ``rtsched rl train`` builds
its parser from (argparse only at the command line; this module imports nothing heavy).

An agent's ``options`` module holds:

* ``GROUP`` — the title of its group in ``rtsched rl train --help``;
* ``OPTIONS`` — the options only it takes (``TrainOption``s);
* ``USES`` — the argparse names of the shared options it takes (``SHARED`` below, and the command
  line's own: ``trace``, ``goal``, ``backfill``, ...); every other option given to it is refused,
  naming the option (an option an agent would ignore is an error, never silently dropped);
* ``WHY_NOT`` — optional reasons, by argparse name, added to such a refusal;
* ``train_options(args)`` — the keyword options of ``rtsched.rl.api.train`` from the parsed
  arguments, checked (``OptionError`` naming the option: exit status 2).

The parsing helpers below turn option text into values with the same one-line errors everywhere.
"""
from __future__ import annotations

from typing import NamedTuple

from rtsched.errors import OptionError
from rtsched.optiontext import int_list  # noqa: F401  (the agents' option tables parse lists with it)


class TrainOption(NamedTuple):
    """One ``rtsched rl train`` option.  ``kind``: ``"text"`` (a string), ``"flag"`` (store_true),
    ``"int"`` / ``"float"`` (any), ``"int>=0"``, ``"int>=1"``, ``"float>0"``, ``"float>=0"``,
    ``"float[0,1]"`` (a finite number in [0, 1]); ``bounds`` (lo, hi): an int in [lo, hi] or a float in
    (lo, hi]."""

    flags: tuple[str, ...]
    help: str
    kind: str = "text"
    default: object = None
    choices: tuple | None = None
    bounds: tuple | None = None

    @property
    def dest(self) -> str:
        """The argparse name: the first long flag, without dashes."""
        return self.flag[2:].replace("-", "_")

    @property
    def flag(self) -> str:
        """The first long flag (``--out`` of ``--out``/``--model-dir``, ``--jobs`` of ``-j``/``--jobs``)."""
        return next(f for f in self.flags if f.startswith("--"))


def pair(text: str | None, option: str, cast=float):
    """``LO,HI`` as two values (None stays None); OptionError naming ``option`` otherwise."""
    if text is None:
        return None
    parts = text.split(",")
    if len(parts) != 2:
        raise OptionError(f"{option}: expected LO,HI, got {text!r}")
    try:
        return tuple(cast(p) for p in parts)
    except ValueError:
        raise OptionError(f"{option}: expected two numbers LO,HI, got {text!r}") from None


def start_range(text: str | None):
    """``LO,HI`` as job indices (integers) or trace fractions (numbers with a point)."""
    if text is None:
        return None
    lo, hi = pair(text, "--start-range", str)
    conv = (lambda v: float(v)) if ("." in lo or "." in hi) else (lambda v: int(v))
    try:
        return (conv(lo), conv(hi))
    except ValueError:
        raise OptionError(f"--start-range: expected LO,HI, got {text!r}") from None


def given(args, names) -> dict:
    """The options among ``names`` that the command line set (not None), by argparse name."""
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


__all__ = ["TrainOption", "given", "int_list", "pair", "start_range"]
