"""Replay a planned schedule (an offline optimum, a recorded run) through the event core.

The plan's segments become timed decisions: the first run segment of a job is a ``Start`` on its
partition, the end of a run segment followed by a checkpoint write is a JIT ``Preempt`` (the
offline model's "the first part ends with the checkpoint write"), and a restart read is a
``Start`` again.  The simulator then produces its own schedule, which the validator checks and
which must match the plan segment for segment (``replay_and_compare``).
"""
from __future__ import annotations

from collections import defaultdict

from rtsched.checkpoint import CheckpointKind, CheckpointModel, IOModel
from rtsched.errors import ScheduleError
from rtsched.jobs import Workload
from rtsched.machines.base import Machine
from rtsched.schedule import CKPT, RESTART, RUN, Schedule
from rtsched.sim.core import Simulator
from rtsched.sim.decisions import Decision, Preempt, Start
from rtsched.sim.result import SimResult
from rtsched.sim.script import ScriptPolicy
from rtsched.validate import validate_schedule

JIT = CheckpointModel(CheckpointKind.JIT)


def plan_decisions(schedule: Schedule, machine: Machine) -> dict[int, list[Decision]]:
    """Timed decisions that reproduce ``schedule``."""
    plan: dict[int, list[Decision]] = defaultdict(list)
    for job_id, segs in schedule.by_job().items():
        prev = None
        for seg in segs:
            alloc = seg.partition if machine.partitioned else -1
            if prev is None:
                plan[seg.start].append(Start(job_id, alloc))
            elif seg.kind == CKPT and prev.kind == RUN and prev.end == seg.start:
                plan[seg.start].append(Preempt(job_id, JIT))
            elif seg.kind in (RESTART, RUN) and prev.end < seg.start:
                plan[seg.start].append(Start(job_id, alloc))
            prev = seg
    # Preemptions before starts at the same time: a start may need the partition being vacated.
    return {t: sorted(ds, key=lambda d: 0 if type(d) is Preempt else 1) for t, ds in plan.items()}


def replay(schedule: Schedule, workload: Workload, machine: Machine, io: IOModel | None = None) -> SimResult:
    """Run the plan in the simulator; the validator checks the simulator's schedule."""
    sim = Simulator(workload, machine, checkpoint=CheckpointModel(CheckpointKind.NO, io=io or JIT.io),
                    io=io or JIT.io)
    result = sim.run(ScriptPolicy(plan_decisions(schedule, machine)))
    validate_schedule(result.schedule, workload, machine, sim.io, forbid_rt_preemption=True)
    result.policy_name = "replay"
    return result


def replay_and_compare(schedule: Schedule, workload: Workload, machine: Machine,
                       io: IOModel | None = None) -> SimResult:
    """Replay and check that the simulator reproduced the plan exactly (same segments)."""
    result = replay(schedule, workload, machine, io)

    def key(s):
        return (s.job_id, s.start, s.end, s.kind, s.partition if machine.partitioned else -1, s.progress_from,
                s.progress_to)

    planned = sorted(key(s) for s in schedule)
    got = sorted(key(s) for s in result.schedule)
    if planned != got:
        missing = [k for k in planned if k not in set(got)][:3]
        extra = [k for k in got if k not in set(planned)][:3]
        raise ScheduleError(f"the simulator did not reproduce the plan: planned but not run {missing}; "
                            f"run but not planned {extra}")
    return result
