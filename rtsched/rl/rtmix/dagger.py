"""DAgger for the ``rtmix`` agent: an expert that answers on the agent's own states (issue 23 §3).

``run_dagger(out, teacher="replan", rounds=R, episodes=N)``: round r rolls out ``N`` Table-3
instances (``rtsched.generators.smallmix``, 5 BJs + 2 RTJs on 16 blocks; the generator seeds
``DAGGER_SEEDS.start + r·N + i``, half with the default walltimes runtime·U(1, 2) and half — odd i —
with walltime = runtime) with the current agent, mixed with the expert: at each decision state
the expert's action is taken with probability β_r = ``beta0`` · ``decay``^r (round 0: β = 1, the
expert's own trajectories), else the agent's greedy one.  At every state the expert is asked what
it would do there (``rtsched.rl.rtmix.teacher.policy_teacher_episode`` with ``every_pass``: the
expert — any ``make_policy`` name, ``replan`` by default, which reaches this layer through the
policy-loader entry point, never by importing ``milp`` — decides each scheduling pass on the
pass's view; its decisions become actions of the environment's own action space, masked-legal by
construction, and a state where none of them is expressible is labelled with waiting).  The
(state, expert action) pairs of all rounds so far are aggregated and the actor is fitted to them
(``behaviour_clone``: masked cross-entropy to the set of the expert's actions in that pass).

Checkpoints: ``OUT/dagger-data-R.npz`` (round R's labelled states), ``OUT/checkpoint.pt`` (the PPO
trainer's format) and a copy of it, ``OUT/round-R.pt`` (to select a round on validation seeds),
after every round; the history's first row, ``{"phase": "bc", "recipe":
"dagger", ...}``, records every round and the generator seeds trained on (``train_seeds``).  The
same call resumes (finished rounds are read back, not redone); afterwards ``train_rtmix(None, out,
epochs=E)`` fine-tunes the result with PPO from the same folder.
"""
from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np
import torch

from rtsched.errors import OptionError
from rtsched.files import FileLock, LockedError
from rtsched.generators.smallmix import random_jobs
from rtsched.rl.cloning import LearnerActor, load_labelled, round_data_path, save_labelled
from rtsched.rl.modelfiles import CHECKPOINT, LOCK, read_model_file
from rtsched.rl.rtmix.env import TRAIN_SEEDS, RtMixEnv
from rtsched.rl.rtmix.train import ENV_OPTIONS, FINE_TUNE, behaviour_clone
from rtsched.rl.trainer import PPOConfig, PPOTrainer, split_options

# Generator seeds of DAgger's episodes: the start of the PPO training range (rtsched.rl.rtmix.env),
# never an evaluation seed (benchmarks: 3,000,000+ and 5,000,000+; bench/bench_rtmix_dagger.py).
DAGGER_SEEDS = range(TRAIN_SEEDS.start, TRAIN_SEEDS.start + 100_000)
# The recipe's environment: the submit order (every visible BJ may start, as replan's starts do)
# and two BJ-preemption slots (replan splits running BJs for waiting ones).
DAGGER_ENV = {"order": "submit", "bj_candidates": 2}


def episode_generator(index: int, env: RtMixEnv) -> dict:
    """Episode ``index``'s generator settings (``random_jobs``'s keywords): the environment's, with the default
    walltimes for even ``index`` and walltime = runtime for odd."""
    extra = {} if index % 2 == 0 else {"walltime_factor": (1.0, 1.0)}
    return {**env.generator, **extra}


def episode_jobs(seed: int, index: int, env: RtMixEnv) -> list:
    """Episode ``index``'s jobs (``episode_generator``'s settings)."""
    return random_jobs(seed, env.n_bj, env.n_rt, env.blocks, **episode_generator(index, env))


