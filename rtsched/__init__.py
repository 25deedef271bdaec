"""rtsched: real-time and batch job scheduling on HPC machines (Mira first).

One event core (``rtsched.sim``), one metrics module (``rtsched.metrics``); heuristics, the
offline optimum (``milp``) and RL agents (``rtsched.rl``) differ only in their policy.
"""
from rtsched.version import __version__

__all__ = ["__version__", "simulate"]


def __getattr__(name: str):
    # ``rtsched.simulate`` (the one-call API) without importing the pipeline at ``import rtsched``.
    if name == "simulate":
        from rtsched.api import simulate

        return simulate
    raise AttributeError(f"module 'rtsched' has no attribute {name!r}")
