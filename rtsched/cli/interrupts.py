"""How Ctrl-C and SIGTERM stop an ``rtsched`` command, and how its process then ends.

While a command runs (:func:`interrupting_signals`), SIGTERM (``timeout``, batch systems) and SIGINT
(Ctrl-C) raise ``KeyboardInterrupt`` in the main thread.  The command stops what it is doing (a solver
is asked to stop and waited for, grid workers are terminated, finished runs and epochs are kept) and
the command line reports one line and exit status 130.  Every long-running command (``solve``,
``compare``, ``experiment run``, ``rl train``) is stopped this one way.

The first signal decides the outcome; later ones cannot change it into a death by signal:

* A signal that arrives while a ``KeyboardInterrupt`` is being handled (an ``except`` or ``finally``
  block on its way up: a solver being waited for, workers being terminated, a temporary file being
  removed) is ignored, so the clean-up it would cut short runs to its end.  A signal while some other
  error is handled still interrupts: an interrupt that a library turned into an ``ImportError`` and
  that a caller took for a missing back end must not leave the command running unstoppably.
* Once the interruption is reported (:func:`mark_reported`), every later signal is ignored, and a
  process that ends (:func:`leave`) keeps them ignored until it is gone (Python drops its own
  handlers while it shuts down; an ignored signal stays ignored).
* CPython marks a ``KeyboardInterrupt`` as unhandled when it passes out of code that ``exec`` or
  ``eval`` ran from a string (``run_eval_code_obj`` in Python/pythonrun.c), even if a caller catches
  it later, and a process started as ``python -m`` then kills itself with SIGINT after its clean exit
  (``Py_RunMain``).  SciPy's import runs ``exec("from numpy import *")`` (scipy._lib.array_api_compat),
  so a SIGTERM during ``rtsched solve``'s imports ended the process with -2 instead of 130: once in a
  loaded test run, 8 of 40 times with the signal sent 0.5-1.6 s after the start.  Every ``exec`` of a
  string clears that mark as it starts, so :func:`leave` runs an empty one.
"""
from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from typing import Iterator, NoReturn

INTERRUPTED = 130  # exit status of a command stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it)

# The signals that stop a command, each with the handler Python starts with (only that one is replaced:
# a handler someone else installed, pytest-xdist's for one, is theirs).
STOPPING_SIGNALS = {signal.SIGTERM: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler}


class _State:
    """This process's interruption: ``received``, a signal reached the running command;
    ``reported``, the command line has reported it (nothing is left to interrupt)."""

    received = False
    reported = False


def _interrupt(signum, frame) -> None:
    if _State.reported or isinstance(sys.exc_info()[1], KeyboardInterrupt):
        return  # the command is already stopping (see the module's docstring)
    _State.received = True
    raise KeyboardInterrupt


def interrupt_received() -> bool:
    """Whether SIGTERM or Ctrl-C reached the running command.  The ``KeyboardInterrupt`` they raise can
    land inside a C extension's import (OR-Tools' pybind11 modules turn it into "ImportError:
    initialization failed"): whatever error the interruption caused, the user asked the command to stop."""
    return _State.received


def mark_reported() -> None:
    """The interruption is being reported: from now on every signal is ignored.  Call it in the
    ``except KeyboardInterrupt`` block that reports it (where signals are already ignored)."""
    _State.reported = True


@contextmanager
def interrupting_signals(*, process_ends: bool = False) -> Iterator[None]:
    """SIGTERM and Ctrl-C raise ``KeyboardInterrupt`` inside (each where Python's own handler is in
    place).  On leaving, the handlers before are put back (callers in the same process: tests), or,
    with ``process_ends`` after an interruption, the signals stay ignored until the process is gone."""
    _State.received = _State.reported = False
    installed = [signum for signum, start in STOPPING_SIGNALS.items() if signal.getsignal(signum) is start]
    for signum in installed:
        signal.signal(signum, _interrupt)
    try:
        yield
    finally:
        ignore = process_ends and (_State.received or _State.reported)
        for signum in installed:
            signal.signal(signum, signal.SIG_IGN if ignore else STOPPING_SIGNALS[signum])


def leave(status: int) -> NoReturn:
    """End the process with ``status``: a command that returned a status handled every interrupt."""
    exec("")  # clears CPython's unhandled-KeyboardInterrupt mark (see the module's docstring)
    sys.exit(status)


__all__ = ["INTERRUPTED", "interrupting_signals", "interrupt_received", "mark_reported", "leave"]
