"""The agents' neural networks (PyTorch).

RLScheduler (seed 003 §3):

* ``kernel`` policy: one MLP F → 32 → 16 → 8 → 1 (ReLU) applied to every job slot with shared
  weights, a score per slot, masked softmax over the window (961 parameters with F = 8);
* Table IV alternatives on the flattened window (``mlp_v1`` 128-128-128, ``mlp_v2`` 32-16-8,
  ``mlp_v3`` 5 × 32), for the Fig. 8 ablation;
* value network ``mlp``: the flattened window → 64 → 32 → 8 → 1 (the paper's reading, §8 item 5), or
  ``kernel`` (the authors' code: the kernel per slot, then 64 → 32 → 8 → 1).

RtMix (``rtsched/RtMix-v0``): the same kernel and value networks, a slot per action (visible jobs,
preemption candidates, wait) instead of per job; or the ``context`` kernel (issue 23, thirteenth session): each
slot's row is scored together with *context rows* picked from the same observation by fixed rules (the
agent's; rtmix's: the first visible BJ and the first visible RTJ that cannot start now), so that a
preemption candidate's score can weigh the waiting job it would serve.

SchedInspector (seed 000 §3): actor F → 32 → 16 → 8 → 2 (938 parameters with F = 7), critic with
the same body and one output.

Deep Back-Filling (seed 004 §3): separate actor and critic MLPs on the observation (N + 3M inputs)
with hidden sizes [1024, 512, 256] (ReLU); the actor has M + 1 outputs (the window's slots and Fwd).

RLSchert (seed 001 §3.4): actor = the flattened state → 64 → 64 → 14 actions (ReLU; 557,952
weights without biases on the 120 × 72 image), critic the same body with one output.

Masked slots get logit −1e9 (the authors add (mask − 1)·1e6), so their probability is 0.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import numpy as np
import torch
from torch import nn

from rtsched.rl.inference import MASKED_LOGIT, NumpyForward

PICK_ACTORS = ("kernel", "mlp_v1", "mlp_v2", "mlp_v3")
# The kernel with context rows (module docstring); its rules come from the agent (``PickActor(context=...)``), so it is
# not among the trainer's ``--actor`` choices.
CONTEXT_ACTOR = "context"
PICK_CRITICS = ("mlp", "kernel")
_MLP_SIZES = {"mlp_v1": (128, 128, 128), "mlp_v2": (32, 16, 8), "mlp_v3": (32, 32, 32, 32, 32)}


def mlp(sizes, out_act: bool = False) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or out_act:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class BatchPrep:
    """Structures derived from a training batch's input, built once and reused while the very same
    data comes back: the PPO update passes the same rows 80 times (seed 003's full-batch
    iterations), so sorting or deduplicating them once saves work in every later pass.

    An entry is keyed by its tensors' address, shape, strides, dtype and version counter (an
    in-place change bumps the version), and keeps those tensors referenced, so their memory cannot
    be reused by other data under the same key.  Entries are kept for one underlying storage at a
    time (a new batch clears the old one's) and at most ``size`` of them."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self.base = None
        self.entries: OrderedDict = OrderedDict()

    def get(self, tensors: tuple[torch.Tensor, ...], build: Callable[[], object]):
        base = tensors[0].untyped_storage().data_ptr()
        if base != self.base:
            self.entries.clear()
            self.base = base
        key = tuple((t.data_ptr(), tuple(t.shape), t.stride(), t.dtype, t._version) for t in tensors)
        hit = self.entries.get(key)
        if hit is not None:
            self.entries.move_to_end(key)
            return hit[1]
        value = build()
        self.entries[key] = (tensors, value)
        if len(self.entries) > self.size:
            self.entries.popitem(last=False)
        return value


# Below this many rows a forward pass with gradients computes directly (no BatchPrep).
PREP_MIN_ROWS = 256

# Occupied slots per policy-gradient chunk for the kernel actor (read by the trainer as
# ``actor.update_chunk_slots``).  With its rows deduplicated once per chunk (``_kernel_rows``), large
# chunks score fewer rows and issue fewer ops: a scale-0.25 RLScheduler batch (341,693 slots) taken
# whole needed 14.6 GFLOP of matmuls in its 80 policy passes against 21.0 in 32k-slot chunks, and
# 1.30-1.44 CPU s against 2.24-2.59.  A paper epoch (1,383,571 slots) whole was slower again
# (6.1-7.2 s; its 13 MB logits leave the cache): 4.7-5.3 s in chunks of 2^18, 2^19 or 3 x 2^18 slots
# (one thread, load 14, 2026-11-28, docs/benchmarks.md).
KERNEL_UPDATE_CHUNK_SLOTS = 1 << 19


_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(29))  # splitmix64 constants


