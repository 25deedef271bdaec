"""The RL agents' terminal rewards, from the sequence scores of ``rtsched.metrics``.

The scores themselves (bsld with τ = 10 s, wait, turnaround, slowdown, utilization, fairness) are
defined once, in ``rtsched.metrics.sequence_metric``; an agent's reward is −score for the goals to
minimise and +utilization (the papers' convention).
"""
from __future__ import annotations

from rtsched.metrics import SEQUENCE_GOALS as GOALS
from rtsched.metrics import TAU_RL as TAU

__all__ = ["GOALS", "TAU", "reward_of", "lower_is_better"]


def reward_of(goal: str, value: float) -> float:
    """Terminal reward for a goal's value: +utilization, −value otherwise."""
    if goal not in GOALS:
        raise ValueError(f"unknown goal {goal!r}; choose from {', '.join(GOALS)}")
    return float(value) if goal == "utilization" else -float(value)


def lower_is_better(goal: str) -> bool:
    return goal != "utilization"
