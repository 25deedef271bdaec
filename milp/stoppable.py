"""Stop long solver work on Ctrl-C, SIGTERM or a deadline (issue 26): a solver's blocking call
(:func:`run_stoppable`) and a model's build (:func:`build_deadline`, :class:`BuildTimeout`).

A solver's ``Solve`` runs in C++ with the GIL released; called in the main thread it holds a
signal until it returns (Python runs signal handlers in the main thread, between bytecodes), so
an unlimited solve ignored SIGTERM for hours.  :func:`run_stoppable` runs the call in a worker
thread while the main thread waits; on ``KeyboardInterrupt`` (rtsched.cli turns SIGTERM into
one) it asks the solver to stop, waits until the call has returned, and re-raises.

Two traps, both met: (1) the waiting must not use ``Thread.join``: on CPython 3.11 a ``join``
interrupted by a signal handler's exception releases the running thread's state lock and marks it
stopped (the bpo-45274 handling in ``Thread._wait_for_tstate_lock``), so every later ``join``
returns at once while the solver still runs; the interpreter then exits under CP-SAT's worker
threads and the process dies with SIGABRT ("terminate called without an active exception").
A ``threading.Event`` set by the worker is waited on instead.  (2) A stop requested before the
solver has started its search is lost (CP-SAT's ``stop_search`` is a no-op until its solve
wrapper exists), so the stop is repeated every poll until the call returns.
"""
from __future__ import annotations

import contextvars
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")

# Seconds between two looks at the worker (and between two stop requests once one was made).
POLL_SECONDS = 0.05


def run_stoppable(call: Callable[[], T], stop: Callable[[], None], deadline: float | None = None) -> T:
    """``call()`` in a worker thread; ``stop()`` (thread-safe, asynchronous) on Ctrl-C / SIGTERM
    (then ``KeyboardInterrupt`` is re-raised once ``call`` has returned) and, with ``deadline`` (a
    ``time.perf_counter()`` value), once the deadline has passed (then ``call``'s result is
    returned: the solver reports what it has, as at its own time limit)."""
    done = threading.Event()
    box: dict[str, object] = {}
    # The interrupt can land inside ``Thread.start`` (which waits for the new thread), after the worker
    # began: whether ``call`` runs is decided under ``gate``, so the handler knows if it must stop it.
    gate = threading.Lock()
    state = {"cancelled": False, "began": False}

    def work() -> None:
        try:
            with gate:
                if state["cancelled"]:
                    return
                state["began"] = True
            box["value"] = call()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc
        finally:
            done.set()

    try:
        threading.Thread(target=work, name="solver", daemon=True).start()
        while not done.wait(POLL_SECONDS):
            if deadline is not None and time.perf_counter() >= deadline:
                stop()
    except KeyboardInterrupt:
        with gate:
            state["cancelled"] = True
            began = state["began"]
        if began:
            _stop_until_done(stop, done)
        raise
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def _stop_until_done(stop: Callable[[], None], done: threading.Event) -> None:
    """Ask the solver to stop until it has returned: a process that exits while the solver still
    runs in it aborts.  A second signal meanwhile changes nothing (the stop is under way)."""
    while True:
        try:
            stop()
            if done.wait(POLL_SECONDS):
                return
        except KeyboardInterrupt:
            continue


class BuildTimeout(TimeoutError):
    """A model's build was abandoned at its deadline (the time limit covers the build)."""


# The deadline (``time.perf_counter()``) of the model being built in this context, None: none.
_BUILD_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("build_deadline", default=None)


@contextmanager
def build_deadline(deadline: float | None) -> Iterator[None]:
    """Models built inside (``milp.linmodel.LinearModel.add`` checks) raise :class:`BuildTimeout`
    once ``deadline`` has passed; None: no deadline."""
    token = _BUILD_DEADLINE.set(deadline)
    try:
        yield
    finally:
        _BUILD_DEADLINE.reset(token)


def check_build_deadline(what: str) -> None:
    """Raise :class:`BuildTimeout` (naming ``what``) when this context's build deadline has passed."""
    deadline = _BUILD_DEADLINE.get()
    if deadline is not None and time.perf_counter() > deadline:
        raise BuildTimeout(f"{what}: its build was abandoned at the time limit")


__all__ = ["run_stoppable", "POLL_SECONDS", "BuildTimeout", "build_deadline", "check_build_deadline"]
