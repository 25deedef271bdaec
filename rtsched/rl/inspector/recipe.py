"""How SchedInspector is trained (seed 000): sequences of 128 jobs, the project's PPO defaults; with
``select_every``, the model chosen on validation sequences (``rtsched.rl.inspector.select``)."""
from __future__ import annotations

from typing import Callable

ENV_OPTIONS = ("seq_len", "base", "features", "reward", "max_interval", "max_rejections", "start_range",
               "util_window")
ENV_DEFAULTS = {"seq_len": 128}
PPO_DEFAULTS: dict = {}
# Options of ``rtsched.rl.api.train`` that go to ``prepare`` (not the environment, not PPO).
RUN_OPTIONS = ("select_every", "validation_sequences")


def make_env(trace, *, goal: str = "bsld", backfill="none", machine=None, **options):
    from rtsched.rl.inspector.env import InspectorEnv

    return InspectorEnv(trace, machine=machine, goal=goal, backfill=backfill, **options)


def describe(probe, env_config: dict) -> None:
    """Complete ``env_config`` (stored in the checkpoint) with the environment's resolved settings."""
    env_config.setdefault("base", probe.base_name)
    env_config.setdefault("features", "paper")
    env_config.setdefault("reward", probe.reward_kind)  # the model file states its reward (--reward)
    env_config.setdefault("max_interval", probe.max_interval)
    env_config.setdefault("max_rejections", probe.max_rejections)


def epoch_stats(infos: list[dict]) -> dict:
    """The inspector's row of an epoch's history: the share of inspections that rejected."""
    insp = sum(i.get("inspections", 0) for i in infos)
    rej = sum(i.get("rejections", 0) for i in infos)
    return {"rejection_ratio": rej / insp if insp else 0.0}


def prepare(trainer, probe, trace, out: str | None, *, select_every: int = 0,
            validation_sequences: int | None = None) -> Callable[[bool], None] | None:
    """``select_every`` = k > 0: every k epochs (and at the last) the greedy inspector is scored on
    ``validation_sequences`` (default 10) 256-job sequences drawn from the training's start range and
    the best kept as ``OUT/best.pt`` (``inspector_selection``; ``OUT/selection.json``)."""
    if not select_every:
        return None
    from rtsched.errors import OptionError
    from rtsched.rl.inspector.select import DEFAULTS, inspector_selection

    if not out:
        raise OptionError("--select-every needs an output folder (--out)")
    step = inspector_selection(trace, out, select_every, base=probe.base_name, backfill=probe.backfill,
                               goal=probe.goal, start_range=trainer.env_config.get("start_range"),
                               sequences=validation_sequences or DEFAULTS["sequences"])
    step.attach(trainer)
    return None
