"""The ``rtsched`` command line.

    rtsched simulate [TRACE] [--machine M] [--policy P | --scheme S] ...     (rtsched.cli.simulate)
    rtsched traces generate|stats|convert ...                              (rtsched.cli.traces)
    rtsched experiment run|report|plot|status|merge                        (rtsched.cli.experiment)
    rtsched instances generate ... / rtsched solve ... / rtsched compare   (rtsched.cli.offline)
    rtsched rl train|evaluate|export ...                                    (rtsched.cli.rl)

Building the parser imports nothing but argparse and these small modules; each command imports
what it uses when it runs, so ``rtsched --help`` starts in a fraction of a second and a
heuristic-only command never loads PyTorch.  Exit codes and error style: ``rtsched.cli.common``.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn, Sequence

from rtsched.version import __version__
from rtsched.cli import experiment, offline, rl, simulate, traces
from rtsched.cli.common import UsageError
from rtsched.cli.interrupts import (INTERRUPTED, interrupt_received, interrupting_signals, leave,
                                     mark_reported)
from rtsched.errors import RtschedError

COMMAND_MODULES = (simulate, traces, experiment, offline, rl)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (``rtsched simulate: error: argument --tau: ...``) instead of
    the usage block, and exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="rtsched",
                                     description="Real-time and batch job scheduling on HPC machines: exact optima, "
                                                 "heuristics and RL agents in one simulator")
    parser.add_argument("--version", action="version", version=f"rtsched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def command_name(args: argparse.Namespace) -> str:
    """``rtsched COMMAND [SUBCOMMAND]`` of a parsed command line, as argparse's own errors name it
    (each command's subcommands are stored as ``COMMAND_command``)."""
    sub = getattr(args, f"{args.command}_command", None)
    return f"rtsched {args.command}" + (f" {sub}" if sub else "")


# NumPy's BLAS threads: the commands use NumPy for element-wise work only (readers, metrics), where a
# BLAS thread pool only spins: with one thread `simulate` used 0.34 s of CPU instead of 0.44 s at the
# same wall time (docs/benchmarks.md), and a grid's many processes do not fight over the cores.  A
# value the user set is kept; PyTorch's own threads are not affected.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS",)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``rtsched`` command in this process and return its exit status; the signal handlers
    are as before afterwards (callers in the same process: tests, notebooks)."""
    return _main(argv, process_ends=False)


def run() -> NoReturn:
    """The ``rtsched`` process: its console script and ``python -m rtsched``.  After an interruption
    no later signal or leftover interrupt can turn exit status 130 into a death by signal
    (rtsched.cli.interrupts)."""
    leave(_main(None, process_ends=True))


def _main(argv: Sequence[str] | None, process_ends: bool) -> int:
    for variable in BLAS_THREAD_VARIABLES:  # before NumPy is imported (the commands import it lazily)
        os.environ.setdefault(variable, "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    name = command_name(args)
    with interrupting_signals(process_ends=process_ends):
        return _run(args, name)


def _run(args: argparse.Namespace, name: str) -> int:
    """Run the parsed command and turn its failures into one line and an exit status."""
    try:
        try:
            return int(args.func(args) or 0)
        except Exception as exc:
            if not interrupt_received():
                return _report(exc, name)
            raise KeyboardInterrupt from exc  # an error the interruption caused (see interrupt_received)
    except KeyboardInterrupt:
        mark_reported()
        print(f"{name}: interrupted", file=sys.stderr)
        return INTERRUPTED


def _report(exc: Exception, name: str) -> int:
    """One line for a known failure and its exit status; anything else is raised as it is."""
    if isinstance(exc, UsageError):
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 2
    if isinstance(exc, RtschedError):
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 1
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)):
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"{name}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    if isinstance(exc, BrokenPipeError):  # the reader of our output went away (`| head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    if isinstance(exc, OSError) and exc.errno is not None:
        # a system error no writer turned into a WriteError (a folder made on a full disk, ...):
        # still one line, naming the file when the system names one
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"{name}: error: {(exc.strerror or str(exc)).lower()}{where}", file=sys.stderr)
        return 1
    raise exc  # not the system's nor ours: a library's own error, shown as it is


__all__ = ["build_parser", "main", "run"]
