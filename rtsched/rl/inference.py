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
    ``window`` × ``n_features`` observation), ``flat`` (one MLP on the flat observation) or
    ``inspect`` (the inspector's MLP).  Picklable, and needs only NumPy."""

    def __init__(self, layers: list, kind: str, window: int = 0, n_features: int = 0) -> None:
        if kind not in ("kernel", "flat", "inspect"):
            raise ValueError(f"unknown actor kind {kind!r}")
        self.layers = layers
        self.kind = kind
        self.window, self.n_features = window, n_features

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
        out = self._mlp(obs[None])[0]
        return np.where(mask, out, np.float32(MASKED_LOGIT))

    def plain(self) -> "NumpyForward":
        """This actor as a ``NumpyForward`` proper (what a worker unpickles without PyTorch)."""
        return NumpyForward(self.layers, self.kind, self.window, self.n_features)
