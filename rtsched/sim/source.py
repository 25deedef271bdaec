"""What the core reads of a workload's jobs: per-job integers and, per job, its ``JobInfo``.

From the ``Job`` objects of a workload, or, while a reader's workload has not built them
(``Workload.table``), straight from its columns: then a run builds no ``Job`` object at all, and
the per-job integers the event loop reads (submit, runtime, allocation size) are machine integers
(``array('q')``, 8 bytes a value) instead of a list of Python ints (8 bytes a pointer and about 32
an int).  ``infos(lo, hi)`` builds the ``JobInfo`` of a range of jobs, so that a simulator that
lets finished jobs go (``Simulator(forget_done=True)``) builds them a chunk at a time as jobs arrive.
"""
from __future__ import annotations

from array import array
from itertools import repeat
from operator import attrgetter

import numpy as np

from rtsched.errors import InfeasibleError
from rtsched.jobs import BATCH, RT, Workload, shared_ints
from rtsched.machines.base import Machine
from rtsched.sim.state import JobInfo

_nodes_of = attrgetter("nodes")
_runtime_of = attrgetter("runtime")
_submit_of = attrgetter("submit")
_id_of = attrgetter("id")
_KINDS = np.array([BATCH, RT], dtype=object)  # is_rt -> kind


class JobSource:
    """The jobs of ``workload`` as the core reads them (module docstring).

    Attributes:
        n: the number of jobs.
        submit, runtime: s, per job in workload order (indexable: a list or an ``array('q')``).
        alloc_nodes: the nodes ``machine`` allocates to each job (``Machine.allocated_sizes``).

    Raises InfeasibleError for a job larger than ``machine``; ValueError when ``job_infos`` (the
    ``JobInfo`` of every job, from a caller that keeps them: an RL trace) does not describe the jobs.
    """

    __slots__ = ("n", "submit", "runtime", "alloc_nodes", "_ids", "_table", "_jobs", "_infos", "_index")

    def __init__(self, workload: Workload, machine: Machine, job_infos: list[JobInfo] | None = None) -> None:
        table = workload.table
        self._index: dict[int, int] | int | None = None  # id -> position (index_of), built on first use
        if table is not None and job_infos is None:
            # the column arrays, not their owner: they stay here if it lets them go (JobColumns.release)
            self._table = {name: getattr(table, name) for name in ("id", "submit", "walltime", "nodes", "is_rt",
                                                                   "user", "group", "queue", "checkpointable")}
            self._jobs = None
            self.n = len(table)
            self._ids = table.id
            self.submit = _machine_ints(table.submit)
            self.runtime = _machine_ints(table.runtime)
            self.alloc_nodes = _allocated_sizes(workload, machine, table.nodes)
            self._infos = None
            return
        jobs = workload.jobs
        self._table = None
        self._jobs = jobs
        self.n = len(jobs)
        self._ids = None
        # Per-job set-up in C-level loops (map): an RL environment builds one simulator per episode.
        alloc_nodes = machine.allocated_sizes(list(map(_nodes_of, jobs)))
        if alloc_nodes is None:
            job = next(j for j in jobs if not machine.fits(j.nodes))
            raise InfeasibleError(
                f"{workload.name}: job {job.id} requests {job.nodes} nodes, more than {machine.describe()} has")
        self.alloc_nodes = alloc_nodes
        self.runtime = list(map(_runtime_of, jobs))
        self.submit = list(map(_submit_of, jobs))  # read at every event time
        if job_infos is not None and (len(job_infos) != len(jobs) or (jobs and job_infos[0].id != jobs[0].id)):
            raise ValueError("job_infos must describe workload.jobs, in order")
        self._infos = job_infos

    def infos(self, lo: int, hi: int) -> list[JobInfo]:
        """The ``JobInfo`` of jobs ``lo`` .. ``hi - 1``."""
        if self._infos is not None:
            return self._infos[lo:hi]
        if self._jobs is not None:
            return list(map(JobInfo.of, self._jobs[lo:hi]))
        c = self._table
        fields = (c["id"][lo:hi].tolist(), c["submit"][lo:hi].tolist(), shared_ints(c["walltime"][lo:hi]),
                  shared_ints(c["nodes"][lo:hi]), _KINDS[c["is_rt"][lo:hi].astype(np.intp)].tolist(),
                  shared_ints(c["user"][lo:hi]), shared_ints(c["group"][lo:hi]), c["queue"][lo:hi].tolist(),
                  c["checkpointable"][lo:hi].tolist())
        # tuple.__new__ in a C loop: JobInfo(...) field by field, without its Python-level __new__
        return list(map(tuple.__new__, repeat(JobInfo, hi - lo), zip(*fields)))

    def ids(self) -> list[int]:
        """Every job's id, in order."""
        return self._ids.tolist() if self._jobs is None else list(map(_id_of, self._jobs))

    def index_of(self, job_id: int) -> int | None:
        """The position of job ``job_id`` (None: no such job).  Consecutive ids (most traces) need
        no table; others a dict, built on the first call."""
        index = self._index
        if index is None:
            ids = np.asarray(self._ids) if self._jobs is None else np.fromiter(
                map(_id_of, self._jobs), dtype=np.int64, count=self.n)
            if self.n and int(ids[-1]) - int(ids[0]) == self.n - 1 and bool((ids[1:] > ids[:-1]).all()):
                index = self._index = int(ids[0])  # consecutive: position = id - first id
            else:
                index = self._index = dict(zip(ids.tolist(), range(self.n)))
        if type(index) is int:
            k = job_id - index
            return k if 0 <= k < self.n else None
        return index.get(job_id)


def _machine_ints(column: np.ndarray) -> array:
    """An int64 column as an ``array('q')`` (indexing gives Python ints, as a list does)."""
    return array("q", np.ascontiguousarray(column, dtype=np.int64).tobytes())


def first_too_big(machine: Machine, nodes: np.ndarray) -> int | None:
    """The position of the first job of a nodes column that ``machine`` cannot hold (None: every
    job fits); one ``machine.fits`` call per distinct size."""
    distinct = np.unique(nodes)
    fits = np.array([machine.fits(n) for n in distinct.tolist()], dtype=bool)
    if fits.all():
        return None
    return int(np.flatnonzero(~fits[np.searchsorted(distinct, nodes)])[0])


def _allocated_sizes(workload: Workload, machine: Machine, nodes: np.ndarray) -> array:
    """``machine.allocated_sizes`` of a nodes column: computed once per distinct size."""
    distinct = np.unique(nodes)
    sizes = machine.allocated_sizes(distinct.tolist())
    if sizes is None:
        first = first_too_big(machine, nodes)
        raise InfeasibleError(f"{workload.name}: job {int(workload.table.id[first])} requests {int(nodes[first])} "
                              f"nodes, more than {machine.describe()} has")
    return _machine_ints(np.asarray(sizes, dtype=np.int64)[np.searchsorted(distinct, nodes)])
