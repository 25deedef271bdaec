"""Sequence metrics and the RL agents' terminal rewards.

``rtsched.metrics`` is the project's one metrics module; at the time of writing it does not exist
yet, so the RL papers' per-sequence scores are defined here, on plain arrays of one sequence:

* bsld (seeds 000 / 003, τ = 10 s): mean of max(1, (wait + run) / max(run, τ)) — uses the *actual*
  runtime, as both papers do;
* wait: mean of start − submit; turnaround: mean of wait + run; slowdown: mean of
  (wait + run) / run (no bound);
* utilization: Σ run·nodes / (machine nodes × (t_end − first submit)), t_end = the last completion
  (seed 003 §8 item 10 default) or, with ``util_window="last_start"``, the start of the last job
  (the authors' code, which produced Table VI);
* fairness: the maximum over users of that user's mean bsld (seed 003 §V-F, "Max" aggregator);
  jobs with an unknown user (−1) form one user.

Rewards are the papers': −metric for the goals to minimise, +utilization.
"""
from __future__ import annotations

import numpy as np

GOALS = ("bsld", "wait", "turnaround", "slowdown", "utilization", "fairness")
TAU = 10  # s, the RL papers' interactive threshold


def bsld_values(submit: np.ndarray, runtime: np.ndarray, start: np.ndarray, tau: float = TAU) -> np.ndarray:
    """Per-job bounded slowdown max(1, (start − submit + run) / max(run, τ))."""
    submit = np.asarray(submit, dtype=np.float64)
    runtime = np.asarray(runtime, dtype=np.float64)
    start = np.asarray(start, dtype=np.float64)
    return np.maximum(1.0, (start - submit + runtime) / np.maximum(runtime, tau))


def sequence_metric(goal: str, submit, runtime, start, nodes=None, machine_nodes: int | None = None,
                    users=None, *, tau: float = TAU, util_window: str = "last_end") -> float:
    """The goal's value for one scheduled sequence (natural sign: bsld etc. lower is better)."""
    submit = np.asarray(submit, dtype=np.float64)
    runtime = np.asarray(runtime, dtype=np.float64)
    start = np.asarray(start, dtype=np.float64)
    if len(submit) == 0:
        return 0.0
    if np.any(start < 0):
        raise ValueError("sequence_metric: some jobs never started")
    if goal == "bsld":
        return float(bsld_values(submit, runtime, start, tau).mean())
    if goal == "wait":
        return float((start - submit).mean())
    if goal == "turnaround":
        return float((start - submit + runtime).mean())
    if goal == "slowdown":
        return float(((start - submit + runtime) / runtime).mean())
    if goal == "utilization":
        if nodes is None or not machine_nodes:
            raise ValueError("utilization needs job nodes and the machine size")
        nodes = np.asarray(nodes, dtype=np.float64)
        t0 = submit.min()
        t_end = start.max() if util_window == "last_start" else (start + runtime).max()
        span = max(t_end - t0, 1.0)
        return float((runtime * nodes).sum() / (span * machine_nodes))
    if goal == "fairness":
        if users is None:
            users = np.full(len(submit), -1)
        users = np.asarray(users)
        b = bsld_values(submit, runtime, start, tau)
        uniq, inv = np.unique(users, return_inverse=True)
        sums = np.bincount(inv, weights=b)
        counts = np.bincount(inv)
        return float((sums / counts).max())
    raise ValueError(f"unknown goal {goal!r}; choose from {', '.join(GOALS)}")


def reward_of(goal: str, value: float) -> float:
    """Terminal reward for a goal's value: +utilization, −value otherwise."""
    if goal not in GOALS:
        raise ValueError(f"unknown goal {goal!r}; choose from {', '.join(GOALS)}")
    return float(value) if goal == "utilization" else -float(value)


def lower_is_better(goal: str) -> bool:
    return goal != "utilization"
