"""Behaviour cloning: an actor fitted to a teacher's decisions by masked cross-entropy, shared by the
agents that start from imitation (rtmix's expert plans, RLSchert's kill teacher, the split window's
SJF window teacher); ``teacher_decisions`` records a teacher's episodes in any environment that has a
``teacher_action()``, or DAgger's episodes (the learner acts, mixed with the teacher by ``mixed_action``,
and the teacher labels every state visited); ``save_labelled`` / ``load_labelled`` keep one DAgger
round's labelled states on disk."""
from __future__ import annotations

import json
import os
from typing import Callable, Iterable

import numpy as np
import torch

from rtsched.files import atomic_write_stream
from rtsched.rl.nets import NumpyActor


class LearnerActor:
    """The actor being trained as a greedy learner (``fast.logits(obs, mask)``, as a trained policy):
    a NumPy copy of its weights now, for decisions one at a time."""

    def __init__(self, actor: torch.nn.Module) -> None:
        self.fast = NumpyActor(actor)


def greedy_action(learner, obs: np.ndarray, mask: np.ndarray) -> int:
    """The learner's greedy action (``learner.fast.logits(obs, mask)``, masked argmax)."""
    return int(np.argmax(learner.fast.logits(obs, mask)))


def mixed_action(teacher_action: int, learner_action: Callable[[], int] | None, beta: float,
                 rng: np.random.Generator | None) -> int:
    """DAgger's action at a state: the teacher's with probability ``beta`` (one draw from ``rng``
    when 0 < ``beta``), or always without a learner, else ``learner_action()`` (its greedy one)."""
    if learner_action is None or (beta > 0.0 and rng.random() < beta):
        return int(teacher_action)
    return int(learner_action())


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


def teacher_decisions(env, resets: Iterable[dict], *, learner=None, beta: float = 1.0,
                      rng: np.random.Generator | None = None) -> dict:
    """The imitation teacher's episodes in ``env`` (a Gymnasium environment with ``teacher_action()``
    and ``action_masks()``): one episode per item of ``resets`` (``env.reset``'s keyword arguments,
    e.g. ``{"seed": 3}`` or ``{"options": {"start": 120}}``), the teacher acting at every step until the
    episode terminates or is truncated.  Returns every decision's observation, action mask and
    action (``behaviour_clone``'s data), and with ``env.teacher_good()`` each decision's set of actions
    as good as the teacher's (``good``: set labels).

    DAgger: with a ``learner`` (``LearnerActor``) the episodes follow ``mixed_action`` (the teacher's
    action with probability ``beta``, drawn from ``rng``, else the learner's greedy one) while every
    state is still labelled with the teacher's action; ``data["learner_good"]`` is then the share of
    the visited states where the learner's own greedy choice was a good one, and ``data["infos"]``
    the episodes' final ``info``."""
    if learner is not None and beta > 0.0 and rng is None:
        raise ValueError("teacher_decisions: a learner mixed with the teacher (beta > 0) needs rng")
    obs, mask, act, good, infos = [], [], [], [], []
    agree = 0
    has_good = hasattr(env, "teacher_good")
    for kwargs in resets:
        o, info = env.reset(**kwargs)
        done = False
        while not done:
            a = env.teacher_action()
            m = env.action_masks()
            g = env.teacher_good() if has_good else None
            obs.append(o)
            mask.append(m)
            act.append(a)
            if has_good:
                good.append(g)
            mine = greedy_action(learner, o, m) if learner is not None else None
            taken = mixed_action(a, None if mine is None else (lambda: mine), beta, rng)
            if mine is not None:
                agree += bool(g[mine]) if g is not None else mine == a
            o, _, term, trunc, info = env.step(taken)
            done = term or trunc
        infos.append(info)
    data = {"obs": np.asarray(obs, dtype=np.float32), "mask": np.asarray(mask, dtype=bool),
            "act": np.asarray(act, dtype=np.int64)}
    if has_good:
        data["good"] = np.asarray(good, dtype=bool)
    if learner is not None:
        data["learner_good"] = agree / max(len(act), 1)
        data["infos"] = infos
    return data


LABELLED = ("obs", "mask", "act", "good")  # the arrays of a round's labelled states (``save_labelled``)


def round_data_path(out: str, r: int) -> str:
    """DAgger round ``r``'s labelled states in run folder ``out`` (rtmix and the split window)."""
    return os.path.join(out, f"dagger-data-{r}.npz")


def save_labelled(path: str, data: dict, info: dict) -> None:
    """One DAgger round's labelled states (``LABELLED`` arrays of ``data``) and its record ``info``
    (JSON) in a compressed ``.npz``, written atomically."""
    def write(fh) -> None:
        np.savez_compressed(fh, **{k: data[k] for k in LABELLED}, info=np.asarray(json.dumps(info)))

    atomic_write_stream(path, write)


def load_labelled(path: str) -> tuple[dict, dict]:
    """``save_labelled``'s arrays and record."""
    with np.load(path) as z:
        return ({k: z[k] for k in LABELLED}, json.loads(str(z["info"])))


__all__ = ["LABELLED", "LearnerActor", "behaviour_clone", "greedy_action", "load_labelled", "mixed_action", "round_data_path", "save_labelled",
           "teacher_decisions"]
