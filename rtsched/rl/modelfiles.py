"""Model files: the native checkpoint format and stable-baselines3 zips, read into one ``LoadedModel``.

A checkpoint (``checkpoint.pt`` in a training folder, rewritten atomically after every epoch by
``rtsched.rl.trainer``) holds the format tag, the configuration (PPO and environment), the
normalisation constants, both networks, both optimisers, the generator state, the epoch and the
training history.  It is also the trained model file: ``load_model`` reads it
(``torch.load(weights_only=True)``: plain tensors and containers, no pickled rtsched classes, so a
module moved inside ``rtsched.rl`` never breaks an old file) and raises ``ModelFileError`` naming
the file when it is unreadable, not an rtsched model, or does not match the networks it describes.
``export_model`` writes the policy part alone.

A ``.zip`` is a stable-baselines3 / sb3-contrib model (``rtsched.rl.sb3`` writes the
``rtsched.json`` description beside SB3's own members); reading it needs stable-baselines3 and
PyTorch only when such a file is loaded.
"""
from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass

import numpy as np
import torch

from rtsched.errors import OptionError, RtschedError
from rtsched.files import atomic_write_stream
from rtsched.rl.features import INSPECT_FEATURE_SETS, PICK_FEATURE_SETS
from rtsched.rl.inference import MASKED_LOGIT
from rtsched.rl.nets import build_networks

FORMAT = "rtsched-rl-model"
VERSION = 1
CHECKPOINT = "checkpoint.pt"
PROGRESS = "progress.json"  # the per-epoch history beside the checkpoint
LOCK = ".lock"  # held by a training run on its output folder


class ModelFileError(RtschedError, ValueError):
    """A model or checkpoint file that cannot be used (the message names the file)."""



def jsonable(d):
    """``d`` as JSON would give it back (tuples as lists, other objects as strings)."""
    return json.loads(json.dumps(d, default=lambda o: list(o) if isinstance(o, tuple) else str(o)))



def model_file(path: str) -> str:
    """The file of a model given as a file or as a run folder (its ``checkpoint.pt``)."""
    path = os.fspath(path)
    return os.path.join(path, CHECKPOINT) if os.path.isdir(path) else path


def read_model_file(path: str) -> dict:
    """Read and check a model/checkpoint file; ModelFileError naming the file on any problem."""
    path = model_file(path)
    if not os.path.exists(path):
        raise ModelFileError(f"{path}: model file not found")
    try:
        st = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types on corrupt files; its message may advise unsafe loading
        raise ModelFileError(f"{path}: not a readable model file (not tensors saved by rtsched rl train or "
                             f"export; {type(exc).__name__})") from None
    if not isinstance(st, dict) or st.get("format") != FORMAT:
        raise ModelFileError(f"{path}: not an rtsched RL model file (no '{FORMAT}' format tag)")
    if st.get("version") != VERSION:
        raise ModelFileError(f"{path}: model file version {st.get('version')!r}, this rtsched reads {VERSION}")
    for key in ("agent", "arch", "actor", "norms", "env"):
        if key not in st:
            raise ModelFileError(f"{path}: model file lacks '{key}'")
    return st


# What a policy needs of a checkpoint: the optimisers, the critic and the sampling state only serve
# training, and are most of a checkpoint's bytes.
EXPORTED_KEYS = ("format", "version", "agent", "ppo", "env", "norms", "arch", "epoch", "actor", "history")


