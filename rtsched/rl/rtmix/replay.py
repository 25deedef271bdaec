"""How far a core-policy teacher replayed through the ``rtmix`` actions is from the same teacher run as a policy.

The curriculum's data on Mira-like weeks are the teacher's decisions expressed as rtmix actions
(``rtsched.rl.rtmix.teacher.policy_teacher_episode``), so a learner that follows its teacher perfectly
reaches the *replayed* teacher, not the policy.  Issue 23 (eighth and ninth sessions) found the gap
that way and closed its causes one by one (``RtMixSpec.rt_wake``, ``refit_window``, ``low_rt_batch``):
``replay_gap`` runs both on one job list and returns their metrics (``rtsched.metrics.summary_dict``,
every job) and the first time at which their schedules differ; ``bench/bench_rtmix_replay.py`` prints
it over validation weeks.  Neither run reads an actual runtime to decide.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from heuristics.registry import make_policy
from rtsched.metrics import summary_dict
from rtsched.rl.rtmix.core import BATCH_SETTINGS
from rtsched.rl.rtmix.teacher import policy_teacher_episode
from rtsched.sim.core import Simulator


@dataclass(frozen=True)
class ReplayGap:
    """The replayed teacher's and the policy's ``summary_dict`` and the earliest time (s) at which a
    segment starts or ends in one schedule and not in the other (None: the same schedule)."""

    replayed: dict
    policy: dict
    first_difference: int | None

    def means(self, which: str) -> tuple[float, float]:
        """(BJ, RTJ) mean bounded slowdown (seed 002's form, τ = 600 s) of ``"replayed"`` or ``"policy"``."""
        summary = getattr(self, which)["summary"]
        return summary["batch"]["mean_bsld_seed002"], summary["rt"]["mean_bsld_seed002"]


def teacher_options(env) -> dict[str, Any]:
    """The WCJS options of the environment's batch-pass settings (``core.BATCH_SETTINGS``): the teacher
    a curriculum runs with that environment."""
    spec = env.spec_
    return {option: getattr(spec, setting) for setting, option in BATCH_SETTINGS.items()}


def schedule_events(result) -> set[tuple[int, str, int, int]]:
    """Every segment's (start, "start", job, partition) and (end, "end:KIND", job, partition)."""
    events = set()
    for s in result.schedule.segments:
        events.add((s.start, "start", s.job_id, s.partition))
        events.add((s.end, f"end:{s.kind}", s.job_id, s.partition))
    return events


def first_difference(a, b) -> int | None:
    """The earliest time of an event (``schedule_events``) in one result and not in the other."""
    diff = schedule_events(a) ^ schedule_events(b)
    return min(e[0] for e in diff) if diff else None


def replay_gap(env, jobs, teacher: str = "wcjs") -> ReplayGap:
    """Run core policy ``teacher`` (with ``teacher_options(env)``) on ``jobs`` twice: through ``env``'s
    actions, as the curriculum labels a week, and as a policy in the core on the same machine and
    checkpoint model."""
    options = teacher_options(env)
    policy_teacher_episode(env, jobs, make_policy(teacher, **options))
    replayed = env.result()
    policy = Simulator(env.workload, env.machine, checkpoint=env.checkpoint).run(make_policy(teacher, **options))
    return ReplayGap(summary_dict(replayed), summary_dict(policy), first_difference(replayed, policy))


__all__ = ["ReplayGap", "first_difference", "replay_gap", "schedule_events", "teacher_options"]
