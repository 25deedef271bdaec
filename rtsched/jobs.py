"""The job and workload model (DESIGN.md "Semantics").

All times are integer seconds. ``runtime`` is the actual run time (known only to the
simulator's completion events and to offline solvers); ``walltime`` is the user's requested
estimate, the only duration an online policy may look at.
"""
from __future__ import annotations

from collections import deque
from dataclasses import InitVar, dataclass, field, replace
from itertools import repeat
from operator import attrgetter
from typing import Iterable, Iterator, Literal, Sequence

import numpy as np

JobKind = Literal["rt", "batch"]
RT: JobKind = "rt"
BATCH: JobKind = "batch"
JOB_KINDS: tuple[JobKind, ...] = (RT, BATCH)

# The largest submit time, runtime or walltime a Job may carry, s: 10^10 s, about 317 years.
# Relative traces span at most decades, and absolute Unix times stay below it until the year
# 2286.  The bound keeps the times the simulator computes (submit + walltime + checkpoint
# overheads, summed over a queue of jobs) about 10^8 times below its "no event" sentinel,
# 2**62 s (rtsched/sim/core.py), and nodes x seconds inside int64.  The readers refuse larger
# values, naming the file, line and field (docs/formats.md).
MAX_TIME_S = 10**10


@dataclass(frozen=True, slots=True)
class Job:
    """One rigid job.

    Attributes:
        id: unique integer id inside a workload.
        submit: submission time, s (0 ..= MAX_TIME_S).
        runtime: actual run time, s (1 ..= MAX_TIME_S).
        walltime: requested time, s (1 ..= MAX_TIME_S).  Rules for runtime > walltime live in the readers.
        nodes: nodes (or processors on a flat cluster) requested.
        kind: ``"rt"`` (real-time) or ``"batch"``.
        user, group: ids, -1 when unknown.
        queue: queue name ("" when unknown).
        checkpointable: False for jobs that must never be preempted.
    """

    id: int
    submit: int
    runtime: int
    walltime: int
    nodes: int
    kind: JobKind = BATCH
    user: int = -1
    group: int = -1
    queue: str = ""
    checkpointable: bool = True

    def __post_init__(self) -> None:
        # One chained test on the common path (a reader builds a million of these); the rules one
        # by one, for the message, only when it fails.
        if (0 < self.runtime <= MAX_TIME_S and 1 <= self.walltime <= MAX_TIME_S and self.nodes >= 1
                and 0 <= self.submit <= MAX_TIME_S and (self.kind == BATCH or self.kind == RT)):
            return
        self._refuse()

    def _refuse(self) -> None:
        """Raise the ValueError of the first rule the job breaks."""
        if self.runtime <= 0:
            raise ValueError(f"job {self.id}: runtime must be > 0 s, got {self.runtime}")
        if self.walltime < 1:
            raise ValueError(f"job {self.id}: walltime must be >= 1 s, got {self.walltime}")
        if self.nodes < 1:
            raise ValueError(f"job {self.id}: nodes must be >= 1, got {self.nodes}")
        if self.submit < 0:
            raise ValueError(f"job {self.id}: submit must be >= 0 s, got {self.submit}")
        if self.submit > MAX_TIME_S or self.runtime > MAX_TIME_S or self.walltime > MAX_TIME_S:
            raise ValueError(f"job {self.id}: submit, runtime and walltime must be <= MAX_TIME_S = {MAX_TIME_S} s, "
                             f"got {self.submit}, {self.runtime}, {self.walltime}")
        if self.kind not in JOB_KINDS:
            raise ValueError(f"job {self.id}: kind must be 'rt' or 'batch', got {self.kind!r}")

    @property
    def is_rt(self) -> bool:
        return self.kind == RT

    def with_kind(self, kind: JobKind) -> "Job":
        return replace(self, kind=kind)


# One shared int object per value in [-1, 65534]: sizes, users, groups and most runtimes of a
# trace repeat, and a shared object is 28 bytes less a job and field than a fresh one.
_SHARED_INTS = np.array(range(-1, (1 << 16) - 1), dtype=object)


def shared_ints(values: np.ndarray) -> list[int]:
    """``values.tolist()`` with one shared int object per value in [-1, 65534] (less memory a job)."""
    if len(values) and -1 <= values.min() and values.max() < len(_SHARED_INTS) - 1:
        return _SHARED_INTS[values + 1].tolist()
    return values.tolist()


