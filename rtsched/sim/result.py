"""What one simulation produces: per-job outcomes (as columns), the schedule, system totals."""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from itertools import repeat
from typing import Iterator, Sequence

import numpy as np

from rtsched.jobs import Job, Workload, job_attribute_column
from rtsched.schedule import Schedule

# The per-job fields of an outcome, in order (all integers; times in s).
OUTCOME_FIELDS: tuple[str, ...] = ("first_start", "end", "allocated_nodes", "n_preemptions", "n_kills", "t_ckpt",
                                   "t_restart", "t_lost", "jit_delay")
# Fields every run sets for every job; the others stay 0 for a job never preempted, killed or
# checkpointed (nearly every job of a batch run), and their column exists only once one is not.
_DENSE = ("first_start", "end", "allocated_nodes")
_SPARSE = tuple(f for f in OUTCOME_FIELDS if f not in _DENSE)


class Outcomes(Sequence["JobOutcome"]):
    """The outcomes of a run's jobs, one column per field (``OUTCOME_FIELDS``), aligned with ``jobs``.

    Machine integers, 8 bytes a field, instead of a Python object and its integers per job (about
    170 bytes); the rarely-set fields (preemptions, kills, checkpoint and restart time, lost work,
    JIT delay) take no room until one of them is set.  The core writes ``first_start``, ``end``
    (``array('q')``) in place; every other writer goes through a ``JobOutcome`` view.

    ``jobs``: the jobs (a list of ``Job``), or the ``Workload`` they are in: then a reader's
    columns serve ``job_column`` and no ``Job`` object is built until one is asked for
    (``JobOutcome.job``, ``jobs``).

    A sequence of ``JobOutcome`` views to its readers (built on demand: ``outcomes[i]``,
    iteration); ``column(name)`` is one field as a NumPy array, ``job_column(name)`` one job
    attribute (built once), for the metrics and the validator.
    """

    __slots__ = ("_jobs", "workload", "first_start", "end", "allocated_nodes", "_sparse", "_job_columns")

    def __init__(self, jobs: Sequence[Job] | Workload, allocated_nodes: Sequence[int]) -> None:
        n = len(jobs)
        if len(allocated_nodes) != n:
            raise ValueError(f"Outcomes: {len(allocated_nodes)} allocation sizes for {n} jobs")
        self.workload = jobs if isinstance(jobs, Workload) else None  # the jobs' workload, when given
        self._jobs = None if self.workload is not None else jobs
        self.first_start = array("q", (-1,)) * n  # s, -1 until the job starts
        self.end = array("q", (-1,)) * n  # s, -1 until it finishes
        self.allocated_nodes = array("q", allocated_nodes)
        self._sparse: dict[str, array] = {}  # field -> its column, once some job's value is not 0
        self._job_columns: dict[str, np.ndarray] = {}

    @property
    def jobs(self) -> Sequence[Job]:
        """The jobs, in order (a workload's ``Job`` objects are built on first use)."""
        return self._jobs if self.workload is None else self.workload.jobs

    def job(self, index: int) -> Job:
        """Job ``index`` (from a workload's columns: that one alone, not all of them)."""
        return self._jobs[index] if self.workload is None else self.workload[index]

    def describes(self, workload: Workload) -> bool:
        """Whether these are the outcomes of ``workload``'s jobs (the run's own job columns then
        serve a reader of ``workload``); does not build its ``Job`` objects."""
        if self.workload is not None:
            return self.workload is workload
        return workload.table is None and self._jobs is workload.jobs

    # ------------------------------------------------------------------ the sequence of views
    def __len__(self) -> int:
        return len(self.end)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [JobOutcome(self, i) for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("outcome index out of range")
        return JobOutcome(self, index)

    def __iter__(self) -> Iterator["JobOutcome"]:
        return map(JobOutcome, repeat(self), range(len(self)))

    def __repr__(self) -> str:
        return f"Outcomes({len(self)} jobs)"

    # ------------------------------------------------------------------ fields
    def get(self, name: str, index: int) -> int:
        """Field ``name`` of job ``index``."""
        if name in _DENSE:
            return getattr(self, name)[index]
        col = self._sparse.get(name)
        if col is None:
            if name not in _SPARSE:
                raise AttributeError(f"no outcome field {name!r}")
            return 0
        return col[index]

    def set(self, name: str, index: int, value: int) -> None:
        """Set field ``name`` of job ``index`` (an integer)."""
        if name in _DENSE:
            getattr(self, name)[index] = value
            return
        col = self._sparse.get(name)
        if col is None:
            if name not in _SPARSE:
                raise AttributeError(f"no outcome field {name!r}")
            if not value:
                return
            col = self._sparse[name] = array("q", (0,)) * len(self)
        col[index] = value

    def column(self, name: str) -> np.ndarray:
        """Field ``name`` of every job, in job order, as an int64 NumPy array (a copy)."""
        if name in _DENSE:
            col = getattr(self, name)
        else:
            col = self._sparse.get(name)
            if col is None:
                if name not in _SPARSE:
                    raise KeyError(f"no outcome field {name!r}; the fields are {', '.join(OUTCOME_FIELDS)}")
                return np.zeros(len(self), dtype=np.int64)
        return np.frombuffer(col, dtype=np.int64).copy() if len(col) else np.zeros(0, dtype=np.int64)

    def has_any(self, name: str) -> bool:
        """Whether some job's ``name`` (a rarely-set field) is not 0 (cheap: no column is built)."""
        col = self._sparse.get(name)
        return col is not None and any(col)

    def job_column(self, name: str) -> np.ndarray:
        """Attribute ``name`` of every job (``id``, ``submit``, ``runtime``, ``walltime``, ``nodes``,
        ``user``, ``group``: int64; ``is_rt``, ``checkpointable``: bool), in job order; built once
        and kept (read-only): the validator and the metrics of one run read the same columns."""
        col = self._job_columns.get(name)
        if col is None:
            if self.workload is not None:
                col = self.workload.column(name)  # read-only already
            else:
                col = job_attribute_column(self._jobs, name)
                col.flags.writeable = False
            self._job_columns[name] = col
        return col


class JobOutcome:
    """The fate of one job in one run (a view of one row of ``Outcomes``).  Times in s.

    ``t_ckpt`` is the time spent writing checkpoints (periodic and JIT), ``t_restart`` reading
    them back, ``t_lost`` the work redone after preemptions and kills (progress computed and then lost);
    ``n_kills`` counts Kill decisions (their lost work is in ``t_lost`` too), ``jit_delay`` the s
    an RT job waited for the JIT checkpoints of the jobs it preempted.  Seed 002's per-job
    overheads (eqs. 1-20) and their node-second figures are derived from these in
    ``rtsched.metrics.job_columns``, the one place that measures a run.  Setting a field writes
    the column.
    """

    __slots__ = ("_store", "_index")

    def __init__(self, store: Outcomes, index: int) -> None:
        self._store = store
        self._index = index

    @property
    def job(self) -> Job:
        return self._store.job(self._index)

    @property
    def finished(self) -> bool:
        return self.end >= 0

    def values(self) -> tuple:
        """(job, *OUTCOME_FIELDS) of this outcome."""
        store, i = self._store, self._index
        return (store.job(i), *(store.get(name, i) for name in OUTCOME_FIELDS))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobOutcome):
            return NotImplemented
        return self.values() == other.values()

    __hash__ = None  # mutable, as the dataclass it replaces

    def __repr__(self) -> str:
        job, *values = self.values()
        return "JobOutcome(" + ", ".join([f"job={job!r}"] + [f"{k}={v}" for k, v in zip(OUTCOME_FIELDS, values)]) + ")"


