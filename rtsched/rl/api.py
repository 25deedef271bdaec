"""Training entry point: ``train`` (the RL papers' test protocol is ``rtsched.rl.evaluate``).

``train(agent="rlscheduler", trace="lublin_256.swf", goal="bsld", backfill="none", epochs=100,
out="runs/x")`` trains with the papers' defaults, writing ``out/checkpoint.pt`` (the model and
everything needed to resume) and ``out/progress.json`` after every epoch; calling it again with
the same settings and more epochs resumes.
"""
from __future__ import annotations

import contextlib
import os
from typing import Callable

from heuristics.backfill import normalize_backfill
from heuristics.committed import COMMITTED_BACKFILLS
from rtsched.machines import FlatCluster, machine_from_spec
from rtsched.rl.env_inspect import InspectorEnv
from rtsched.rl.env_pick import JobPickingEnv
from rtsched.errors import OptionError
from rtsched.files import FileLock, LockedError
from rtsched.rl.ppo import CHECKPOINT, LOCK, PPOConfig, PPOTrainer, split_options
from rtsched.rl.sequences import filter_range
from rtsched.rl.trace import load_trace

PICK_ENV_OPTIONS = ("seq_len", "window", "start_range", "sjf_filter", "features", "pad", "util_window")
INSPECT_ENV_OPTIONS = ("seq_len", "base", "features", "reward", "max_interval", "max_rejections", "start_range",
                       "util_window")


def _machine_for(trace, machine):
    if machine is None:
        return FlatCluster(trace.max_nodes)
    if isinstance(machine, str):
        return machine_from_spec(machine)
    return machine


def make_env(agent: str, trace, *, goal: str = "bsld", backfill="none", machine=None, **options):
    """A picking (``"rlscheduler"``) or inspector (``"inspector"``) environment."""
    if agent == "rlscheduler":
        return JobPickingEnv(trace, machine=machine, goal=goal, backfill=backfill, **options)
    if agent == "inspector":
        return InspectorEnv(trace, machine=machine, goal=goal, backfill=backfill, **options)
    raise ValueError(f"unknown agent {agent!r}; use 'rlscheduler' or 'inspector'")


def train(agent: str = "rlscheduler", trace=None, goal: str = "bsld", backfill="none", epochs: int = 100,
          out: str | None = None, progress: Callable | None = None, *, machine=None, resume: bool = True,
          init_from: str | None = None, on_trajectory: Callable | None = None, **options) -> dict:
    """Train an agent; returns ``{"out", "checkpoint", "history", "epochs_run"}``.

    ``options`` are environment options (``seq_len``, ``window``, ``start_range``, ``sjf_filter``,
    ``features``, ``pad``, ``util_window``; inspector: ``base``, ``reward``, ``max_interval``,
    ``max_rejections``) and PPO options (``PPOConfig`` fields: ``trajs_per_epoch``, ``n_envs``,
    ``seed``, ``pi_lr``, ...).  ``progress(epoch, epochs, stats)`` is called after every epoch.
    With ``resume`` and an existing ``out/checkpoint.pt`` of the same settings, training continues
    from its epoch; a checkpoint of other settings raises ``ModelFileError`` naming the file.
    ``init_from`` (a model file or folder) starts a *new* run from that model's weights, e.g. stage 2
    of trajectory filtering (train on all sequences after a filtered stage 1, seed 003 §IV-C).
    """
    if trace is None:
        raise ValueError("train() needs a trace (SWF path, Workload or RLTrace)")
    if agent not in ("rlscheduler", "inspector"):
        raise ValueError(f"unknown agent {agent!r}; use 'rlscheduler' or 'inspector'")
    tr = load_trace(trace)
    mach = _machine_for(tr, machine)
    backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS)
    allowed_env = PICK_ENV_OPTIONS if agent == "rlscheduler" else INSPECT_ENV_OPTIONS
    env_opts, ppo_opts = split_options(options, allowed_env, f"train() for agent {agent!r}")
    if agent == "inspector":
        env_opts.setdefault("seq_len", 128)
    if "hidden" in ppo_opts:
        ppo_opts["hidden"] = tuple(ppo_opts["hidden"])
    cfg = PPOConfig(**ppo_opts)
    if env_opts.get("sjf_filter") == "auto":  # resolve once so that every env (and the checkpoint) agrees
        env_opts["sjf_filter"] = filter_range(tr, env_opts.get("seq_len", 256), backfill=backfill, goal=goal,
                                              machine=mach, start_range=env_opts.get("start_range"),
                                              seed=cfg.seed)
    probe = make_env(agent, tr, goal=goal, backfill=backfill, machine=mach, **env_opts)
    env_config = {"agent": agent, "trace": tr.name, "trace_jobs": len(tr),
                  "trace_path": os.path.abspath(tr.path) if tr.path else None, "goal": goal, "backfill": backfill,
                  "machine": mach.name, **{k: v for k, v in env_opts.items()}}
    if agent == "rlscheduler":
        env_config.setdefault("features", probe.obsb.features)
        env_config.setdefault("pad", probe.obsb.pad)
        env_config.setdefault("seq_len", probe.seq_len)
        env_config.setdefault("window", probe.window)
    else:
        env_config.setdefault("base", probe.base_name)
        env_config.setdefault("features", "paper")
        env_config.setdefault("max_interval", probe.max_interval)
        env_config.setdefault("max_rejections", probe.max_rejections)
    envs = [probe]

    def factory():
        if envs:
            return envs.pop()
        return make_env(agent, tr, goal=goal, backfill=backfill, machine=mach, **env_opts)

    trainer = PPOTrainer(agent, factory, cfg, env_config, probe.norms, out=out, progress=progress)
    trainer.on_trajectory = on_trajectory
    ckpt = os.path.join(out, CHECKPOINT) if out else None
    # One training run per output folder: a second one would interleave epochs in the checkpoint.
    lock = FileLock(os.path.join(out, LOCK), f"training folder {out}") if out else contextlib.nullcontext()
    try:
        with lock:
            start_epoch = 0
            if out and resume and os.path.exists(ckpt):
                trainer.restore(ckpt)
                start_epoch = trainer.epoch
            elif init_from:
                trainer.warm_start(init_from)
            history = trainer.train(epochs)
    except LockedError as exc:
        raise OptionError(f"--out: {exc}; wait for it or choose another folder") from None
    return {"out": out, "checkpoint": ckpt, "history": history, "epochs_run": trainer.epoch - start_epoch,
            "trainer": trainer}
