"""rtsched: real-time and batch job scheduling on HPC machines (Mira first).

One event core (``rtsched.sim``), one metrics module (``rtsched.metrics``); heuristics, the
offline optimum (``milp``) and RL agents (``rtsched.rl``) differ only in their policy.
"""
__version__ = "0.1.0"