_JOB_SLOTS = ("id", "submit", "runtime", "walltime", "nodes", "kind", "user", "group", "queue", "checkpointable")
_COLUMN_OF_SLOT = ("id", "submit", "runtime", "walltime", "nodes", "is_rt", "user", "group", "queue", "checkpointable")
_SHARED_SLOTS = frozenset({"runtime", "walltime", "nodes", "user", "group"})  # small repeated values


class JobColumns:
    """Jobs as columns: what a reader produces before anyone needs a ``Job`` object per job.

    ``id``, ``submit``, ``runtime``, ``walltime``, ``nodes``, ``user``, ``group``: int64 arrays
    (``Job``'s units, s and nodes); ``queue``: an object array of str; ``is_rt`` and
    ``checkpointable``: bool arrays; all of one length, in the order of the jobs.  ``jobs()``
    builds the ``Job`` objects on first call (once; later calls give the same list) in bulk: the
    rules of ``Job.__post_init__`` checked on the columns at once, each field set by C-level loops
    (0.5 s at 500,000 jobs against 0.9 s for ``Job(...)`` one by one).
    """

    __slots__ = ("id", "submit", "runtime", "walltime", "nodes", "user", "group", "queue", "is_rt",
                 "checkpointable", "_jobs")

    def __init__(self, id: np.ndarray, submit: np.ndarray, runtime: np.ndarray, walltime: np.ndarray,
                 nodes: np.ndarray, user: np.ndarray, group: np.ndarray, queue: np.ndarray, is_rt: np.ndarray,
                 checkpointable: np.ndarray) -> None:
        self.id, self.submit, self.runtime, self.walltime, self.nodes = id, submit, runtime, walltime, nodes
        self.user, self.group, self.queue, self.is_rt, self.checkpointable = user, group, queue, is_rt, checkpointable
        self._jobs: list[Job] | None = None
        n = len(id)
        if any(len(getattr(self, c)) != n for c in self.__slots__[1:-1]):
            raise ValueError("JobColumns: every column must have one value per job")

    def __len__(self) -> int:
        return len(self.id)

    def take(self, index: np.ndarray) -> "JobColumns":
        """The jobs at positions ``index`` (an int array), in that order."""
        return JobColumns(*(getattr(self, c)[index] for c in self.__slots__[:-1]))

    def sort_order(self) -> np.ndarray | None:
        """The positions that put the rows in (submit, id) order; None when they are in it already."""
        submit, ids = self.submit, self.id
        later = submit[1:] > submit[:-1]
        later |= (submit[1:] == submit[:-1]) & (ids[1:] > ids[:-1])
        return None if later.all() else np.lexsort((ids, submit))

    def row(self, index: int) -> Job:
        """The ``Job`` of row ``index`` alone (built every call; ``jobs()`` builds them all)."""
        if self._jobs is not None:
            return self._jobs[index]
        values = [getattr(self, c)[index] for c in _COLUMN_OF_SLOT]
        values = [v.item() if isinstance(v, np.generic) else v for v in values]  # NumPy scalars to ints, bools
        values[5] = RT if values[5] else BATCH
        return Job(*values)

    def jobs(self) -> list[Job]:
        """The ``Job`` of each row, in order; built on the first call.  Raises the ValueError
        ``Job(...)`` raises for the first row that breaks a rule."""
        if self._jobs is None:
            self._jobs = self._build()
        return self._jobs

    def release(self) -> list[Job]:
        """Let the columns go, keeping (and giving back) the jobs: for an owner that needs no more
        than that.  Built here, each column goes as soon as its field is set (a lower peak)."""
        if self._jobs is None:
            self._jobs = self._build(consume=True)
        for name in self.__slots__[:-1]:
            setattr(self, name, None)
        return self._jobs

    def _build(self, consume: bool = False) -> list[Job]:
        n = len(self)
        ok = (self.runtime > 0) & (self.runtime <= MAX_TIME_S) & (self.walltime >= 1) & (self.walltime <= MAX_TIME_S)
        ok &= (self.nodes >= 1) & (self.submit >= 0) & (self.submit <= MAX_TIME_S)
        if not ok.all():
            row = int(np.argmin(ok))
            Job(*(getattr(self, c)[row].item() for c in ("id", "submit", "runtime", "walltime", "nodes")))  # raises
        del ok
        kinds = np.array([BATCH, RT], dtype=object)
        jobs = list(map(object.__new__, repeat(Job, n)))
        for name, column in zip(_JOB_SLOTS, _COLUMN_OF_SLOT):
            values = getattr(self, column)
            if name == "kind":
                values = kinds[values.astype(np.intp)].tolist()
            elif name in _SHARED_SLOTS:
                values = shared_ints(values)
            else:
                values = values.tolist()
            if consume:
                setattr(self, column, None)
            # The slot's own setter: what Job.__init__ does through object.__setattr__, in a C loop;
            # one column's list at a time (all ten at once were 60 bytes a job more at the peak).
            deque(map(getattr(Job, name).__set__, jobs, values), 0)
            del values
        return jobs