def init_actor(actor: torch.nn.Module, path: str) -> None:
    """Initialise a kernel actor from model ``path`` (an rtmix model): the same weights, and zero
    weights for input features the model did not have (``BJ_FEATURES``), so that the new actor starts
    as the old one on its old slots."""
    st = read_model_file(path)
    if st.get("agent") != "rtmix" or st["arch"].get("actor") != "kernel":
        raise OptionError(f"--init-from: {path} is not an rtmix model with a kernel actor")
    mine = actor.state_dict()
    new = {}
    for k, w in st["actor"].items():
        if k not in mine:
            raise OptionError(f"--init-from: {path}: its actor has {k}, this one not")
        if w.shape == mine[k].shape:
            new[k] = w
        elif w.dim() == 2 and w.shape[0] == mine[k].shape[0] and w.shape[1] < mine[k].shape[1]:
            pad = torch.zeros(mine[k].shape, dtype=w.dtype)
            pad[:, :w.shape[1]] = w
            new[k] = pad
        else:
            raise OptionError(f"--init-from: {path}: {k} has shape {tuple(w.shape)}, this actor {tuple(mine[k].shape)}")
    actor.load_state_dict(new)


def collect_round(env: RtMixEnv, teacher: str, actor: torch.nn.Module | None, *, seeds: range, beta: float,
                  rng: np.random.Generator, progress: Callable[[int, int], None] | None = None) -> tuple[dict, dict]:
    """One round's labelled states (module docstring) and its statistics."""
    from heuristics.registry import make_policy
    from rtsched.rl.rtmix.teacher import policy_teacher_episode, stack

    learner = None if actor is None or beta >= 1.0 else LearnerActor(actor)
    episodes = []
    for i, s in enumerate(seeds):
        ep = policy_teacher_episode(env, episode_jobs(s, i, env), make_policy(teacher), learner,
                                    beta=beta, rng=rng, every_pass=True)
        episodes.append(ep)
        if progress is not None:
            progress(i + 1, len(seeds))
    data = stack(episodes)
    n = len(episodes)
    info = {"episodes": n, "decisions": int(len(data["act"])), "beta": beta, "seeds": [seeds.start, seeds.stop],
            "mapped": sum(e.mapped for e in episodes), "skipped": sum(e.skipped for e in episodes),
            "bj_sd_mean": sum(e.bj_sd_mean for e in episodes) / max(n, 1),
            "rtj_sd_mean": sum(e.rtj_sd_mean for e in episodes) / max(n, 1)}
    return data, info


