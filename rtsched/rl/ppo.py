"""Proximal Policy Optimization for both agents (PyTorch), with per-epoch checkpoints.

Defaults are the papers' (seed 003 §4, seed 000 §3; the authors' code where the papers are
silent): 100 trajectories per epoch, full-batch updates, 80 policy and 80 value iterations,
Adam with policy lr 3e-4 and value lr 1e-3 (``pi_lr=v_lr=1e-3`` gives the papers' single rate),
clip 0.2, γ = 1, GAE λ = 0.97, policy iterations stop early when the approximate KL exceeds
1.5 × 0.01, advantages normalised per epoch.  Actions are sampled in training; trained policies act
greedily (argmax) unless asked to sample.

Trajectories are collected from ``n_envs`` environments stepped together (one batched forward
pass per step).  Trajectory k of epoch e starts from ``reset(seed=s)`` with s drawn from
``SeedSequence([seed, e])``, and action sampling uses a dedicated ``torch.Generator`` whose state is
checkpointed, so a resumed run repeats an uninterrupted one exactly.

A checkpoint (``checkpoint.pt`` in the output folder, rewritten atomically after every epoch) holds
the format tag, the configuration (PPO and environment), the normalisation constants, both
networks, both optimisers, the generator state, the epoch and the training history.  It is also
the trained model file: ``load_model`` reads it (``torch.load(weights_only=True)``) and raises
``ModelFileError`` naming the file when it is unreadable, not an rtsched model, or does not match
the networks it describes.
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

from rtsched.errors import RtschedError
from rtsched.files import atomic_write, atomic_write_text
from rtsched.rl.nets import build_networks

FORMAT = "rtsched-rl-model"
VERSION = 1
CHECKPOINT = "checkpoint.pt"
PROGRESS = "progress.json"  # the per-epoch history beside the checkpoint
LOCK = ".lock"  # held by a training run on its output folder


class ModelFileError(RtschedError, ValueError):
    """A model or checkpoint file that cannot be used (the message names the file)."""


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
    torch_threads: int | None = None  # intra-op threads of the update (None: 1); collection always uses 1


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


# Occupied job slots per policy-gradient chunk.  The kernel actor's MLP runs once per occupied slot
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


class PPOTrainer:
    """Trains ``agent`` ("rlscheduler" or "inspector") on environments made by ``make_env()``.

    ``env_config`` (JSON-able) and ``norms`` are stored in checkpoints so that a model file is
    self-describing; ``out`` is the output folder (None: no files).
    """

    def __init__(self, agent: str, make_env: Callable[[], object], config: PPOConfig, env_config: dict,
                 norms: dict, out: str | None = None, progress: Callable | None = None) -> None:
        self.agent = agent
        self.config = config
        self.env_config = dict(env_config)
        self.norms = dict(norms)
        self.out = out
        self.progress = progress
        n_envs = max(1, min(config.n_envs, config.trajs_per_epoch))
        self.envs = [make_env() for _ in range(n_envs)]
        env0 = self.envs[0]
        self.obs_dim = int(np.prod(env0.observation_space.shape))
        self.n_actions = int(env0.action_space.n)
        if agent == "rlscheduler":
            n_features, window = env0.obsb.n_features, env0.window
        elif agent == "rtmix":
            n_features, window = env0.n_features, env0.window
        else:
            n_features, window = env0.feat.n, 1
        self.n_features, self.window = n_features, window
        torch.manual_seed(config.seed)
        self.actor, self.critic = build_networks(agent, n_features, window, config.actor, config.critic,
                                                 tuple(config.hidden))
        self.pi_opt = torch.optim.Adam(self.actor.parameters(), lr=config.pi_lr)
        self.v_opt = torch.optim.Adam(self.critic.parameters(), lr=config.v_lr)
        self.gen = torch.Generator().manual_seed(config.seed)
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
        cfg = self.config
        n_traj = cfg.trajs_per_epoch
        seeds = np.random.SeedSequence([cfg.seed, epoch]).generate_state(n_traj + 1024)
        envs = self.envs
        next_seed = 0
        traj_count = 0  # trajectories started (kept or discarded)
        done_trajs: list[tuple] = []
        bufs: list[dict | None] = [None] * len(envs)
        obs_now: list[np.ndarray | None] = [None] * len(envs)
        active: list[int] = []
        max_len = cfg.max_traj_len
        infos: list[dict] = []

        def start(i: int) -> bool:
            nonlocal next_seed, traj_count
            if traj_count >= n_traj:
                return False
            if next_seed >= len(seeds):
                raise RuntimeError("too many discarded trajectories; raise max_traj_len")
            o, _ = envs[i].reset(seed=int(seeds[next_seed]))
            next_seed += 1
            traj_count += 1
            obs_now[i] = o
            bufs[i] = {"obs": [], "mask": [], "act": [], "logp": [], "val": [], "id": traj_count - 1}
            return True

        for i in range(len(envs)):
            if start(i):
                active.append(i)
        steps = 0
        while active:
            obs_b = torch.as_tensor(np.stack([obs_now[i] for i in active]))
            mask_b = torch.as_tensor(np.stack([envs[i].action_masks() for i in active]))
            with torch.no_grad():
                logits = self.actor(obs_b, mask_b)
                vals = self.critic(obs_b)
                probs = torch.softmax(logits, dim=-1)
                acts = torch.multinomial(probs, 1, generator=self.gen).squeeze(-1)
                logps = torch.log_softmax(logits, dim=-1).gather(1, acts[:, None]).squeeze(-1)
            still = []
            for j, i in enumerate(active):
                b = bufs[i]
                a = int(acts[j])
                b["obs"].append(obs_now[i])
                b["mask"].append(mask_b[j].numpy())
                b["act"].append(a)
                b["logp"].append(float(logps[j]))
                b["val"].append(float(vals[j]))
                o, r, term, trunc, info = envs[i].step(a)
                steps += 1
                obs_now[i] = o
                if term or trunc:
                    done_trajs.append((b["id"], b, float(r)))
                    infos.append(info)
                    if self.on_trajectory is not None:
                        self.on_trajectory(len(done_trajs), n_traj, float(r), info)
                    if start(i):
                        still.append(i)
                elif max_len is not None and len(b["act"]) >= max_len:
                    traj_count -= 1  # discarded: draw another sequence
                    if start(i):
                        still.append(i)
                else:
                    still.append(i)
            active = still
        done_trajs.sort(key=lambda t: t[0])
        return self._finish(done_trajs, infos, steps)

    def _finish(self, trajs, infos, steps) -> EpochBatch:
        cfg = self.config
        obs, mask, act, logp, adv, ret, rets = [], [], [], [], [], [], []
        for _id, b, r in trajs:
            n = len(b["act"])
            rew = np.zeros(n)
            rew[-1] = r
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
        return EpochBatch(np.concatenate(obs).astype(np.float32), np.concatenate(mask).astype(bool),
                          np.concatenate(act).astype(np.int64), np.concatenate(logp).astype(np.float32),
                          adv_a, np.concatenate(ret).astype(np.float32), rets, infos, steps)

    # ------------------------------------------------------------------------------ update
    def update(self, batch: EpochBatch) -> dict:
        # One intra-op thread unless ``torch_threads`` says otherwise: on the shared 2-core machine a
        # full-batch update of 8,356 samples took 8.4 s with 1 thread and 29 s with 2 (load ≈ 3.7);
        # a fixed count also keeps float reductions, hence results, the same on any machine.
        with _torch_threads(self.config.torch_threads or 1):
            return self._update(batch)

    def _update(self, batch: EpochBatch) -> dict:
        cfg = self.config
        obs = torch.as_tensor(batch.obs)
        mask = torch.as_tensor(batch.mask)
        act = torch.as_tensor(batch.act)
        logp_old = torch.as_tensor(batch.logp)
        adv = torch.as_tensor(batch.adv)
        ret = torch.as_tensor(batch.ret)
        kl = 0.0
        pi_iters = 0
        loss_pi = torch.tensor(0.0)
        n = len(act)
        chunks = _row_chunks(batch.mask, PI_CHUNK_SLOTS)
        for _ in range(cfg.train_pi_iters):
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

    # ------------------------------------------------------------------------------ loop
    def train(self, epochs: int) -> list[dict]:
        """Run epochs ``self.epoch + 1 .. epochs`` (checkpointing each); returns the history."""
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
            if self.agent == "inspector" and batch.infos:
                insp = sum(i.get("inspections", 0) for i in batch.infos)
                rej = sum(i.get("rejections", 0) for i in batch.infos)
                row["rejection_ratio"] = rej / insp if insp else 0.0
            self.history.append(row)
            self.epoch = e
            if self.out:
                self.save(os.path.join(self.out, CHECKPOINT))
            if self.progress is not None:
                self.progress(e, epochs, row)
        return self.history

    # ------------------------------------------------------------------------------ files
    def state(self) -> dict:
        cfg = dataclasses.asdict(self.config)
        cfg["hidden"] = list(cfg["hidden"])
        return {
            "format": FORMAT, "version": VERSION, "agent": self.agent, "ppo": cfg,
            "env": _jsonable(self.env_config), "norms": dict(self.norms),
            "arch": {"n_features": self.n_features, "window": self.window, "actor": self.config.actor,
                     "critic": self.config.critic, "hidden": list(self.config.hidden)},
            "epoch": self.epoch, "actor": self.actor.state_dict(), "critic": self.critic.state_dict(),
            "pi_opt": self.pi_opt.state_dict(), "v_opt": self.v_opt.state_dict(),
            "rng": {"torch_gen": self.gen.get_state()}, "history": list(self.history),
        }

    def save(self, path: str) -> None:
        """Write the checkpoint and ``progress.json`` beside it, each atomically (a kill at any
        moment leaves the previous epoch's files whole)."""
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        state = self.state()
        atomic_write(path, lambda tmp: torch.save(state, tmp))
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
            self.gen.set_state(st["rng"]["torch_gen"])
        except (RuntimeError, KeyError, ValueError, TypeError) as exc:
            raise ModelFileError(f"{path}: checkpoint does not match the networks: {exc}") from exc
        self.epoch = int(st["epoch"])
        self.history = list(st.get("history", []))


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


def _jsonable(d):
    return json.loads(json.dumps(d, default=lambda o: list(o) if isinstance(o, tuple) else str(o)))


def _require_training_state(path: str, st: dict, purpose: str) -> None:
    if "critic" not in st or "pi_opt" not in st:
        raise ModelFileError(f"{path}: an exported policy-only model (no critic or optimiser state) cannot "
                             f"{purpose}; use the run's checkpoint.pt")


def _comparable(d: dict, key: str) -> dict:
    d = _jsonable(d)
    if key == "ppo":
        d.pop("torch_threads", None)  # speed only
    if key == "env":
        d.pop("trace_path", None)  # the same trace may be found elsewhere
    return d


def read_model_file(path: str) -> dict:
    """Read and check a model/checkpoint file; ModelFileError naming the file on any problem."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, CHECKPOINT)
    if not os.path.exists(path):
        raise ModelFileError(f"{path}: model file not found")
    try:
        st = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types on corrupt files; its message may advise unsafe loading
        raise ModelFileError(f"{path}: not a readable model file (not tensors saved by rtsched rl train or "
                             f"export; {type(exc).__name__})") from None
    if not isinstance(st, dict) or st.get("format") != FORMAT:
        raise ModelFileError(f"{path}: not an rtsched RL model file (no '{FORMAT}' format tag)")
    if st.get("version") != VERSION:
        raise ModelFileError(f"{path}: model file version {st.get('version')!r}, this rtsched reads {VERSION}")
    for key in ("agent", "arch", "actor", "norms", "env"):
        if key not in st:
            raise ModelFileError(f"{path}: model file lacks '{key}'")
    return st


# What a policy needs of a checkpoint: the optimisers, the critic and the sampling state only serve
# training, and are most of a checkpoint's bytes.
EXPORTED_KEYS = ("format", "version", "agent", "ppo", "env", "norms", "arch", "epoch", "actor", "history")


def export_model(src: str, dst: str) -> dict:
    """Write the policy part of a model or checkpoint (file or run folder) ``src`` to ``dst``.

    The exported file loads everywhere a model does (:func:`load_model`, ``--policies``) but
    cannot resume training.  The training trace's absolute path is reduced to its file name (it
    names a place on the training machine).  Written through a temporary file, so an interrupted
    export leaves nothing half-written.  Returns ``{"path", "bytes", "agent", "epoch"}``."""
    st = read_model_file(src)
    out = {k: st[k] for k in EXPORTED_KEYS if k in st}
    env = dict(out["env"])
    if env.get("trace_path"):
        env["trace_path"] = os.path.basename(env["trace_path"])
    out["env"] = env
    out["exported_from"] = os.path.basename(os.path.normpath(os.fspath(src)))
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    atomic_write(dst, lambda tmp: torch.save(out, tmp))
    return {"path": dst, "bytes": os.path.getsize(dst), "agent": out["agent"], "epoch": int(out.get("epoch", 0))}


@dataclass
class LoadedModel:
    path: str
    agent: str
    actor: torch.nn.Module
    critic: torch.nn.Module
    env: dict
    norms: dict
    arch: dict
    epoch: int
    history: list


def load_model(path: str) -> LoadedModel:
    """A trained model (actor and critic in eval mode) from a model or checkpoint file or folder."""
    st = read_model_file(path)
    arch = st["arch"]
    try:
        actor, critic = build_networks(st["agent"], int(arch["n_features"]), int(arch["window"]), arch["actor"],
                                       arch["critic"], tuple(arch["hidden"]))
        actor.load_state_dict(st["actor"])
        if "critic" in st:
            critic.load_state_dict(st["critic"])
    except (RuntimeError, KeyError, ValueError, TypeError) as exc:
        raise ModelFileError(f"{path}: weights do not match the {st['agent']} networks described in the file: "
                             f"{exc}") from exc
    for name, net in (("actor", actor), ("critic", critic)):
        for pname, tensor in net.state_dict().items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                raise ModelFileError(f"{path}: {name} weight {pname} is not finite (NaN or infinity): a diverged "
                                     "or damaged model")
    actor.eval()
    critic.eval()
    return LoadedModel(os.fspath(path), st["agent"], actor, critic, st["env"], st["norms"], arch,
                       int(st.get("epoch", 0)), list(st.get("history", [])))
