"""The trainer's cheaper update steps give the same weights bit for bit as the plain ones they replace:
the multi-tensor (foreach) Adam step against the default for-loop step, and the minibatch pass that gathers its
shuffled samples once against one gather per minibatch (an oracle written out here); and the lock-step
sampling (inference_mode, results as lists) collects the batches the plain sampling collected."""
from __future__ import annotations

import copy

import pytest
import torch

from conftest import shared_data
from rtsched.machines import FlatCluster
from rtsched.rl.agents import EnvFactory
from rtsched.rl.trace import read_rl_trace
from rtsched.rl.trainer import PPOConfig, PPOTrainer


@pytest.fixture(scope="module")
def lublin1():
    return read_rl_trace(str(shared_data("traces", "swf", "lublin_256.swf")))


def _trainer(lublin1, agent: str, **ppo) -> PPOTrainer:
    mach = FlatCluster(lublin1.max_nodes)
    opts = {"seq_len": 48} if agent == "rlscheduler" else {"placements": 60}
    factory = EnvFactory(agent, lublin1, "bsld", "none", mach, opts)
    return PPOTrainer(agent, factory, PPOConfig(seed=3, **ppo), {"agent": agent}, {})


def _weights(tr: PPOTrainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in (*tr.actor.parameters(), *tr.critic.parameters())]


def _plain_adams(tr: PPOTrainer) -> None:
    """The default (for-loop) Adam step in place of the trainer's, with the same state."""
    for name, net in (("pi_opt", tr.actor), ("v_opt", tr.critic)):
        old = getattr(tr, name)
        new = torch.optim.Adam(net.parameters(), lr=old.param_groups[0]["lr"])
        new.load_state_dict(old.state_dict())
        for group in new.param_groups:
            group["foreach"] = None
        setattr(tr, name, new)


@pytest.mark.parametrize("agent,ppo", [
    ("rlscheduler", dict(trajs_per_epoch=4, n_envs=2, train_pi_iters=3, train_v_iters=3)),  # full-batch update
    ("splitwindow", dict(trajs_per_epoch=1, n_envs=1, minibatch=16, train_pi_iters=2, train_v_iters=2,
                         hidden=(32, 16), max_grad_norm=0.5, ent_coef=0.01)),  # minibatches, clipping, entropy
])
def test_foreach_adam_step_equals_the_for_loop_step(lublin1, agent, ppo):
    tr = _trainer(lublin1, agent, **ppo)
    assert tr.pi_opt.param_groups[0]["foreach"] and tr.v_opt.param_groups[0]["foreach"]
    batch = tr.collect(1)
    start = copy.deepcopy((tr.actor.state_dict(), tr.critic.state_dict()))
    multi_stats = tr.update(batch)
    multi = _weights(tr)
    tr.actor.load_state_dict(start[0])
    tr.critic.load_state_dict(start[1])
    tr.pi_opt = torch.optim.Adam(tr.actor.parameters(), lr=tr.config.pi_lr)
    tr.v_opt = torch.optim.Adam(tr.critic.parameters(), lr=tr.config.v_lr)
    plain_stats = tr.update(batch)
    tr.close()
    assert multi_stats == plain_stats
    assert any(not torch.equal(a, b) for a, b in zip(multi, [v for sd in start for v in sd.values()]))  # it trained
    assert all(torch.equal(a, b) for a, b in zip(multi, _weights(tr)))