# The job attributes that ``Workload.column`` (and ``Outcomes.job_column``) give as columns.
JOB_COLUMNS = ("id", "submit", "runtime", "walltime", "nodes", "user", "group", "is_rt", "checkpointable")


def job_attribute_column(jobs: Sequence[Job], name: str) -> np.ndarray:
    """Attribute ``name`` (``JOB_COLUMNS``) of every job of ``jobs``, in order (built every call):
    int64, or bool for ``is_rt`` and ``checkpointable``."""
    n = len(jobs)
    if name == "is_rt":
        return np.fromiter((j.kind == RT for j in jobs), dtype=bool, count=n)
    if name == "checkpointable":
        return np.fromiter((j.checkpointable for j in jobs), dtype=bool, count=n)
    if name not in JOB_COLUMNS:
        raise KeyError(f"no job column {name!r}")
    return np.fromiter(map(attrgetter(name), jobs), dtype=np.int64, count=n)


@dataclass(slots=True)
class Workload:
    """An ordered collection of jobs plus what is known of the machine it came from.

    Jobs are kept sorted by (submit, id).  ``max_nodes`` is the size of the machine the trace
    was recorded on (SWF ``MaxNodes``/``MaxProcs``), ``None`` when unknown.  ``start_time`` is the
    absolute Unix time of t = 0 when known (SWF ``UnixStartTime``, Cobalt logs).

    ``Workload.of_columns`` keeps a reader's ``JobColumns`` and builds ``jobs`` on first use
    (``len``, ``span``, ``columns`` and ``count`` answer from the columns meanwhile): until then the
    ``jobs`` slot is unset and ``__getattr__`` (called only for an unset attribute) builds it.
    """

    jobs: list[Job]
    name: str = "workload"
    max_nodes: int | None = None
    start_time: int | None = None
    header: dict[str, str] = field(default_factory=dict)
    # True when ``jobs`` are known to be in strict (submit, id) order already, e.g. a slice of a
    # workload that is (an RL environment builds a window per episode): the checks are skipped.
    in_order: InitVar[bool] = False
    _table: JobColumns | None = field(default=None, init=False, repr=False, compare=False)
    _release: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self, in_order: bool) -> None:
        jobs = list(self.jobs)
        self.jobs = jobs
        if in_order:
            return
        # Readers and windows hand jobs over in order already: check that before building sort keys
        # (a million key tuples is a good part of reading a large trace).
        if any(b.submit < a.submit or (b.submit == a.submit and b.id <= a.id) for a, b in zip(jobs, jobs[1:])):
            jobs.sort(key=lambda j: (j.submit, j.id))
        if len({job.id for job in jobs}) != len(jobs):
            seen: set[int] = set()
            for job in jobs:
                if job.id in seen:
                    raise ValueError(f"{self.name}: duplicate job id {job.id}")
                seen.add(job.id)

    @classmethod
    def of_columns(cls, table: JobColumns, name: str = "workload", max_nodes: int | None = None,
                   start_time: int | None = None, header: dict[str, str] | None = None, *,
                   unique_ids: bool = False, release: bool = False) -> "Workload":
        """A workload of ``table``'s jobs, sorted by (submit, id), whose ``Job`` objects are built
        on first use of ``jobs``.  Ids must be unique (checked unless ``unique_ids``: the caller
        did, as the readers do line by line).  ``release``: the workload owns ``table`` and lets
        its columns go once the jobs are built (``JobColumns.release``; 64 bytes a job)."""
        if not unique_ids:
            ordered = np.sort(table.id)
            same = np.flatnonzero(ordered[1:] == ordered[:-1])
            if len(same):
                raise ValueError(f"{name}: duplicate job id {int(ordered[same[0]])}")
        order = table.sort_order()
        if order is not None:
            table = table.take(order)
        w = cls.__new__(cls)  # the jobs slot stays unset (__getattr__)
        w.name, w.max_nodes, w.start_time = name, max_nodes, start_time
        w.header = {} if header is None else header
        w._table, w._release = table, release
        return w

    def __getattr__(self, name: str) -> list[Job]:
        if name != "jobs":  # (an unset slot, or a look-up such as unpickling's __setstate__)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        table = self._table
        if table is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        built = table.release() if self._release else table.jobs()
        jobs = self.jobs = list(built)  # a list of its own: callers may change it
        self._table = None
        return jobs

    @property
    def table(self) -> JobColumns | None:
        """The reader's columns while ``jobs`` has not been built (None after, or without a reader)."""
        try:
            object.__getattribute__(self, "jobs")
        except AttributeError:
            return self._table
        return None

    def __len__(self) -> int:
        table = self.table
        return len(table) if table is not None else len(self.jobs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self.jobs)

    def __getitem__(self, index: int) -> Job:
        table = self.table
        if table is not None:  # one job: no need to build them all
            return table.row(index)
        return self.jobs[index]

    def column(self, name: str) -> np.ndarray:
        """Job attribute ``name`` (``JOB_COLUMNS``) of every job, in order, read-only: the reader's
        column itself while ``jobs`` has not been built (no copy, no ``Job`` object), else built
        from the jobs."""
        if name not in JOB_COLUMNS:
            raise KeyError(f"no job column {name!r}; the columns are {', '.join(JOB_COLUMNS)}")
        table = self.table
        col = getattr(table, name).view() if table is not None else job_attribute_column(self.jobs, name)
        col.flags.writeable = False
        return col

    def by_id(self) -> dict[int, Job]:
        return {job.id: job for job in self.jobs}

    def replace_jobs(self, jobs: Iterable[Job], name: str | None = None) -> "Workload":
        return Workload(list(jobs), name=name or self.name, max_nodes=self.max_nodes,
                        start_time=self.start_time, header=dict(self.header))

    def head(self, n: int) -> "Workload":
        """The first ``n`` jobs in submit order."""
        return self.replace_jobs(self.jobs[:n])

    def columns(self) -> dict[str, np.ndarray]:
        """Columnar copy (NumPy arrays) for vectorised statistics and generators."""
        table = self.table
        if table is not None:
            return {"id": table.id.copy(), "submit": table.submit.copy(), "runtime": table.runtime.copy(),
                    "walltime": table.walltime.copy(), "nodes": table.nodes.copy(), "is_rt": table.is_rt.copy()}
        jobs = self.jobs
        return {
            "id": np.fromiter((j.id for j in jobs), dtype=np.int64, count=len(jobs)),
            "submit": np.fromiter((j.submit for j in jobs), dtype=np.int64, count=len(jobs)),
            "runtime": np.fromiter((j.runtime for j in jobs), dtype=np.int64, count=len(jobs)),
            "walltime": np.fromiter((j.walltime for j in jobs), dtype=np.int64, count=len(jobs)),
            "nodes": np.fromiter((j.nodes for j in jobs), dtype=np.int64, count=len(jobs)),
            "is_rt": np.fromiter((j.kind == RT for j in jobs), dtype=bool, count=len(jobs)),
        }

    def to_frame(self):  # -> pandas.DataFrame
        import pandas as pd

        return pd.DataFrame(
            {
                "id": [j.id for j in self.jobs],
                "submit": [j.submit for j in self.jobs],
                "runtime": [j.runtime for j in self.jobs],
                "walltime": [j.walltime for j in self.jobs],
                "nodes": [j.nodes for j in self.jobs],
                "kind": [j.kind for j in self.jobs],
                "user": [j.user for j in self.jobs],
                "group": [j.group for j in self.jobs],
                "queue": [j.queue for j in self.jobs],
                "checkpointable": [j.checkpointable for j in self.jobs],
            }
        )

    @property
    def span(self) -> tuple[int, int]:
        """(first submit, last submit), s."""
        table = self.table
        if table is not None:
            return (int(table.submit[0]), int(table.submit[-1])) if len(table) else (0, 0)
        if not self.jobs:
            return (0, 0)
        return (self.jobs[0].submit, self.jobs[-1].submit)

    def count(self, kind: JobKind) -> int:
        table = self.table
        if table is not None:
            return int(np.count_nonzero(table.is_rt == (kind == RT))) if kind in JOB_KINDS else 0
        return sum(1 for j in self.jobs if j.kind == kind)

