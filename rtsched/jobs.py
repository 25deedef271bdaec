"""The job and workload model (DESIGN.md "Semantics").

All times are integer seconds. ``runtime`` is the actual run time (known only to the
simulator's completion events and to offline solvers); ``walltime`` is the user's requested
estimate, the only duration an online policy may look at.
"""
from __future__ import annotations

from dataclasses import InitVar, dataclass, field, replace
from typing import Iterable, Iterator, Literal

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


@dataclass(slots=True)
class Workload:
    """An ordered collection of jobs plus what is known of the machine it came from.

    Jobs are kept sorted by (submit, id).  ``max_nodes`` is the size of the machine the trace
    was recorded on (SWF ``MaxNodes``/``MaxProcs``), ``None`` when unknown.  ``start_time`` is the
    absolute Unix time of t = 0 when known (SWF ``UnixStartTime``, Cobalt logs).
    """

    jobs: list[Job]
    name: str = "workload"
    max_nodes: int | None = None
    start_time: int | None = None
    header: dict[str, str] = field(default_factory=dict)
    # True when ``jobs`` are known to be in strict (submit, id) order already, e.g. a slice of a
    # workload that is (an RL environment builds a window per episode): the checks are skipped.
    in_order: InitVar[bool] = False

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

    def __len__(self) -> int:
        return len(self.jobs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self.jobs)

    def __getitem__(self, index: int) -> Job:
        return self.jobs[index]

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
        if not self.jobs:
            return (0, 0)
        return (self.jobs[0].submit, self.jobs[-1].submit)

    def count(self, kind: JobKind) -> int:
        return sum(1 for j in self.jobs if j.kind == kind)

