"""Model selection for SchedInspector (issue 24 §3–4): the greedy inspector's mean goal value (bsld by
default) on validation sequences drawn from the training part of the trace, against its base policy
on the same sequences.

Validation sequences: ``sequences`` windows of ``seq_len`` jobs (the paper's test length, 256) whose
first job is drawn (``seed``) among the starts allowed by the training's ``start_range``
(``rtsched.rl.selection.validation_starts``): with seed 000's split (``start_range`` (0, 0.2)) they
never touch the test part, the last 80 %.  Each sequence is run as ``rtsched.rl.tables``'
``inspect_sequences`` runs the test sequences (greedy, compatibility mode, the evaluated trace's
feature normalisation), so a snapshot is chosen by the same measure it is later tested with.  The
base policy's mean on the same sequences is computed once and kept in ``selection.json``; every
scored epoch also records its relative gain and its rejection ratio (rejections / inspections).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from rtsched.rl.rewards import lower_is_better
from rtsched.rl.selection import BestOnValidation, validation_starts

DEFAULTS = {"sequences": 10, "seq_len": 256, "seed": 2}


def relative_gain(base: float, value: float, goal: str) -> float:
    """The share by which ``value`` improves on ``base`` (seed 000 Fig. 8: 1 − inspected / base for a
    lower-is-better goal), from the means over the same sequences."""
    if base == 0:
        return 0.0
    return (base - value) / base if lower_is_better(goal) else (value - base) / base


def inspector_validation(trace, starts: Sequence[int], seq_len: int, *, backfill: str = "none",
                         goal: str = "bsld", base: str | None = None) -> Callable[[str], dict]:
    """``score(model_path)`` for ``BestOnValidation``: ``validation`` = the mean over the sequences
    ``starts`` of the inspected goal value (negated for a higher-is-better goal: lower is better),
    with ``value``, ``gain`` (``relative_gain`` against the base policy's mean on the same
    sequences), ``rejection_ratio`` and ``inspections``.  ``base``: the inspected priority (default:
    the model's own)."""
    from rtsched.rl.sequences import run_sequence
    from rtsched.rl.tables import inspect_sequences

    starts = [int(s) for s in starts]
    base_values: dict[str, float] = {}

    def base_mean(name: str) -> float:
        if name not in base_values:
            base_values[name] = float(np.mean([run_sequence(trace, s, seq_len, name, backfill=backfill,
                                                            goals=(goal,))[goal] for s in starts]))
        return base_values[name]

    def score(model_path: str) -> dict:
        from rtsched.rl.modelfiles import read_model_file

        name = base or read_model_file(model_path)["env"].get("base", "sjf")
        run = inspect_sequences(model_path, trace, starts, seq_len, backfill, base, goal)
        ref = base_mean(name)
        return {"validation": run.value if lower_is_better(goal) else -run.value, "value": run.value,
                "gain": relative_gain(ref, run.value, goal),
                "rejection_ratio": run.rejections / run.inspections if run.inspections else 0.0,
                "inspections": run.inspections}

    score.base_mean = base_mean  # the reference, for the selection's record
    return score


def inspector_selection(trace, out: str, every: int, *, base: str, backfill: str = "none", goal: str = "bsld",
                        start_range=None, sequences: int = DEFAULTS["sequences"],
                        seq_len: int = DEFAULTS["seq_len"], seed: int = DEFAULTS["seed"]) -> BestOnValidation:
    """The selection step (``BestOnValidation``) of an inspector run in ``out``: every ``every`` epochs
    the greedy inspector on the validation sequences (module docstring)."""
    import os

    starts = validation_starts(len(trace), seq_len, sequences, [], seed=seed, start_range=start_range)
    score = inspector_validation(trace, starts, seq_len, backfill=backfill, goal=goal, base=base)
    meta = {"validation": f"greedy mean {goal} of the inspected {base} (lower is better)"
            if lower_is_better(goal) else f"minus the greedy mean {goal} of the inspected {base}",
            "base": base, "goal": goal, "backfill": backfill, "starts": starts, "seq_len": seq_len, "seed": seed,
            "start_range": list(start_range) if start_range is not None else None,
            "base_value": score.base_mean(base)}
    os.makedirs(out, exist_ok=True)
    return BestOnValidation(out, score, every, meta)


__all__ = ["DEFAULTS", "inspector_selection", "inspector_validation", "relative_gain"]
