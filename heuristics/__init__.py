"""Online scheduling policies that run in rtsched's simulator (the policy layer).

* ``priorities`` — the one table of queue keys; ``backfill`` — the one backfilling kernel;
* ``batch`` — textbook priority + backfilling policies; ``committed`` — RLScheduler's
  committed-head rule;
* ``realtime``, ``wcjs`` — seed 002's real-time schemes; ``registry`` — policies and schemes by name.
"""
from heuristics.backfill import BACKFILLS
from heuristics.batch import BatchPolicy, batch_policy
from heuristics.priorities import PRIORITIES, get_priority

__all__ = ["BACKFILLS", "BatchPolicy", "batch_policy", "PRIORITIES", "get_priority"]
