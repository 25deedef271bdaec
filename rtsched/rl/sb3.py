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
"""
from __future__ import annotations

import json
import os
import zipfile

import numpy as np

from rtsched.files import atomic_write
from rtsched.rl.features import INSPECT_FEATURE_SETS, PICK_FEATURE_SETS
from rtsched.rl.inference import MASKED_LOGIT
from rtsched.rl.ppo import LoadedModel, ModelFileError

META = "rtsched.json"
META_FORMAT = "rtsched-sb3-env"
SB3_MEMBERS = ("data", "policy.pth")
# algorithm name -> (module, class); all are actor-critic algorithms with a discrete action head.
ALGORITHMS = {
    "PPO": ("stable_baselines3", "PPO"),
    "A2C": ("stable_baselines3", "A2C"),
    "MaskablePPO": ("sb3_contrib", "MaskablePPO"),
}
MASKED_ALGORITHMS = ("MaskablePPO",)


def is_sb3_zip(path) -> bool:
    return isinstance(path, (str, os.PathLike)) and os.fspath(path).lower().endswith(".zip")


# ------------------------------------------------------------------------------------ describing an env
def env_description(env) -> dict:
    """What a policy needs of the environment ``env`` (an rtsched env, wrapped or not)."""
    from rtsched.rl.env_inspect import InspectorEnv
    from rtsched.rl.env_pick import JobPickingEnv

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


# ------------------------------------------------------------------------------------ loading
class SB3Actor:
    """The policy's action logits of one observation, in the ``NumpyActor.logits`` interface."""

    def __init__(self, policy, masked: bool) -> None:
        import torch

        self.torch = torch
        self.policy = policy
        self.masked = masked

    def logits(self, obs, mask) -> np.ndarray:
        torch = self.torch
        p = self.policy
        with torch.no_grad():
            x = torch.as_tensor(np.asarray(obs, dtype=np.float32)[None])
            features = p.extract_features(x, p.pi_features_extractor)
            latent = p.mlp_extractor.forward_actor(features)
            out = p.action_net(latent)[0].numpy().astype(np.float32)
        if self.masked:
            out = np.where(mask, out, np.float32(MASKED_LOGIT))
        return out


def _read_members(path: str) -> dict:
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            missing = [m for m in SB3_MEMBERS if m not in names]
            if missing:
                raise ModelFileError(f"{path}: not a stable-baselines3 model zip (no {', '.join(missing)})")
            meta = json.loads(z.read(META)) if META in names else None
            data = json.loads(z.read("data"))
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ModelFileError(f"{path}: not a readable stable-baselines3 zip ({type(exc).__name__})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path}: damaged stable-baselines3 zip (unreadable JSON: {exc})") from None
    if meta is not None and (not isinstance(meta, dict) or meta.get("format") != META_FORMAT):
        raise ModelFileError(f"{path}: {META} is not an rtsched description (no '{META_FORMAT}' format tag)")
    return {"meta": meta, "data": data}


def _algorithm(path: str, members: dict) -> str:
    meta = members["meta"] or {}
    algo = meta.get("algorithm")
    if algo is None:  # SB3 records the policy class's module in its "data" member
        module = str((members["data"].get("policy_class") or {}).get("__module__", ""))
        algo = "MaskablePPO" if "maskable" in module else "PPO"
    if algo not in ALGORITHMS:
        raise ModelFileError(f"{path}: algorithm {algo!r} is not supported; rtsched loads "
                             f"{', '.join(ALGORITHMS)}")
    return algo


def _infer(path: str, obs_dim: int, n_actions: int) -> dict:
    """The agent and its settings from the model's spaces (a zip without ``rtsched.json``)."""
    if n_actions == 2 and obs_dim in INSPECT_FEATURE_SETS.values():
        features = next(k for k, n in INSPECT_FEATURE_SETS.items() if n == obs_dim)
        return {"agent": "inspector", "env": {"agent": "inspector", "features": features}, "norms": {}}
    for features, nf in PICK_FEATURE_SETS.items():
        if n_actions > 0 and obs_dim == n_actions * nf:
            return {"agent": "rlscheduler",
                    "env": {"agent": "rlscheduler", "window": n_actions, "features": features, "pad": "zeros"},
                    "norms": {}}
    raise ModelFileError(f"{path}: spaces Box({obs_dim},) -> Discrete({n_actions}) match neither rtsched "
                         "environment (job picking: W*8 or W*9 features -> Discrete(W); inspector: 7 or 8 -> "
                         "Discrete(2))")


def load_sb3_model(path) -> LoadedModel:
    """An SB3 zip as a ``LoadedModel`` (``scorer`` set; ``actor`` the SB3 policy module)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ModelFileError(f"{path}: model file not found")
    members = _read_members(path)
    algo = _algorithm(path, members)
    mod_name, cls_name = ALGORITHMS[algo]
    try:
        import importlib

        cls = getattr(importlib.import_module(mod_name), cls_name)
    except ImportError:
        extra = "sb3-contrib" if mod_name == "sb3_contrib" else "stable-baselines3"
        raise ModelFileError(f"{path}: a {algo} model needs {extra} (pip install 'rtsched[rl-ecosystem]')") from None
    try:
        model = cls.load(path, device="cpu")
    except Exception as exc:  # SB3 raises many types on damaged members
        raise ModelFileError(f"{path}: stable-baselines3 could not load this {algo} model "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''})") from None
    from gymnasium import spaces

    if not isinstance(model.action_space, spaces.Discrete) or not isinstance(model.observation_space, spaces.Box):
        raise ModelFileError(f"{path}: spaces {model.observation_space} -> {model.action_space}; rtsched's "
                             "environments have a Box observation and a Discrete action")
    obs_dim = int(np.prod(model.observation_space.shape))
    n_actions = int(model.action_space.n)
    meta = members["meta"] or _infer(path, obs_dim, n_actions)
    agent = meta.get("agent")
    env = dict(meta.get("env") or {})
    if agent == "rlscheduler":
        window = int(env.get("window", n_actions))
        nf = PICK_FEATURE_SETS.get(env.get("features", "code"))
        if window != n_actions or nf is None or obs_dim != window * nf:
            raise ModelFileError(f"{path}: {META} describes a {window}-slot window of {env.get('features')!r} "
                                 f"features, but the network maps {obs_dim} inputs to {n_actions} actions")
        arch = {"n_features": nf, "window": window, "actor": f"sb3:{algo}"}
    elif agent == "inspector":
        nf = INSPECT_FEATURE_SETS.get(env.get("features", "paper"))
        if n_actions != 2 or obs_dim != nf:
            raise ModelFileError(f"{path}: {META} describes an inspector with {nf} features, but the network maps "
                                 f"{obs_dim} inputs to {n_actions} actions")
        arch = {"n_features": nf, "window": 1, "actor": f"sb3:{algo}"}
    else:
        raise ModelFileError(f"{path}: {META} names agent {agent!r}, not rlscheduler or inspector")
    policy = model.policy
    policy.set_training_mode(False)
    import torch

    for pname, tensor in policy.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ModelFileError(f"{path}: weight {pname} is not finite (NaN or infinity): a diverged or damaged model")
    return LoadedModel(path, agent, policy, None, env, dict(meta.get("norms") or {}), arch,
                       int(getattr(model, "num_timesteps", 0)), [],
                       scorer=SB3Actor(policy, masked=algo in MASKED_ALGORITHMS))


__all__ = ["attach_env", "env_description", "is_sb3_zip", "load_sb3_model", "save_model", "SB3Actor"]
