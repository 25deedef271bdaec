"""Replay a plan through the core and read its metrics from :mod:`rtsched.metrics`.

Every slowdown a solve *reports* comes from here: the plan becomes a :class:`Schedule`
(:func:`milp.plan.to_schedule`), the core simulator replays it segment for segment
(:func:`rtsched.replay.replay_and_compare`), the validator re-checks the simulator's schedule
(at most one preemption per job, RTJs never preempted), and :func:`rtsched.metrics.job_table`
computes the per-job slowdowns.  The solvers' own exact rational evaluation
(:func:`milp.plan.evaluate`) only steers the search (θ*, the RTJ bound's right-hand side).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rtsched import metrics
from rtsched.schedule import Schedule
from rtsched.replay import replay_and_compare
from rtsched.sim.result import SimResult
from rtsched.validate import validate_schedule

from milp.instance import Instance
from milp.plan import Placement, to_schedule


@dataclass
class ReplayReport:
    """A replayed plan: the simulator's result, its job table and the per-kind SD means."""

    schedule: Schedule  # the plan's segments (identical to the simulator's, checked)
    result: SimResult
    table: object  # pandas.DataFrame from rtsched.metrics.job_table
    sd: dict[int, float]  # job id -> slowdown
    rtj_sd_mean: float | None
    bj_sd_mean: float | None


def replay_plan(instance: Instance, placements: Sequence[Placement]) -> ReplayReport:
    """Replay ``placements`` on the instance's aligned machine; ScheduleError if the core disagrees."""
    schedule = to_schedule(instance, placements)
    machine = instance.machine()
    workload = instance.workload()
    result = replay_and_compare(schedule, workload, machine, instance.io)
    validate_schedule(result.schedule, workload, machine, instance.io, forbid_rt_preemption=True,
                      max_preemptions=1)
    table = metrics.job_table(result)
    summary = metrics.summarize(table, by=("kind",), metrics=("sd",), include_all=False)
    sd = {int(i): float(v) for i, v in zip(table["id"], table["sd"])}

    def mean(kind: str) -> float | None:
        row = summary.loc[kind]
        return float(row["mean_sd"]) if int(row["n"]) > 0 else None

    return ReplayReport(schedule, result, table, sd, mean("rt"), mean("batch"))


__all__ = ["ReplayReport", "replay_plan"]