def run_dagger(out: str, *, teacher: str = "replan", rounds: int = 6, episodes: int = 64, beta0: float = 1.0,
               decay: float = 0.5, bc_epochs: int = 20, lr: float = 1e-3, batch: int = 256, seed: int = 0,
               init_from: str | None = None, torch_threads: int | None = 1,
               progress: Callable[[str], None] | None = None, **options) -> dict:
    """DAgger rounds (module docstring); ``options``: environment options (``ENV_OPTIONS``, defaults
    ``DAGGER_ENV``) and ``PPOConfig`` fields for the later fine-tuning (defaults ``FINE_TUNE``).
    Returns ``{"out", "checkpoint", "history", "rounds"}``."""
    say = progress or (lambda text: None)
    if rounds < 1 or episodes < 1:
        raise OptionError("DAgger needs at least one round of at least one episode")
    if not 0.0 <= beta0 <= 1.0 or not 0.0 <= decay <= 1.0:
        raise OptionError(f"DAgger's beta0 and decay must lie in [0, 1], got {beta0} and {decay}")
    if (rounds + 1) * episodes > len(DAGGER_SEEDS):
        raise OptionError(f"DAgger: {rounds} rounds of {episodes} episodes exceed its {len(DAGGER_SEEDS)} seeds")
    env_opts, given = split_options({**DAGGER_ENV, **options}, ENV_OPTIONS, "run_dagger()")
    ppo_opts = {**FINE_TUNE, **given, "seed": seed}
    ppo_opts["hidden"] = tuple(ppo_opts["hidden"])
    if torch_threads is not None:
        ppo_opts["torch_threads"] = torch_threads
    env = RtMixEnv(**env_opts)
    env_config = {"agent": "rtmix", **env.config()}
    spare = [RtMixEnv(**env_opts)]
    trainer = PPOTrainer("rtmix", lambda: spare.pop() if spare else RtMixEnv(**env_opts), PPOConfig(**ppo_opts),
                         env_config, {}, out=out)
    os.makedirs(out, exist_ok=True)
    ckpt = os.path.join(out, CHECKPOINT)
    prev_threads = torch.get_num_threads()
    if torch_threads:
        torch.set_num_threads(int(torch_threads))
    try:
        with FileLock(os.path.join(out, LOCK), f"training folder {out}", remove_if_unused=True):
            record: dict = {}
            if os.path.exists(ckpt):
                trainer.restore(ckpt)
                record = dict(trainer.history[0]) if trainer.history else {}
                if record.get("recipe") != "dagger":
                    raise OptionError(f"--out: {ckpt} is not a DAgger run (its first phase is "
                                      f"{record.get('recipe', 'cloning')}); choose another folder")
                init_from = record.get("init_from")  # a resumed run keeps the model it started from
            elif init_from is not None:
                init_actor(trainer.actor, init_from)
            done = list(record.get("rounds", []))
            if len(trainer.history) > 1 and len(done) < rounds:
                raise OptionError(f"--out: {ckpt} was fine-tuned with PPO after {len(done)} DAgger rounds; "
                                  "more rounds would discard that")
            datas = []
            # finished rounds' data are read only when a new round needs them (a folder copied for PPO
            # may hold a checkpoint without them)
            for r in range(rounds if len(done) < rounds else 0):
                dpath = round_data_path(out, r)
                beta = beta0 * decay ** r
                if os.path.exists(dpath):
                    d, info = load_labelled(dpath)
                else:
                    seeds = range(DAGGER_SEEDS.start + r * episodes, DAGGER_SEEDS.start + (r + 1) * episodes)
                    rng = np.random.default_rng([seed, r])
                    t0 = time.perf_counter()
                    trainer.actor.eval()
                    d, info = collect_round(env, teacher, trainer.actor, seeds=seeds, beta=beta, rng=rng,
                                            progress=lambda i, n, r=r: say(f"round {r}: episode {i}/{n}")
                                            if i % 16 == 0 or i == n else None)
                    info["seconds"] = round(time.perf_counter() - t0, 1)
                    save_labelled(dpath, d, info)
                datas.append(d)
                if r < len(done):
                    continue
                data = {k: np.concatenate([x[k] for x in datas]) for k in ("obs", "mask", "act", "good")}
                t0 = time.perf_counter()
                trainer.actor.train()
                torch.manual_seed(seed + r)
                rows = behaviour_clone(trainer.actor, data, bc_epochs, lr=lr, batch=batch, seed=seed + r)
                trainer.actor.eval()
                done.append({"round": r, **info, "samples": int(len(data["act"])), "loss": rows[-1]["loss"],
                             "accuracy": rows[-1]["accuracy"], "fit_seconds": round(time.perf_counter() - t0, 1)})
                used = [done[0]["seeds"][0], done[-1]["seeds"][1]]
                record = {"phase": "bc", "recipe": "dagger", "teacher": teacher, "bc_epochs": bc_epochs,
                          "beta0": beta0, "decay": decay, "lr": lr, "init_from": init_from and os.path.basename(init_from),
                          "accuracy": rows[-1]["accuracy"], "loss": rows[-1]["loss"], "samples": int(len(data["act"])),
                          "train_seeds": {"dagger": used, "dagger_walltimes": "even offsets runtime*U(1,2), "
                                          "odd offsets walltime = runtime",
                                          "ppo": list(env.seed_range)},
                          "rounds": done}
                trainer.history = [record]
                trainer.save(ckpt)
                trainer.save(os.path.join(out, f"round-{r}.pt"))  # each round's model, for selection
                say(f"round {r}: beta {beta:.3f}, {info['decisions']} states ({info['mapped']} mapped), expert-mixed "
                    f"episodes BJ {info['bj_sd_mean']:.3f} RTJ {info['rtj_sd_mean']:.3f}; fit on "
                    f"{len(data['act'])}: accuracy {rows[-1]['accuracy']:.3f}")
    except LockedError as exc:
        raise OptionError(f"--out: {exc}; wait for it or choose another folder") from None
    finally:
        torch.set_num_threads(prev_threads)
    return {"out": out, "checkpoint": ckpt, "history": trainer.history, "rounds": record.get("rounds", [])}


__all__ = ["DAGGER_ENV", "DAGGER_SEEDS", "LearnerActor", "collect_round", "episode_generator", "episode_jobs",
           "init_actor", "run_dagger"]
