"""The PPO update's shortcuts in RLScheduler's networks (``rtsched.rl.nets.BatchPrep``): the kernel
scores each distinct occupied row once, the value network's first layer reads only the columns a
row uses; both give what the plain forward gives, with gradients equal up to float32 rounding."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the rl extra (torch) is not installed")

from rtsched.rl import nets  # noqa: E402
from rtsched.rl.nets import BatchPrep, PickActor, PickCritic  # noqa: E402

WINDOW, F = 16, 8


def _batch(rows: int = 600, seed: int = 0):
    """Observations whose occupied slots are a prefix (zeros after), with repeated job rows, as a
    trajectory's consecutive decisions show them."""
    rng = np.random.default_rng(seed)
    pool = rng.random((40, F)).astype(np.float32)  # 40 distinct jobs
    occ = rng.integers(0, WINDOW + 1, rows)
    obs = np.zeros((rows, WINDOW, F), dtype=np.float32)
    mask = np.zeros((rows, WINDOW), dtype=bool)
    for i, k in enumerate(occ):
        obs[i, :k] = pool[rng.integers(0, len(pool), k)]
        mask[i, :k] = True
    mask[occ == 0, 0] = True  # at least one action (an empty queue is never a decision)
    return torch.as_tensor(obs.reshape(rows, WINDOW * F)), torch.as_tensor(mask)


def _plain(monkeypatch):
    monkeypatch.setattr(nets, "PREP_MIN_ROWS", 10 ** 12)


def _fwd_bwd(module, *inputs):
    module.zero_grad()
    out = module(*inputs)
    w = torch.linspace(-1, 1, out.numel()).reshape(out.shape)
    (torch.where(out > -1e8, out, torch.zeros_like(out)) * w).sum().backward()
    return out.detach().clone(), [p.grad.clone() for p in module.parameters()]


@pytest.mark.parametrize("net", ["actor", "critic"])
def test_shortcut_equals_the_plain_forward_and_gradient(monkeypatch, net):
    torch.manual_seed(0)
    module = PickActor(F, WINDOW) if net == "actor" else PickCritic(F, WINDOW)
    obs, mask = _batch()
    inputs = (obs, mask) if net == "actor" else (obs,)
    fast = [_fwd_bwd(module, *inputs) for _ in range(2)]  # the second call reuses the prepared batch
    assert len(module.prep.entries) == 1
    _plain(monkeypatch)
    plain = _fwd_bwd(module, *inputs)
    # the reference: the plain forward in float64 (both float32 sums round differently, by ~1e-5)
    ref_module = (PickActor(F, WINDOW) if net == "actor" else PickCritic(F, WINDOW)).double()
    ref_module.load_state_dict({k: v.double() for k, v in module.state_dict().items()})
    ref = _fwd_bwd(ref_module, *((obs.double(), mask) if net == "actor" else (obs.double(),)))
    scale = max(float(r.abs().max()) for r in ref[1])  # float32 rounding, relative to the largest gradient
    for out, grads in [*fast, plain]:
        torch.testing.assert_close(out.double(), ref[0], rtol=1e-5, atol=1e-5)
        for g, r in zip(grads, ref[1]):
            assert float((g.double() - r).abs().max()) <= 1e-4 * scale


def test_kernel_rows_are_distinct_and_index_every_slot():
    obs, mask = _batch(200)
    uniq, index = nets._kernel_rows(obs, mask, WINDOW, F)
    jobs = obs.reshape(-1, WINDOW, F)
    assert len(torch.unique(uniq, dim=0)) == len(uniq) <= 41  # 40 jobs and the empty slot of an empty queue
    assert torch.equal(uniq[index[mask]], jobs[mask])  # every occupied slot reads its own row
    assert bool((index[~mask] == len(uniq)).all())  # masked slots read the masked logit


def test_width_blocks_keep_every_nonzero_and_restore_the_order():
    obs, _mask = _batch(300)
    blocks, back = nets._width_blocks(obs, 8 * F)
    assert all(w % (8 * F) == 0 or w == obs.shape[1] for _x, w in blocks)
    padded = torch.cat([torch.nn.functional.pad(x, (0, obs.shape[1] - w)) for x, w in blocks])
    assert torch.equal(padded[back], obs)  # the dropped columns were zeros


def test_prepared_batch_follows_changes_of_the_data():
    prep = BatchPrep(size=2)
    calls = []
    x = torch.zeros(4, 3)
    assert prep.get((x,), lambda: calls.append(1) or "a") == "a"
    assert prep.get((x,), lambda: calls.append(1) or "b") == "a" and len(calls) == 1  # same data: reused
    x.add_(1)  # in place: the version counter moves
    assert prep.get((x,), lambda: calls.append(1) or "c") == "c"
    y = torch.zeros(4, 3)  # another batch: the old batch's entries go
    assert prep.get((y,), lambda: "d") == "d" and len(prep.entries) == 1
    assert prep.get((y[:2],), lambda: "e") == "e" and prep.get((y[2:],), lambda: "f") == "f"
    assert len(prep.entries) == 2  # at most ``size``


def test_small_or_no_grad_inputs_take_the_plain_path():
    actor = PickActor(F, WINDOW)
    obs, mask = _batch(10)
    actor(obs, mask)
    with torch.no_grad():
        actor(*_batch(600))
    assert not actor.prep.entries


