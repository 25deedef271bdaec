"""What one simulation produces: per-job outcomes, the schedule, system totals."""
from __future__ import annotations

from dataclasses import dataclass, field

from rtsched.jobs import Job
from rtsched.schedule import Schedule


@dataclass(slots=True)
class JobOutcome:
    """The fate of one job in one run.  Times in s; core figures in node-seconds.

    ``ckpt_node_seconds`` covers every checkpoint write of the job (periodic and JIT);
    ``restart_node_seconds`` every restart read; ``lost_node_seconds`` the work redone after
    preemptions (progress computed and then lost).  ``t_ckpt``/``t_pre`` are seed 002's
    per-job time overheads (eqs. 1-20): checkpoint write time, and restart read time plus lost work.
    """

    job: Job
    first_start: int = -1
    end: int = -1
    allocated_nodes: int = 0
    n_preemptions: int = 0
    t_ckpt: int = 0
    t_restart: int = 0
    t_lost: int = 0
    jit_delay: int = 0  # s an RT job waited for the JIT checkpoints of the jobs it preempted

    @property
    def finished(self) -> bool:
        return self.end >= 0

    @property
    def t_pre(self) -> int:
        return self.t_restart + self.t_lost

    @property
    def ckpt_node_seconds(self) -> int:
        return self.t_ckpt * self.allocated_nodes

    @property
    def restart_node_seconds(self) -> int:
        return self.t_restart * self.allocated_nodes

    @property
    def lost_node_seconds(self) -> int:
        return self.t_lost * self.allocated_nodes


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
