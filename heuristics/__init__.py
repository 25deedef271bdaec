"""Online scheduling policies that run in rtsched's simulator."""
from heuristics.batch import BACKFILLS, BatchPolicy, batch_policy
from heuristics.priorities import PRIORITIES, get_priority

__all__ = ["BACKFILLS", "BatchPolicy", "batch_policy", "PRIORITIES", "get_priority"]
