"""How the split-window agent is trained (seed 004): its PPO settings and, for long runs, an imitation
pre-stage (``clone_episodes``: the actor fitted to the window teacher's decisions before PPO) and
model selection on validation segments (``select_every``: ``rtsched.rl.splitwindow.select``)."""
from __future__ import annotations

import json
import os
import time
from typing import Callable

ENV_OPTIONS = ("head", "tail", "placements", "horizon", "start_range", "sigma", "teacher", "mask_invalid", "time_scale")
ENV_DEFAULTS: dict = {}
# Seed 004's PPO settings where the project's defaults (seeds 003/000) differ: γ 0.99 per decision, one
# update per episode on minibatches of 128, lr 3e-4 for both networks, [1024, 512, 256] MLPs; 10 passes
# per update and GAE λ 0.95 are the digest's proposals (the paper is silent).
PPO_DEFAULTS = {"gamma": 0.99, "lam": 0.95, "hidden": (1024, 512, 256), "train_pi_iters": 10,
                "train_v_iters": 10, "minibatch": 128, "v_lr": 3e-4, "trajs_per_epoch": 1, "n_envs": 1}


# Options of ``rtsched.rl.api.train`` that go to ``prepare`` (not the environment, not PPO).
RUN_OPTIONS = ("select_every", "validation_segments", "validation_jobs", "clone_episodes", "clone_epochs", "clone_lr",
               "clone_from", "dagger_rounds", "dagger_episodes", "bc_epochs", "beta0", "beta_decay", "bc_permute")
CLONE = "clone.json"  # the imitation pre-stage's record, in the run folder
CLONE_DEFAULTS = {"clone_epochs": 20, "clone_lr": 1e-3}
CLONE_BASE = 5  # teacher episodes of the shipped clone (training/splitwindow-m20-10-10-clone): DAgger's base data


def make_env(trace, *, goal: str = "bsld", backfill="none", machine=None, **options):
    """No goal or backfilling: seed 004's reward, the agent back-fills itself."""
    from rtsched.rl.splitwindow.env import SplitWindowEnv

    return SplitWindowEnv(trace, machine=machine, **options)


def settings(goal: str, backfill) -> tuple[str, str]:
    """Seed 004's multi-objective reward; the agent back-fills itself."""
    return "eq2", "none"


def describe(probe, env_config: dict) -> None:
    """Complete ``env_config`` (stored in the checkpoint) with the environment's resolved settings."""
    for k in ("head", "tail", "placements", "horizon"):
        env_config.setdefault(k, getattr(probe, k))
    env_config.setdefault("sigma", probe.obsb.sigma_mode)
    env_config.setdefault("mask_invalid", probe.mask_invalid)
    env_config.setdefault("time_scale", probe.obsb.time_scale)
    env_config["window"] = probe.window


