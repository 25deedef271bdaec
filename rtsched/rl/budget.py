"""Long training in resumable steps (issue 24 §3): what each step spends, and a clean stop.

A run of many hours is reached in steps of a few (``rtsched rl train ... --resume``).  ``StepBudget``
keeps ``OUT/budget.json``: one row per step (``started`` UTC, ``first_epoch``, ``last_epoch``,
``cpu_s``, ``wall_s``) and the totals over all steps, rewritten atomically after every epoch, so a
killed step still leaves its seconds up to its last epoch.  CPU seconds are this process's
(``time.process_time``: every thread of it, not rollout worker processes); wall seconds are the
step's elapsed time, which on a shared machine may be several times the CPU seconds.

It also stops a step cleanly after the epoch during which ``until`` (a UTC time) passes or a file
``OUT/STOP`` appears: the progress callback raises ``StopTraining`` after the trainer has written
that epoch's checkpoint, and ``rtsched.rl.api.run_training`` ends the run there.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import time
from dataclasses import dataclass, field

from rtsched.errors import OptionError
from rtsched.files import atomic_write_text

BUDGET = "budget.json"
STOP_FILE = "STOP"


class StopTraining(Exception):
    """A step ends on purpose after a finished (checkpointed) epoch: ``--until`` passed or OUT/STOP."""


def deadline_at(text: str, now: dt.datetime | None = None) -> dt.datetime:
    """The next UTC time ``HH:MM`` after ``now`` (today's, or tomorrow's when today's has passed);
    ``OptionError`` naming ``--until`` for anything else."""
    now = now or dt.datetime.now(dt.timezone.utc)
    hh, sep, mm = str(text).partition(":")
    try:
        if not sep or len(mm) != 2:
            raise ValueError
        hour, minute = int(hh), int(mm)
        at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    except ValueError:
        raise OptionError(f"--until: expected a UTC time HH:MM, got {text!r}") from None
    return at if at > now else at + dt.timedelta(days=1)


@dataclass
class StepBudget:
    """``train(progress=budget)``: account this step's CPU and wall seconds in ``OUT/budget.json``
    after every epoch, then raise ``StopTraining`` when ``until`` has passed or ``OUT/STOP`` exists
    (module docstring).  Construct it when the step starts (before any cloning or scoring, which
    count too)."""

    out: str
    until: dt.datetime | None = None
    doc: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        os.makedirs(self.out, exist_ok=True)
        path = os.path.join(self.out, BUDGET)
        if os.path.exists(path):
            with open(path) as fh:
                self.doc = json.load(fh)
        self.doc.setdefault("steps", [])
        self.step = {"started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                     "first_epoch": None, "last_epoch": None, "cpu_s": 0.0, "wall_s": 0.0}
        self.doc["steps"].append(self.step)
        self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        self.account()

    def account(self, epoch: int | None = None) -> None:
        """Record the seconds spent so far in this step (and ``epoch`` as its last) and the totals."""
        if epoch is not None:
            if self.step["first_epoch"] is None:
                self.step["first_epoch"] = epoch
            self.step["last_epoch"] = epoch
        self.step["cpu_s"] = round(time.process_time() - self._cpu0, 1)
        self.step["wall_s"] = round(time.perf_counter() - self._wall0, 1)
        self.doc["cpu_s"] = round(sum(s["cpu_s"] for s in self.doc["steps"]), 1)
        self.doc["wall_s"] = round(sum(s["wall_s"] for s in self.doc["steps"]), 1)
        atomic_write_text(os.path.join(self.out, BUDGET), json.dumps(self.doc, indent=1) + "\n")

    def should_stop(self) -> bool:
        return ((self.until is not None and dt.datetime.now(dt.timezone.utc) >= self.until)
                or os.path.exists(os.path.join(self.out, STOP_FILE)))

    def __call__(self, epoch: int, epochs: int, stats: dict) -> None:
        self.account(epoch)
        if epoch < epochs and self.should_stop():
            raise StopTraining(f"stopped after epoch {epoch}")


__all__ = ["BUDGET", "STOP_FILE", "StepBudget", "StopTraining", "deadline_at"]
