"""Training the ``rtmix`` agent: behaviour cloning on expert actions, then PPO fine-tuning.

``train_rtmix(data, out=..., bc_epochs=..., epochs=...)``:

1. **Behaviour cloning.**  The actor (the kernel network, one slot per action) is fitted to the
   expert's actions by masked cross-entropy (Adam, minibatches of ``bc_batch``), ``bc_epochs`` passes
   over the data.  The data are ``{"obs", "mask", "act"}`` arrays, e.g. from
   ``rtsched.experiments.rtmix.expert_dataset`` (optimal plans replayed through the environment).
2. **PPO fine-tuning** with the project's ``PPOTrainer`` (agent ``"rtmix"``) on episodes of
   ``RtMixEnv`` drawn from the training seeds, ``epochs`` epochs; ``OUT/checkpoint.pt`` is rewritten
   after cloning and after every epoch, and the same call with more epochs resumes (cloning is not
   repeated: its record is the first row of the history, ``{"phase": "bc", ...}``).
"""
from __future__ import annotations

import contextlib
import os
import time
from typing import Callable

import numpy as np
import torch

from rtsched.errors import OptionError
from rtsched.files import FileLock, LockedError, atomic_write_stream
from rtsched.rl.rtmix.core import BATCH_SETTINGS, OPTIONAL_SETTINGS
from rtsched.rl.rtmix.env import TRAIN_SEEDS, RtMixEnv
from rtsched.rl.cloning import behaviour_clone
from rtsched.rl.modelfiles import CHECKPOINT, LOCK, load_model, read_model_file
from rtsched.rl.nets import build_networks, context_from_kernel
from rtsched.rl.trainer import PPOConfig, PPOTrainer, split_options

ENV_OPTIONS = ("machine", "checkpoint", "n_bj", "n_rt", "window", "candidates", "theta", "penalty", "seed_range",
               "baseline", "order") + OPTIONAL_SETTINGS
# PPO defaults of the fine-tuning (a small step from the cloned policy: lower rate, fewer iterations)
FINE_TUNE = {"pi_lr": 1e-4, "v_lr": 1e-3, "train_pi_iters": 20, "train_v_iters": 40, "trajs_per_epoch": 64,
             "n_envs": 8, "hidden": (64, 32, 16)}


def train_rtmix(data: dict | None, out: str | None, *, bc_epochs: int = 30, epochs: int = 10, seed: int = 0,
                progress: Callable | None = None, bc_progress: Callable | None = None,
                on_trajectory: Callable | None = None, resume: bool = True, torch_threads: int | None = None,
                **options) -> dict:
    """Clone then fine-tune (module docstring).  ``options``: environment options (``ENV_OPTIONS``)
    and ``PPOConfig`` fields (defaults ``FINE_TUNE``).  Returns ``{"out", "checkpoint", "history",
    "trainer"}``."""
    env_opts, given = split_options(options, ENV_OPTIONS, "train_rtmix()")
    ppo_opts = {**FINE_TUNE, **given}
    ppo_opts["seed"] = seed
    ppo_opts["hidden"] = tuple(ppo_opts["hidden"])
    if torch_threads is not None:
        ppo_opts["torch_threads"] = torch_threads
    cfg = PPOConfig(**ppo_opts)
    probe = RtMixEnv(**env_opts)
    env_config = {"agent": "rtmix", **probe.config()}
    envs = [probe]

    def factory():
        return envs.pop() if envs else RtMixEnv(**env_opts)

    trainer = PPOTrainer("rtmix", factory, cfg, env_config, {}, out=out, progress=progress)
    trainer.on_trajectory = on_trajectory
    ckpt = os.path.join(out, CHECKPOINT) if out else None
    lock = (FileLock(os.path.join(out, LOCK), f"training folder {out}", remove_if_unused=True) if out
            else contextlib.nullcontext())
    try:
        with lock:
            if ckpt and resume and os.path.exists(ckpt):
                trainer.restore(ckpt)
            if not (trainer.history and trainer.history[0].get("phase") == "bc"):
                if data is None:
                    raise OptionError("behaviour cloning needs expert data (none given and no cloned checkpoint)")
                t0 = time.perf_counter()
                torch.manual_seed(seed)
                rows = behaviour_clone(trainer.actor, data, bc_epochs, seed=seed, progress=bc_progress)
                last = dict(rows[-1])
                last["bc_seconds"] = round(time.perf_counter() - t0, 3)
                last["bc_epochs"] = bc_epochs
                trainer.history = [last]
                if ckpt:
                    trainer.save(ckpt)
            n_bc = 1
            trainer.epoch = len(trainer.history) - n_bc
            trainer.train(epochs)
    except LockedError as exc:
        raise OptionError(f"--out: {exc}; wait for it or choose another folder") from None
    return {"out": out, "checkpoint": ckpt, "history": trainer.history, "trainer": trainer}




