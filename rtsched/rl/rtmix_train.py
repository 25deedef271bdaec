"""Training the ``rtmix`` agent: behaviour cloning on expert actions, then PPO fine-tuning.

``train_rtmix(data, out=..., bc_epochs=..., epochs=...)``:

1. **Behaviour cloning.**  The actor (the kernel network, one slot per action) is fitted to the
   expert's actions by masked cross-entropy (Adam, minibatches of ``bc_batch``), ``bc_epochs`` passes
   over the data.  The data are ``{"obs", "mask", "act"}`` arrays, e.g. from
   ``rtsched.experiments.rtmix.expert_dataset`` (optimal plans replayed through the environment).
2. **PPO fine-tuning** with the project's ``PPOTrainer`` (agent ``"rtmix"``) on episodes of
   ``RtMixEnv`` drawn from the training seeds, ``epochs`` epochs; ``OUT/checkpoint.pt`` is rewritten
   after cloning and after every epoch, and the same call with more epochs resumes (cloning is not
   repeated: its record is the first row of the history, ``{"phase": "bc", ...}``).
"""
from __future__ import annotations

import contextlib
import os
import time
from typing import Callable

import numpy as np
import torch

from rtsched.errors import OptionError
from rtsched.files import FileLock, LockedError
from rtsched.rl.env_rtmix import RtMixEnv
from rtsched.rl.ppo import CHECKPOINT, LOCK, PPOConfig, PPOTrainer, split_options

ENV_OPTIONS = ("machine", "checkpoint", "n_bj", "n_rt", "window", "candidates", "theta", "penalty", "seed_range",
               "baseline")
# PPO defaults of the fine-tuning (a small step from the cloned policy: lower rate, fewer iterations)
FINE_TUNE = {"pi_lr": 1e-4, "v_lr": 1e-3, "train_pi_iters": 20, "train_v_iters": 40, "trajs_per_epoch": 64,
             "n_envs": 8, "hidden": (64, 32, 16)}


def behaviour_clone(actor: torch.nn.Module, data: dict, epochs: int, *, lr: float = 3e-3, batch: int = 256,
                    seed: int = 0, progress: Callable[[int, int, dict], None] | None = None) -> list[dict]:
    """Fit ``actor`` to the expert actions (masked cross-entropy); per-epoch loss and accuracy."""
    obs = torch.as_tensor(np.asarray(data["obs"], dtype=np.float32))
    mask = torch.as_tensor(np.asarray(data["mask"], dtype=bool))
    act = torch.as_tensor(np.asarray(data["act"], dtype=np.int64))
    n = len(act)
    if n == 0:
        raise ValueError("behaviour cloning needs at least one expert decision")
    opt = torch.optim.Adam(actor.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for e in range(1, epochs + 1):
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        for i in range(0, n, batch):
            idx = perm[i:i + batch]
            logits = actor(obs[idx], mask[idx])
            loss = torch.nn.functional.cross_entropy(logits, act[idx], reduction="sum")
            opt.zero_grad()
            (loss / len(idx)).backward()
            opt.step()
            total += float(loss.detach())
        with torch.no_grad():
            acc = float((actor(obs, mask).argmax(-1) == act).float().mean())
        row = {"phase": "bc", "bc_epoch": e, "loss": total / n, "accuracy": acc, "samples": n}
        rows.append(row)
        if progress is not None:
            progress(e, epochs, row)
    return rows


def train_rtmix(data: dict | None, out: str | None, *, bc_epochs: int = 30, epochs: int = 10, seed: int = 0,
                progress: Callable | None = None, bc_progress: Callable | None = None,
                on_trajectory: Callable | None = None, resume: bool = True, torch_threads: int | None = None,
                **options) -> dict:
    """Clone then fine-tune (module docstring).  ``options``: environment options (``ENV_OPTIONS``)
    and ``PPOConfig`` fields (defaults ``FINE_TUNE``).  Returns ``{"out", "checkpoint", "history",
    "trainer"}``."""
    env_opts, given = split_options(options, ENV_OPTIONS, "train_rtmix()")
    ppo_opts = {**FINE_TUNE, **given}
    ppo_opts["seed"] = seed
    ppo_opts["hidden"] = tuple(ppo_opts["hidden"])
    if torch_threads is not None:
        ppo_opts["torch_threads"] = torch_threads
    cfg = PPOConfig(**ppo_opts)
    probe = RtMixEnv(**env_opts)
    env_config = {"agent": "rtmix", **probe.config()}
    envs = [probe]

    def factory():
        return envs.pop() if envs else RtMixEnv(**env_opts)

    trainer = PPOTrainer("rtmix", factory, cfg, env_config, {}, out=out, progress=progress)
    trainer.on_trajectory = on_trajectory
    ckpt = os.path.join(out, CHECKPOINT) if out else None
    lock = FileLock(os.path.join(out, LOCK), f"training folder {out}") if out else contextlib.nullcontext()
    try:
        with lock:
            if ckpt and resume and os.path.exists(ckpt):
                trainer.restore(ckpt)
            if not (trainer.history and trainer.history[0].get("phase") == "bc"):
                if data is None:
                    raise OptionError("behaviour cloning needs expert data (none given and no cloned checkpoint)")
                t0 = time.perf_counter()
                torch.manual_seed(seed)
                rows = behaviour_clone(trainer.actor, data, bc_epochs, seed=seed, progress=bc_progress)
                last = dict(rows[-1])
                last["bc_seconds"] = round(time.perf_counter() - t0, 3)
                last["bc_epochs"] = bc_epochs
                trainer.history = [last]
                if ckpt:
                    trainer.save(ckpt)
            n_bc = 1
            trainer.epoch = len(trainer.history) - n_bc
            trainer.train(epochs)
    except LockedError as exc:
        raise OptionError(f"--out: {exc}; wait for it or choose another folder") from None
    return {"out": out, "checkpoint": ckpt, "history": trainer.history, "trainer": trainer}


__all__ = ["behaviour_clone", "train_rtmix", "ENV_OPTIONS", "FINE_TUNE"]
