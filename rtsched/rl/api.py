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
from rtsched.errors import OptionError, RtschedError
from rtsched.files import FileLock, LockedError
from rtsched.rl.ppo import CHECKPOINT, LOCK, PPOConfig, PPOTrainer, split_options
from rtsched.rl.rollouts import EnvFactory
from rtsched.rl.sequences import filter_range
from rtsched.rl.trace import load_trace

PICK_ENV_OPTIONS = ("seq_len", "window", "start_range", "sjf_filter", "features", "pad", "util_window")
RLSCHERT_ENV_OPTIONS = ("mode", "units", "dynamic", "kill", "n_wait", "n_run", "slot", "horizon", "max_job_units",
                        "job_rate", "simu_len", "seq_len", "start_range", "max_steps", "teacher", "predictor_epochs",
                        "train_sequences")
# The paper's PPO settings (seed 001 Table 4; imitation schedule: the digest's default, shortened
# runs pass their own): 16 environments, one episode each per epoch, mini-batches of 128, 5 passes,
# lr 1e-4, clip 0.2, KL target 0.01, γ 0.99, GAE λ 0.95, entropy 0.02, a 64-64 MLP.
RLSCHERT_PPO_DEFAULTS = {"trajs_per_epoch": 16, "n_envs": 16, "minibatch": 128, "train_pi_iters": 5,
                         "train_v_iters": 5, "pi_lr": 1e-4, "v_lr": 1e-3, "gamma": 0.99, "lam": 0.95,
                         "ent_coef": 0.02, "hidden": (64, 64), "actor": "mlp", "critic": "mlp",
                         "imitation": 0.0, "imitation_hold": 50, "imitation_end": 150, "max_grad_norm": 10.0}
INSPECT_ENV_OPTIONS = ("seq_len", "base", "features", "reward", "max_interval", "max_rejections", "start_range",
                       "util_window")
SPLIT_ENV_OPTIONS = ("head", "tail", "placements", "horizon", "start_range", "sigma")
AGENTS = ("rlscheduler", "inspector", "splitwindow", "rlschert", "rtmix")
# Seed 004's PPO settings where the project's defaults (seeds 003/000) differ: γ 0.99 per decision, one
# update per episode on minibatches of 128, lr 3e-4 for both networks, [1024, 512, 256] MLPs; 10 passes
# per update and GAE λ 0.95 are the digest's proposals (the paper is silent).
SPLIT_PPO_DEFAULTS = {"gamma": 0.99, "lam": 0.95, "hidden": (1024, 512, 256), "train_pi_iters": 10,
                      "train_v_iters": 10, "minibatch": 128, "v_lr": 3e-4, "trajs_per_epoch": 1, "n_envs": 1}


def _machine_for(trace, machine):
    if machine is None:
        return FlatCluster(trace.max_nodes)
    if isinstance(machine, str):
        return machine_from_spec(machine)
    return machine


