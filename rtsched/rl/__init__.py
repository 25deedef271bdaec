"""Reinforcement-learning schedulers on rtsched's one simulator (see docs/rl.md).

* ``sequences`` — RLScheduler's compatibility mode on trace windows (``run_sequence``: the
  committed-head rule of ``heuristics.committed`` in the authors' event order);
* ``env_pick.JobPickingEnv`` — RLScheduler's job-picking environment (Gymnasium);
* ``env_inspect.InspectorEnv`` — SchedInspector's environment (Gymnasium);
* ``nets``, ``ppo`` — the networks and PPO with checkpoints (PyTorch);
* ``policy`` — trained models as core policies; ``api.train`` — PPO training; ``evaluate`` — the
  papers' test protocol through the run pipeline (no PyTorch for heuristics): import the function
  as ``from rtsched.rl.evaluate import evaluate`` (the module's name, so it is not exported here:
  a package attribute that is also a submodule changes meaning once the submodule is imported).

Names are imported lazily so that ``import rtsched.rl`` does not load PyTorch or Gymnasium.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "run_sequence": "rtsched.rl.sequences",
    "JobPickingEnv": "rtsched.rl.rlscheduler.env",
    "InspectorEnv": "rtsched.rl.inspector.env",
    "PPOConfig": "rtsched.rl.trainer",
    "PPOTrainer": "rtsched.rl.trainer",
    "ModelFileError": "rtsched.rl.modelfiles",
    "load_model": "rtsched.rl.modelfiles",
    "RLSchedulerPolicy": "rtsched.rl.rlscheduler.policy",
    "InspectedPolicy": "rtsched.rl.inspector.policy",
    "policy_from_model": "rtsched.rl.policies",
    "train": "rtsched.rl.api",
    "read_rl_trace": "rtsched.rl.trace",
    "load_trace": "rtsched.rl.trace",
    "RLTrace": "rtsched.rl.trace",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'rtsched.rl' has no attribute {name!r}")
    return getattr(importlib.import_module(mod), name)
