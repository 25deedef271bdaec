"""Traces for the RL agents: a cleaned job list plus the per-job fields the papers' features use.

The RL papers (seeds 000 and 003) clean an SWF trace in a particular way and feed the agents
fields the core ``Job`` model does not carry (requested memory, executable id, processors as
requested).  ``RLTrace`` keeps both: ``jobs`` (core ``Job`` objects, what the simulator runs) and
NumPy columns for observation building.

Cleaning rules (seed 003 §2 "[C] details", the issue's compatibility mode):

* processors = max(requested, allocated) (SWF fields 8 and 5);
* requested time −1 → the actual runtime (so on the Lublin traces estimates are perfect);
* runtime ≤ 0 → dropped (the authors' loader first turns −1 into 10 s; ``negative_runtime=10``
  reproduces that);
* a requested time of 0 is raised to 1 s (the core needs walltime ≥ 1);
* nodes = ceil(processors / (MaxProcs / MaxNodes)) from the SWF header (processors when either is
  missing), and the cleaned jobs keep the trace's order (by job number), 0-based.

``rtsched.io.swf.read_swf`` is the project's general SWF reader (written elsewhere); this module has
its own small parser because the compatibility mode needs exactly these rules and the extra
columns.  Times stay absolute (trace seconds), as in the authors' simulator.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from rtsched.errors import InputError
from rtsched.jobs import Job, Workload


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
                        max_nodes=self.max_nodes)

    def simulator(self, start: int, length: int, machine):
        """A core simulator of jobs [start, start + length) in RLScheduler's event order.  The jobs'
        ``JobInfo`` records are built once per trace and reused by every window (an RL run builds
        one simulator per episode)."""
        from rtsched.sim.core import Simulator

        wl = self.window(start, length)
        infos = self.cache.get("job_infos")
        if infos is None:
            from rtsched.sim.state import JobInfo

            jobs = self.jobs
            # Workload keeps jobs sorted by (submit, id): slices of a trace in that order keep it.
            in_order = all((a.submit, a.id) < (b.submit, b.id) for a, b in zip(jobs, jobs[1:]))
            infos = [JobInfo.of(j) for j in jobs] if in_order else False
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


def _header_int(header: dict[str, str], key: str) -> int:
    try:
        return int(float(header.get(key, "0").split()[0]))
    except (ValueError, IndexError):
        return 0


def read_rl_trace(path: str, *, negative_runtime: int | None = None, name: str | None = None) -> RLTrace:
    """Parse an SWF file with the RL papers' cleaning rules (module docstring).

    Raises InputError naming the file, line and field on malformed input.
    """
    header: dict[str, str] = {}
    rows: list[tuple[int, ...]] = []
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read trace: {exc}", path=path) from exc
    with fh:
        for lineno, line in enumerate(fh, 1):
            s = line.strip()
            if not s:
                continue
            if s.startswith(";"):
                key, sep, value = s[1:].partition(":")
                if sep:
                    header[key.strip()] = value.strip()
                continue
            parts = s.split()
            if len(parts) < 14:
                raise InputError(f"expected at least 14 SWF fields, found {len(parts)}", path=path, line=lineno)
            try:
                vals = [int(float(p)) for p in parts[:14]]
            except ValueError as exc:
                raise InputError(f"non-numeric SWF field: {exc}", path=path, line=lineno) from exc
            rows.append((lineno, *vals))
    max_nodes = _header_int(header, "MaxNodes")
    max_procs = _header_int(header, "MaxProcs")
    if max_procs <= 0:
        max_procs = max_nodes
    ppn = max_procs / max_nodes if max_nodes > 0 and max_procs > 0 else 1.0
    rows.sort(key=lambda r: r[1])  # by job number, as the authors' loader
    jobs: list[Job] = []
    cols: dict[str, list[int]] = {k: [] for k in ("procs", "memory", "user", "group", "executable")}
    for lineno, jid, submit, _wait, run, alloc, _cpu, _mem, req, reqt, reqmem, _st, user, group, exe in rows:
        if run < 0 and negative_runtime is not None:
            run = negative_runtime
        if run <= 0:
            continue
        procs = max(alloc, req)
        if procs < 1:
            raise InputError(f"job {jid}: no processor count (allocated {alloc}, requested {req})", path=path,
                             line=lineno, field="processors")
        walltime = run if reqt == -1 else max(reqt, 1)
        if submit < 0:
            raise InputError(f"job {jid}: negative submit time {submit}", path=path, line=lineno, field="submit")
        nodes = int(math.ceil(procs / ppn)) if ppn != 1.0 else procs
        jobs.append(Job(jid, submit, run, walltime, nodes, user=user, group=group))
        cols["procs"].append(procs)
        cols["memory"].append(reqmem)
        cols["user"].append(user)
        cols["group"].append(group)
        cols["executable"].append(exe)
    if not jobs:
        raise InputError("no usable jobs (every runtime <= 0?)", path=path)
    if max_nodes <= 0:
        max_nodes = max(j.nodes for j in jobs)
        max_procs = max(max_procs, max(cols["procs"]))
    return _build(name or os.path.splitext(os.path.basename(path))[0], jobs, max_nodes, max_procs, cols, path,
                  header)


def _build(name, jobs, max_nodes, max_procs, cols, path, header) -> RLTrace:
    i64 = np.int64
    return RLTrace(
        name=name, jobs=jobs, max_nodes=int(max_nodes), max_procs=int(max_procs),
        submit=np.array([j.submit for j in jobs], dtype=i64),
        runtime=np.array([j.runtime for j in jobs], dtype=i64),
        walltime=np.array([j.walltime for j in jobs], dtype=i64),
        procs=np.array(cols["procs"], dtype=i64), nodes=np.array([j.nodes for j in jobs], dtype=i64),
        memory=np.array(cols["memory"], dtype=i64), user=np.array(cols["user"], dtype=i64),
        group=np.array(cols["group"], dtype=i64), executable=np.array(cols["executable"], dtype=i64),
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
