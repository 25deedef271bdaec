"""Behaviour cloning: an actor fitted to a teacher's decisions by masked cross-entropy, shared by the
agents that start from imitation (rtmix's expert plans, RLSchert's kill teacher)."""
from __future__ import annotations

from typing import Callable

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


__all__ = ["behaviour_clone"]
