"""An interrupted ``rtsched`` process ends with exit status 130 and its one line, whatever happens
after the first signal (rtsched.cli.interrupts).

A suite run on a loaded machine once saw ``rtsched solve`` print "interrupted" and then die of SIGINT
(-2): the SIGTERM had landed inside SciPy's import, in code run by ``exec`` of a string, and CPython then
ends a ``python -m`` process with SIGINT.  These tests provoke each such case on purpose, with no timing:
the child sends its signals to itself (``signal.raise_signal`` runs the handler before it returns) from a
``sitecustomize`` module that replaces the ``solve`` command."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import REPO

# Imported by the child's interpreter at start-up (``sitecustomize`` on PYTHONPATH): ``rtsched solve``
# becomes a command that stops itself with SIGTERM as RTSCHED_TEST_STOP says (comma-separated):
#   exec     the SIGTERM lands in code run by exec() of a string (as in SciPy's import);
#   cleanup  while the interrupt unwinds, a `finally` block receives SIGTERM and SIGINT, then writes
#            RTSCHED_TEST_MARK (clean-up must run to its end);
#   late     at exit (atexit), after the one line was printed, SIGTERM and SIGINT arrive again.
HOOK = '''
import atexit, os, signal
from pathlib import Path

import rtsched.cli.offline as offline

STOP = os.environ["RTSCHED_TEST_STOP"].split(",")


def _signal_self(*signums):
    for signum in signums:
        signal.raise_signal(signum)


def stopping_command(args):
    if "late" in STOP:
        atexit.register(_signal_self, signal.SIGTERM, signal.SIGINT)
    try:
        if "exec" in STOP:
            exec("import signal; signal.raise_signal(signal.SIGTERM)")
        else:
            _signal_self(signal.SIGTERM)
    finally:
        if "cleanup" in STOP:
            _signal_self(signal.SIGTERM, signal.SIGINT)
            Path(os.environ["RTSCHED_TEST_MARK"]).write_text("clean-up finished")
    raise AssertionError("SIGTERM did not interrupt the command")


offline.cmd_solve = stopping_command
'''

INSTANCE = REPO / "traces" / "instances" / "table3-00.json"


def _interrupted_solve(tmp_path: Path, stop: str) -> subprocess.CompletedProcess:
    (tmp_path / "sitecustomize.py").write_text(HOOK)
    env = {**os.environ, "RTSCHED_TEST_STOP": stop, "RTSCHED_TEST_MARK": str(tmp_path / "mark"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "rtsched", "solve", str(INSTANCE)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("stop", ["plain", "exec", "cleanup", "late", "exec,cleanup,late"])
def test_an_interrupted_process_exits_130_with_one_line(tmp_path, stop):
    proc = _interrupted_solve(tmp_path, stop)
    # before the fix: "exec" ended by SIGINT (-2), "late" by SIGTERM (-15)
    assert (proc.returncode, proc.stderr) == (130, "rtsched solve: interrupted\n"), stop
    if "cleanup" in stop:  # the second and third signals did not cut the clean-up short
        assert (tmp_path / "mark").read_text() == "clean-up finished"


def test_the_process_entry_points_are_run():
    """The console script and ``python -m rtsched`` both end the process through ``rtsched.cli.run``
    (``main`` is for callers in the same process and restores the handlers it found)."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["rtsched"] == "rtsched.cli:run"
    assert "run()" in (REPO / "rtsched" / "__main__.py").read_text()


# ------------------------------------------------------------------ the rule, in this process
# The handler is called as the interpreter calls it; no signal is sent (a pytest-xdist worker that
# received one would die with the test).

def _raises(handler) -> bool:
    try:
        handler(signal.SIGTERM, None)
    except KeyboardInterrupt:
        return True
    return False


def _handler_raises(while_handling: BaseException | None) -> bool:
    """Whether the SIGTERM handler ``interrupting_signals`` installs raises KeyboardInterrupt when
    called while ``while_handling`` is being handled (None: no error)."""
    from rtsched.cli.interrupts import interrupting_signals

    outer = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with interrupting_signals():
            handler = signal.getsignal(signal.SIGTERM)
            if while_handling is None:
                return _raises(handler)
            try:
                raise while_handling
            except BaseException:
                return _raises(handler)
    finally:
        signal.signal(signal.SIGTERM, outer)


def test_a_signal_interrupts_unless_an_interrupt_is_being_handled():
    assert _handler_raises(None)
    assert not _handler_raises(KeyboardInterrupt())  # the command is already stopping
    # an interrupt a library turned into another error that a caller handles: the next one still stops it
    assert _handler_raises(ImportError("initialization failed"))


def test_after_the_report_every_signal_is_ignored_and_main_restores_the_handlers():
    from rtsched.cli.interrupts import interrupting_signals, mark_reported

    outer = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with interrupting_signals():
            handler = signal.getsignal(signal.SIGTERM)
            mark_reported()
            handler(signal.SIGTERM, None)  # no KeyboardInterrupt
        after = signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, outer)
    assert after is signal.SIG_DFL
