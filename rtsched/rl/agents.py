"""The agents table: every RL agent by name, and the one way shared code reaches an agent's parts.

An agent is one subpackage of ``rtsched.rl`` holding the same parts:

* ``env`` — its Gymnasium environment;
* ``policy`` — its trained model as a core policy (``from_model(model, **options)``);
* ``recipe`` — its training recipe: ``make_env`` (the environment from a trace and options),
  ``ENV_OPTIONS`` (the environment options ``train`` accepts), ``PPO_DEFAULTS`` (where the agent's
  paper differs from ``PPOConfig``), and either ``describe`` (what a trace-trained agent records of
  its environment; with ``ENV_DEFAULTS`` and, unless it is a committed-head agent, ``settings``) or
  its own ``train``;
* ``options`` — its ``rtsched rl train`` options (argparse only: the command line builds its parser
  from them without loading NumPy or PyTorch).

Shared code (the trainer front-end ``rtsched.rl.api``, the policy loader ``rtsched.rl.policies``,
the command line) looks an agent's part up here by name and imports it then, so no shared module
imports an agent and no agent imports another (import-linter contracts in pyproject.toml).
Adding an agent is one new folder and one line in ``AGENTS``.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

# agent name -> its subpackage.  New agents add one line here.
AGENTS: dict[str, str] = {
    "rlscheduler": "rtsched.rl.rlscheduler",  # RLScheduler: picks the head job (seed 003)
    "inspector": "rtsched.rl.inspector",  # SchedInspector: accepts or rejects a priority's pick (seed 000)
    "splitwindow": "rtsched.rl.splitwindow",  # Deep Back-Filling's split window (seed 004)
    "rlschert": "rtsched.rl.rlschert",  # RLSchert: selects and kills on a VASP-like workload (seed 001)
    "rtmix": "rtsched.rl.rtmix",  # real-time/batch mixes on a partitioned machine, cloned from the optimum
}

PARTS = ("env", "policy", "recipe", "options")


def agent_part(agent: str, part: str) -> ModuleType:
    """The module ``part`` (one of ``PARTS``) of ``agent``; ValueError naming the agents for an unknown one."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; use {', '.join(AGENTS)}")
    if part not in PARTS:
        raise ValueError(f"unknown agent part {part!r}; one of {', '.join(PARTS)}")
    return importlib.import_module(f"{AGENTS[agent]}.{part}")


@dataclass
class EnvFactory:
    """Builds one environment of ``agent`` on ``trace`` (an ``RLTrace``, or what the agent's
    ``recipe.make_env`` accepts; pickled once per rollout worker) with the environment ``options``.
    The trainer and the rollout pools take it as a plain callable."""

    agent: str
    trace: Any
    goal: str = "bsld"
    backfill: str = "none"
    machine: Any = None
    options: dict = field(default_factory=dict)

    def __call__(self):
        return agent_part(self.agent, "recipe").make_env(self.trace, goal=self.goal, backfill=self.backfill,
                                                         machine=self.machine, **self.options)


__all__ = ["AGENTS", "PARTS", "EnvFactory", "agent_part"]
