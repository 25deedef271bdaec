"""How trained RL models reach the policy registry without the registry importing ``rtsched.rl``.

``heuristics.registry`` asks the loaders registered under the ``rtsched.policy_loaders`` entry-point
group (pyproject.toml) whether they take a policy name; this module is the RL agents' entry.  It
stays light: PyTorch is imported only when a model is actually loaded.
"""
from __future__ import annotations

import os

from heuristics.registry import PolicyLoader

MODEL_SUFFIXES = (".pt",)
SHIPPED_NAMES = ("rtmix",)  # policy names of models shipped as package data (rtsched/rl/pretrained/)


def _shipped_path(name: str) -> str | None:
    if isinstance(name, str) and name.strip().lower() in SHIPPED_NAMES:
        return os.path.join(os.path.dirname(os.path.abspath(__file__)), "pretrained", "rtmix", "rtmix.pt")
    return None


def is_model_path(name) -> bool:
    """Whether a ``--policy`` value names a trained model: a ``.pt`` file, or an existing file or
    folder (a training output folder holds ``checkpoint.pt``).  Heuristic names are never paths."""
    if not isinstance(name, (str, os.PathLike)):
        return False
    if _shipped_path(name) is not None:
        return True
    p = os.fspath(name)
    return p.endswith(MODEL_SUFFIXES) or os.path.isfile(p) or os.path.isfile(os.path.join(p, "checkpoint.pt"))


def load_model_policy(name, **options):
    """The model file ``name`` as a core policy (``rtsched.rl.policy.load_policy``)."""
    from rtsched.rl.policy import load_policy  # PyTorch: only when a model is asked for

    shipped = _shipped_path(name)
    if shipped is not None:
        policy = load_policy(shipped, **options)
        policy.name = name.strip().lower()
        return policy
    return load_policy(name, **options)


LOADER = PolicyLoader("rtmix (the shipped RL agent), trained RL model (.pt file or training folder)", is_model_path, load_model_policy)
