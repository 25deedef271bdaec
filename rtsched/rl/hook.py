"""How trained RL models reach the policy registry without the registry importing ``rtsched.rl``.

``heuristics.registry`` asks the loaders registered under the ``rtsched.policy_loaders`` entry-point
group (pyproject.toml) whether they take a policy name; this module is the RL agents' entry.  It
stays light: PyTorch is imported only when a model is actually loaded.
"""
from __future__ import annotations

import os

from heuristics.registry import PolicyLoader

MODEL_SUFFIXES = (".pt", ".zip")  # .zip: a stable-baselines3 / sb3-contrib model (rtsched.rl.sb3)
# Models shipped with rtsched that a bare policy name reaches: ``pretrained/FOLDER/NAME.pt`` for these
# folders (``--policy rtmix``, ``--policy rlschert-vasplike-kill``; see each folder's manifest).
PRETRAINED_DIRS = tuple(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pretrained", folder)
                        for folder in ("rtmix", "rlschert"))


def pretrained_path(name) -> str | None:
    """The shipped model file a bare policy name stands for, or None."""
    if not isinstance(name, str) or not name or os.sep in name or "/" in name or name.endswith(MODEL_SUFFIXES):
        return None
    for folder in PRETRAINED_DIRS:
        path = os.path.join(folder, name.strip().lower() + ".pt")
        if os.path.isfile(path):
            return path
    return None


def is_model_path(name) -> bool:
    """Whether a ``--policy`` value names a trained model: a ``.pt`` file, a stable-baselines3 ``.zip``,
    or an existing file or folder (a training output folder holds ``checkpoint.pt``).  Heuristic names are never paths."""
    if not isinstance(name, (str, os.PathLike)):
        return False
    p = os.fspath(name)
    return (p.endswith(MODEL_SUFFIXES) or os.path.isfile(p) or os.path.isfile(os.path.join(p, "checkpoint.pt"))
            or pretrained_path(p) is not None)


def load_model_policy(name, **options):
    """The model file ``name`` (or the shipped model it names) as a core policy
    (``rtsched.rl.policies.load_policy``); a ``.zip`` is read by stable-baselines3 (``rtsched.rl.sb3``)."""
    from rtsched.rl.policies import load_policy  # PyTorch: only when a model is asked for

    shipped = pretrained_path(name)
    if shipped is not None:
        policy = load_policy(shipped, **options)
        policy.name = name.strip().lower()  # tables show the shipped model by its name
        return policy
    return load_policy(name, **options)


def model_source(name) -> str | None:
    """The file behind a model name: the shipped model a bare name reaches, a training folder's
    ``checkpoint.pt``, else the path itself."""
    shipped = pretrained_path(name)
    if shipped is not None:
        return shipped
    folder_ckpt = os.path.join(os.fspath(name), "checkpoint.pt")
    return folder_ckpt if os.path.isfile(folder_ckpt) else os.fspath(name)


LOADER = PolicyLoader("trained RL model (.pt file, training folder, stable-baselines3 .zip, or a shipped model's "
                      "name: rtmix, rlschert-vasplike-kill, ...)", is_model_path, load_model_policy, model_source)
