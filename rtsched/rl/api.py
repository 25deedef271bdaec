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
from rtsched.rl.agents import AGENTS as AGENT_TABLE
from rtsched.rl.agents import EnvFactory, agent_part
from rtsched.rl.modelfiles import CHECKPOINT, LOCK
from rtsched.rl.trainer import PPOConfig, PPOTrainer, split_options
from rtsched.rl.sequences import filter_range
from rtsched.rl.trace import load_trace

AGENTS = tuple(AGENT_TABLE)


def _machine_for(trace, machine):
    if machine is None:
        return FlatCluster(trace.max_nodes)
    if isinstance(machine, str):
        return machine_from_spec(machine)
    return machine


def committed_head_settings(goal: str, backfill) -> tuple[str, str]:
    """The goal and backfilling of a committed-head agent's run (a recipe without ``settings``)."""
    return goal, normalize_backfill(backfill, COMMITTED_BACKFILLS)


def make_env(agent: str, trace, *, goal: str = "bsld", backfill="none", machine=None, **options):
    """An environment of ``agent`` (its ``recipe.make_env``; RLSchert: ``trace`` may be ``"vasplike"``)."""
    return EnvFactory(agent, trace, goal, backfill, machine, options)()


def run_training(trainer: PPOTrainer, out, resume: bool, init_from, epochs: int, *, until=None,
                 budget: bool = False, before: Callable[..., None] | None = None) -> dict:
    """Train ``trainer`` to ``epochs`` in the folder ``out`` (held locked; resumed from its checkpoint
    with ``resume``, else started from ``init_from``'s weights when given), then stop its workers.

    ``budget`` or ``until`` (a UTC ``datetime`` or ``"HH:MM"``; needs ``out``): this step's CPU and
    wall seconds go to ``OUT/budget.json`` (``rtsched.rl.budget.StepBudget``) and the step stops
    cleanly after the epoch during which ``until`` passes or ``OUT/STOP`` appears (``"stopped"`` in
    the result).  ``before(resuming, steps)`` runs under the lock once the start is known (a recipe's
    imitation pre-stage, the scoring of epoch 0, DAgger's rounds) and counts in the step's seconds
    (``steps``: the step's ``StepBudget`` or None; it may raise ``StopTraining`` to end the step)."""
    from rtsched.rl.budget import StepBudget, StopTraining, deadline_at

    ckpt = os.path.join(out, CHECKPOINT) if out else None
    if (budget or until is not None) and not out:
        raise OptionError("--until and budget accounting need an output folder (--out)")
    lock = (FileLock(os.path.join(out, LOCK), f"training folder {out}", remove_if_unused=True) if out
            else contextlib.nullcontext())
    stopped = False
    # One training run per output folder: a second one would interleave epochs in the checkpoint.
    try:
        with lock:
            steps = StepBudget(out, deadline_at(until) if isinstance(until, str) else until) \
                if (budget or until is not None) else None
            if steps is not None:
                report = trainer.progress

                def progress(epoch, total, stats):
                    if report is not None:
                        report(epoch, total, stats)
                    steps(epoch, total, stats)  # last: it may end the step

                trainer.progress = progress
            start_epoch = 0
            resuming = bool(out and resume and os.path.exists(ckpt))
            if resuming:
                trainer.restore(ckpt)
                start_epoch = trainer.epoch
            elif init_from:
                trainer.warm_start(init_from)
            try:
                if before is not None:
                    before(resuming, steps)
                history = trainer.train(epochs)
            except StopTraining:
                stopped, history = True, trainer.history
            if steps is not None:
                steps.account()
    except LockedError as exc:
        raise OptionError(f"--out: {exc}; wait for it or choose another folder") from None
    finally:
        trainer.close()
    return {"out": out, "checkpoint": ckpt, "history": history, "epochs_run": trainer.epoch - start_epoch,
            "trainer": trainer, "stopped": stopped}


