"""Traces for the RL agents: a cleaned job list plus the per-job fields the papers' features use.

The RL papers (seeds 000 and 003) clean an SWF trace in a particular way and feed the agents
fields the core ``Job`` model does not carry (requested memory, executable id, processors as
requested).  ``RLTrace`` keeps both: ``jobs`` (core ``Job`` objects, what the simulator runs) and
NumPy columns for observation building.

The trace is read by the project's one SWF reader, ``rtsched.io.read_swf_table``, with
RLScheduler's cleaning as the named options ``RL_CLEANING`` (seed 003 §2 "[C] details", the
issue's compatibility mode):

* processors = max(requested, allocated) (SWF fields 8 and 5): ``procs="max"``;
* requested time −1 → the actual runtime (so on the Lublin traces estimates are perfect):
  ``walltime_from_runtime=True``; a requested time of 0 is raised to 1 s (the core needs
  walltime ≥ 1): ``requested_time_zero="one_second"``;
* runtime ≤ 0 → dropped (the authors' loader first turns −1 into 10 s; ``negative_runtime=10``
  reproduces that: ``unknown_runtime=10``); a runtime above the walltime is kept as it is;
* nodes = ceil(processors / (MaxProcs / MaxNodes)) from the SWF header (processors when either is
  missing): ``procs_per_node="header_if_known"``;
* the cleaned jobs keep the trace's order (by job number), 0-based.

The reader validates every line (``docs/formats.md``): a line that is not 18 numbers, a
fractional processor count, a negative value other than −1, a value above the documented
maxima or a job larger than the machine is an ``InputError`` naming the file, line and field.
Times stay absolute (trace seconds), as in the authors' simulator.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

import numpy as np

from rtsched.io.swf import SwfOptions, read_swf_table
from rtsched.jobs import Job, Workload

# RLScheduler's cleaning of an SWF trace (module docstring).
RL_CLEANING = SwfOptions(procs="max", procs_per_node="header_if_known", walltime_from_runtime=True,
                         requested_time_zero="one_second", runtime_above_walltime="keep",
                         drop_nonpositive_runtime=True)
# RLTrace column <- read_swf_table column
_RL_COLUMNS = {"procs": "processors", "memory": "requested memory", "user": "user id", "group": "group id",
               "executable": "executable id"}


@dataclass
class RLTrace:
    """A cleaned trace.  Columns are NumPy arrays aligned with ``jobs`` (0-based positions)."""

    name: str
    jobs: list[Job]
    max_nodes: int  # machine size in nodes (SWF MaxNodes)
    max_procs: int  # machine size in processors (SWF MaxProcs, = MaxNodes when absent)
    submit: np.ndarray
    runtime: np.ndarray
    walltime: np.ndarray
    procs: np.ndarray
    nodes: np.ndarray
    memory: np.ndarray  # requested memory per processor, −1 when unknown
    user: np.ndarray
    group: np.ndarray
    executable: np.ndarray
    path: str | None = None
    header: dict[str, str] = field(default_factory=dict)
    cache: dict = field(default_factory=dict, repr=False, compare=False)  # per-window heuristic scores

    def __len__(self) -> int:
        return len(self.jobs)

    @property
    def max_runtime(self) -> int:
        """Largest actual runtime in the trace (the papers' normaliser of requested time)."""
        return int(self.runtime.max()) if len(self.runtime) else 1

    def norms(self) -> dict[str, float]:
        """Normalisation constants of the papers' features (stored with trained models)."""
        return {
            "max_runtime": float(max(self.max_runtime, 1)),
            "max_procs": float(max(self.max_procs, 1)),
            "max_nodes": float(max(self.max_nodes, 1)),
            "max_memory": float(max(int(self.memory.max()) if len(self.memory) else 0, 1)),
            "max_user": float(max(int(self.user.max()) if len(self.user) else 0, 1)),
            "max_group": float(max(int(self.group.max()) if len(self.group) else 0, 1)),
            "max_executable": float(max(int(self.executable.max()) if len(self.executable) else 0, 1)),
        }

    def feature_norms(self, machine, norms: dict[str, float] | None = None) -> dict[str, float]:
        """The norms an environment uses: ``norms`` when given (a trained model's), else this
        trace's, with ``max_procs`` the machine's size on a partitioned machine (Mira)."""
        if norms:
            return dict(norms)
        out = self.norms()
        if machine.partitioned:
            out["max_procs"] = float(machine.total_nodes)
        return out

    def window(self, start: int, length: int) -> Workload:
        """Jobs [start, start + length) as a Workload (absolute times kept)."""
        if start < 0 or length < 1 or start + length > len(self.jobs):
            raise ValueError(f"{self.name}: window [{start}, {start + length}) outside the trace's "
                             f"{len(self.jobs)} jobs")
        return Workload(self.jobs[start:start + length], name=f"{self.name}[{start}:{start + length}]",
                        max_nodes=self.max_nodes, in_order=self.in_order())

    def in_order(self) -> bool:
        """Whether the jobs are in strict (submit, id) order, with distinct ids.  Workload keeps jobs
        sorted that way, so then every window is a plain slice of the trace, a Workload as it is
        (computed once)."""
        v = self.cache.get("in_order")
        if v is None:
            jobs = self.jobs
            v = self.cache["in_order"] = (all((a.submit, a.id) < (b.submit, b.id) for a, b in zip(jobs, jobs[1:]))
                                          and len({j.id for j in jobs}) == len(jobs))
        return v

    def simulator(self, start: int, length: int, machine):
        """A core simulator of jobs [start, start + length) in RLScheduler's event order.  The jobs'
        ``JobInfo`` records are built once per trace and reused by every window (an RL run builds
        one simulator per episode)."""
        from rtsched.sim.core import Simulator

        wl = self.window(start, length)
        infos = self.cache.get("job_infos")
        if infos is None:
            from rtsched.sim.state import JobInfo

            infos = [JobInfo.of(j) for j in self.jobs] if self.in_order() else False
            self.cache["job_infos"] = infos
        # the compatibility event order; no schedule record (speed: RL runs only read the outcomes)
        return Simulator(wl, machine, event_order="rlscheduler", record_schedule=False,
                         job_infos=infos[start:start + length] if infos else None)

    def extras(self, start: int, length: int) -> dict[int, tuple[int, int, int, int, int]]:
        """job id -> (procs, memory, user, group, executable) for a window (policies' features)."""
        sl = slice(start, start + length)
        return {j.id: (int(p), int(m), int(u), int(g), int(e)) for j, p, m, u, g, e in
                zip(self.jobs[sl], self.procs[sl], self.memory[sl], self.user[sl], self.group[sl],
                    self.executable[sl])}


def read_rl_trace(path: str, *, negative_runtime: int | None = None, name: str | None = None) -> RLTrace:
    """Read an SWF file with the RL papers' cleaning rules (module docstring).

    ``negative_runtime``: a run time of −1 (unknown) becomes this many s first (the authors use
    10); None drops such jobs.  Raises InputError naming the file, line and field on bad input.
    """
    options = RL_CLEANING if negative_runtime is None else replace(RL_CLEANING, unknown_runtime=negative_runtime)
    table = read_swf_table(path, options, fields=tuple(_RL_COLUMNS.values()), name=name, records=False)
    ids = np.fromiter((j.id for j in table.jobs), dtype=np.int64, count=len(table.jobs))
    order = np.argsort(ids, kind="stable")  # the authors' loader goes by job number
    jobs = [table.jobs[i] for i in order.tolist()]
    columns = table.columns
    cols = {key: columns.pop(field)[order] for key, field in _RL_COLUMNS.items()}
    header = table.header
    max_nodes = _header_size(header, "MaxNodes")
    max_procs = _header_size(header, "MaxProcs") or max_nodes
    if max_nodes <= 0:
        max_nodes = max(j.nodes for j in jobs)
        max_procs = max(max_procs, int(cols["procs"].max()))
    return _build(table.name, jobs, max_nodes, max_procs, cols, path, header)


def _header_size(header: dict[str, str], key: str) -> int:
    """A machine size from the SWF header; 0 when absent or unknown (the reader checked it is a number)."""
    raw = header.get(key, "").split()
    return max(int(float(raw[0])), 0) if raw else 0


def _build(name, jobs, max_nodes, max_procs, cols, path, header) -> RLTrace:
    i64 = np.int64
    n = len(jobs)
    return RLTrace(
        name=name, jobs=jobs, max_nodes=int(max_nodes), max_procs=int(max_procs),
        submit=np.fromiter((j.submit for j in jobs), dtype=i64, count=n),
        runtime=np.fromiter((j.runtime for j in jobs), dtype=i64, count=n),
        walltime=np.fromiter((j.walltime for j in jobs), dtype=i64, count=n),
        procs=np.asarray(cols["procs"], dtype=i64), nodes=np.fromiter((j.nodes for j in jobs), dtype=i64, count=n),
        memory=np.asarray(cols["memory"], dtype=i64), user=np.asarray(cols["user"], dtype=i64),
        group=np.asarray(cols["group"], dtype=i64), executable=np.asarray(cols["executable"], dtype=i64),
        path=path, header=dict(header))


def trace_from_workload(workload: Workload, *, machine_nodes: int | None = None) -> RLTrace:
    """An RLTrace over an in-memory workload (memory and executable unknown, processors = nodes)."""
    jobs = list(workload.jobs)
    if not jobs:
        raise ValueError(f"{workload.name}: empty workload")
    total = machine_nodes or workload.max_nodes or max(j.nodes for j in jobs)
    cols = {"procs": [j.nodes for j in jobs], "memory": [-1] * len(jobs), "user": [j.user for j in jobs],
            "group": [j.group for j in jobs], "executable": [-1] * len(jobs)}
    return _build(workload.name, jobs, total, total, cols, None, dict(workload.header))


def load_trace(trace) -> RLTrace:
    """An RLTrace from a path, a Workload or an RLTrace (returned as is)."""
    if isinstance(trace, RLTrace):
        return trace
    if isinstance(trace, Workload):
        return trace_from_workload(trace)
    if isinstance(trace, (str, os.PathLike)):
        return read_rl_trace(os.fspath(trace))
    raise TypeError(f"cannot make an RL trace from {type(trace).__name__}")


# The trace an environment runs on when none is given (``gymnasium.make("rtsched/JobPicking-v0")``):
# the shipped Lublin-256 sample (2,000 jobs, 256 nodes).
DEFAULT_TRACE = "lublin_256_sample.swf"


def default_rl_trace() -> RLTrace:
    """The shipped ``traces/lublin_256_sample.swf`` as an RLTrace, or, where the repository's
    ``traces/`` is absent (an installed package), the same workload generated from its seed."""
    from rtsched.generators import SHIPPED_DIR, shipped_trace

    path = SHIPPED_DIR / DEFAULT_TRACE
    if path.exists():
        return read_rl_trace(str(path))
    return trace_from_workload(shipped_trace(DEFAULT_TRACE))
