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
import signal
import sys
from typing import Sequence

from rtsched.version import __version__
from rtsched.cli import experiment, offline, rl, simulate, traces
from rtsched.cli.common import UsageError
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


class _Interruption:
    """Whether SIGTERM or Ctrl-C reached this command.  The KeyboardInterrupt they raise can land
    inside a C extension's import (OR-Tools' pybind11 modules turn it into "ImportError:
    initialization failed", which a caller may report as a missing back end): whatever error the
    interruption caused, the user asked the command to stop, and is told so."""

    received = False


def _terminated(signum, frame):
    _Interruption.received = True
    raise KeyboardInterrupt  # SIGTERM (timeout, batch systems) is handled like Ctrl-C


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
    for variable in BLAS_THREAD_VARIABLES:  # before NumPy is imported (the commands import it lazily)
        os.environ.setdefault(variable, "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    name = command_name(args)
    previous = signal.getsignal(signal.SIGTERM)
    if previous in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _terminated)
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, _terminated)
    _Interruption.received = False
    try:
        return _run(args, name)
    finally:
        if previous in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if previous_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _run(args: argparse.Namespace, name: str) -> int:
    """Run the parsed command and turn its failures into one line and an exit status."""
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if _Interruption.received:  # an error the interruption caused (see _Interruption)
            print(f"{name}: interrupted", file=sys.stderr)
            return 130
        return _report(exc, name)


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


__all__ = ["build_parser", "main"]
