"""An interrupt that lands while a solver's worker thread is being started (inside ``Thread.start`` or
HiGHS's ``startSolve``, after the thread has begun) still stops the solve before the interrupt
propagates: a process that exits under a running solver hangs or aborts (milp.stoppable)."""
from __future__ import annotations

import threading

import pytest

from milp import stoppable


def test_run_stoppable_stops_a_call_begun_while_the_thread_was_starting(monkeypatch):
    began, stopped, returned = threading.Event(), threading.Event(), threading.Event()

    def call():  # an unlimited solve: returns only when asked to stop
        began.set()
        stopped.wait()
        returned.set()
        return "stopped"

    real_start = threading.Thread.start

    def start_then_interrupt(self):  # the signal arrives once the worker is inside the call
        real_start(self)
        assert began.wait(30)
        raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", start_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        stoppable.run_stoppable(call, stopped.set)
    assert stopped.is_set(), "the interrupt propagated without asking the solver to stop"
    assert returned.is_set(), "the interrupt propagated while the call still ran"


def test_run_stoppable_skips_a_call_not_yet_begun(monkeypatch):
    calls = []
    real_start = threading.Thread.start

    def interrupt_before_the_worker_runs(self):
        worker = self._target  # hold the worker back until the handler has run
        gate = threading.Event()
        self._target = lambda: (gate.wait(30), worker())
        real_start(self)
        try:
            raise KeyboardInterrupt
        finally:
            real_start(threading.Timer(0.2, gate.set))  # Timer is a Thread: its start is patched too

    monkeypatch.setattr(threading.Thread, "start", interrupt_before_the_worker_runs)
    with pytest.raises(KeyboardInterrupt):
        stoppable.run_stoppable(lambda: calls.append(1), lambda: None)
    threading.Event().wait(0.6)  # the held-back worker runs now: it must not start the call
    assert calls == []


def test_highs_interrupt_inside_start_solve_cancels_and_waits(monkeypatch):
    highspy = pytest.importorskip("highspy")
    from milp.linmodel import run_interruptible

    h = highspy.Highs()
    state = {"cancelled": False, "waits": 0}

    def start_solve():
        raise KeyboardInterrupt  # the solver thread exists, its object never reached the caller

    def cancel():
        state["cancelled"] = True

    def wait(timeout=-1.0):  # the solver returns two polls after the cancel
        state["waits"] += state["cancelled"]
        return (state["waits"] >= 2, None)

    monkeypatch.setattr(h, "startSolve", start_solve)
    monkeypatch.setattr(h, "cancelSolve", cancel)
    monkeypatch.setattr(h, "wait", wait)
    with pytest.raises(KeyboardInterrupt):
        run_interruptible(h)
    assert state["cancelled"] and state["waits"] >= 2
