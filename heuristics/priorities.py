"""The one table of queue priorities: a sort key per waiting job, lowest first.

Every policy that orders a queue takes its key from here: the textbook batch policies
(``heuristics.batch``), the real-time schemes' low-priority queue, RLScheduler's committed-head
rule (``heuristics.committed``), the RL environments and the inspector's base policy.

A ``Priority.key(job_state, now, machine_nodes)`` is the *primary* key, exactly as the papers (and
the authors' code) define it, including the secondary fields they name (e.g. SJF sorts by
(requested time, submit time)).  What happens on equal keys is the caller's rule, not the table's:

* ``Priority.order`` (textbook, every ``heuristics`` policy): ties by submit time, then job id
  (seed 003 §6), so the result does not depend on the queue's order;
* the committed-head rule sorts the authors' single queue list in place with a stable sort, so
  equal keys keep the order earlier sorts left (``heuristics.committed``).

Static keys do not depend on ``now`` and are computed once per job (cached on the job state's
``key`` slot by the policy that owns the run); dynamic ones are recomputed at each pass.

Formulas (seed 003 Table III, seed 000 Table 3, DESIGN.md "The Mira batch policy"), with
s = submit time, r = requested time (walltime), n = requested nodes, w = q = now − s, N = machine
nodes; all times in s:

======================  ===========================================================  =======
name                    key (lowest first)                                            static
======================  ===========================================================  =======
fcfs, default           s                                                             yes
lcfs                    −s                                                            yes
sjf                     (r, s)                                                        yes
smallest                (n, s)                                                        yes
largest                 (−n, s)                                                       yes
saf                     (r·n, s)                                                      yes
srf                     (r/n, s)                                                      yes
f1                      log10(r)·n + 870·log10(s)   (r or s ≤ 0 → 0.1)                yes
wfp3, wfp               −(w/r)³·n                                                     no
unicep                  −(w + 1e-15) / (log2(n + 1e-15)·r)  (the authors' 1e-15 keeps  no
                        n = 1 finite)
wfp2 (Cobalt)           −q²/r³ · n/N                                                  no
unicef (Cobalt)         −q / (60·z·max(r, 1)),  z = max(⌈log2 n⌉, 6) − 5               no
wsept                   −E[1/max(p, τ)] / E[p]   (Smith's rule in expectation for the  yes
                        bounded slowdown, τ = 600 s; p the runtime the Mira fit
                        expects of a request (r, n): ``runtime_prior``)
wsept-sqrt              −E[1/max(p, τ)] / √E[p]                                       yes
wfp3-authors            −((−1 − s)/r)³·n                                              yes
unicep-authors          −(−1 − s + 1e-15) / (log2(n + 1e-15)·r)                       yes
======================  ===========================================================  =======

The ``wsept`` orders see only the request, like every other order here: the runtime enters through
the prior of the shipped fit to Mira's 2018 logs (``rtsched.generators.miralike.runtime_prior``,
the runtime/walltime quantiles of the request's size class and walltime).  A waiting job's bounded
slowdown grows at 1/max(p, τ) per second of wait, so serving jobs in decreasing E[1/max(p, τ)] /
E[p] is Smith's WSEPT rule for a single machine; ``wsept-sqrt`` weighs the expected runtime less
(a parallel machine runs many jobs at once, so one job's length delays the others less), and is
the one that won on the Mira-like validation weeks (docs/benchmarks.md, tenth session).

The ``-authors`` variants reproduce a defect of RLScheduler's code, which takes the wait of a
queued job as its unset start time (−1) minus s; these keys produced the published WFP3/UNICEP
numbers of seed 003's Table V.  Cobalt's utilities are "highest first", so their key is −utility.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from rtsched.metrics import TAU_SEED002
from rtsched.sim.state import JobState

KeyFunction = Callable[[JobState, int, int], Any]


@dataclass(frozen=True)
class Priority:
    """A named queue order: ``key(job_state, now, machine_nodes)`` → the primary key (lowest first)."""

    name: str
    key: KeyFunction
    static: bool
    # True when (key, submit, id) orders jobs as they arrive, by (submit, id): a queue no job
    # re-entered is then in this order already (FCFS).
    arrival_order: bool = False

    def textbook_key(self, js: JobState, now: int, machine_nodes: int) -> tuple:
        """The primary key with the textbook tie-break: (key, submit, id)."""
        info = js.info
        return (self.key(js, now, machine_nodes), info.submit, info.id)

    def order(self, queue: list[JobState], now: int, machine_nodes: int) -> list[JobState]:
        """``queue`` sorted by (key, submit, id); static keys are cached on the job states."""
        if self.static:
            textbook = self.textbook_key
            for js in queue:
                if js.key is None:
                    js.key = textbook(js, now, machine_nodes)
            return sorted(queue, key=_cached_key)
        key = self.key
        return sorted(queue, key=lambda js: (key(js, now, machine_nodes), js.info.submit, js.info.id))


def _cached_key(js: JobState):
    return js.key


# ---------------------------------------------------------------------------------- static keys
def _fcfs(js: JobState, now: int, total: int):
    return js.info.submit


def _lcfs(js: JobState, now: int, total: int):
    return -js.info.submit


def _sjf(js: JobState, now: int, total: int):
    i = js.info
    return (i.walltime, i.submit)


def _smallest(js: JobState, now: int, total: int):
    i = js.info
    return (i.nodes, i.submit)


def _largest(js: JobState, now: int, total: int):
    i = js.info
    return (-i.nodes, i.submit)


def _saf(js: JobState, now: int, total: int):
    i = js.info
    return (i.walltime * i.nodes, i.submit)


def _srf(js: JobState, now: int, total: int):
    i = js.info
    return (i.walltime / i.nodes, i.submit)


def _f1(js: JobState, now: int, total: int):
    i = js.info
    r = i.walltime if i.walltime > 0 else 0.1
    s = i.submit if i.submit > 0 else 0.1
    return math.log10(r) * i.nodes + 870 * math.log10(s)


def _wfp3_authors(js: JobState, now: int, total: int):
    i = js.info
    return -((float(-1 - i.submit) / i.walltime) ** 3) * i.nodes


def _unicep_authors(js: JobState, now: int, total: int):
    i = js.info
    return -(-1 - i.submit + 1e-15) / (math.log2(i.nodes + 1e-15) * i.walltime)


# ---------------------------------------------------------------------------------- dynamic keys
def _wfp3(js: JobState, now: int, total: int):
    i = js.info
    return -((float(now - i.submit) / i.walltime) ** 3) * i.nodes


def _unicep(js: JobState, now: int, total: int):
    i = js.info
    return -(now - i.submit + 1e-15) / (math.log2(i.nodes + 1e-15) * i.walltime)


def _cobalt_wfp2(js: JobState, now: int, total: int):
    i = js.info
    q = now - i.submit
    return -(q * q) / (i.walltime ** 3) * i.nodes / total


def _cobalt_unicef(js: JobState, now: int, total: int):
    i = js.info
    q = now - i.submit
    z = max(math.ceil(math.log2(i.nodes)) if i.nodes > 1 else 0, 6) - 5
    return -q / (60.0 * z * max(i.walltime, 1))


def _wsept(runtime_exponent: float) -> KeyFunction:
    """−E[1/max(p, τ)] / E[p]^runtime_exponent under the Mira runtime prior (module docstring)."""

    def key(js: JobState, now: int, total: int):
        # imported here, not at the top: rtsched.generators brings scipy (≈ 0.3 s) into every
        # `import heuristics`; a static key is computed once per job, so the lookup is no hot path
        from rtsched.generators.miralike import runtime_prior

        i = js.info
        rate, mean_runtime = runtime_prior(i.walltime, i.nodes, TAU_SEED002)
        return -rate / mean_runtime ** runtime_exponent

    return key


PRIORITIES: dict[str, Priority] = {p.name: p for p in (
    Priority("fcfs", _fcfs, True, arrival_order=True),
    Priority("lcfs", _lcfs, True),
    Priority("sjf", _sjf, True),
    Priority("smallest", _smallest, True),
    Priority("largest", _largest, True),
    Priority("saf", _saf, True),
    Priority("srf", _srf, True),
    Priority("f1", _f1, True),
    Priority("wfp3", _wfp3, False),
    Priority("unicep", _unicep, False),
    Priority("wfp3-authors", _wfp3_authors, True),
    Priority("unicep-authors", _unicep_authors, True),
    # Cobalt's utilities (Mira): "default" is queued time (FCFS), "wfp" is WFP3's formula.
    Priority("default", _fcfs, True, arrival_order=True),
    Priority("wfp", _wfp3, False),
    Priority("wfp2", _cobalt_wfp2, False),
    Priority("unicef", _cobalt_unicef, False),
    Priority("wsept", _wsept(1.0), True),
    Priority("wsept-sqrt", _wsept(0.5), True),
)}


def get_priority(priority: "str | Priority") -> Priority:
    """A priority by name (case and ``_``/``-`` insensitive), or the ``Priority`` itself."""
    if isinstance(priority, Priority):
        return priority
    name = str(priority).strip().lower().replace("_", "-")
    try:
        return PRIORITIES[name]
    except KeyError:
        raise ValueError(f"unknown priority {priority!r}; choose from {', '.join(PRIORITIES)}") from None