# ------------------------------------------------------------------------------------- curriculum
# Generator seeds of the curriculum's Mira-like weeks (rtsched.generators.generate_miralike; the RTJ
# marking uses the same seed).  Validation weeks come from CURRICULUM_VALIDATION_SEEDS; the
# benchmark's test trace is the real wk1 log, never used in training.
CURRICULUM_WEEK_SEEDS = range(7_000, 8_000)
CURRICULUM_VALIDATION_SEEDS = range(9_000, 9_100)


def miralike_jobs(seed: int, days: float = 7.0, rt_percent: float = 10.0, max_nodes: int | None = None) -> list:
    """The jobs of generated Mira-like week ``seed`` with ``rt_percent`` % RTJs marked at random
    (``max_nodes``: without the jobs wider than that, for a machine smaller than Mira)."""
    from rtsched.generators import generate_miralike
    from rtsched.rtmarking import RtMarking, mark_realtime

    wl = generate_miralike(days=days, seed=seed)
    jobs = mark_realtime(wl, RtMarking(percent=rt_percent, mode="random", seed=seed)).jobs
    return [j for j in jobs if max_nodes is None or j.nodes <= max_nodes]


def model_slots(path) -> dict:
    """The ``core.OPTIONAL_SETTINGS`` model ``path`` was trained with (those its file records): the environment
    options that shape its observation and actions beside the window order, which a curriculum starting from
    it must keep (a DAgger model has BJ slots)."""
    env = read_model_file(path)["env"]
    return {k: env[k] for k in OPTIONAL_SETTINGS if k in env}


def curriculum_data(init, *, small_episodes: int, weeks: int, week_machines=("mira",), days: float = 7.0,
                    rt_percent: float = 10.0, teacher: str = "wcjs", order: str = "backfill",
                    small_seed: int = TRAIN_SEEDS.start, week_seed: int = CURRICULUM_WEEK_SEEDS.start,
                    checkpoint: str = "jit", learner=None, spec_settings: dict | None = None,
                    progress: Callable[[str, int, int, dict], None] | None = None) -> dict:
    """The curriculum's imitation data: ``small_episodes`` Table-3 instances (16 blocks) labelled by
    the model ``init`` itself (self-distillation: keeps what it does there) and ``weeks`` generated
    Mira-like weeks per machine of ``week_machines`` labelled by core policy ``teacher``
    (``rtsched.rl.rtmix.teacher``); with ``learner`` (a model) the weeks follow its actions and
    the teacher only labels them (DAgger), and ``small_episodes`` may be 0.  ``spec_settings``:
    settings of ``BATCH_SETTINGS`` (e.g. ``{"batch_priority": "sjf"}``) for every environment's backfill
    window and, as its own options, for the teacher, and of ``PASS_SETTINGS`` (e.g. ``{"rt_wake": True}``)
    for every environment only, instead of those ``init`` was trained with.  Returns the
    stacked arrays and per-part statistics."""
    from heuristics.registry import make_policy
    from rtsched.rl.rtmix.policy import RtMixPolicy
    from rtsched.rl.rtmix.teacher import model_teacher_episode, policy_teacher_episode, stack

    parts = {}
    episodes = []
    pol = RtMixPolicy(init)
    follow = None if learner is None else RtMixPolicy(learner)
    slots = model_slots(init)
    slots.update(spec_settings or {})
    teacher_options = {BATCH_SETTINGS[k]: v for k, v in (spec_settings or {}).items() if k in BATCH_SETTINGS}
    make_policy(teacher, **teacher_options)  # a bad name or option fails before any episode
    env = RtMixEnv("mira:16", checkpoint, order=order, validate=True, **slots)
    small = []
    for i in range(small_episodes):
        s = small_seed + i
        small.append(model_teacher_episode(env, env.make_jobs(s), pol))
        if progress is not None and ((i + 1) % 200 == 0 or i + 1 == small_episodes):
            progress("small", i + 1, small_episodes, {})
    parts["small"] = {"episodes": len(small), "decisions": sum(len(e.actions) for e in small)}
    episodes += small
    for machine in week_machines:
        benv = RtMixEnv(machine, checkpoint, order=order, validate=True, **slots)
        big = []
        for k in range(weeks):
            s = week_seed + k
            ep = policy_teacher_episode(benv, miralike_jobs(s, days, rt_percent, benv.machine.total_nodes),
                                        make_policy(teacher, **teacher_options), follow)
            big.append(ep)
            if progress is not None:
                progress(f"week {machine}", k + 1, weeks, {"seed": s, "decisions": len(ep.actions),
                                                         "bj_sd": ep.bj_sd_mean, "rtj_sd": ep.rtj_sd_mean})
        parts[f"weeks {machine}"] = {"episodes": len(big), "decisions": sum(len(e.actions) for e in big),
                                     "mapped": sum(e.mapped for e in big), "skipped": sum(e.skipped for e in big)}
        episodes += big
    data = stack(episodes)
    data["parts"] = parts
    return data