def train(agent: str = "rlscheduler", trace=None, goal: str = "bsld", backfill="none", epochs: int = 100,
          out: str | None = None, progress: Callable | None = None, *, machine=None, resume: bool = True,
          init_from: str | None = None, on_trajectory: Callable | None = None, ray_address: str | None = None,
          until=None, budget: bool = False, **options) -> dict:
    """Train an agent; returns ``{"out", "checkpoint", "history", "epochs_run", "trainer", "stopped"}``.

    ``options`` are environment options (``seq_len``, ``window``, ``start_range``, ``sjf_filter``,
    ``features``, ``pad``, ``util_window``; inspector: ``base``, ``reward``, ``max_interval``,
    ``max_rejections``) and PPO options (``PPOConfig`` fields: ``trajs_per_epoch``, ``n_envs``,
    ``seed``, ``pi_lr``, ``workers``, ``backend``, ...).  ``workers`` > 1 steps the environments in
    that many subprocesses (``backend="local"``) or Ray actors (``backend="ray"``, on the cluster at
    ``ray_address``, or a local Ray instance); results do not depend on either.  ``rollout``:
    ``"lockstep"`` (default) or ``"trajectories"`` (workers sample whole trajectories; see
    ``rtsched.rl.trainer``).  ``progress(epoch, epochs, stats)`` is called after every epoch.
    With ``resume`` and an existing ``out/checkpoint.pt`` of the same settings, training continues
    from its epoch; a checkpoint of other settings raises ``ModelFileError`` naming the file.
    ``init_from`` (a model file or folder) starts a *new* run from that model's weights, e.g. stage 2
    of trajectory filtering (train on all sequences after a filtered stage 1, seed 003 §IV-C).
    ``until`` / ``budget``: a step of a long run (``run_training``: ``OUT/budget.json``, a clean stop at
    a UTC time).  An agent's ``recipe.RUN_OPTIONS`` (the split window: ``select_every``, ``clone_episodes``,
    ...) go to its ``recipe.prepare``, which may clone a teacher first and select on validation.
    """
    recipe = agent_part(agent, "recipe")
    steps = {k: v for k, v in (("until", until), ("budget", budget)) if v}
    if hasattr(recipe, "train"):  # an agent with its own recipe (rlschert, rtmix)
        return recipe.train(trace, epochs, out, progress, goal=goal, backfill=backfill, machine=machine,
                            resume=resume, init_from=init_from, on_trajectory=on_trajectory,
                            ray_address=ray_address, **steps, **options)
    if trace is None:
        raise ValueError("train() needs a trace (SWF path, Workload or RLTrace)")
    tr = load_trace(trace)
    mach = _machine_for(tr, machine)
    goal, backfill = getattr(recipe, "settings", committed_head_settings)(goal, backfill)
    run_opts = {k: options.pop(k) for k in getattr(recipe, "RUN_OPTIONS", ()) if k in options}
    env_opts, ppo_opts = split_options(options, recipe.ENV_OPTIONS, f"train() for agent {agent!r}")
    for k, v in recipe.ENV_DEFAULTS.items():
        env_opts.setdefault(k, v)
    for k, v in recipe.PPO_DEFAULTS.items():
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
    recipe.describe(probe, env_config)
    factory = EnvFactory(agent, tr, goal, backfill, mach, env_opts)  # picklable: rollout workers build from it
    try:
        trainer = PPOTrainer(agent, factory, cfg, env_config, probe.norms, out=out, progress=progress,
                             first_env=probe, ray_address=ray_address,
                             epoch_stats=getattr(recipe, "epoch_stats", None))
    except ValueError as exc:
        if isinstance(exc, RtschedError):
            raise
        raise OptionError(f"--workers/--backend: {exc}") from None
    trainer.on_trajectory = on_trajectory
    before = recipe.prepare(trainer, probe, tr, out, **run_opts) if run_opts else None
    return run_training(trainer, out, resume, init_from, epochs, before=before, **steps)