def make_env(agent: str, trace, *, goal: str = "bsld", backfill="none", machine=None, **options):
    """A picking (``"rlscheduler"``), inspector (``"inspector"``), split-window (``"splitwindow"``) or
    RLSchert (``"rlschert"``: ``trace`` may be ``"vasplike"``) environment."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; use {', '.join(AGENTS)}")
    return EnvFactory(agent, trace, goal, backfill, machine, options)()


def train_rlschert(trace="vasplike", epochs: int = 100, out: str | None = None, progress: Callable | None = None, *,
                   resume: bool = True, init_from: str | None = None, on_trajectory: Callable | None = None,
                   ray_address: str | None = None, **options) -> dict:
    """Train RLSchert (seed 001) with the project's PPO: ``trace`` is ``"vasplike"`` (the synthetic
    VASP-like workload) or a trace (event mode).  ``options``: environment options
    (``RLSCHERT_ENV_OPTIONS``: ``mode``, ``units``, ``dynamic`` (False: the DeepRM-like baseline),
    ``kill``, ``teacher``, ...) and ``PPOConfig`` fields (``RLSCHERT_PPO_DEFAULTS`` otherwise;
    ``imitation`` > 0 adds the imitation term, teacher = the rule kill + ``teacher``'s selects)."""
    env_opts, ppo_opts = split_options(options, RLSCHERT_ENV_OPTIONS, "train() for agent 'rlschert'")
    ppo_opts = {**RLSCHERT_PPO_DEFAULTS, **ppo_opts}
    ppo_opts["hidden"] = tuple(ppo_opts["hidden"])
    cfg = PPOConfig(**ppo_opts)
    from rtsched.rl.env_rlschert import VASPLIKE, RLSchertEnv

    probe = RLSchertEnv(trace, **env_opts)
    c = probe.cfg
    env_config = {"agent": "rlschert", "trace": probe.trace_name, "mode": c.mode, "units": probe.units,
                  "dynamic": c.dynamic, "kill": c.kill, "n_wait": c.n_wait, "n_run": c.n_run, "slot": c.slot,
                  "horizon": c.horizon, "max_job_units": c.max_job_units,
                  "trace_path": None if trace == VASPLIKE else os.path.abspath(os.fspath(getattr(trace, "path", trace)))
                  if isinstance(trace, (str, os.PathLike)) else None,
                  **{k: v for k, v in env_opts.items() if k not in ("mode", "units", "dynamic", "kill")}}
    factory = EnvFactory("rlschert", trace, options=env_opts)  # picklable: rollout workers build from it
    trainer = PPOTrainer("rlschert", factory, cfg, env_config, {}, out=out, progress=progress, first_env=probe,
                         ray_address=ray_address)
    trainer.on_trajectory = on_trajectory
    resuming = bool(out and resume and os.path.exists(os.path.join(out, CHECKPOINT)))
    if init_from and not resuming:
        trainer.warm_start(init_from)
        _damp_new_kills(trainer, init_from)
    return _run(trainer, out, resume, None, epochs)


def _damp_new_kills(trainer: PPOTrainer, init_from: str, margin: float = 5.0) -> None:
    """Starting a kill-capable run from a no-kill model (seed 001 §3.6: the no-kill policy is the
    pre-trained start), the kill outputs were never trained: each kill output becomes a copy of
    the None output less ``margin`` (kills e^−5 as likely as waiting in every state, so the first
    episodes are not killing sprees); imitation then teaches the kills."""
    import torch

    from rtsched.rl.ppo import read_model_file

    if not trainer.env_config.get("kill") or read_model_file(init_from)["env"].get("kill", True):
        return
    last = [m for m in trainer.actor.net if isinstance(m, torch.nn.Linear)][-1]
    n_wait, n_run = int(trainer.env_config["n_wait"]), int(trainer.env_config["n_run"])
    none = n_wait + n_run
    with torch.no_grad():
        last.weight[n_wait:none] = last.weight[none]
        last.bias[n_wait:none] = last.bias[none] - margin


def _run(trainer: PPOTrainer, out, resume: bool, init_from, epochs: int) -> dict:
    ckpt = os.path.join(out, CHECKPOINT) if out else None
    lock = (FileLock(os.path.join(out, LOCK), f"training folder {out}", remove_if_unused=True) if out
            else contextlib.nullcontext())
    # One training run per output folder: a second one would interleave epochs in the checkpoint.
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
    finally:
        trainer.close()
    return {"out": out, "checkpoint": ckpt, "history": history, "epochs_run": trainer.epoch - start_epoch,
            "trainer": trainer}


def train(agent: str = "rlscheduler", trace=None, goal: str = "bsld", backfill="none", epochs: int = 100,
          out: str | None = None, progress: Callable | None = None, *, machine=None, resume: bool = True,
          init_from: str | None = None, on_trajectory: Callable | None = None, ray_address: str | None = None,
          **options) -> dict:
    """Train an agent; returns ``{"out", "checkpoint", "history", "epochs_run", "trainer"}``.

    ``options`` are environment options (``seq_len``, ``window``, ``start_range``, ``sjf_filter``,
    ``features``, ``pad``, ``util_window``; inspector: ``base``, ``reward``, ``max_interval``,
    ``max_rejections``) and PPO options (``PPOConfig`` fields: ``trajs_per_epoch``, ``n_envs``,
    ``seed``, ``pi_lr``, ``workers``, ``backend``, ...).  ``workers`` > 1 steps the environments in
    that many subprocesses (``backend="local"``) or Ray actors (``backend="ray"``, on the cluster at
    ``ray_address``, or a local Ray instance); results do not depend on either.  ``rollout``:
    ``"lockstep"`` (default) or ``"trajectories"`` (workers sample whole trajectories; see
    ``rtsched.rl.ppo``).  ``progress(epoch, epochs, stats)`` is called after every epoch.
    With ``resume`` and an existing ``out/checkpoint.pt`` of the same settings, training continues
    from its epoch; a checkpoint of other settings raises ``ModelFileError`` naming the file.
    ``init_from`` (a model file or folder) starts a *new* run from that model's weights, e.g. stage 2
    of trajectory filtering (train on all sequences after a filtered stage 1, seed 003 §IV-C).
    """
    if agent == "rtmix":  # cloning on expert decisions (``data``: rtsched.experiments.rtmix), then PPO
        from rtsched.rl.rtmix_train import train_rtmix

        return train_rtmix(options.pop("data", None), out, epochs=epochs, progress=progress,
                           on_trajectory=on_trajectory, resume=resume, **options)
    if agent == "rlschert":
        return train_rlschert("vasplike" if trace is None else trace, epochs, out, progress, resume=resume,
                              init_from=init_from, on_trajectory=on_trajectory, ray_address=ray_address,
                              **options)
    if trace is None:
        raise ValueError("train() needs a trace (SWF path, Workload or RLTrace)")
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; use {', '.join(AGENTS)}")
    tr = load_trace(trace)
    mach = _machine_for(tr, machine)
    backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS) if agent != "splitwindow" else "none"
    allowed_env = {"rlscheduler": PICK_ENV_OPTIONS, "inspector": INSPECT_ENV_OPTIONS,
                   "splitwindow": SPLIT_ENV_OPTIONS}[agent]
    env_opts, ppo_opts = split_options(options, allowed_env, f"train() for agent {agent!r}")
    if agent == "inspector":
        env_opts.setdefault("seq_len", 128)
    if agent == "splitwindow":
        goal, backfill = "eq2", "none"  # seed 004's multi-objective reward; the agent back-fills itself
        for k, v in SPLIT_PPO_DEFAULTS.items():
            ppo_opts.setdefault(k, v)
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
    if agent == "splitwindow":
        for k in ("head", "tail", "placements", "horizon"):
            env_config.setdefault(k, getattr(probe, k))
        env_config.setdefault("sigma", probe.obsb.sigma_mode)
        env_config["window"] = probe.window
    elif agent == "rlscheduler":
        env_config.setdefault("features", probe.obsb.features)
        env_config.setdefault("pad", probe.obsb.pad)
        env_config.setdefault("seq_len", probe.seq_len)
        env_config.setdefault("window", probe.window)
    else:
        env_config.setdefault("base", probe.base_name)
        env_config.setdefault("features", "paper")
        env_config.setdefault("max_interval", probe.max_interval)
        env_config.setdefault("max_rejections", probe.max_rejections)
    factory = EnvFactory(agent, tr, goal, backfill, mach, env_opts)  # picklable: rollout workers build from it
    try:
        trainer = PPOTrainer(agent, factory, cfg, env_config, probe.norms, out=out, progress=progress,
                             first_env=probe, ray_address=ray_address)
    except ValueError as exc:
        if isinstance(exc, RtschedError):
            raise
        raise OptionError(f"--workers/--backend: {exc}") from None
    trainer.on_trajectory = on_trajectory
    return _run(trainer, out, resume, init_from, epochs)
