"""Exact offline solvers for small RTJ/BJ instances on the aligned Mira block model.

The problem every method here solves is the one in ``shared/docs/offline-model.md`` (see
``docs/milp.md`` for the formulation choices):

* :mod:`milp.instance` — the :class:`Instance` (machine size + jobs), its JSON format, and the
  seeded Table-2 / Table-3 generators of seed 002 §5;
* :mod:`milp.sequence_milp` — the paper's partition-sequence MILP (PuLP/CBC and OR-Tools);
* :mod:`milp.cpsat` — an exact CP-SAT model without the sequence cap;
* :mod:`milp.bruteforce` — an independent exhaustive enumerator for tiny instances;
* :mod:`milp.solve` — one entry point, :func:`solve`, returning a :class:`SolveResult`;
* :mod:`milp.plan` — placements → :class:`rtsched.schedule.Schedule` (``to_schedule``).
"""
from __future__ import annotations

from milp.instance import Instance, load_instance, save_instance, table2_instance, table3_instance
from milp.plan import Placement, to_schedule
from milp.solve import SolveResult, solve

__all__ = ["Instance", "load_instance", "save_instance", "table2_instance", "table3_instance", "Placement",
           "to_schedule", "SolveResult", "solve"]
