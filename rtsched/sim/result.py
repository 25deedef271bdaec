"""What one simulation produces: per-job outcomes, the schedule, system totals."""
from __future__ import annotations

from dataclasses import dataclass, field

from rtsched.jobs import Job
from rtsched.schedule import Schedule


@dataclass(slots=True)
class JobOutcome:
    """The fate of one job in one run.  Times in s.

    ``t_ckpt`` is the time spent writing checkpoints (periodic and JIT), ``t_restart`` reading
    them back, ``t_lost`` the work redone after preemptions and kills (progress computed and then lost);
    seed 002's per-job overheads (eqs. 1-20) and their node-second figures are derived from these
    in ``rtsched.metrics.job_columns``, the one place that measures a run.
    """

    job: Job
    first_start: int = -1
    end: int = -1
    allocated_nodes: int = 0
    n_preemptions: int = 0
    n_kills: int = 0  # Kill decisions (their lost work is in t_lost too)
    t_ckpt: int = 0
    t_restart: int = 0
    t_lost: int = 0
    jit_delay: int = 0  # s an RT job waited for the JIT checkpoints of the jobs it preempted

    @property
    def finished(self) -> bool:
        return self.end >= 0


@dataclass(slots=True)
class SimResult:
    """Everything a run produced.  ``machine_nodes`` is the machine's capacity in nodes."""

    outcomes: list[JobOutcome]
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