def train_curriculum(init, data: dict, out: str, *, epochs: int = 20, lr: float = 1e-3, batch: int = 256,
                     seed: int = 0, order: str = "backfill", progress: Callable | None = None,
                     torch_threads: int | None = 1, note: dict | None = None, distill=None,
                     spec_settings: dict | None = None, arch: dict | None = None, grow: bool = False) -> dict:
    """Fine-tune the actor of model ``init`` by behaviour cloning on curriculum ``data`` and write
    the result as a model file ``out`` (the same format as ``rtsched rl export``; its environment
    settings record the window ``order`` and the ``spec_settings`` given).  ``distill``: a boolean
    per sample; those samples are fitted to ``init``'s own action probabilities (not only its greedy action), which keeps its
    behaviour where it was trained.  ``arch``: fit a new actor of that architecture (the model file's ``arch``:
    ``actor``, ``hidden``, ``context``), initialised by ``seed``, instead of ``init``'s (which still gives the
    distilled probabilities); ``grow``: a context ``arch`` starts as ``init``'s kernel exactly
    (``nets.context_from_kernel``) instead.  Returns ``{"out", "history"}``."""
    st = read_model_file(init)
    model = load_model(init)
    actor = model.actor
    if arch is not None:
        torch.manual_seed(seed)
        if grow:  # starts as init's kernel exactly (nets.context_from_kernel)
            actor = context_from_kernel(actor, tuple(arch["hidden"]), arch["context"])
        else:
            actor = build_networks("rtmix", int(arch["n_features"]), int(arch["window"]), arch["actor"],
                                   arch["critic"], tuple(arch["hidden"]), arch.get("context"))[0]
    prev = torch.get_num_threads()
    if torch_threads:
        torch.set_num_threads(int(torch_threads))
    if distill is not None and np.any(distill):
        sel = np.flatnonzero(distill)
        soft = np.zeros(data["mask"].shape, dtype=np.float32)
        with torch.no_grad():
            for i in range(0, len(sel), 8192):
                rows = sel[i:i + 8192]
                logits = model.actor(torch.as_tensor(data["obs"][rows]), torch.as_tensor(data["mask"][rows]))
                soft[rows] = torch.softmax(logits, -1).numpy()
        data = dict(data, soft=soft)
    actor.train()
    try:
        torch.manual_seed(seed)
        t0 = time.perf_counter()
        rows = behaviour_clone(actor, data, epochs, lr=lr, batch=batch, seed=seed, progress=progress)
    finally:
        torch.set_num_threads(prev)
    actor.eval()
    row = dict(rows[-1])
    row.update({"phase": "curriculum", "seconds": round(time.perf_counter() - t0, 3), "epochs": epochs, "lr": lr,
                "init": os.path.basename(os.fspath(init)), **(note or {})})
    out_st = dict(st)
    out_st["actor"] = actor.state_dict()
    if arch is not None:
        out_st["arch"] = dict(arch)
        out_st["ppo"] = dict(st["ppo"], actor=arch["actor"], hidden=list(arch["hidden"]))
    out_st["env"] = dict(st["env"], order=order, **(spec_settings or {}))
    out_st["history"] = list(st.get("history", [])) + [row]
    out_st.pop("critic", None)
    for key in ("pi_opt", "v_opt", "rng"):
        out_st.pop(key, None)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    atomic_write_stream(out, lambda fh: torch.save(out_st, fh))
    return {"out": out, "history": rows}



def _save_data(path: str, data: dict) -> None:
    import json as _json

    def write(fh) -> None:
        np.savez_compressed(fh, obs=data["obs"], mask=data["mask"], act=data["act"], good=data["good"],
                            parts=np.asarray(_json.dumps(data["parts"])))

    atomic_write_stream(path, write)


def load_curriculum_data(path: str) -> dict:
    """A curriculum round's data file (``OUT/data-R.npz``): the labelled states and ``parts`` (per-part counts)."""
    import json as _json

    with np.load(path) as z:
        return {"obs": z["obs"], "mask": z["mask"], "act": z["act"], "good": z["good"],
                "parts": _json.loads(str(z["parts"]))}


