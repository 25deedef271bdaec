"""The agents' actor networks evaluated in NumPy, without PyTorch: what trained policies decide
with one observation at a time, and what rollout workers sample whole trajectories with.

The networks are tiny (≈ 1,000 parameters): PyTorch's per-operator dispatch and its intra-op
threads cost 0.1 ms per call on an idle machine and milliseconds on a loaded one, while the same
matrix products in NumPy take tens of µs.  ``rtsched.rl.nets.NumpyActor`` builds one from a
PyTorch actor; logits agree with it to float32 rounding (``tests/test_rl_ppo.py``).
"""
from __future__ import annotations

import numpy as np

MASKED_LOGIT = -1e9  # the logit of a masked action (the authors add (mask − 1)·1e6)


class NumpyForward:
    """An MLP actor as float32 weight matrices.  ``kind``: ``kernel`` (one MLP per job slot of a
    ``window`` × ``n_features`` observation), ``context`` (the kernel on each slot's row beside the
    ``context`` rules' rows, ``context_row``), ``flat`` (one MLP on the flat observation) or
    ``inspect`` (the inspector's MLP).  Picklable, and needs only NumPy."""

    def __init__(self, layers: list, kind: str, window: int = 0, n_features: int = 0, context=()) -> None:
        if kind not in ("kernel", "context", "flat", "inspect"):
            raise ValueError(f"unknown actor kind {kind!r}")
        self.layers = layers
        self.kind = kind
        self.window, self.n_features = window, n_features
        self.context = tuple(context)

    def _mlp(self, x):
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if i < last:
                np.maximum(x, 0.0, out=x)
        return x

    def logits(self, obs, mask):
        """Logits of one observation (1-D float32) under a boolean mask (masked entries −1e9)."""
        if self.kind == "kernel":
            jobs = obs.reshape(self.window, self.n_features)[mask]
            out = np.full(mask.shape, MASKED_LOGIT, dtype=np.float32)
            out[mask] = self._mlp(jobs)[:, 0]
            return out
        if self.kind == "context":
            x = obs.reshape(self.window, self.n_features)
            extra = np.concatenate([context_row(x, rule) for rule in self.context])
            rows = np.concatenate([x[mask], np.broadcast_to(extra, (int(mask.sum()), len(extra)))], axis=1)
            out = np.full(mask.shape, MASKED_LOGIT, dtype=np.float32)
            out[mask] = self._mlp(rows)[:, 0]
            return out
        out = self._mlp(obs[None])[0]
        return np.where(mask, out, np.float32(MASKED_LOGIT))

    def plain(self) -> "NumpyForward":
        """This actor as a ``NumpyForward`` proper (what a worker unpickles without PyTorch)."""
        return NumpyForward(self.layers, self.kind, self.window, self.n_features, self.context)


def context_row(x: np.ndarray, rule) -> np.ndarray:
    """The row (of one observation ``x``, slots × features) that context rule ``(slots, ((column, value), ...))``
    picks: the first of the first ``slots`` slots whose ``column`` is on (> 0.5) where ``value`` is 1 and off
    where it is 0; zeros where none matches (``rtsched.rl.nets.context_rows``, the same for a batch)."""
    slots, conds = rule
    sel = np.ones(slots, dtype=bool)
    for col, value in conds:
        on = x[:slots, col] > 0.5
        sel &= on if value else ~on
    hit = np.flatnonzero(sel)
    return x[hit[0]].copy() if len(hit) else np.zeros(x.shape[1], dtype=x.dtype)
