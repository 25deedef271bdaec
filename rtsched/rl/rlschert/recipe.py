"""How RLSchert is trained (seed 001 Table 4): its own PPO settings, the VASP-like workload by default,
optionally starting from a no-kill model with the imitation term teaching the kills."""
from __future__ import annotations

import json
import os
import time
from typing import Callable

import numpy as np
import torch

from rtsched.generators.vasplike import UNITS, trace_param_set
from rtsched.rl.agents import EnvFactory
from rtsched.rl.api import run_training
from rtsched.files import atomic_write_text
from rtsched.rl.modelfiles import CHECKPOINT, read_model_file
from rtsched.rl.rlschert.env import VASPLIKE, RLSchertEnv
from rtsched.rl.trainer import PPOConfig, PPOTrainer, split_options

CLONE = "clone.json"  # the imitation pre-training's last loss and accuracy, in the run folder
ENV_OPTIONS = ("mode", "units", "dynamic", "kill", "n_wait", "n_run", "slot", "horizon", "max_job_units",
               "job_rate", "simu_len", "seq_len", "start_range", "max_steps", "teacher", "predictor_epochs",
               "train_sequences", "kill_teacher")
# The paper's PPO settings (seed 001 Table 4; imitation schedule: the digest's default, shortened
# runs pass their own): 16 environments, one episode each per epoch, mini-batches of 128, 5 passes,
# lr 1e-4, clip 0.2, KL target 0.01, γ 0.99, GAE λ 0.95, entropy 0.02, a 64-64 MLP.
PPO_DEFAULTS = {"trajs_per_epoch": 16, "n_envs": 16, "minibatch": 128, "train_pi_iters": 5,
                "train_v_iters": 5, "pi_lr": 1e-4, "v_lr": 1e-3, "gamma": 0.99, "lam": 0.95,
                "ent_coef": 0.02, "hidden": (64, 64), "actor": "mlp", "critic": "mlp",
                "imitation": 0.0, "imitation_hold": 50, "imitation_end": 150, "max_grad_norm": 10.0}


def make_env(trace=VASPLIKE, *, goal: str = "bsld", backfill="none", machine=None, **options):
    """RLSchert's environment: ``trace`` may be ``"vasplike"`` (the synthetic workload); its own
    options (no goal, backfilling or machine: the reward and the cluster are the paper's)."""
    return RLSchertEnv(trace, **options)


def train(trace=None, epochs: int = 100, out: str | None = None, progress: Callable | None = None, *,
          goal: str = "bsld", backfill="none", machine=None, resume: bool = True, init_from: str | None = None,
          on_trajectory: Callable | None = None, ray_address: str | None = None, **options) -> dict:
    """``rtsched.rl.api.train`` for RLSchert (no goal, backfilling or machine: the paper's)."""
    return train_rlschert("vasplike" if trace is None else trace, epochs, out, progress, resume=resume,
                          init_from=init_from, on_trajectory=on_trajectory, ray_address=ray_address, **options)


