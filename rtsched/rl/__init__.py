"""Reinforcement-learning schedulers on rtsched's one simulator (see docs/rl.md).

Shared parts, at this level:

* ``agents`` — the agents table (name → subpackage) through which shared code reaches an agent;
* ``sequences`` — RLScheduler's compatibility mode on trace windows (``run_sequence``: the
  committed-head rule of ``heuristics.committed`` in the authors' event order);
* ``trainer``, ``rollouts``, ``nets`` — PPO, where its environments run, the networks (PyTorch);
* ``modelfiles`` — checkpoints and model files (native and stable-baselines3), ``load_model``;
* ``policies`` — trained models as core policies; ``api.train`` — training; ``evaluate`` — the
  papers' test protocol through the run pipeline (no PyTorch for heuristics): import the function
  as ``from rtsched.rl.evaluate import evaluate`` (the module's name, so it is not exported here:
  a package attribute that is also a submodule changes meaning once the submodule is imported).

One subpackage per agent (``rlscheduler``, ``inspector``, ``splitwindow``, ``rlschert``, ``rtmix``),
each with ``env`` (e.g. ``rlscheduler.env.JobPickingEnv``, ``inspector.env.InspectorEnv``),
``policy``, ``recipe`` and ``options``.

Names are imported lazily so that ``import rtsched.rl`` does not load PyTorch or Gymnasium.  Importing
the package still registers the Gymnasium ids (``rtsched.rl.registration``: ``rtsched/JobPicking-v0``,
...), the usual plugin habit: at once when Gymnasium is already loaded, otherwise as soon as it is.

The package's layout (shared parts, one folder per agent, the agents table): docs/architecture.md.
"""
from __future__ import annotations

import importlib
import sys

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


class _RegisterAfterGymnasium:
    """A one-shot import hook (a ``sys.meta_path`` finder): when ``gymnasium`` is first imported, register
    rtsched's ids right after it has loaded (so ``import rtsched.rl`` stays light and still makes
    ``gymnasium.make`` know them).  Not an ``importlib.abc.MetaPathFinder`` subclass: importing that
    module costs the command line's start-up more than this class."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "gymnasium":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_then_register(module):
            run(module)
            importlib.import_module("rtsched.rl.registration")

        loader.exec_module = exec_then_register
        return spec


def _register_gymnasium_ids() -> None:
    if "gymnasium" in sys.modules:
        try:
            importlib.import_module("rtsched.rl.registration")
        except ImportError:  # a broken Gymnasium install: the environments are still usable directly
            pass
    elif not any(isinstance(f, _RegisterAfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterGymnasium())


_register_gymnasium_ids()
