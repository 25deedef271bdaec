"""Model selection for the split window (issue 24 §3): the greedy policy's average wait on validation
segments drawn from the training part of the trace, and the references on the same segments.

Validation segments: ``segments`` windows of ``jobs`` jobs whose first job is drawn (``seed``) among
the starts allowed by the training's ``start_range`` (``rtsched.rl.selection.validation_starts``), so
they never touch the held-out test part (the last 20 % in the project's protocol).  Every policy is
one validated pipeline run per segment (``rtsched.rl.evaluate.evaluate_online``), the network
greedy, as it is evaluated and shipped.  The references (FCFS + EASY, SJF + EASY and the imitation
teacher, ``WindowTeacherPolicy``) are scored once and kept in ``selection.json``.
"""
from __future__ import annotations

import json
import os

import numpy as np

from rtsched.rl.selection import SELECTION, BestOnValidation, validation_starts

REFERENCES = ("fcfs+easy", "sjf+easy")
DEFAULTS = {"segments": 4, "jobs": 1000, "seed": 0}  # the first long run's validation (issue 24 §4)


def mean_wait(rows: list[dict], policy: str) -> float:
    """The mean over segments of ``policy``'s average wait (s) in ``evaluate_online`` rows."""
    return float(np.mean([r["avg_wait"] for r in rows if r["policy"] == policy]))


def split_window_selection(trace, out: str, every: int, *, head: int, tail: int, teacher: str = "sjf",
                           start_range=None, segments: int = DEFAULTS["segments"], jobs: int = DEFAULTS["jobs"],
                           seed: int = DEFAULTS["seed"]) -> BestOnValidation:
    """The selection step (``BestOnValidation``) of a split-window run in ``out``: every ``every``
    epochs the greedy average wait on the validation segments (module docstring); the references
    are computed when ``out/selection.json`` does not hold them for the same segments yet."""
    from rtsched.rl.evaluate import evaluate_online
    from rtsched.rl.splitwindow.policy import WindowTeacherPolicy

    starts = validation_starts(len(trace), jobs, segments, [], seed=seed, start_range=start_range)
    meta = {"validation": "greedy average wait (s)", "segments": starts, "jobs": jobs, "seed": seed}
    path = os.path.join(out, SELECTION)
    old = {}
    if os.path.exists(path):
        with open(path) as fh:
            old = json.load(fh)
    if old.get("segments") == starts and old.get("jobs") == jobs and "references" in old:
        meta["references"] = old["references"]
    else:
        teach = WindowTeacherPolicy(head, tail, teacher)
        rows = evaluate_online([*REFERENCES, teach], trace, starts, jobs)
        meta["references"] = {**{p: mean_wait(rows, p) for p in REFERENCES}, f"teacher-{teacher}": mean_wait(rows, teach.name)}

    def score(model_path: str) -> dict:
        rows = evaluate_online([model_path], trace, starts, jobs)
        return {"validation": mean_wait(rows, model_path), "forced": int(sum(r["forced"] for r in rows))}

    os.makedirs(out, exist_ok=True)
    return BestOnValidation(out, score, every, meta)


__all__ = ["DEFAULTS", "REFERENCES", "mean_wait", "split_window_selection"]