def export_model(src: str, dst: str, settings: dict | None = None) -> dict:
    """Write the policy part of a model or checkpoint (file or run folder) ``src`` to ``dst``.

    ``settings`` (checked by the caller: for rtmix ``rtmix.core.changed_settings``) replace environment settings
    that only narrow the action mask; the file lists each change (``settings_changed``: name, from, to), after
    those an earlier export made.

    The exported file loads everywhere a model does (:func:`load_model`, ``--policies``) but
    cannot resume training.  The training trace's absolute path is reduced to its file name (it
    names a place on the training machine).  Written through a temporary file, so an interrupted
    export leaves nothing half-written.  Returns ``{"path", "bytes", "agent", "epoch"}``."""
    st = read_model_file(src)
    if os.path.exists(dst) and os.path.samefile(model_file(src), dst):
        raise OptionError(f"{dst}: is the model being exported; give another file (the policy alone written over "
                          "a checkpoint loses its training state)")
    out = {k: st[k] for k in EXPORTED_KEYS if k in st}
    env = dict(out["env"])
    if env.get("trace_path"):
        env["trace_path"] = os.path.basename(env["trace_path"])
    changes = list(st.get("settings_changed", []))
    for name, value in (settings or {}).items():
        changes.append({"name": name, "from": env.get(name), "to": value})
        env[name] = value
    if changes:
        out["settings_changed"] = changes
    out["env"] = env
    out["exported_from"] = os.path.basename(os.path.normpath(os.fspath(src)))
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    atomic_write_stream(dst, lambda fh: torch.save(out, fh))
    return {"path": dst, "bytes": os.path.getsize(dst), "agent": out["agent"], "epoch": int(out.get("epoch", 0))}


@dataclass
class LoadedModel:
    path: str
    agent: str
    actor: torch.nn.Module
    critic: torch.nn.Module
    env: dict
    norms: dict
    arch: dict
    epoch: int
    history: list
    # The actor's logits of one observation (``NumpyActor.logits``'s interface) when the actor is not
    # one of rtsched's networks (a stable-baselines3 policy); None: ``NumpyActor(actor)``.
    scorer: object | None = None


def agent_model(model: "LoadedModel | str", agent: str, label: str) -> LoadedModel:
    """``model`` (a loaded model, or a path ``load_model`` reads) checked to be ``agent``'s;
    ValueError naming the file and ``label`` (the agent as a reader knows it) otherwise."""
    loaded = load_model(model) if not isinstance(model, LoadedModel) else model
    if loaded.agent != agent:
        raise ValueError(f"{loaded.path}: a {loaded.agent} model, not {label}")
    return loaded


def load_model(path: str) -> LoadedModel:
    """A trained model (actor and critic in eval mode) from a model or checkpoint file or folder,
    or a stable-baselines3 / sb3-contrib ``.zip`` (``rtsched.rl.sb3``)."""
    if is_sb3_zip(path):
        return load_sb3_model(path)
    st = read_model_file(path)
    arch = st["arch"]
    try:
        actor, critic = build_networks(st["agent"], int(arch["n_features"]), int(arch["window"]), arch["actor"],
                                       arch["critic"], tuple(arch["hidden"]), arch.get("context"))
        actor.load_state_dict(st["actor"])
        if "critic" in st:
            critic.load_state_dict(st["critic"])
    except (RuntimeError, KeyError, ValueError, TypeError) as exc:
        raise ModelFileError(f"{path}: weights do not match the {st['agent']} networks described in the file: "
                             f"{exc}") from exc
    for name, net in (("actor", actor), ("critic", critic)):
        for pname, tensor in net.state_dict().items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                raise ModelFileError(f"{path}: {name} weight {pname} is not finite (NaN or infinity): a diverged "
                                     "or damaged model")
    actor.eval()
    critic.eval()
    return LoadedModel(os.fspath(path), st["agent"], actor, critic, st["env"], st["norms"], arch,
                       int(st.get("epoch", 0)), list(st.get("history", [])))


# ------------------------------------------------------------------------------------ stable-baselines3 zips
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


class SB3Actor:
    """The policy's action logits of one observation, in the ``NumpyActor.logits`` interface."""

    def __init__(self, policy, masked: bool) -> None:
        self.policy = policy
        self.masked = masked

    def logits(self, obs, mask) -> np.ndarray:
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
    for pname, tensor in policy.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ModelFileError(f"{path}: weight {pname} is not finite (NaN or infinity): a diverged or damaged model")
    return LoadedModel(path, agent, policy, None, env, dict(meta.get("norms") or {}), arch,
                       int(getattr(model, "num_timesteps", 0)), [],
                       scorer=SB3Actor(policy, masked=algo in MASKED_ALGORITHMS))
