"""DAgger for the split window (issue 24 §4): the clone of the window teacher trained on the states
its own mistakes lead to, which the teacher's episodes never show it (behaviour cloning's
compounding error).

The aggregate starts with the teacher's own episodes (reset seeds 0 .. ``base`` − 1, the imitation
pre-stage's: ``clone_teacher``).  Round r = 1, 2, ... rolls out ``episodes`` training episodes
(reset seeds ``SEED0`` + (r − 1)·``episodes`` + i: starts drawn from the training part) with the
actor as it is, greedy, mixed with the teacher by β_r = ``beta0`` · ``decay``^(r − 1) (the teacher's
action with probability β_r at each state); every visited state is labelled with the teacher's set of good
actions (``SplitWindowEnv.teacher_good``); the round's states join the aggregate and the actor is
fitted to all of it (``behaviour_clone``: ``epochs`` passes at ``lr``, continuing from its weights).

``permute`` = K > 0 adds, to each round's fit, K copies of the aggregate in which the occupied window
slots of every state are shuffled (``permuted_copy``: the slot features, the mask and the teacher's
labels move together; Fwd, the cores and the empty slots stay): the teacher's rule (the shortest
fitting job) does not depend on a job's slot, and the flat network learns that from data alone slowly
(issue 24 §4: 15 % of the masked learner's fresh choices were a fitting job 6–15× longer than the
teacher's).  Data augmentation of the fit only: the agent, its window and its observation are the paper's.

Resumable: each round's states go to ``OUT/dagger-data-R.npz`` (``save_labelled``) and the round's
record to ``OUT/dagger.json``; the actor to ``OUT/checkpoint.pt`` (still the run's epoch 0).  A
call finds the rounds done and goes on from there.
"""
from __future__ import annotations

import json
import os
import time
from typing import Callable

import numpy as np

from rtsched.errors import OptionError
from rtsched.files import atomic_write_text
from rtsched.rl.cloning import (LABELLED, LearnerActor, behaviour_clone, load_labelled, round_data_path,
                                save_labelled, teacher_decisions)

DAGGER = "dagger.json"  # the rounds' records, in the run folder
SEED0 = 1_000  # reset seeds of the learner's episodes start here (the teacher's: 0 .. base − 1)
DEFAULTS = {"episodes": 2, "epochs": 3, "beta0": 0.0, "decay": 0.5}


def read_record(out: str) -> dict:
    """``OUT/dagger.json`` (an empty record when there is none)."""
    path = os.path.join(out, DAGGER)
    if not os.path.exists(path):
        return {"rounds": []}
    with open(path) as fh:
        return json.load(fh)


