"""How trained RL models reach the policy registry without the registry importing ``rtsched.rl``.

``heuristics.registry`` asks the loaders registered under the ``rtsched.policy_loaders`` entry-point
group (pyproject.toml) whether they take a policy name; this module is the RL agents' entry.  It
stays light: PyTorch is imported only when a model is actually loaded.
"""
from __future__ import annotations

import os

from heuristics.registry import PolicyLoader

MODEL_SUFFIXES = (".pt", ".zip")  # .zip: a stable-baselines3 / sb3-contrib model (rtsched.rl.sb3)


def is_model_path(name) -> bool:
    """Whether a ``--policy`` value names a trained model: a ``.pt`` file, a stable-baselines3 ``.zip``,
    or an existing file or folder (a training output folder holds ``checkpoint.pt``).  Heuristic names are never paths."""
    if not isinstance(name, (str, os.PathLike)):
        return False
    p = os.fspath(name)
    return p.endswith(MODEL_SUFFIXES) or os.path.isfile(p) or os.path.isfile(os.path.join(p, "checkpoint.pt"))


def load_model_policy(name, **options):
    """The model file ``name`` as a core policy (``rtsched.rl.policy.load_policy``); a ``.zip`` is read by
    stable-baselines3 (``rtsched.rl.sb3``)."""
    from rtsched.rl.policy import load_policy  # PyTorch: only when a model is asked for

    return load_policy(name, **options)


LOADER = PolicyLoader("trained RL model (.pt file, training folder or stable-baselines3 .zip)", is_model_path, load_model_policy)
