"""Proximal Policy Optimization (PyTorch), with per-epoch checkpoints: the one trainer of every agent.

It sees only the environments' spaces (and their ``network_shape``), the batches it collects and
its ``PPOConfig``; it imports no agent (import-linter contract) — each agent's ``recipe`` builds
the environments and calls it.

Defaults are the papers' (seed 003 §4, seed 000 §3; the authors' code where the papers are
silent): 100 trajectories per epoch, full-batch updates, 80 policy and 80 value iterations,
Adam with policy lr 3e-4 and value lr 1e-3 (``pi_lr=v_lr=1e-3`` gives the papers' single rate),
clip 0.2, γ = 1, GAE λ = 0.97, policy iterations stop early when the approximate KL exceeds
1.5 × 0.01, advantages normalised per epoch.  Actions are sampled in training; trained policies act
greedily (argmax) unless asked to sample.

Trajectories are collected from ``n_envs`` environments stepped together (one batched forward
pass per step), which live in this process or in ``workers`` rollout workers (subprocesses, or Ray
actors with ``backend="ray"``; ``rtsched.rl.rollouts``) that simulate in parallel.  Trajectory k of
epoch e starts from ``reset(seed=s)`` with s drawn from ``SeedSequence([seed, e])``, and action
sampling uses a dedicated ``torch.Generator`` whose state is checkpointed, so a resumed run repeats
an uninterrupted one exactly, and the number of workers and the backend change nothing but speed.

``rollout="trajectories"`` hands out whole trajectories instead: worker w samples trajectories
w, w + N, ... of the epoch with the actor evaluated in NumPy and trajectory k's own random stream
``default_rng([seed, epoch, k])`` (reset seed and actions), and returns them when done; the trainer
then computes their log-probabilities and values in batched passes.  One hand-off per worker and
epoch instead of one per step, so it scales where lock-step collection waits on every hand-off
(busy machines, many workers); results again do not depend on the workers or backend, but they
differ from the lock-step mode's (another random stream).

The checkpoint (``checkpoint.pt`` in the output folder, rewritten atomically after every epoch) is
described in ``rtsched.rl.modelfiles``, which reads it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from rtsched.files import atomic_write_stream, atomic_write_text
from rtsched.rl.modelfiles import CHECKPOINT, FORMAT, PROGRESS, VERSION, ModelFileError, jsonable, read_model_file
from rtsched.rl.nets import NumpyActor, build_networks
from rtsched.rl.rollouts import MODES, make_pool


@dataclass
class PPOConfig:
    """PPO hyper-parameters (see module docstring for their sources)."""

    trajs_per_epoch: int = 100
    n_envs: int = 8
    pi_lr: float = 3e-4
    v_lr: float = 1e-3
    clip: float = 0.2
    train_pi_iters: int = 80
    train_v_iters: int = 80
    target_kl: float = 0.01
    kl_stop: float = 1.5
    gamma: float = 1.0
    lam: float = 0.97
    normalize_adv: bool = True
    seed: int = 0
    actor: str = "kernel"  # rlscheduler: kernel | mlp_v1 | mlp_v2 | mlp_v3
    critic: str = "mlp"  # rlscheduler: mlp (paper) | kernel (authors' code)
    hidden: tuple[int, ...] = (32, 16, 8)
    max_traj_len: int | None = None  # discard longer trajectories (the inspector code uses 10 × 128)
    minibatch: int | None = None  # None: full-batch iterations; else shuffled minibatches of this size per pass
    torch_threads: int | None = None  # intra-op threads of the update (None: 1); collection always uses 1
    workers: int = 1  # rollout workers stepping the n_envs environments (1: in this process); speed only
    backend: str = "local"  # rollout workers: "local" (subprocesses) or "ray" (Ray actors); speed only
    rollout: str = "lockstep"  # "lockstep" (the trainer samples every step) | "trajectories" (see module docstring)
    # RLSchert (seed 001 §3.5-3.6); the defaults leave the other agents' training unchanged.
    ent_coef: float = 0.0  # entropy bonus in the policy loss
    imitation: float = 0.0  # α_t at the start: weight of −log π(teacher action | s) in the policy loss
    imitation_hold: int = 0  # epochs at full α_t
    imitation_end: int = 0  # epoch by which α_t has decayed linearly to 0
    max_grad_norm: float | None = None  # clip the policy gradient's norm in minibatch updates (RLSchert: 10)
    # Fine-tuning a warm-started actor (the split window's clone): the first ``critic_warmup`` epochs of
    # the run update only the value network (the actor waits for a critic that is no longer random), and
    # ``anchor_kl`` = β > 0 adds β · KL(π_anchor ‖ π) to the policy loss, π_anchor the actor as it was when
    # the run's PPO began (kept in the checkpoint); minibatch updates only.
    critic_warmup: int = 0
    anchor_kl: float = 0.0


# PPOConfig fields added after version 1 model files were first written: a checkpoint that lacks one
# compares as if it held the default.
_LATER_FIELDS = {"minibatch": None, "max_grad_norm": None, "ent_coef": 0.0, "imitation": 0.0, "imitation_hold": 0,
                 "imitation_end": 0, "critic_warmup": 0, "anchor_kl": 0.0}
# Environment settings added later (the split window's, 2026-11-28): absent compares as the default, so
# the runs committed before them still resume.
_LATER_ENV_FIELDS = {"mask_invalid": False, "time_scale": "linear"}


def imitation_weight(cfg: PPOConfig, epoch: int) -> float:
    """α_t of epoch ``epoch`` (1-based): ``imitation`` up to ``imitation_hold``, then linear to 0 at
    ``imitation_end`` (seed 001 §3.6; the digest's default is 0.5, 50, 150)."""
    if cfg.imitation <= 0 or epoch > max(cfg.imitation_end, cfg.imitation_hold):
        return 0.0
    if epoch <= cfg.imitation_hold:
        return cfg.imitation
    span = cfg.imitation_end - cfg.imitation_hold
    return cfg.imitation * max(0.0, (cfg.imitation_end - epoch) / span) if span > 0 else 0.0


def split_options(options: dict, env_names, who: str) -> tuple[dict, dict]:
    """(environment options, ``PPOConfig`` options) of a training call's keyword options; an option
    that is neither raises TypeError naming ``who``."""
    ppo_fields = {f.name for f in dataclasses.fields(PPOConfig)}
    env_opts, ppo_opts = {}, {}
    for k, v in options.items():
        if k in env_names:
            env_opts[k] = v
        elif k in ppo_fields:
            ppo_opts[k] = v
        else:
            raise TypeError(f"{who}: unknown option {k!r}")
    return env_opts, ppo_opts


# Occupied job slots per policy-gradient chunk, unless the actor sets ``update_chunk_slots`` (the kernel
# actor, whose rows are deduplicated per batch: ``nets.KERNEL_UPDATE_CHUNK_SLOTS``).  The kernel actor's MLP runs once per occupied slot
# (about 10^6 of them in a 25,600-sample epoch without backfilling); chunks of ~32k slots keep its
# activations in cache: forward + backward took 0.35 s per iteration against 1.15 s full-batch on a
# synthetic batch of that size (development machine, one thread).
PI_CHUNK_SLOTS = 32768


def _row_chunks(mask: np.ndarray, slots: int) -> list[tuple[int, int]]:
    """Consecutive row ranges [r0, r1) of a (samples × slots) boolean mask, each holding about
    ``slots`` True entries (at least one row)."""
    counts = np.cumsum(mask.sum(axis=1))
    out = []
    r0, done = 0, 0
    n = len(counts)
    while r0 < n:
        r1 = int(np.searchsorted(counts, done + slots, side="right"))
        r1 = min(max(r1, r0 + 1), n)
        out.append((r0, r1))
        done = int(counts[r1 - 1])
        r0 = r1
    return out


def discount_cumsum(x: np.ndarray, discount: float) -> np.ndarray:
    out = np.empty_like(x)
    acc = 0.0
    for i in range(len(x) - 1, -1, -1):
        acc = x[i] + discount * acc
        out[i] = acc
    return out


@dataclass
class EpochBatch:
    obs: np.ndarray
    mask: np.ndarray
    act: np.ndarray
    logp: np.ndarray
    adv: np.ndarray
    ret: np.ndarray
    returns: list[float] = field(default_factory=list)
    infos: list[dict] = field(default_factory=list)
    steps: int = 0
    teacher: np.ndarray | None = None  # the imitation teacher's action per sample (RLSchert)

    def tensors(self) -> tuple[torch.Tensor, ...]:
        """(obs, mask, act, logp, adv, ret) as tensors sharing the arrays' memory."""
        return tuple(torch.as_tensor(a) for a in (self.obs, self.mask, self.act, self.logp, self.adv, self.ret))


class _LockstepEpoch:
    """The bookkeeping of one lock-step epoch: trajectory k starts from reset seed ``seeds[k']`` (k' counts
    the discarded ones too), each environment's open trajectory buffer, its current observation and mask,
    and the resets due before the next step."""

    def __init__(self, seeds: np.ndarray, n_traj: int, n_envs: int) -> None:
        self.seeds, self.n_traj = seeds, n_traj
        self.next_seed = 0
        self.traj_count = 0  # trajectories started (kept or discarded)
        self.bufs: list[dict | None] = [None] * n_envs
        self.obs_now: list = [None] * n_envs
        self.mask_now: list = [None] * n_envs
        self.resets: list[tuple[int, int]] = []  # (env, seed) to reset before the next step
        self.done: list[tuple] = []
        self.infos: list[dict] = []
        self.steps = 0

    def start(self, i: int) -> bool:
        """Open the next trajectory on environment ``i``; False when the epoch has all it needs."""
        if self.traj_count >= self.n_traj:
            return False
        if self.next_seed >= len(self.seeds):
            raise RuntimeError("too many discarded trajectories; raise max_traj_len")
        self.resets.append((i, int(self.seeds[self.next_seed])))
        self.next_seed += 1
        self.traj_count += 1
        self.bufs[i] = {"obs": [], "mask": [], "act": [], "logp": [], "val": [], "rew": [], "teach": [],
                        "id": self.traj_count - 1}
        return True

    def apply_resets(self, pool) -> None:
        # Environments are independent: resetting them together after the step gives each the
        # seed it would get reset one by one.
        for (i, _s), (o, m) in zip(self.resets, pool.reset_many(self.resets)):
            self.obs_now[i], self.mask_now[i] = o, m
        self.resets.clear()


class PPOTrainer:
    """Trains networks on environments made by ``make_env()``; ``agent`` is only a label (it is stored
    in the checkpoint and names the networks: ``rtsched.rl.nets.build_networks``), the networks'
    shape is the environment's ``network_shape``, and ``epoch_stats(infos)`` (optional) adds an
    agent's own figures to each epoch's history row.

    Rewards are taken at every step (the picking and inspector environments give 0 until the
    last one); with ``imitation`` > 0 the environments' ``teacher_action()`` is recorded at each
    step for the imitation term.

    ``env_config`` (JSON-able) and ``norms`` are stored in checkpoints so that a model file is
    self-describing; ``out`` is the output folder (None: no files).
    """

    def __init__(self, agent: str, make_env: Callable[[], object], config: PPOConfig, env_config: dict,
                 norms: dict, out: str | None = None, progress: Callable | None = None, *,
                 first_env=None, ray_address: str | None = None,
                 epoch_stats: Callable[[list[dict]], dict] | None = None) -> None:
        self.agent = agent
        self.epoch_stats = epoch_stats
        self.config = config
        self.env_config = dict(env_config)
        self.norms = dict(norms)
        self.out = out
        self.progress = progress
        if config.rollout not in MODES:
            raise ValueError(f"unknown rollout mode {config.rollout!r}; choose from {', '.join(MODES)}")
        if config.rollout == "trajectories" and config.imitation > 0:
            raise ValueError("the imitation term needs the teacher's action at every step: use the lockstep rollout")
        if config.anchor_kl < 0 or config.critic_warmup < 0:
            raise ValueError("anchor_kl and critic_warmup must be at least 0")
        if config.anchor_kl > 0 and not config.minibatch:
            raise ValueError("the KL anchor (anchor_kl) is a term of the minibatch update: give minibatch too")
        n_envs = max(1, min(config.n_envs, config.trajs_per_epoch))
        if config.rollout == "trajectories":  # a worker samples its trajectories one after another
            n_envs = max(1, min(config.workers, config.trajs_per_epoch))
        # ``first_env`` (or a new one): the spaces, and environment 0 itself when the environments live here.
        env0 = first_env if first_env is not None else make_env()
        # With workers, ``make_env`` is sent to them (it must pickle: ``rtsched.rl.agents.EnvFactory``).
        self.pool = make_pool(make_env, n_envs, config.workers, config.backend, first=env0, address=ray_address)
        self.obs_dim = int(np.prod(env0.observation_space.shape))
        self.n_actions = int(env0.action_space.n)
        # The networks' shape is the environment's to say (``network_shape``): this trainer knows no agent.
        self.n_features, self.window = (int(n) for n in env0.network_shape)
        torch.manual_seed(config.seed)
        self.actor, self.critic = build_networks(agent, self.n_features, self.window, config.actor, config.critic,
                                                 tuple(config.hidden))
        self.pi_opt = _adam(self.actor.parameters(), config.pi_lr)
        self.v_opt = _adam(self.critic.parameters(), config.v_lr)
        self.gen = torch.Generator().manual_seed(config.seed)
        self.anchor: torch.nn.Module | None = None  # frozen reference actor of ``anchor_kl`` (``set_anchor``)
        self.epoch = 0
        self.history: list[dict] = []
        # Called after each finished trajectory as on_trajectory(done, total, return, info) (progress bars).
        self.on_trajectory: Callable[[int, int, float, dict], None] | None = None

    # ------------------------------------------------------------------------------ collection
    def collect(self, epoch: int) -> EpochBatch:
        # Collection runs the networks on a handful of observations at a time: one intra-op thread is
        # several times faster than several (thread hand-offs dominate; measured 0.75 → 0.02 ms per
        # linear layer on a loaded 2-core machine).  The full-batch update keeps torch's setting.
        with _torch_threads(1):
            return self._collect(epoch)

    def _collect(self, epoch: int) -> EpochBatch:
        if self.config.rollout == "trajectories":
            return self._collect_trajectories(epoch)
        return self._collect_lockstep(epoch)

    def _collect_trajectories(self, epoch: int) -> EpochBatch:
        """Workers sample whole trajectories with the actor in NumPy (``rollouts.sample_trajectory``);
        the trainer then evaluates log-probabilities and values in batched passes."""
        cfg = self.config
        forward = NumpyActor(self.actor).plain()
        trajs = self.pool.trajectories(forward, cfg.seed, epoch, cfg.trajs_per_epoch, cfg.max_traj_len)
        obs = torch.as_tensor(np.concatenate([t["obs"] for t in trajs]).astype(np.float32))
        mask_np = np.concatenate([t["mask"] for t in trajs]).astype(bool)
        mask = torch.as_tensor(mask_np)
        act = torch.as_tensor(np.concatenate([t["act"] for t in trajs]))
        logps, vals = [], []
        with torch.no_grad():
            for r0, r1 in _row_chunks(mask_np, PI_CHUNK_SLOTS):
                logits = self.actor(obs[r0:r1], mask[r0:r1])
                logps.append(torch.log_softmax(logits, dim=-1).gather(1, act[r0:r1, None]).squeeze(-1))
                vals.append(self.critic(obs[r0:r1]))
        logp = torch.cat(logps).numpy()
        val = torch.cat(vals).numpy()
        done, infos, pos = [], [], 0
        for t in trajs:
            n = len(t["act"])
            b = {"obs": t["obs"], "mask": t["mask"], "act": t["act"], "logp": logp[pos:pos + n], "val": val[pos:pos + n],
                 "rew": t["rew"]}
            pos += n
            done.append((t["k"], b, float(t["ret"])))
            infos.append(t["info"])
            if self.on_trajectory is not None:
                self.on_trajectory(len(done), cfg.trajs_per_epoch, float(t["ret"]), t["info"])
        return self._finish(done, infos, pos)

    def _collect_lockstep(self, epoch: int) -> EpochBatch:
        """All environments step together: one batched forward pass and one hand-off to the pool per
        step; a finished (or discarded) trajectory's environment starts the next one at once."""
        cfg = self.config
        seeds = np.random.SeedSequence([cfg.seed, epoch]).generate_state(cfg.trajs_per_epoch + 1024)
        run = _LockstepEpoch(seeds, cfg.trajs_per_epoch, len(self.pool))
        teach = imitation_weight(cfg, epoch) > 0
        active = [i for i in range(len(self.pool)) if run.start(i)]
        run.apply_resets(self.pool)
        while active:
            acts, logps, vals = self._sample_actions(run, active)
            # The imitation teacher's action in each state, asked before the step changes it.
            teacher = self.pool.teacher_many(active) if teach else None
            results = self.pool.step_many(list(zip(active, acts)))
            active = self._record_steps(run, active, acts, logps, vals, teacher, results)
            run.apply_resets(self.pool)
        run.done.sort(key=lambda t: t[0])
        return self._finish(run.done, run.infos, run.steps)

    def _sample_actions(self, run: _LockstepEpoch, active: list[int]) -> tuple[list[int], list[float], list[float]]:
        """The actions sampled for the active environments' observations, their log-probabilities and values."""
        obs_b = torch.as_tensor(np.stack([run.obs_now[i] for i in active]))
        mask_b = torch.as_tensor(np.stack([run.mask_now[i] for i in active]))
        # inference_mode: the same kernels as no_grad without autograd's per-op bookkeeping; the results
        # leave as Python numbers in one call each (indexing a tensor per environment cost more than
        # the networks: issue 24, docs/benchmarks.md).
        with torch.inference_mode():
            logits = self.actor(obs_b, mask_b)
            vals = self.critic(obs_b)
            probs = torch.softmax(logits, dim=-1)
            acts = torch.multinomial(probs, 1, generator=self.gen).squeeze(-1)
            logps = torch.log_softmax(logits, dim=-1).gather(1, acts[:, None]).squeeze(-1)
        return acts.tolist(), logps.tolist(), vals.tolist()

    def _record_steps(self, run: _LockstepEpoch, active, acts, logps, vals, teacher, results) -> list[int]:
        """Append one step to each active environment's trajectory; returns the environments still
        running (a finished or discarded trajectory's environment starts the next one, if any is left)."""
        still = []
        for j, i in enumerate(active):
            b = run.bufs[i]
            b["obs"].append(run.obs_now[i])
            b["mask"].append(run.mask_now[i])
            b["act"].append(acts[j])
            b["logp"].append(logps[j])
            b["val"].append(vals[j])
            if teacher is not None:
                b["teach"].append(teacher[j])
            o, m, r, term, trunc, info = results[j]
            run.steps += 1
            run.obs_now[i], run.mask_now[i] = o, m
            b["rew"].append(float(r))
            if term or trunc:
                # the episode's return: the terminal reward for the picking and inspector agents
                # (their other rewards are 0), the sum of the per-cycle rewards for the split window
                ret_i = float(r) if len(b["rew"]) == 1 else float(np.sum(b["rew"]))
                run.done.append((b["id"], b, ret_i))
                run.infos.append(info)
                if self.on_trajectory is not None:
                    self.on_trajectory(len(run.done), run.n_traj, ret_i, info)
                if run.start(i):
                    still.append(i)
            elif self.config.max_traj_len is not None and len(b["act"]) >= self.config.max_traj_len:
                run.traj_count -= 1  # discarded: draw another sequence
                if run.start(i):
                    still.append(i)
            else:
                still.append(i)
        return still

    def _finish(self, trajs, infos, steps) -> EpochBatch:
        cfg = self.config
        obs, mask, act, logp, adv, ret, rets, teach = [], [], [], [], [], [], [], []
        for _id, b, r in trajs:
            # Per-step rewards as the environment gave them (zeros before the terminal reward for the
            # picking and inspector agents).  A truncated episode is treated as terminal (no bootstrap).
            rew = np.asarray(b["rew"], dtype=np.float64)
            if b.get("teach"):
                teach.append(np.asarray(b["teach"]))
            vals = np.append(np.asarray(b["val"], dtype=np.float64), 0.0)
            deltas = rew + cfg.gamma * vals[1:] - vals[:-1]
            adv.append(discount_cumsum(deltas, cfg.gamma * cfg.lam))
            ret.append(discount_cumsum(rew, cfg.gamma))
            obs.append(np.stack(b["obs"]))
            mask.append(np.stack(b["mask"]))
            act.append(np.asarray(b["act"]))
            logp.append(np.asarray(b["logp"]))
            rets.append(r)
        adv_a = np.concatenate(adv).astype(np.float32)
        if cfg.normalize_adv and len(adv_a) > 1:
            adv_a = (adv_a - adv_a.mean()) / (adv_a.std() + 1e-8)
        batch = EpochBatch(np.concatenate(obs).astype(np.float32), np.concatenate(mask).astype(bool),
                           np.concatenate(act).astype(np.int64), np.concatenate(logp).astype(np.float32),
                           adv_a, np.concatenate(ret).astype(np.float32), rets, infos, steps)
        if teach:
            batch.teacher = np.concatenate(teach).astype(np.int64)
        return batch

    # ------------------------------------------------------------------------------ update
    def update(self, batch: EpochBatch) -> dict:
        # One intra-op thread unless ``torch_threads`` says otherwise: on the shared 2-core machine a
        # full-batch update of 8,356 samples took 8.4 s with 1 thread and 29 s with 2 (load ≈ 3.7);
        # a fixed count also keeps float reductions, hence results, the same on any machine.
        with _torch_threads(self.config.torch_threads or 1):
            return self._update(batch)

    def _update(self, batch: EpochBatch) -> dict:
        if self.config.minibatch:
            return self._update_minibatch(batch)
        cfg = self.config
        obs, mask, act, logp_old, adv, ret = batch.tensors()
        kl = 0.0
        pi_iters = 0
        loss_pi = torch.tensor(0.0)
        n = len(act)
        chunks = _row_chunks(batch.mask, getattr(self.actor, "update_chunk_slots", PI_CHUNK_SLOTS))
        for _ in range(self._pi_passes()):
            # The clipped loss is a mean over samples, so it is summed chunk by chunk (whole samples
            # each) with a backward per chunk; the KL test then uses every sample's new log-prob, and
            # a stop discards the accumulated gradient unused, as a full-batch pass would.
            self.pi_opt.zero_grad()
            logps = []
            loss_pi = torch.tensor(0.0)
            for r0, r1 in chunks:
                logits = self.actor(obs[r0:r1], mask[r0:r1])
                logp = torch.log_softmax(logits, dim=-1).gather(1, act[r0:r1, None]).squeeze(-1)
                ratio = torch.exp(logp - logp_old[r0:r1])
                chunk_adv = adv[r0:r1]
                clipped = torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * chunk_adv
                loss = -(torch.min(ratio * chunk_adv, clipped)).sum() / n
                loss.backward()
                loss_pi = loss_pi + loss.detach()
                logps.append(logp.detach())
            kl = float((logp_old - torch.cat(logps)).mean())
            if kl > cfg.kl_stop * cfg.target_kl:
                break
            self.pi_opt.step()
            pi_iters += 1
        loss_v = torch.tensor(0.0)
        for _ in range(cfg.train_v_iters):
            loss_v = ((self.critic(obs) - ret) ** 2).mean()
            self.v_opt.zero_grad()
            loss_v.backward()
            self.v_opt.step()
        return {"loss_pi": float(loss_pi.detach()), "loss_v": float(loss_v.detach()), "kl": kl, "pi_iters": pi_iters}

    def _update_minibatch(self, batch: EpochBatch) -> dict:
        """``train_pi_iters`` passes of shuffled minibatches (one optimiser step each) for the policy,
        stopping after a pass whose approximate KL exceeds the limit; the same for the value with
        ``train_v_iters`` passes (the split-window agent, seed 004: minibatch 128; RLSchert, seed 001
        Table 4).  The policy loss adds −``ent_coef`` · entropy and α_t · (−log π(teacher action))
        (seed 001 Eq. 11) when those are set; ``max_grad_norm`` clips the policy gradient."""
        cfg = self.config
        obs, mask, act, logp_old, adv, ret = batch.tensors()
        alpha = imitation_weight(cfg, self.epoch + 1)
        teacher = torch.as_tensor(batch.teacher) if alpha > 0 and batch.teacher is not None else None
        n = len(act)
        size = max(1, int(cfg.minibatch))
        perm_gen = torch.Generator().manual_seed(int(cfg.seed) * 1_000_003 + self.epoch)
        kl, pi_iters, loss_il = 0.0, 0, 0.0
        loss_pi = loss_v = torch.tensor(0.0)
        anchor_logp, kl_anchor = self._anchor_logp(obs, mask), None
        for _ in range(self._pi_passes()):
            perm = torch.randperm(n, generator=perm_gen)
            # The pass's samples gathered once in shuffled order; minibatch k is then rows k..k+size of
            # each (the same minibatches as indexing with perm[k:k + size], one gather per tensor and
            # pass instead of one per minibatch).
            s_obs, s_mask, s_act, s_logp, s_adv = obs[perm], mask[perm], act[perm], logp_old[perm], adv[perm]
            s_teacher = teacher[perm] if teacher is not None else None
            s_anchor = anchor_logp[perm] if anchor_logp is not None else None
            for k in range(0, n, size):
                rows = slice(k, k + size)
                m = s_mask[rows]
                logits = self.actor(_own_rows(s_obs, rows), m)
                logps = torch.log_softmax(logits, dim=-1)
                logp = logps.gather(1, s_act[rows, None]).squeeze(-1)
                ratio = torch.exp(logp - s_logp[rows])
                a = s_adv[rows]
                loss_pi = -(torch.min(ratio * a, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * a)).mean()
                if cfg.ent_coef:
                    probs = torch.softmax(logits, dim=-1)
                    entropy = -(probs * torch.where(m, logps, torch.zeros_like(logps))).sum(-1).mean()
                    loss_pi = loss_pi - cfg.ent_coef * entropy
                if s_teacher is not None:
                    il = -logps.gather(1, s_teacher[rows, None]).squeeze(-1).mean()
                    loss_pi = loss_pi + alpha * il
                    loss_il = float(il.detach())
                if s_anchor is not None:
                    loss_pi = loss_pi + cfg.anchor_kl * _kl(s_anchor[rows], logps, m).mean()
                self.pi_opt.zero_grad()
                loss_pi.backward()
                if cfg.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(self.actor.parameters(), cfg.max_grad_norm)
                self.pi_opt.step()
            pi_iters += 1
            with torch.no_grad():
                logps_all = torch.log_softmax(self.actor(obs, mask), dim=-1)
                logp = logps_all.gather(1, act[:, None]).squeeze(-1)
                kl = float((logp_old - logp).mean())
                if anchor_logp is not None:
                    kl_anchor = float(_kl(anchor_logp, logps_all, mask).mean())
            if kl > cfg.kl_stop * cfg.target_kl:
                break
        for _ in range(cfg.train_v_iters):
            perm = torch.randperm(n, generator=perm_gen)
            s_obs, s_ret = obs[perm], ret[perm]
            for k in range(0, n, size):
                rows = slice(k, k + size)
                loss_v = ((self.critic(_own_rows(s_obs, rows)) - s_ret[rows]) ** 2).mean()
                self.v_opt.zero_grad()
                loss_v.backward()
                self.v_opt.step()
        out = {"loss_pi": float(loss_pi.detach()), "loss_v": float(loss_v.detach()), "kl": kl, "pi_iters": pi_iters}
        if alpha > 0:
            out["imitation_weight"] = alpha
            out["loss_imitation"] = loss_il
        if kl_anchor is not None:
            out["kl_anchor"] = kl_anchor  # KL(π_anchor ‖ π) on the batch's states after the last pass (nats)
        return out

    def _pi_passes(self) -> int:
        """Policy passes of this epoch's update: none during the critic warm-up."""
        return 0 if self.epoch + 1 <= self.config.critic_warmup else self.config.train_pi_iters

    def _anchor_logp(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor | None:
        """The anchor actor's log-probabilities on the batch (None without ``anchor_kl``)."""
        if not self.config.anchor_kl or self._pi_passes() == 0:
            return None
        with torch.no_grad():
            return torch.log_softmax(self.anchor(obs, mask), dim=-1)

    def set_anchor(self) -> None:
        """Freeze a copy of the actor as it is now as ``anchor_kl``'s reference."""
        import copy

        self.anchor = copy.deepcopy(self.actor).requires_grad_(False)

    # ------------------------------------------------------------------------------ loop
    def train(self, epochs: int) -> list[dict]:
        """Run epochs ``self.epoch + 1 .. epochs`` (checkpointing each); returns the history."""
        if self.config.anchor_kl > 0 and self.anchor is None:
            if self.epoch:
                raise ModelFileError(f"anchor_kl: the run is at epoch {self.epoch} but its checkpoint holds no anchor")
            self.set_anchor()  # the actor PPO starts from (a clone, or init_from's weights)
        while self.epoch < epochs:
            e = self.epoch + 1
            t0 = time.perf_counter()
            batch = self.collect(e)
            t1 = time.perf_counter()
            stats = self.update(batch)
            t2 = time.perf_counter()
            rets = np.asarray(batch.returns, dtype=np.float64)
            row = {"epoch": e, "mean_return": float(rets.mean()), "min_return": float(rets.min()),
                   "max_return": float(rets.max()), "trajectories": len(rets), "steps": batch.steps,
                   "collect_s": round(t1 - t0, 3), "update_s": round(t2 - t1, 3), **stats}
            for key in ("slowdown", "kills"):
                vals = [i[key] for i in batch.infos if key in i]
                if vals:
                    row[f"mean_{key}"] = float(np.mean(vals))
            if self.epoch_stats is not None and batch.infos:
                row.update(self.epoch_stats(batch.infos))
            self.history.append(row)
            self.epoch = e
            if self.out:
                self.save(os.path.join(self.out, CHECKPOINT))
            if self.progress is not None:
                self.progress(e, epochs, row)
        return self.history

    def close(self) -> None:
        """Stop the rollout workers (a trainer in one process has nothing to stop)."""
        self.pool.close()

    # ------------------------------------------------------------------------------ files
    def state(self) -> dict:
        cfg = dataclasses.asdict(self.config)
        cfg["hidden"] = list(cfg["hidden"])
        return {
            "format": FORMAT, "version": VERSION, "agent": self.agent, "ppo": cfg,
            "env": jsonable(self.env_config), "norms": dict(self.norms),
            "arch": {"n_features": self.n_features, "window": self.window, "actor": self.config.actor,
                     "critic": self.config.critic, "hidden": list(self.config.hidden)},
            "epoch": self.epoch, "actor": self.actor.state_dict(), "critic": self.critic.state_dict(),
            "pi_opt": self.pi_opt.state_dict(), "v_opt": self.v_opt.state_dict(),
            "rng": {"torch_gen": self.gen.get_state()}, "history": list(self.history),
            **({"anchor": self.anchor.state_dict()} if self.anchor is not None else {}),
        }

    def save(self, path: str) -> None:
        """Write the checkpoint and ``progress.json`` beside it, each atomically (a kill at any
        moment leaves the previous epoch's files whole)."""
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        state = self.state()
        atomic_write_stream(path, lambda fh: torch.save(state, fh))
        atomic_write_text(os.path.join(os.path.dirname(os.path.abspath(path)), PROGRESS),
                          json.dumps(self.history, indent=1) + "\n")

    def warm_start(self, path: str) -> None:
        """Initialise both networks from a trained model (same agent and architecture); the
        optimisers, the epoch count and the history start afresh."""
        st = read_model_file(path)
        _require_training_state(path, st, "initialise a run")
        if st["agent"] != self.agent:
            raise ModelFileError(f"{path}: a {st['agent']} model cannot initialise a {self.agent} run")
        mine = _comparable(self.state()["arch"], "arch")
        if _comparable(st["arch"], "arch") != mine:
            raise ModelFileError(f"{path}: network architecture {st['arch']} differs from this run's {mine}")
        try:
            self.actor.load_state_dict(st["actor"])
            self.critic.load_state_dict(st["critic"])
        except (RuntimeError, KeyError) as exc:
            raise ModelFileError(f"{path}: weights do not match the networks: {exc}") from exc

    def restore(self, path: str) -> None:
        """Load a checkpoint written by ``save`` with the same configuration (to resume)."""
        st = read_model_file(path)
        _require_training_state(path, st, "resume training")
        if st["agent"] != self.agent:
            raise ModelFileError(f"{path}: checkpoint of agent {st['agent']!r}, not {self.agent!r}")
        mine = self.state()
        for key in ("ppo", "env", "arch"):
            a, b = _comparable(st[key], key), _comparable(mine[key], key)
            if a != b:
                diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                raise ModelFileError(f"{path}: checkpoint configuration differs from this run in {key}: {diff} "
                                     "(use another output folder or the same settings)")
        try:
            self.actor.load_state_dict(st["actor"])
            self.critic.load_state_dict(st["critic"])
            self.pi_opt.load_state_dict(st["pi_opt"])
            self.v_opt.load_state_dict(st["v_opt"])
            # The step's implementation is this trainer's choice, not the file's (older files say for-loop);
            # both give the same weights.
            for opt in (self.pi_opt, self.v_opt):
                for group in opt.param_groups:
                    group["foreach"] = True
            self.gen.set_state(st["rng"]["torch_gen"])
            if "anchor" in st:
                self.set_anchor()
                self.anchor.load_state_dict(st["anchor"])
        except (RuntimeError, KeyError, ValueError, TypeError) as exc:
            raise ModelFileError(f"{path}: checkpoint does not match the networks: {exc}") from exc
        self.epoch = int(st["epoch"])
        self.history = list(st.get("history", []))


def _adam(params, lr: float) -> torch.optim.Adam:
    """Adam with the multi-tensor (``foreach``) step: the same weights bit for bit as the default
    for-loop step (tests/test_rl_trainer_steps.py), 1.2–1.4x less CPU per step on the agents'
    networks.  (The fused step is 3–4x cheaper still but rounds differently, by about one float32
    ulp per step: docs/benchmarks.md, issue 24.)"""
    return torch.optim.Adam(params, lr=lr, foreach=True)


def _kl(ref_logp: torch.Tensor, logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-row KL(ref ‖ new) = Σ_a p_ref(a) (log p_ref(a) − log p(a)) over the allowed actions (nats)."""
    terms = ref_logp.exp() * (ref_logp - logp)
    return torch.where(mask, terms, torch.zeros_like(terms)).sum(-1)


def _own_rows(t: torch.Tensor, rows: slice) -> torch.Tensor:
    """Rows ``rows`` of ``t`` in a new tensor: a matrix product's input in memory of its own, as a
    gather would give it (a math library may pick its kernel by the data's alignment)."""
    return t[rows].clone()


@contextlib.contextmanager
def _torch_threads(n: int):
    """Run a block with ``n`` PyTorch intra-op threads, restoring the previous count."""
    before = torch.get_num_threads()
    if n != before:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n != before:
            torch.set_num_threads(before)


def _require_training_state(path: str, st: dict, purpose: str) -> None:
    if "critic" not in st or "pi_opt" not in st:
        raise ModelFileError(f"{path}: an exported policy-only model (no critic or optimiser state) cannot "
                             f"{purpose}; use the run's checkpoint.pt")


# Per compared part: settings that never make a run differ (PPO: speed only; env: the same trace may be
# found elsewhere) and the fields added later that compare as their defaults when absent.
_NOT_COMPARED = {"ppo": ("torch_threads", "workers", "backend"), "env": ("trace_path",)}
_ADDED_LATER = {"ppo": _LATER_FIELDS, "env": _LATER_ENV_FIELDS}


def _comparable(d: dict, key: str) -> dict:
    d = jsonable(d)
    for name in _NOT_COMPARED.get(key, ()):
        d.pop(name, None)
    for name, default in _ADDED_LATER.get(key, {}).items():
        if d.get(name, default) == default:
            d.pop(name, None)
    return d
