"""How SchedInspector is trained (seed 000): sequences of 128 jobs, the project's PPO defaults."""
from __future__ import annotations

ENV_OPTIONS = ("seq_len", "base", "features", "reward", "max_interval", "max_rejections", "start_range",
               "util_window")
ENV_DEFAULTS = {"seq_len": 128}
PPO_DEFAULTS: dict = {}


def make_env(trace, *, goal: str = "bsld", backfill="none", machine=None, **options):
    from rtsched.rl.inspector.env import InspectorEnv

    return InspectorEnv(trace, machine=machine, goal=goal, backfill=backfill, **options)


def describe(probe, env_config: dict) -> None:
    """Complete ``env_config`` (stored in the checkpoint) with the environment's resolved settings."""
    env_config.setdefault("base", probe.base_name)
    env_config.setdefault("features", "paper")
    env_config.setdefault("max_interval", probe.max_interval)
    env_config.setdefault("max_rejections", probe.max_rejections)


def epoch_stats(infos: list[dict]) -> dict:
    """The inspector's row of an epoch's history: the share of inspections that rejected."""
    insp = sum(i.get("inspections", 0) for i in infos)
    rej = sum(i.get("rejections", 0) for i in infos)
    return {"rejection_ratio": rej / insp if insp else 0.0}