def train_rlschert(trace="vasplike", epochs: int = 100, out: str | None = None, progress: Callable | None = None, *,
                   resume: bool = True, init_from: str | None = None, on_trajectory: Callable | None = None,
                   ray_address: str | None = None, **options) -> dict:
    """Train RLSchert (seed 001) with the project's PPO: ``trace`` is ``"vasplike"`` (the synthetic
    VASP-like workload, calibrated), ``"vasplike-stated"`` (the paper's stated figures, the shipped
    models' workload) or a trace (event mode).  ``options``: environment options
    (``ENV_OPTIONS``: ``mode``, ``units``, ``dynamic`` (False: the DeepRM-like baseline),
    ``kill``, ``teacher``, ...) and ``PPOConfig`` fields (``PPO_DEFAULTS`` otherwise;
    ``imitation`` > 0 adds the imitation term, teacher = the rule kill (``kill_teacher``:
    ``"remaining"`` for the remaining-time kill) + ``teacher``'s selects).  ``select_every`` = k > 0
    (VASP-like workload, with ``out``): every k epochs the greedy policy is scored on
    ``validation_sequences`` validation sequences and the best kept as ``out/best.pt``
    (``rtsched.rl.rlschert.select``)."""
    steps = {"until": options.pop("until", None), "budget": bool(options.pop("budget", False))}
    clone_sequences = int(options.pop("clone_sequences", 0) or 0)
    clone_epochs = int(options.pop("clone_epochs", 30) or 30)
    select_every = int(options.pop("select_every", 0) or 0)
    n_validation = int(options.pop("validation_sequences", 32) or 32)
    selector = None
    if select_every:
        from rtsched.rl.rlschert.select import VaspLikeSelector

        if not out or trace_param_set(trace) is None:
            raise ValueError("model selection (select_every) needs the VASP-like workload and an output folder")
        os.makedirs(out, exist_ok=True)
        selector = VaspLikeSelector(out, trace, n_validation, select_every, units=int(options.get("units", UNITS)),
                                    overrides={k: options[k] for k in ("job_rate", "simu_len") if k in options})
    env_opts, ppo_opts = split_options(options, ENV_OPTIONS, "train() for agent 'rlschert'")
    ppo_opts = {**PPO_DEFAULTS, **ppo_opts}
    ppo_opts["hidden"] = tuple(ppo_opts["hidden"])
    cfg = PPOConfig(**ppo_opts)
    probe = RLSchertEnv(trace, **env_opts)
    c = probe.cfg
    env_config = {"agent": "rlschert", "trace": probe.trace_name, "mode": c.mode, "units": probe.units,
                  "dynamic": c.dynamic, "kill": c.kill, "n_wait": c.n_wait, "n_run": c.n_run, "slot": c.slot,
                  "horizon": c.horizon, "max_job_units": c.max_job_units,
                  "trace_path": None if trace_param_set(trace) is not None
                  else os.path.abspath(os.fspath(getattr(trace, "path", trace)))
                  if isinstance(trace, (str, os.PathLike)) else None,
                  **{k: v for k, v in env_opts.items() if k not in ("mode", "units", "dynamic", "kill")}}
    factory = EnvFactory("rlschert", trace, options=env_opts)  # picklable: rollout workers build from it
    trainer = PPOTrainer("rlschert", factory, cfg, env_config, {}, out=out, progress=progress, first_env=probe,
                         ray_address=ray_address)
    trainer.on_trajectory = on_trajectory
    if selector is not None:
        selector.step.attach(trainer)
    resuming = bool(out and resume and os.path.exists(os.path.join(out, CHECKPOINT)))
    if init_from and not resuming:
        trainer.warm_start(init_from)
        _damp_new_kills(trainer, init_from)
    if clone_sequences and not resuming:
        _clone_teacher(trainer, probe, clone_sequences, clone_epochs, cfg.seed)
        if out:  # the cloned policy is the run's epoch 0 (a --resume continues from it)
            trainer.save(os.path.join(out, CHECKPOINT))
    return run_training(trainer, out, resume, None, epochs, **steps)


def teacher_decisions(env: RLSchertEnv, seeds) -> dict:
    """The imitation teacher's episodes (``RLSchertEnv.teacher_action``) on the VASP-like sequences of
    generator ``seeds``: every decision's observation, mask and action (``behaviour_clone``'s data)."""
    from rtsched.rl.cloning import teacher_decisions as episodes

    return episodes(env, ({"options": {"sequence": int(seed)}} for seed in seeds))


def _clone_teacher(trainer: PPOTrainer, env: RLSchertEnv, n_sequences: int, epochs: int, seed: int) -> None:
    """Imitation pre-training (seed 001 §3.6: "pretrain the RLSchert policy through imitation
    learning, and then performed PPO"): the actor is fitted to the teacher's decisions on the
    training sequences 0 .. ``n_sequences`` − 1 (masked cross-entropy, ``behaviour_clone``); the
    PPO epochs (with the imitation term while α_t > 0) follow.  Its last loss and accuracy are the
    history's ``clone`` row."""
    from rtsched.rl.cloning import behaviour_clone

    if env.source != VASPLIKE:
        raise ValueError("imitation pre-training (clone_sequences) runs on the VASP-like workload")
    t0 = time.perf_counter()
    data = teacher_decisions(env, range(n_sequences))
    torch.manual_seed(seed)
    rows = behaviour_clone(trainer.actor, data, epochs, seed=seed)
    kills = (data["act"] >= env.cfg.n_wait) & (data["act"] < env.cfg.none_action)
    record = {**rows[-1], "kill_share": float(kills.mean()), "sequences": n_sequences,
              "seconds": round(time.perf_counter() - t0, 3)}
    if trainer.out:
        os.makedirs(trainer.out, exist_ok=True)
        atomic_write_text(os.path.join(trainer.out, CLONE), json.dumps(record, indent=1) + "\n")


def _damp_new_kills(trainer: PPOTrainer, init_from: str, margin: float = 5.0) -> None:
    """Starting a kill-capable run from a no-kill model (seed 001 §3.6: the no-kill policy is the
    pre-trained start), the kill outputs were never trained: each kill output becomes a copy of
    the None output less ``margin`` (kills e^−5 as likely as waiting in every state, so the first
    episodes are not killing sprees); imitation then teaches the kills."""
    if not trainer.env_config.get("kill") or read_model_file(init_from)["env"].get("kill", True):
        return
    last = [m for m in trainer.actor.net if isinstance(m, torch.nn.Linear)][-1]
    n_wait, n_run = int(trainer.env_config["n_wait"]), int(trainer.env_config["n_run"])
    none = n_wait + n_run
    with torch.no_grad():
        last.weight[n_wait:none] = last.weight[none]
        last.bias[n_wait:none] = last.bias[none] - margin