def unique_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.unique(rows, dim=0, return_inverse=True)`` for a float32 matrix, the same tensors bit
    for bit (distinct rows in lexicographic order of their values, and each row's index among them),
    10-15x less CPU: torch sorts whole rows (48 ms for RLScheduler's 32,752-slot chunk, 2,845 distinct
    rows); here a 64-bit hash of each row's bits is deduplicated by NumPy's 1-D sort (3 ms), checked
    exactly against the rows, and only the distinct rows are sorted by value.  NaN, -0.0 (equal to
    0.0 for torch, not bitwise), other dtypes or a hash collision take torch's own path."""
    a = rows.detach().numpy() if rows.dtype == torch.float32 and rows.dim() == 2 else None
    if a is None or a.shape[0] == 0 or np.isnan(a).any() or (np.signbit(a) & (a == 0)).any():
        return torch.unique(rows, dim=0, return_inverse=True)
    bits = np.ascontiguousarray(a).view(np.uint32)
    mul, mix, shift = _MIX
    h = bits[:, 0].astype(np.uint64) * mul
    for c in range(1, bits.shape[1]):
        h = (h ^ (h >> shift)) * mix + bits[:, c]
    _h, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    distinct = bits[first]
    if not np.array_equal(distinct[inverse.ravel()], bits):  # two different rows with one hash
        return torch.unique(rows, dim=0, return_inverse=True)
    values = a[first]
    order = np.lexsort(values.T[::-1])  # the first column is the primary key, as torch's row order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return torch.from_numpy(values[order]), torch.from_numpy(rank[inverse.ravel()].astype(np.int64))


def _kernel_rows(obs: torch.Tensor, mask: torch.Tensor, window: int, n_features: int):
    """The occupied slots' distinct feature rows and, per slot of the batch, the row it reads: an
    index into ``[distinct rows..., masked]`` (the last entry stands for a masked slot).  A job
    waiting across many decisions of a trajectory shows the same features again and again
    (RLScheduler, Lublin-256: 9.2 occupied slots per distinct row), and the kernel's score of a row
    does not depend on the others."""
    jobs = obs.reshape(obs.shape[0], window, n_features)[mask]
    uniq, inverse = unique_rows(jobs)
    index = torch.full(mask.shape, len(uniq), dtype=torch.long)
    index[mask] = inverse
    return uniq, index


def _width_blocks(obs: torch.Tensor, step: int):
    """The rows sorted by how many leading columns they use (columns after a row's last nonzero
    are zeros), in blocks of rows of equal width (a multiple of ``step``): [(rows, width)] and the
    permutation back to the batch order."""
    nz = obs.ne(0)
    cols = obs.shape[1]
    last = torch.where(nz.any(1), cols - nz.flip(1).to(torch.int8).argmax(1), torch.zeros((), dtype=torch.long))
    width = torch.clamp((last + step - 1) // step * step, min=step).clamp(max=cols)
    order = torch.argsort(width, stable=True)
    w_sorted = width[order]
    blocks = []
    for w in torch.unique_consecutive(w_sorted).tolist():
        sel = order[w_sorted == w]
        blocks.append((obs[sel, :w].contiguous(), int(w)))
    return blocks, torch.argsort(order)


def _kernel_slots(obs: torch.Tensor, mask: torch.Tensor, window: int, n_features: int):
    """``_kernel_rows`` and, for ``_SlotGather``'s backward, the occupied slots' flat positions and
    their rows."""
    uniq, index = _kernel_rows(obs, mask, window, n_features)
    occupied = mask.reshape(-1).nonzero().squeeze(1)
    return uniq, index, occupied, index.view(-1).index_select(0, occupied)


class _SlotGather(torch.autograd.Function):
    """Logits per slot from the distinct rows' scores: ``cat([scores, MASKED_LOGIT])[index]``, whose
    backward sums the occupied slots' gradients into their rows' in slot order (``index_add_``), as
    the gather's own backward does.  That one also adds every masked slot's gradient into the masked
    entry, which has no gradient to take: 58 % of a batch's slots, all on one address (a chain of
    dependent additions); skipping them gives the rows' gradients bit for bit, 1.96 -> 0.62 ms on a
    scale-0.25 batch (819,200 slots, 341,693 occupied)."""

    @staticmethod
    def forward(ctx, scores, index, occupied, rows):
        ctx.save_for_backward(occupied, rows)
        ctx.n_rows = len(scores)
        table = torch.cat([scores, scores.new_full((1,), MASKED_LOGIT)])
        return table.index_select(0, index.view(-1)).view(index.shape)

    @staticmethod
    def backward(ctx, grad):
        occupied, rows = ctx.saved_tensors
        g = grad.reshape(-1).index_select(0, occupied)
        return grad.new_zeros(ctx.n_rows).index_add_(0, rows, g), None, None, None


class _BlockLinear(torch.autograd.Function):
    """A linear layer on row blocks that use only their leading ``w`` input columns
    (``_width_blocks``): the blocks' outputs one after another, and in the backward pass each
    block's weight gradient added in place into the first ``w`` columns of one gradient matrix
    (no input gradient: the inputs are observations)."""

    @staticmethod
    def forward(ctx, weight, bias, blocks):
        ctx.blocks = blocks
        ctx.save_for_backward(weight)
        return torch.cat([torch.addmm(bias, x, weight[:, :w].t()) for x, w in blocks])

    @staticmethod
    def backward(ctx, grad):
        (weight,) = ctx.saved_tensors
        g_weight = torch.zeros_like(weight)
        row = 0
        for x, w in ctx.blocks:
            g = grad[row:row + len(x)]
            g_weight[:, :w].addmm_(g.t(), x)
            row += len(x)
        return g_weight, grad.sum(0), None


def context_rows(x: torch.Tensor, rules) -> list[torch.Tensor]:
    """Per context rule ``(slots, ((column, value), ...))`` (``inference.context_row``'s reading), the row of the
    first of the first ``slots`` slots whose ``column`` is on (> 0.5) where ``value`` is 1 and off where it is 0,
    for every observation of the batch ``x`` (batch × slots × features); zeros where no slot matches."""
    out = []
    arange = torch.arange(x.shape[0])
    for slots, conds in rules:
        sel = torch.ones(x.shape[0], slots, dtype=torch.bool)
        for col, value in conds:
            on = x[:, :slots, col] > 0.5
            sel &= on if value else ~on
        idx = sel.to(torch.int8).argmax(1)
        out.append(x[arange, idx] * sel.any(1, keepdim=True).to(x.dtype))
    return out


class PickActor(nn.Module):
    """Scores of the window's job slots → masked logits."""

    def __init__(self, n_features: int = 8, window: int = 128, arch: str = "kernel",
                 hidden: tuple[int, ...] = (32, 16, 8), context=None) -> None:
        super().__init__()
        if arch not in PICK_ACTORS + (CONTEXT_ACTOR,):
            raise ValueError(f"unknown policy network {arch!r}; choose from {', '.join(PICK_ACTORS)}")
        if (arch == CONTEXT_ACTOR) != bool(context):
            raise ValueError(f"policy network {arch!r}: context rules are for the {CONTEXT_ACTOR!r} network alone, "
                             "and it needs them")
        self.n_features, self.window, self.arch = n_features, window, arch
        self.context = tuple((int(slots), tuple((int(c), int(v)) for c, v in conds)) for slots, conds in context or ())
        for slots, conds in self.context:
            if not 1 <= slots <= window or any(not 0 <= c < n_features or v not in (0, 1) for c, v in conds):
                raise ValueError(f"context rule {[slots, [list(cv) for cv in conds]]}: slots must be in 1..{window}, "
                                 f"columns in 0..{n_features - 1} and values 0 or 1")
        if arch == CONTEXT_ACTOR:
            self.net = mlp(((1 + len(self.context)) * n_features, *hidden, 1))
        elif arch == "kernel":
            self.net = mlp((n_features, *hidden, 1))
            self.update_chunk_slots = KERNEL_UPDATE_CHUNK_SLOTS
            for layer in self.net:  # the same values; no new tensor per ReLU (the Linear's backward keeps its input)
                if isinstance(layer, nn.ReLU):
                    layer.inplace = True
        else:
            self.net = mlp((n_features * window, *_MLP_SIZES[arch], window))
        self.prep = BatchPrep()

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.arch == CONTEXT_ACTOR:  # each occupied slot's row beside the context rows, one score each
            x = obs.view(obs.shape[0], self.window, self.n_features)
            owner = mask.nonzero(as_tuple=True)[0]  # the observation of each occupied slot
            rows = torch.cat([x[mask]] + [c[owner] for c in context_rows(x, self.context)], -1)
            scores = torch.full(mask.shape, MASKED_LOGIT, dtype=obs.dtype)
            scores[mask] = self.net(rows).squeeze(-1)
            return scores
        if self.arch == "kernel" and torch.is_grad_enabled() and obs.shape[0] >= PREP_MIN_ROWS:
            # Training: the kernel scores each distinct occupied row once (``_kernel_rows``, built
            # once per batch); the same logits in exact arithmetic, and the gradient sums over the
            # slots that read a row.
            uniq, index, occupied, rows = self.prep.get(
                (obs, mask), lambda: _kernel_slots(obs, mask, self.window, self.n_features))
            return _SlotGather.apply(self.net(uniq).squeeze(-1), index, occupied, rows)
        if self.arch == "kernel":
            # The kernel runs on the occupied slots only (padding is masked anyway): same logits,
            # several times less work when queues are short.
            jobs = obs.view(obs.shape[0], self.window, self.n_features)[mask]
            scores = torch.full(mask.shape, MASKED_LOGIT, dtype=obs.dtype)
            scores[mask] = self.net(jobs).squeeze(-1)
            return scores
        return self.net(obs).masked_fill(~mask, MASKED_LOGIT)


class PickCritic(nn.Module):
    def __init__(self, n_features: int = 8, window: int = 128, arch: str = "mlp",
                 hidden: tuple[int, ...] = (32, 16, 8)) -> None:
        super().__init__()
        if arch not in PICK_CRITICS:
            raise ValueError(f"unknown value network {arch!r}; choose from {', '.join(PICK_CRITICS)}")
        self.n_features, self.window, self.arch = n_features, window, arch
        if arch == "kernel":
            self.kernel = mlp((n_features, *hidden, 1))
            self.net = mlp((window, 64, 32, 8, 1))
        else:
            self.net = mlp((n_features * window, 64, 32, 8, 1))
        self.prep = BatchPrep()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if self.arch == "mlp" and torch.is_grad_enabled() and obs.shape[0] >= PREP_MIN_ROWS:
            # Training: the first layer reads only the leading columns a row uses (padding slots are
            # zeros; rows grouped by width once per batch, ``_width_blocks``): the same values in
            # exact arithmetic, about half the multiplications of RLScheduler's 1,024 inputs.
            blocks, back = self.prep.get((obs,), lambda: _width_blocks(obs, 8 * self.n_features))
            first = self.net[0]
            # the rows stay in block order through the layers; only the values go back to batch order
            h = _BlockLinear.apply(first.weight, first.bias, blocks)
            return self.net[1:](h).squeeze(-1).index_select(0, back)
        if self.arch == "kernel":
            obs = self.kernel(obs.view(obs.shape[0], self.window, self.n_features)).squeeze(-1)
        return self.net(obs).squeeze(-1)


class InspectActor(nn.Module):
    def __init__(self, n_features: int = 8, hidden: tuple[int, ...] = (32, 16, 8)) -> None:
        super().__init__()
        self.n_features = n_features
        self.net = mlp((n_features, *hidden, 2))

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.net(obs).masked_fill(~mask, MASKED_LOGIT)


class InspectCritic(nn.Module):
    def __init__(self, n_features: int = 8, hidden: tuple[int, ...] = (32, 16, 8)) -> None:
        super().__init__()
        self.net = mlp((n_features, *hidden, 1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)


SPLIT_HIDDEN = (1024, 512, 256)  # Deep Back-Filling's hidden sizes


class FlatActor(nn.Module):
    """An MLP on the whole (flattened) observation → masked logits of ``n_actions`` actions
    (RLSchert; Deep Back-Filling with ``n_actions`` = M + 1: the window's slots, then Fwd)."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: tuple[int, ...] = (64, 64)) -> None:
        super().__init__()
        self.obs_dim, self.n_actions = obs_dim, n_actions
        self.net = mlp((obs_dim, *hidden, n_actions))

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.net(obs).masked_fill(~mask, MASKED_LOGIT)


class FlatCritic(nn.Module):
    def __init__(self, obs_dim: int, hidden: tuple[int, ...] = (64, 64)) -> None:
        super().__init__()
        self.net = mlp((obs_dim, *hidden, 1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)


def growth_problem(arch: str, kernel_hidden, hidden) -> str | None:
    """Why a context actor of ``hidden`` sizes cannot grow from a ``arch`` actor with ``kernel_hidden`` sizes
    (``context_from_kernel``), or None."""
    if arch != "kernel":
        return f"a context actor grows from a kernel actor, not {arch!r}"
    if len(hidden) != len(kernel_hidden) or any(h < k for h, k in zip(hidden, kernel_hidden)):
        return (f"hidden sizes {list(hidden)}: the kernel's are {list(kernel_hidden)}; the context actor needs as many "
                "layers, each at least as wide")
    return None


def context_from_kernel(kernel: PickActor, hidden: tuple[int, ...], context) -> PickActor:
    """A ``context`` actor that computes exactly ``kernel``'s logits (a ``"kernel"`` ``PickActor``), to be fitted
    further: its first layer reads the slot's row through the kernel's weights and the context rows through zeros;
    each layer at least as wide as the kernel's (``hidden``, same depth) holds the kernel's units first, and the added
    units (random incoming weights, as PyTorch initialises them) feed the next layer through zeros, so they change
    nothing until they are trained."""
    old = [m for m in kernel.net if isinstance(m, nn.Linear)]
    problem = growth_problem(kernel.arch, [m.out_features for m in old[:-1]], hidden)
    if problem:
        raise ValueError(problem)
    actor = PickActor(kernel.n_features, kernel.window, CONTEXT_ACTOR, tuple(hidden), context)
    new = [m for m in actor.net if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for a, b in zip(old, new):
            n_out, n_in = a.weight.shape
            b.weight[:, n_in:] = 0.0  # the first layer: the context rows' columns; later: the added units below
            b.weight[:n_out, :n_in] = a.weight
            b.bias[:n_out] = a.bias
    return actor


def build_networks(agent: str, n_features: int, window: int, actor: str, critic: str,
                   hidden: tuple[int, ...], context=None) -> tuple[nn.Module, nn.Module]:
    """The agent's actor and critic.  RLSchert: ``n_features`` is the observation size and
    ``window`` the number of actions; ``context``: the context rules of a ``"context"`` actor (rtmix)."""
    if context and agent != "rtmix":
        raise ValueError(f"context rules are for rtmix's networks, not {agent!r}'s")
    if agent == "rlscheduler":
        return (PickActor(n_features, window, actor, tuple(hidden)), PickCritic(n_features, window, critic,
                                                                               tuple(hidden)))
    if agent == "inspector":
        return InspectActor(n_features, tuple(hidden)), InspectCritic(n_features, tuple(hidden))
    if agent == "splitwindow":  # n_features = the observation's size, window = M
        return FlatActor(n_features, window + 1, tuple(hidden)), FlatCritic(n_features, tuple(hidden))
    if agent == "rlschert":
        return FlatActor(n_features, window, tuple(hidden)), FlatCritic(n_features, tuple(hidden))
    if agent == "rtmix":  # one slot per action (docs/rl.md, RtMix): the kernel scores each action's row
        return (PickActor(n_features, window, actor, tuple(hidden), context),
                PickCritic(n_features, window, critic, tuple(hidden)))
    raise ValueError(f"unknown agent {agent!r}; use 'rlscheduler', 'inspector', 'splitwindow', 'rlschert' or 'rtmix'")


def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


class NumpyActor(NumpyForward):
    """A trained PyTorch actor's forward pass in NumPy (float32), for decisions one at a time
    (``rtsched.rl.inference``)."""

    def __init__(self, actor: nn.Module) -> None:
        layers = [(m.weight.detach().cpu().numpy().T.astype("float32").copy(),
                   m.bias.detach().cpu().numpy().astype("float32").copy())
                  for m in actor.net if isinstance(m, nn.Linear)]
        if isinstance(actor, PickActor):
            kind = actor.arch if actor.arch in ("kernel", CONTEXT_ACTOR) else "flat"
            super().__init__(layers, kind, actor.window, actor.n_features, actor.context)
        elif isinstance(actor, (InspectActor, FlatActor)):
            super().__init__(layers, "inspect")
        else:
            raise TypeError(f"no NumPy inference for {type(actor).__name__}")
