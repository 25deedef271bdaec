"""How ``replan`` (``milp.replan``) reaches the policy registry: a ``PolicyLoader`` registered under
the ``rtsched.policy_loaders`` entry point (pyproject.toml), as ``rtsched.rl.hook`` does for the RL
models — the policy layer must not import ``milp``.  Light: OR-Tools is imported only when a
``replan`` policy is built."""
from __future__ import annotations

from typing import Any

from heuristics.registry import PolicyLoader


def is_replan_name(name: Any) -> bool:
    """``replan`` or ``replan:OPTIONS`` (``milp.replan.parse_replan_name``)."""
    return isinstance(name, str) and (name.strip().lower() == "replan" or name.strip().lower().startswith("replan:"))


def load_replan(name: str, **options: Any):
    """A ``ReplanPolicy`` with the options of its name, overridden by keyword ``options``."""
    from milp.replan import ReplanPolicy, parse_replan_name

    return ReplanPolicy(**{**parse_replan_name(name), **options})


def replan_identity(name: str) -> dict[str, Any]:
    """Every option of the policy a replan name stands for (defaults included): what decides its runs."""
    return load_replan(name).options()


LOADER = PolicyLoader("replan (receding-horizon re-planning on the exact model; replan:ms=MS,k=K,theta=T,"
                      "clock=wall|deterministic)", is_replan_name, load_replan)
