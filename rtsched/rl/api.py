"""Entry points for the command line: ``train`` and ``evaluate``.

``train(agent="rlscheduler", trace="lublin_256.swf", goal="bsld", backfill="none", epochs=100,
out="runs/x")`` trains with the papers' defaults, writing ``out/checkpoint.pt`` (the model and
everything needed to resume) and ``out/progress.json`` after every epoch; calling it again with
the same settings and more epochs resumes.  ``evaluate(policies=["fcfs", "sjf", "runs/x"], ...)``
schedules the same test sequences with each policy in compatibility mode and returns one row per
(policy, sequence).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Callable, Iterable

import numpy as np

from heuristics.backfill import normalize_backfill
from heuristics.committed import COMMITTED_BACKFILLS
from heuristics.priorities import PRIORITIES
from rtsched.rl.ppo import CHECKPOINT, ModelFileError, PPOConfig, PPOTrainer
from rtsched.rl.sequences import run_sequence, start_bounds
from rtsched.rl.trace import load_trace

PICK_ENV_OPTIONS = ("seq_len", "window", "start_range", "sjf_filter", "features", "pad", "util_window")
INSPECT_ENV_OPTIONS = ("seq_len", "base", "features", "reward", "max_interval", "max_rejections", "start_range",
                       "util_window")


def _machine_for(trace, machine):
    from rtsched.machines import FlatCluster, machine_from_spec

    if machine is None:
        return FlatCluster(trace.max_nodes)
    if isinstance(machine, str):
        return machine_from_spec(machine)
    return machine


def make_env(agent: str, trace, *, goal: str = "bsld", backfill="none", machine=None, **options):
    """A picking (``"rlscheduler"``) or inspector (``"inspector"``) environment."""
    if agent == "rlscheduler":
        from rtsched.rl.env_pick import JobPickingEnv

        return JobPickingEnv(trace, machine=machine, goal=goal, backfill=backfill, **options)
    if agent == "inspector":
        from rtsched.rl.env_inspect import InspectorEnv

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
    ppo_fields = {f.name for f in dataclasses.fields(PPOConfig)}
    env_opts, ppo_opts = {}, {}
    for k, v in options.items():
        if k in allowed_env:
            env_opts[k] = v
        elif k in ppo_fields:
            ppo_opts[k] = v
        else:
            raise TypeError(f"train(): unknown option {k!r} for agent {agent!r}")
    if agent == "inspector":
        env_opts.setdefault("seq_len", 128)
    if "hidden" in ppo_opts:
        ppo_opts["hidden"] = tuple(ppo_opts["hidden"])
    cfg = PPOConfig(**ppo_opts)
    if env_opts.get("sjf_filter") == "auto":  # resolve once so that every env (and the checkpoint) agrees
        from rtsched.rl.sequences import filter_range

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
    start_epoch = 0
    if out and resume and os.path.exists(ckpt):
        trainer.restore(ckpt)
        start_epoch = trainer.epoch
    else:
        if init_from:
            trainer.warm_start(init_from)
        if out:
            os.makedirs(out, exist_ok=True)
    history = trainer.train(epochs)
    return {"out": out, "checkpoint": ckpt, "history": history, "epochs_run": trainer.epoch - start_epoch,
            "trainer": trainer}


def _is_model(p) -> bool:
    if not isinstance(p, (str, os.PathLike)):
        return False
    p = os.fspath(p)
    return os.path.isdir(p) or p.endswith(".pt") or os.path.sep in p


def evaluate(policies: Iterable, trace, starts: Iterable[int] | None = None, n_sequences: int = 10,
             seq_len: int = 1024, backfill="none", seed: int = 1, *, machine=None, goals=("bsld", "wait"),
             greedy: bool = True, norms: str = "trace") -> list[dict]:
    """Schedule the same sequences with every policy (compatibility mode) and report them.

    ``policies``: heuristic names (``fcfs``, ``sjf``, ``f1``, ``wfp3``, ``unicep``,
    ``wfp3-authors``, ``unicep-authors``, ...), model files/folders, or policy objects.
    ``starts``: first jobs (0-based) of the sequences; default ``n_sequences`` drawn with ``seed``
    uniformly from [seq_len, N − seq_len − 1) as the authors' test script does.  ``norms``:
    ``"trace"`` (normalise model features by the evaluated trace, the authors' practice) or
    ``"model"``.  Returns ``[{"policy", "backfill", "start", "avg_bsld", "avg_wait", ...}]``.
    """
    tr = load_trace(trace)
    mach = _machine_for(tr, machine)
    backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS)
    if starts is None:
        lo, hi = start_bounds(len(tr), seq_len)
        starts = np.random.default_rng(seed).integers(lo, hi + 1, size=n_sequences).tolist()
    starts = [int(s) for s in starts]
    rows: list[dict] = []
    for p in policies:
        for s in starts:
            if isinstance(p, str) and p.lower() in PRIORITIES:
                pol, label = p.lower(), p.lower()
            elif _is_model(p):
                from rtsched.rl.policy import policy_from_model

                path = os.fspath(p)
                if not os.path.exists(path):
                    raise ModelFileError(f"{path}: model file not found")
                pol = policy_from_model(path, backfill=backfill, extras=tr.extras(s, seq_len), greedy=greedy,
                                        norms=tr.norms() if norms == "trace" else None)
                label = path
            elif hasattr(p, "decide"):
                pol, label = p, getattr(p, "name", type(p).__name__)
            else:
                raise ValueError(f"unknown policy {p!r}: not a priority name ({', '.join(PRIORITIES)}), "
                                 "model file or policy object")
            r = run_sequence(tr, s, seq_len, pol, mach, backfill=backfill, goals=goals)
            row = {"policy": label, "backfill": backfill, "start": s}
            for g in goals:
                row[f"avg_{g}" if g in ("bsld", "wait") else g] = r[g]
            rows.append(row)
    return rows
