"""Behaviour cloning: an actor fitted to a teacher's decisions by masked cross-entropy, shared by the
agents that start from imitation (rtmix's expert plans, RLSchert's kill teacher, the split window's
SJF window teacher); ``teacher_decisions`` records a teacher's episodes in any environment that has a
``teacher_action()``."""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np
import torch


def behaviour_clone(actor: torch.nn.Module, data: dict, epochs: int, *, lr: float = 3e-3, batch: int = 256,
                    seed: int = 0, progress: Callable[[int, int, dict], None] | None = None) -> list[dict]:
    """Fit ``actor`` to the expert actions (masked cross-entropy); per-epoch loss and accuracy.
    With ``data["good"]`` (a boolean set of right actions per sample, ``act`` among them) the loss is
    −log P(a good action) and the accuracy counts a greedy choice in the set; ``data["weight"]``
    weighs the samples' losses; rows of ``data["soft"]`` that are not all zero are a teacher's action
    probabilities, fitted by cross-entropy to that whole distribution (distillation)."""
    obs = torch.as_tensor(np.asarray(data["obs"], dtype=np.float32))
    mask = torch.as_tensor(np.asarray(data["mask"], dtype=bool))
    act = torch.as_tensor(np.asarray(data["act"], dtype=np.int64))
    good = torch.as_tensor(np.asarray(data["good"], dtype=bool)) if data.get("good") is not None else None
    weight = torch.as_tensor(np.asarray(data["weight"], dtype=np.float32)) if data.get("weight") is not None else None
    soft = torch.as_tensor(np.asarray(data["soft"], dtype=np.float32)) if data.get("soft") is not None else None
    is_soft = soft.sum(-1) > 0 if soft is not None else None
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
            if good is None:
                per = torch.nn.functional.cross_entropy(logits, act[idx], reduction="none")
            else:  # a set label: −log of the probability of choosing any good action
                per = torch.logsumexp(logits, -1) - torch.logsumexp(logits.masked_fill(~good[idx], -1e9), -1)
            if soft is not None:  # distillation rows: cross-entropy to the teacher's whole distribution
                logp = torch.log_softmax(logits, -1).masked_fill(~mask[idx], 0.0)
                per = torch.where(is_soft[idx], -(soft[idx] * logp).sum(-1), per)
            loss = (per * weight[idx]).sum() if weight is not None else per.sum()
            opt.zero_grad()
            (loss / len(idx)).backward()
            opt.step()
            total += float(loss.detach())
        with torch.no_grad():
            pred = actor(obs, mask).argmax(-1)
            acc = float((pred == act).float().mean() if good is None
                        else good[torch.arange(n), pred].float().mean())
        row = {"phase": "bc", "bc_epoch": e, "loss": total / n, "accuracy": acc, "samples": n}
        rows.append(row)
        if progress is not None:
            progress(e, epochs, row)
    return rows


def teacher_decisions(env, resets: Iterable[dict]) -> dict:
    """The imitation teacher's episodes in ``env`` (a Gymnasium environment with ``teacher_action()``
    and ``action_masks()``): one episode per item of ``resets`` (``env.reset``'s keyword arguments,
    e.g. ``{"seed": 3}`` or ``{"options": {"start": 120}}``), the teacher acting at every step until the
    episode terminates or is truncated.  Returns every decision's observation, action mask and
    action (``behaviour_clone``'s data), and with ``env.teacher_good()`` each decision's set of actions
    as good as the teacher's (``good``: set labels)."""
    obs, mask, act, good = [], [], [], []
    has_good = hasattr(env, "teacher_good")
    for kwargs in resets:
        o, _info = env.reset(**kwargs)
        done = False
        while not done:
            a = env.teacher_action()
            obs.append(o)
            mask.append(env.action_masks())
            act.append(a)
            if has_good:
                good.append(env.teacher_good())
            o, _, term, trunc, _info = env.step(a)
            done = term or trunc
    data = {"obs": np.asarray(obs, dtype=np.float32), "mask": np.asarray(mask, dtype=bool),
            "act": np.asarray(act, dtype=np.int64)}
    if has_good:
        data["good"] = np.asarray(good, dtype=bool)
    return data


__all__ = ["behaviour_clone", "teacher_decisions"]