def run_rounds(trainer, env, out: str, rounds: int, *, episodes: int = DEFAULTS["episodes"],
               epochs: int = DEFAULTS["epochs"], lr: float = 1e-3, beta0: float = DEFAULTS["beta0"],
               decay: float = DEFAULTS["decay"], base: int = 5, after_round: Callable[[int, dict], None] | None = None,
               should_stop: Callable[[], bool] | None = None, permute: int = 0) -> list[dict]:
    """Rounds 1 .. ``rounds`` of DAgger on ``trainer``'s actor in ``env`` (module docstring), those
    in ``OUT/dagger.json`` already skipped.  After each round the actor is saved as the checkpoint
    and ``after_round(r, row)`` runs (scoring on validation, the step's accounting), which may add to
    the round's row before it is written; ``should_stop()`` true after a round ends the call (a
    clean stop: ``--until``).  Returns every round's row."""
    import torch

    from rtsched.rl.modelfiles import CHECKPOINT

    if rounds < 0 or episodes < 1 or epochs < 1:
        raise OptionError("--dagger-rounds must be at least 0, --dagger-episodes and --bc-epochs at least 1")
    if not (0.0 <= beta0 <= 1.0 and 0.0 <= decay <= 1.0):
        raise OptionError(f"--beta0, --beta-decay: must lie in [0, 1], got {beta0} and {decay}")
    record = read_record(out)
    done: list[dict] = list(record["rounds"])
    if permute < 0:
        raise OptionError(f"--bc-permute: must be at least 0, got {permute}")
    settings = {"episodes": episodes, "epochs": epochs, "lr": lr, "beta0": beta0, "decay": decay, "base": base}
    if permute:  # only when used: earlier runs' records (without the key) still resume
        settings["permute"] = permute
    if done and record.get("settings") != settings:
        raise OptionError(f"--dagger-episodes/--bc-epochs/--clone-lr/--beta0/--beta-decay: {os.path.join(out, DAGGER)} was run with {record.get('settings')}, "
                          f"not {settings}; give the same options or choose another folder")
    if len(done) >= rounds:
        return done
    t0 = time.perf_counter()
    base_data = teacher_decisions(env, ({"seed": s} for s in range(base)))
    datas = [{k: base_data[k] for k in LABELLED}]
    for r in range(1, len(done) + 1):
        datas.append(load_labelled(round_data_path(out, r))[0])
    base_s = time.perf_counter() - t0
    for r in range(len(done) + 1, rounds + 1):
        cpu0, t0 = time.process_time(), time.perf_counter()
        beta_r = beta0 * decay ** (r - 1)
        seeds = range(SEED0 + (r - 1) * episodes, SEED0 + r * episodes)
        trainer.actor.eval()
        d = teacher_decisions(env, ({"seed": s} for s in seeds), learner=LearnerActor(trainer.actor), beta=beta_r,
                              rng=np.random.default_rng([trainer.config.seed, r]))
        info = {"round": r, "beta": beta_r, "seeds": [seeds.start, seeds.stop], "decisions": int(len(d["act"])),
                "learner_good": round(float(d["learner_good"]), 4),
                "starts": [i.get("start") for i in d["infos"]],
                "placements": [i.get("placements") for i in d["infos"]]}
        save_labelled(round_data_path(out, r), d, info)
        datas.append({k: d[k] for k in LABELLED})
        collect_s = time.perf_counter() - t0 + (base_s if r == len(done) + 1 else 0.0)
        data = {k: np.concatenate([x[k] for x in datas]) for k in LABELLED}
        if permute:
            shuffle = np.random.default_rng([trainer.config.seed, r, 7])
            copies = [permuted_copy(data, env.obsb.n, env.window, shuffle) for _ in range(permute)]
            data = {k: np.concatenate([data[k]] + [c[k] for c in copies]) for k in LABELLED}
        t1 = time.perf_counter()
        trainer.actor.train()
        torch.manual_seed(trainer.config.seed + r)
        rows = behaviour_clone(trainer.actor, data, epochs, lr=lr, seed=trainer.config.seed + r)
        trainer.actor.eval()
        row = {**info, "samples": int(len(data["act"])), "loss": rows[-1]["loss"], "accuracy": rows[-1]["accuracy"],
               "collect_s": round(collect_s, 1), "fit_s": round(time.perf_counter() - t1, 1)}
        done.append(row)
        # the round's actor and record together (a step killed while scoring keeps the round, unscored)
        trainer.save(os.path.join(out, CHECKPOINT))
        _write(out, settings, done)
        if after_round is not None:
            after_round(r, row)
        row["cpu_s"] = round(time.process_time() - cpu0, 1)  # the round's collection, fit and scoring
        _write(out, settings, done)
        if should_stop is not None and r < rounds and should_stop():
            break
    return done


def permuted_copy(data: dict, n_cores: int, window: int, rng: np.random.Generator) -> dict:
    """A copy of labelled split-window states (``obs``, ``mask``, ``act``, ``good``) with each state's
    occupied slots in a random order (``run_rounds``'s ``permute``).  Observation layout: ``n_cores``
    core values, then ``window`` slots of 3 features, a slot occupied when its c / N is above 0 (every
    job asks for at least one core); the empty slots stay after the occupied ones, as in a real window;
    mask and ``good`` entries (``window`` slots, then Fwd) and the action follow their jobs."""
    obs = np.asarray(data["obs"], dtype=np.float32)
    b = len(obs)
    slots = obs[:, n_cores:].reshape(b, window, 3)
    keys = rng.random((b, window))
    empty = slots[:, :, 0] <= 0
    keys[empty] = 2.0 + np.broadcast_to(np.arange(window), (b, window))[empty]  # last, in their order
    perm = np.argsort(keys, axis=1)  # new slot j shows the job of old slot perm[:, j]
    new_obs = np.concatenate([obs[:, :n_cores], np.take_along_axis(slots, perm[:, :, None], 1).reshape(b, -1)], 1)
    out = {"obs": new_obs}
    for key in ("mask", "good"):
        old = np.asarray(data[key], dtype=bool)
        out[key] = np.concatenate([np.take_along_axis(old[:, :window], perm, 1), old[:, window:]], 1)
    inverse = np.argsort(perm, axis=1)  # old slot i is now at inverse[:, i]
    act = np.asarray(data["act"], dtype=np.int64)
    moved = np.take_along_axis(inverse, np.minimum(act, window - 1)[:, None], 1)[:, 0]
    out["act"] = np.where(act >= window, act, moved)
    return out


def _write(out: str, settings: dict, rounds: list[dict]) -> None:
    atomic_write_text(os.path.join(out, DAGGER), json.dumps({"settings": settings, "rounds": rounds}, indent=1) + "\n")


__all__ = ["DAGGER", "DEFAULTS", "SEED0", "permuted_copy", "read_record", "run_rounds"]
