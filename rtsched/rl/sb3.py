"""Models trained with stable-baselines3 / sb3-contrib on rtsched's environments, as rtsched models.

A model trained on ``rtsched/JobPicking-v0`` (``PPO``, ``A2C`` or sb3-contrib's ``MaskablePPO``)
or ``rtsched/Inspector-v0`` (``PPO``, ``A2C``) and saved as a ``.zip`` is loaded here into the
same ``LoadedModel`` as a native checkpoint, so ``rtsched rl evaluate --policies MODEL.zip``,
``rtsched simulate --policy MODEL.zip``, grids and ``RLSchedulerPolicy`` / ``InspectedPolicy``
use it unchanged.  The file is read with the algorithm's own ``load`` (PyTorch; stable-baselines3
unpickles parts of the file, so load only files you trust).

What the network alone does not say (the agent, feature set, padding, backfilling, base priority,
the normalisation constants of the training trace) is stored beside SB3's own members in the zip
as ``rtsched.json``::

    model = MaskablePPO("MlpPolicy", env); model.learn(...)
    save_model(model, "picker.zip", env)          # model.save + rtsched.json
    attach_env("other.zip", env)                  # for a zip already saved with model.save

A zip without ``rtsched.json`` still loads: the agent and window are read from its spaces
(``Discrete(2)`` over 7 or 8 features: an inspector; ``Discrete(W)`` over W·F features: a
job picker), and the normalisation constants must come from the evaluated trace
(``rtsched rl evaluate``'s default ``--norms trace``); a simulation that has no trace-level
constants refuses it with a one-line error.

Actions: the greedy action is the largest logit of the policy's action head.  A ``MaskablePPO``
model's padded window slots are masked (as in training); a plain ``PPO`` model was trained
without masks and the environment mapped an action on a padded slot to slot ``a mod k``, which
``RLSchedulerPolicy`` repeats.

This module writes the description; reading a zip is ``rtsched.rl.modelfiles.load_model``'s (one
loader for every model file).
"""
from __future__ import annotations

import json
import os
import zipfile

from rtsched.files import atomic_write
from rtsched.rl.features import INSPECT_FEATURE_SETS
from rtsched.rl.modelfiles import META, META_FORMAT, ModelFileError


# ------------------------------------------------------------------------------------ describing an env
def env_description(env) -> dict:
    """What a policy needs of the environment ``env`` (an rtsched env, wrapped or not)."""
    from rtsched.rl.inspector.env import InspectorEnv
    from rtsched.rl.rlscheduler.env import JobPickingEnv

    u = getattr(env, "unwrapped", env)
    if isinstance(u, JobPickingEnv):
        agent = "rlscheduler"
        cfg = {"window": u.window, "features": u.obsb.features, "pad": u.obsb.pad, "seq_len": u.seq_len}
    elif isinstance(u, InspectorEnv):
        agent = "inspector"
        features = next(k for k, n in INSPECT_FEATURE_SETS.items() if n == u.feat.n)
        cfg = {"base": u.base_name, "features": features, "max_interval": u.max_interval,
               "max_rejections": u.max_rejections, "seq_len": u.seq_len, "reward": u.reward_kind}
    else:
        raise TypeError(f"not an rtsched environment: {type(u).__name__} (use rtsched/JobPicking-v0 or "
                        "rtsched/Inspector-v0)")
    env_cfg = {"agent": agent, "trace": u.trace.name, "goal": u.goal, "backfill": u.backfill,
               "machine": u.machine.name, **cfg}
    return {"format": META_FORMAT, "agent": agent, "env": env_cfg, "norms": dict(u.norms)}


def attach_env(path: str, env, algorithm: str | None = None) -> str:
    """Add (or replace) ``rtsched.json`` describing ``env`` in the SB3 zip ``path``; atomic."""
    path = os.fspath(path)
    meta = env_description(env)
    if algorithm:
        meta["algorithm"] = algorithm
    try:
        with zipfile.ZipFile(path) as zin:
            members = [(i, zin.read(i.filename)) for i in zin.infolist() if i.filename != META]
    except (OSError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"{path}: not a readable stable-baselines3 zip ({type(exc).__name__})") from None

    def write(tmp: str) -> None:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
            for info, data in members:
                zout.writestr(info, data)
            zout.writestr(META, json.dumps(meta, indent=1))

    atomic_write(path, write)
    return path


def save_model(model, path: str, env) -> str:
    """``model.save(path)`` plus ``rtsched.json`` describing ``env``; returns the file written."""
    path = os.fspath(path)
    if not path.lower().endswith(".zip"):
        path += ".zip"  # SB3 adds it too
    model.save(path)
    return attach_env(path, env, type(model).__name__)


__all__ = ["attach_env", "env_description", "save_model"]
