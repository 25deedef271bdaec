"""A policy that replays decisions given in advance at given times (plans, tests, what-ifs)."""
from __future__ import annotations

from typing import Iterable, Mapping

from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Preempt, Start, WakeAt
from rtsched.sim.state import RUNNING, WAITING


class ScriptPolicy:
    """Carry out ``plan[t]`` (a list of decisions) at time t.

    With ``strict=True`` (the default) every decision goes to the simulator as planned, so a plan
    that does not fit the simulator's semantics fails loudly (DecisionError).  With
    ``strict=False`` a ``Start`` whose job is not waiting or whose allocation is still held is
    retried at each later scheduling point.
    """

    name = "script"

    def __init__(self, plan: Mapping[int, Iterable[Decision]], *, strict: bool = True) -> None:
        self.plan = {int(t): list(ds) for t, ds in plan.items()}
        self.strict = strict
        self._armed = False
        self._late: list[Decision] = []

    def decide(self, view: SimView) -> list[Decision]:
        out: list[Decision] = []
        if not self._armed:
            self._armed = True
            out.extend(WakeAt(t) for t in sorted(self.plan) if t > view.now)
        due = self._late + self.plan.pop(view.now, [])
        self._late = []
        if self.strict:  # the simulator itself rejects an impossible decision (DecisionError)
            out.extend(due)
            return out
        for d in due:
            if type(d) is Start:
                js = view.job(d.job_id)
                ready = js.status == WAITING
                if ready and d.alloc is not None and not view.state.is_free(d.alloc, js.info.nodes):
                    blockers = view.holders(d.alloc) if view.machine.partitioned else []
                    ready = bool(blockers) and all(b.status != RUNNING for b in blockers)
                if not ready:
                    self._late.append(d)
                    continue
            out.append(d)
        return out


def at(t: int, *decisions: Decision) -> tuple[int, list[Decision]]:
    return t, list(decisions)


__all__ = ["ScriptPolicy", "Start", "Preempt", "WakeAt", "at"]