def _field(name: str) -> property:
    """The view's property of outcome field ``name``: reads and writes the column."""
    if name in _DENSE:  # a column that always exists: indexed directly
        def get(self: JobOutcome) -> int:
            return getattr(self._store, name)[self._index]

        def put(self: JobOutcome, value: int) -> None:
            getattr(self._store, name)[self._index] = value
    else:
        def get(self: JobOutcome) -> int:
            return self._store.get(name, self._index)

        def put(self: JobOutcome, value: int) -> None:
            self._store.set(name, self._index, value)

    return property(get, put, doc=f"the job's {name} (a column of ``Outcomes``)")


for _name in OUTCOME_FIELDS:
    setattr(JobOutcome, _name, _field(_name))
del _name


@dataclass(slots=True)
class SimResult:
    """Everything a run produced.  ``machine_nodes`` is the machine's capacity in nodes."""

    outcomes: Outcomes
    schedule: Schedule
    machine_nodes: int
    machine_name: str = ""
    policy_name: str = ""
    checkpoint_label: str = ""
    start_time: int = 0  # first event, s
    end_time: int = 0  # last event, s
    info: dict = field(default_factory=dict)

    def outcome_by_id(self) -> dict[int, JobOutcome]:
        return {o.job.id: o for o in self.outcomes}