def _torch_unique(rows):
    return torch.unique(rows, dim=0, return_inverse=True)


@pytest.mark.parametrize("case", ["batch", "signed", "one_row", "wide"])
def test_unique_rows_equals_torch_unique_bit_for_bit(case):
    rng = np.random.default_rng(3)
    if case == "batch":  # job rows of a batch, repeated as across a trajectory's decisions
        obs, mask = _batch(400)
        rows = obs.reshape(-1, WINDOW, F)[mask]
    elif case == "signed":  # negative values, few distinct per column: the value order, not the bits' order
        rows = torch.as_tensor(rng.choice([-2.5, -1.0, 0.0, 0.5, 3.0], size=(500, 3)).astype(np.float32))
    elif case == "one_row":
        rows = torch.as_tensor(rng.random((1, F)).astype(np.float32))
    else:  # odd width, denormals and infinities
        vals = np.array([1e-45, -1e-45, np.inf, -np.inf, 7.0, 1.0], dtype=np.float32)
        rows = torch.as_tensor(rng.choice(vals, size=(300, 5)))
    uniq, inverse = nets.unique_rows(rows)
    ref_uniq, ref_inverse = _torch_unique(rows)
    assert uniq.dtype == ref_uniq.dtype and inverse.dtype == ref_inverse.dtype
    assert torch.equal(uniq, ref_uniq) and torch.equal(inverse, ref_inverse)


@pytest.mark.parametrize("case", ["nan", "negative_zero", "collision"])
def test_unique_rows_falls_back_to_torch_where_bits_and_values_disagree(monkeypatch, case):
    rng = np.random.default_rng(4)
    rows = rng.choice(np.array([0.0, 1.0, 2.0], dtype=np.float32), size=(200, 4))
    if case == "nan":
        rows[5, 1] = np.nan
    elif case == "negative_zero":
        rows[rows == 0] = -0.0  # torch counts -0.0 and 0.0 as one value
        rows[:50][rows[:50] == -0.0] = 0.0
    else:  # a hash that sees only the last column: different rows collide
        monkeypatch.setattr(nets, "_MIX", (np.uint64(0), np.uint64(0), np.uint64(0)))
    rows = torch.as_tensor(rows)
    calls = []
    real = torch.unique

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(nets.torch, "unique", spy)
    uniq, inverse = nets.unique_rows(rows)
    assert calls, "torch's own path was not taken"
    monkeypatch.setattr(nets.torch, "unique", real)
    ref_uniq, ref_inverse = _torch_unique(rows)
    assert torch.equal(uniq, ref_uniq) or (case == "nan" and len(uniq) == len(ref_uniq))
    assert torch.equal(inverse, ref_inverse)


def test_slot_gather_gives_the_plain_gathers_values_and_row_gradients_bit_for_bit():
    obs, mask = _batch(500, seed=5)
    uniq, index, occupied, rows = nets._kernel_slots(obs, mask, WINDOW, F)
    torch.manual_seed(1)
    scores = torch.randn(len(uniq), requires_grad=True)
    grad = torch.randn(mask.shape)
    grad[~mask] = torch.randn(int((~mask).sum()))  # whatever reaches a masked slot must not matter
    plain_scores = scores.detach().clone().requires_grad_(True)
    plain = torch.cat([plain_scores, plain_scores.new_full((1,), nets.MASKED_LOGIT)]).index_select(
        0, index.view(-1)).view(index.shape)
    (plain * grad).sum().backward()
    fast = nets._SlotGather.apply(scores, index, occupied, rows)
    (fast * grad).sum().backward()
    assert torch.equal(fast, plain) and bool((fast[~mask] == nets.MASKED_LOGIT).all())
    assert torch.equal(scores.grad, plain_scores.grad)
    assert torch.equal(rows, index[mask])  # the occupied slots in slot order


def test_kernel_actor_relus_in_place_give_the_same_values_and_gradients():
    torch.manual_seed(2)
    actor = PickActor(F, WINDOW)
    assert all(m.inplace for m in actor.net if isinstance(m, torch.nn.ReLU))
    obs, mask = _batch()
    fast = _fwd_bwd(actor, obs, mask)
    for m in actor.net:
        if isinstance(m, torch.nn.ReLU):
            m.inplace = False
    slow = _fwd_bwd(actor, obs, mask)
    assert torch.equal(fast[0], slow[0]) and all(torch.equal(a, b) for a, b in zip(fast[1], slow[1]))


def test_the_kernel_actor_takes_large_policy_chunks():
    from rtsched.rl.trainer import PI_CHUNK_SLOTS, _row_chunks
    mask = np.zeros((25_600, 128), dtype=bool)
    mask[:, :54] = True  # a paper epoch's occupied slots (1.38 x 10^6)
    slots = PickActor(F, 128).update_chunk_slots
    assert len(_row_chunks(mask, slots)) == 3
    assert _row_chunks(mask[:6_400], slots) == [(0, 6_400)]  # a quarter epoch whole
    assert not hasattr(PickActor(F, 128, "mlp_v1"), "update_chunk_slots")
    assert len(_row_chunks(mask, PI_CHUNK_SLOTS)) > 1  # other actors keep their chunks