def _indexed_minibatch_update(tr: PPOTrainer, batch) -> None:
    """The minibatch update with one gather per minibatch (``obs[perm[k:k + size]]``): the oracle."""
    cfg = tr.config
    obs, mask, act, logp_old, adv, ret = batch.tensors()
    n, size = len(act), int(cfg.minibatch)
    gen = torch.Generator().manual_seed(int(cfg.seed) * 1_000_003 + tr.epoch)
    for _ in range(cfg.train_pi_iters):
        perm = torch.randperm(n, generator=gen)
        for k in range(0, n, size):
            idx = perm[k:k + size]
            logps = torch.log_softmax(tr.actor(obs[idx], mask[idx]), dim=-1)
            ratio = torch.exp(logps.gather(1, act[idx, None]).squeeze(-1) - logp_old[idx])
            a = adv[idx]
            loss = -(torch.min(ratio * a, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * a)).mean()
            tr.pi_opt.zero_grad()
            loss.backward()
            tr.pi_opt.step()
        with torch.no_grad():
            logp = torch.log_softmax(tr.actor(obs, mask), dim=-1).gather(1, act[:, None]).squeeze(-1)
        if float((logp_old - logp).mean()) > cfg.kl_stop * cfg.target_kl:
            break
    for _ in range(cfg.train_v_iters):
        perm = torch.randperm(n, generator=gen)
        for k in range(0, n, size):
            idx = perm[k:k + size]
            loss_v = ((tr.critic(obs[idx]) - ret[idx]) ** 2).mean()
            tr.v_opt.zero_grad()
            loss_v.backward()
            tr.v_opt.step()


def test_minibatch_pass_gathers_once_with_the_same_result(lublin1):
    tr = _trainer(lublin1, "splitwindow", trajs_per_epoch=1, n_envs=1, minibatch=16, train_pi_iters=3,
                  train_v_iters=3, hidden=(32, 16), target_kl=1e9)
    batch = tr.collect(1)
    assert len(batch.act) % 16 != 0  # a short last minibatch is covered too
    start = copy.deepcopy((tr.actor.state_dict(), tr.critic.state_dict(), tr.pi_opt.state_dict(),
                           tr.v_opt.state_dict()))
    tr.update(batch)
    mine = _weights(tr)
    tr.actor.load_state_dict(start[0])
    tr.critic.load_state_dict(start[1])
    tr.pi_opt.load_state_dict(start[2])
    tr.v_opt.load_state_dict(start[3])
    _plain_adams(tr)
    _indexed_minibatch_update(tr, batch)
    tr.close()
    assert all(torch.equal(a, b) for a, b in zip(mine, _weights(tr)))


def _plain_sample_actions(self, run, active):
    """The lock-step sampling as first written: no_grad, a tensor index and a float() per environment."""
    import numpy as np
    obs_b = torch.as_tensor(np.stack([run.obs_now[i] for i in active]))
    mask_b = torch.as_tensor(np.stack([run.mask_now[i] for i in active]))
    with torch.no_grad():
        logits = self.actor(obs_b, mask_b)
        vals = self.critic(obs_b)
        probs = torch.softmax(logits, dim=-1)
        acts = torch.multinomial(probs, 1, generator=self.gen).squeeze(-1)
        logps = torch.log_softmax(logits, dim=-1).gather(1, acts[:, None]).squeeze(-1)
    return [int(a) for a in acts], [float(logps[j]) for j in range(len(active))], [float(vals[j])
                                                                                 for j in range(len(active))]


def test_lockstep_sampling_gives_the_plain_sampling_batch_bit_for_bit(lublin1, monkeypatch):
    ppo = dict(trajs_per_epoch=5, n_envs=3, train_pi_iters=2, train_v_iters=2)
    batches = []
    for plain in (False, True):
        if plain:
            monkeypatch.setattr(PPOTrainer, "_sample_actions", _plain_sample_actions)
        tr = _trainer(lublin1, "rlscheduler", **ppo)
        first = tr.collect(1)
        tr.update(first)  # epoch 2 samples from updated networks
        batches.append((first, tr.collect(2)))
    for fast, plain in zip(*batches):
        for name in ("obs", "mask", "act", "logp", "adv", "ret"):
            a, b = getattr(fast, name), getattr(plain, name)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
        assert fast.returns == plain.returns and fast.steps == plain.steps
