"""A long training run's folder read back (issue 24 §3–4): what it spent and how its validation moved.

A run trained in resumable steps (``rtsched rl train ... --until HH:MM`` / ``--resume``) leaves
``OUT/budget.json`` (``rtsched.rl.budget.StepBudget``: CPU and wall seconds per step) and, with
``--select-every N``, ``OUT/selection.json`` (``rtsched.rl.selection.BestOnValidation``: every
scored epoch's validation figure, the best, and the references scored on the same sequences).
``read_run`` joins the two for learning-curve figures (``rtsched.plots.learning_curve`` with
``key="validation"``) and budget tables; a missing file is an empty part, a corrupt one an
``InputError`` naming it.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from rtsched.errors import InputError
from rtsched.rl.budget import BUDGET
from rtsched.rl.selection import SELECTION


@dataclass(frozen=True)
class RunRecord:
    """One run folder: ``cpu_s`` / ``wall_s`` summed over its steps (0 without ``budget.json``),
    ``steps`` its budget rows, ``curve`` the scored epochs in epoch order (dicts with ``epoch``,
    ``validation`` and, for DAgger rounds scored as epoch 0, ``stage``), ``best`` the chosen row,
    ``references`` {policy: validation figure on the same sequences} and ``validation`` what the
    figure is (e.g. ``"greedy average wait (s)"``)."""

    out: str
    cpu_s: float = 0.0
    wall_s: float = 0.0
    steps: list[dict] = field(default_factory=list)
    curve: list[dict] = field(default_factory=list)
    best: dict | None = None
    references: dict[str, float] = field(default_factory=dict)
    validation: str = ""

    @property
    def name(self) -> str:
        return os.path.basename(os.path.normpath(self.out))

    @property
    def cpu_h(self) -> float:
        return self.cpu_s / 3600.0

    @property
    def last_epoch(self) -> int:
        """The last epoch any step finished (0 before any)."""
        return max((int(s["last_epoch"]) for s in self.steps if s.get("last_epoch") is not None), default=0)


def _read_json(path: str, required: tuple[str, ...]) -> dict | None:
    if not os.path.exists(path):
        return None
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable JSON file ({exc})", path=path) from None
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object", path=path)
    for key in required:
        if key not in doc:
            raise InputError("missing key", path=path, field=key)
    return doc


def read_run(out: str) -> RunRecord:
    """The budget and validation record of run folder ``out`` (module docstring)."""
    if not os.path.isdir(out):
        raise InputError("not a run folder", path=out)
    budget = _read_json(os.path.join(out, BUDGET), ("steps",)) or {}
    selection = _read_json(os.path.join(out, SELECTION), ("epochs",)) or {}
    steps = list(budget.get("steps", []))
    curve = sorted(selection.get("epochs", []), key=lambda r: int(r["epoch"]))
    for row in curve:
        if not isinstance(row.get("validation"), (int, float)):
            raise InputError(f"epoch {row.get('epoch')}: no numeric validation figure",
                             path=os.path.join(out, SELECTION), field="validation")
    return RunRecord(
        out=out,
        cpu_s=float(sum(float(s.get("cpu_s", 0.0)) for s in steps)),
        wall_s=float(sum(float(s.get("wall_s", 0.0)) for s in steps)),
        steps=steps,
        curve=curve,
        best=selection.get("best"),
        references={str(k): float(v) for k, v in selection.get("references", {}).items()},
        validation=str(selection.get("validation", "")),
    )


__all__ = ["RunRecord", "read_run"]
