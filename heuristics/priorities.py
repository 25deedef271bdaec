"""Queue priorities: a sort key per waiting job, smaller = served first.

Static keys (FCFS, SJF, sizes, F1) are computed once per job and cached on the job state;
dynamic ones (WFP3, UNICEP, Cobalt utilities) depend on the current wait and are recomputed at
each scheduling pass.  Ties are broken by submit time, then job id (seed 003 §6).  All times in s.

Formulas (seed 003 digest §6; DESIGN.md "The Mira batch policy"), with w = now − submit (wait),
r = walltime (requested time), n = nodes, s = submit time:

* FCFS: s.  SJF: r.  smallest: n.  largest: −n.
* WFP3: −(w / r)^3 · n.   UNICEP: −w / (log2(n) · r)  (n = 1 → log2 taken as 1e-15... see below).
* F1: log10(r) · n + 870 · log10(s)  (r or s <= 0 replaced by 0.1).
* Cobalt utilities (highest utility first, so the key is −utility), q = queued time = w:
  ``default`` = q (FCFS); ``wfp`` = (q / r)^3 · n; ``wfp2`` = q^2 / r^3 · n / N (N = machine nodes);
  ``unicef`` = q / (60 · z · max(r, 1)) with z = max(ceil(log2 n), 6) − 5.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from rtsched.sim.state import JobState


@dataclass(frozen=True)
class Priority:
    """A named queue order.  ``key(job_state, now, machine_nodes)`` → sortable; ``static`` keys are cached."""

    name: str
    key: Callable[[JobState, int, int], tuple]
    static: bool

    def order(self, queue: list[JobState], now: int, machine_nodes: int) -> list[JobState]:
        if self.static:
            key = self.key
            for js in queue:
                if js.key is None:
                    js.key = key(js, now, machine_nodes)
            return sorted(queue, key=_cached_key)
        key = self.key
        return sorted(queue, key=lambda js: key(js, now, machine_nodes))


def _cached_key(js: JobState):
    return js.key


def _fcfs(js: JobState, now: int, total: int) -> tuple:
    i = js.info
    return (i.submit, i.id)


def _sjf(js: JobState, now: int, total: int) -> tuple:
    i = js.info
    return (i.walltime, i.submit, i.id)


def _smallest(js: JobState, now: int, total: int) -> tuple:
    i = js.info
    return (i.nodes, i.submit, i.id)


def _largest(js: JobState, now: int, total: int) -> tuple:
    i = js.info
    return (-i.nodes, i.submit, i.id)


def _f1(js: JobState, now: int, total: int) -> tuple:
    i = js.info
    r = i.walltime if i.walltime > 0 else 0.1
    s = i.submit if i.submit > 0 else 0.1
    return (math.log10(r) * i.nodes + 870.0 * math.log10(s), i.submit, i.id)


def _wfp3(js: JobState, now: int, total: int) -> tuple:
    i = js.info
    w = now - i.submit
    return (-((w / i.walltime) ** 3) * i.nodes, i.submit, i.id)


def _unicep(js: JobState, now: int, total: int) -> tuple:
    i = js.info
    w = now - i.submit
    log_n = math.log2(i.nodes) if i.nodes > 1 else 1e-15  # log2(1) = 0: the authors add 1e-15
    return (-w / (log_n * i.walltime), i.submit, i.id)


def _cobalt_wfp(js: JobState, now: int, total: int) -> tuple:
    i = js.info
    q = now - i.submit
    return (-((q / i.walltime) ** 3) * i.nodes, i.submit, i.id)


def _cobalt_wfp2(js: JobState, now: int, total: int) -> tuple:
    i = js.info
    q = now - i.submit
    return (-(q * q) / (i.walltime ** 3) * i.nodes / total, i.submit, i.id)


def _cobalt_unicef(js: JobState, now: int, total: int) -> tuple:
    i = js.info
    q = now - i.submit
    z = max(math.ceil(math.log2(i.nodes)) if i.nodes > 1 else 0, 6) - 5
    return (-q / (60.0 * z * max(i.walltime, 1)), i.submit, i.id)


PRIORITIES: dict[str, Priority] = {
    "fcfs": Priority("fcfs", _fcfs, True),
    "sjf": Priority("sjf", _sjf, True),
    "smallest": Priority("smallest", _smallest, True),
    "largest": Priority("largest", _largest, True),
    "f1": Priority("f1", _f1, True),
    "wfp3": Priority("wfp3", _wfp3, False),
    "unicep": Priority("unicep", _unicep, False),
    # Cobalt's utilities (Mira); "default" is queued time, i.e. FCFS.
    "default": Priority("default", _fcfs, True),
    "wfp": Priority("wfp", _cobalt_wfp, False),
    "wfp2": Priority("wfp2", _cobalt_wfp2, False),
    "unicef": Priority("unicef", _cobalt_unicef, False),
}


def get_priority(name: str) -> Priority:
    try:
        return PRIORITIES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown priority {name!r}; choose from {', '.join(PRIORITIES)}") from None