def prepare(trainer, probe, trace, out: str | None, *, select_every: int = 0, validation_segments: int = 4,
            validation_jobs: int = 1000, clone_episodes: int = 0, clone_epochs: int = CLONE_DEFAULTS["clone_epochs"],
            clone_lr: float = CLONE_DEFAULTS["clone_lr"], clone_from: str | None = None, dagger_rounds: int = 0,
            dagger_episodes: int | None = None, bc_epochs: int | None = None, beta0: float | None = None,
            beta_decay: float | None = None, bc_permute: int = 0) -> Callable[..., None]:
    """A long run's extras (``rtsched.rl.api.train`` calls it with the ``RUN_OPTIONS`` given):
    ``select_every`` = k > 0 puts the selection step (``split_window_selection``) before the
    trainer's progress callback; the returned ``before(resuming)`` runs, on a new run, the imitation
    pre-stage of ``clone_episodes`` teacher episodes (``clone_teacher``), or takes the actor of the
    model file ``clone_from`` (an earlier run's clone: ``actor_from``), saves it as the run's epoch 0
    and scores it (``selection.json``'s epoch 0); then, new or resumed, ``dagger_rounds`` rounds of
    DAgger (``rtsched.rl.splitwindow.dagger``; those done are skipped), each scored on validation as
    epoch 0's stage ``dagger-R`` and accounted in ``budget.json``'s step (``before(resuming, steps)``,
    ``steps`` the step's ``StepBudget``; its ``--until`` also ends the rounds cleanly)."""
    from rtsched.errors import OptionError
    from rtsched.rl.modelfiles import CHECKPOINT

    step = None
    if select_every:
        if not out:
            raise OptionError("--select-every needs an output folder (--out)")
        from rtsched.rl.splitwindow.select import split_window_selection

        step = split_window_selection(trace, out, select_every, head=probe.head, tail=probe.tail,
                                      teacher=probe.teacher, start_range=trainer.env_config.get("start_range"),
                                      segments=validation_segments, jobs=validation_jobs)
        step.attach(trainer)

    if clone_from and clone_episodes:
        raise OptionError("clone_from: the actor comes from a file or from clone_episodes, not both")
    if dagger_rounds and not out:
        raise OptionError("--dagger-rounds needs an output folder (--out)")
    dagger_opts = {k: v for k, v in (("episodes", dagger_episodes), ("epochs", bc_epochs), ("beta0", beta0),
                                     ("decay", beta_decay)) if v is not None}
    if bc_permute:
        dagger_opts["permute"] = bc_permute
    if dagger_opts and not dagger_rounds:
        raise OptionError("--dagger-episodes/--bc-epochs/--beta0/--beta-decay/--bc-permute: options of --dagger-rounds "
                          "(give it too)")

    def before(resuming: bool, steps=None) -> None:
        if not resuming and (clone_episodes or clone_from):
            if clone_from:
                actor_from(trainer, clone_from)
            else:
                clone_teacher(trainer, probe, clone_episodes, clone_epochs, clone_lr)
            if out:  # the clone is the run's epoch 0: a --resume continues from it
                trainer.save(os.path.join(out, CHECKPOINT))
                if step is not None:
                    step.score_now(0)
        if dagger_rounds:
            dagger(steps)

    def dagger(steps) -> None:
        from rtsched.rl.splitwindow.dagger import read_record, run_rounds

        done = len(read_record(out)["rounds"])
        if done >= dagger_rounds:
            return
        if trainer.epoch > 0:
            raise OptionError(f"--dagger-rounds: {out} went on with PPO after {done} DAgger rounds; "
                              "more rounds would discard that")

        def after_round(r: int, row: dict) -> None:
            if step is not None:
                row["validation"] = step.score_now(0, stage=f"dagger-{r}")["validation"]
            if steps is not None:
                steps.step["dagger_rounds"] = [steps.step.get("dagger_rounds", [r])[0], r]
                steps.account()

        rows = run_rounds(trainer, probe, out, dagger_rounds, lr=clone_lr, base=clone_episodes or CLONE_BASE,
                          after_round=after_round, should_stop=steps.should_stop if steps is not None else None,
                          **dagger_opts)
        if len(rows) < dagger_rounds:  # --until or STOP: end the step before PPO
            from rtsched.rl.budget import StopTraining

            raise StopTraining(f"stopped after DAgger round {len(rows)}")

    return before


def actor_from(trainer, path: str) -> None:
    """The actor's weights from the model file ``path`` (a policy-only ``best.pt`` will do; same agent
    and architecture), the critic left as it is: the start of a PPO run from an earlier run's clone."""
    from rtsched.rl.modelfiles import ModelFileError, read_model_file

    st = read_model_file(path)
    if st.get("agent") != trainer.agent:
        raise ModelFileError(f"{path}: a {st.get('agent')} model cannot start a {trainer.agent} run")
    try:
        trainer.actor.load_state_dict(st["actor"])
    except (RuntimeError, KeyError) as exc:
        raise ModelFileError(f"{path}: its actor does not match this run's network: {exc}") from exc


def clone_teacher(trainer, env, episodes: int, epochs: int, lr: float) -> dict:
    """The imitation pre-stage: the actor fitted (``behaviour_clone``, masked cross-entropy) to the
    window teacher's decisions (``SplitWindowEnv.teacher_action``) in ``episodes`` training episodes
    (reset seeds 0 .. episodes − 1: starts drawn from the training part), ``epochs`` passes at
    learning rate ``lr``.  The record (first and last loss and accuracy, samples, seconds) goes to
    ``OUT/clone.json`` and is returned."""
    import torch

    from rtsched.files import atomic_write_text
    from rtsched.rl.cloning import behaviour_clone, teacher_decisions

    t0 = time.perf_counter()
    data = teacher_decisions(env, ({"seed": s} for s in range(episodes)))
    t1 = time.perf_counter()
    torch.manual_seed(trainer.config.seed)
    rows = behaviour_clone(trainer.actor, data, epochs, lr=lr, seed=trainer.config.seed)
    record = {"episodes": episodes, "epochs": epochs, "lr": lr, "samples": int(len(data["act"])),
              "fwd_share": float((data["act"] == env.fwd).mean()), "first": rows[0], "last": rows[-1],
              "collect_s": round(t1 - t0, 1), "fit_s": round(time.perf_counter() - t1, 1)}
    if trainer.out:
        os.makedirs(trainer.out, exist_ok=True)
        atomic_write_text(os.path.join(trainer.out, CLONE), json.dumps(record, indent=1) + "\n")
    return record