def run_curriculum(out: str, init, *, rounds: int = 3, weeks: int = 8, machines=("mira",), small_episodes: int = 3000,
                   small_repeat: int = 2, epochs: int = 20, lr: float = 1e-3, seed: int = 0, teacher: str = "wcjs",
                   checkpoint: str = "jit", days: float = 7.0, rt_percent: float = 10.0, order: str = "backfill",
                   spec_settings: dict | None = None, torch_threads: int | None = 1,
                   progress: Callable[[str], None] | None = None) -> dict:
    """The curriculum from Table-3 instances to Mira-like weeks (docs/rl.md, "Curriculum").

    Round 0: ``small_episodes`` 16-block instances labelled by ``init`` (self-distillation) and
    ``weeks`` generated weeks per machine of ``machines`` following ``teacher``; rounds 1 ..
    ``rounds``: ``weeks`` new weeks per machine following the previous round's model, labelled by the
    teacher (DAgger).  After each round the actor of ``init`` is cloned on all data so far (the small
    part repeated ``small_repeat`` times) and written to ``OUT/round-R.pt``; the data of each round
    are kept in ``OUT/data-R.npz``, so a run stopped at any point resumes with the same command
    (finished rounds are read back, not redone).  ``order``: the window order of every environment
    of the data (the Table-3 instances and the weeks) and of the written models ("backfill", the
    default; "auto" keeps the submit order wherever the window shows every waiting BJ, so the
    self-distilled Table-3 instances stay in the order a submit-order model was trained in).
    ``spec_settings``: ``RtMixSpec`` settings of the environments (the batch pass's ``BATCH_SETTINGS``, also
    given to the teacher, and the ``PASS_SETTINGS``; ``curriculum_data``), recorded in every written model.
    Returns ``{"model", "rounds": [...]}``."""
    say = progress or (lambda text: None)
    os.makedirs(out, exist_ok=True)
    rows = []
    try:
        with FileLock(os.path.join(out, LOCK), f"curriculum folder {out}", remove_if_unused=True):
            datas: list[dict] = []
            learner = None
            for r in range(rounds + 1):
                dpath = os.path.join(out, f"data-{r}.npz")
                mpath = os.path.join(out, f"round-{r}.pt")
                if os.path.exists(dpath):
                    d = load_curriculum_data(dpath)
                    say(f"round {r}: data read from {dpath}")
                else:
                    t0 = time.perf_counter()

                    def note(part, i, n, info, r=r):
                        if part == "small" and i < n:
                            return
                        extra = "" if not info else (f" seed {info['seed']}: {info['decisions']} decisions, BJ SD "
                                                     f"{info['bj_sd']:.2f}, RTJ SD {info['rtj_sd']:.2f}")
                        say(f"round {r}: {part} {i}/{n}{extra}")

                    d = curriculum_data(init, small_episodes=small_episodes if r == 0 else 0, weeks=weeks,
                                        week_machines=machines, days=days, rt_percent=rt_percent, teacher=teacher,
                                        week_seed=CURRICULUM_WEEK_SEEDS.start + r * weeks, checkpoint=checkpoint,
                                        learner=learner, order=order, spec_settings=spec_settings,
                                        progress=note)
                    d["parts"]["seconds"] = round(time.perf_counter() - t0, 1)
                    _save_data(dpath, d)
                datas.append(d)
                n_small = datas[0]["parts"]["small"]["decisions"]
                data = {k: np.concatenate([x[k] for x in datas] + [datas[0][k][:n_small]] * (small_repeat - 1))
                        for k in ("obs", "mask", "act", "good")}
                if not os.path.exists(mpath):
                    def bc_note(e, n, row, r=r):
                        if e % 5 == 0 or e == n:
                            say(f"round {r}: cloning {e}/{n}: loss {row['loss']:.4f}, accuracy {row['accuracy']:.3f}")

                    train_curriculum(init, data, mpath, epochs=epochs, lr=lr, seed=seed, order=order,
                                     progress=bc_note, torch_threads=torch_threads, spec_settings=spec_settings,
                                     note={"round": r, "samples": int(len(data["act"])), "teacher": teacher,
                                           "weeks_per_machine": weeks * (r + 1), "small_episodes": small_episodes,
                                           "small_repeat": small_repeat, "order": order,
                                           **(spec_settings or {}),
                                           "machines": [os.path.basename(m) for m in machines]})
                    say(f"round {r}: model {mpath} ({len(data['act'])} samples)")
                rows.append({"round": r, "model": mpath, "parts": d["parts"], "samples": int(len(data["act"]))})
                learner = mpath
    except LockedError as exc:
        raise OptionError(f"--out: {exc}; wait for it or choose another folder") from None
    return {"model": learner, "rounds": rows}


__all__ = ["BATCH_SETTINGS", "behaviour_clone", "curriculum_data", "load_curriculum_data", "miralike_jobs", "model_slots", "run_curriculum", "train_curriculum", "train_rtmix", "ENV_OPTIONS",
           "FINE_TUNE", "CURRICULUM_WEEK_SEEDS", "CURRICULUM_VALIDATION_SEEDS"]
