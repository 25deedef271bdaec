"""How RLScheduler is trained (seed 003; the project's PPO defaults are this paper's)."""
from __future__ import annotations

ENV_OPTIONS = ("seq_len", "window", "start_range", "sjf_filter", "features", "pad", "util_window")
ENV_DEFAULTS: dict = {}
PPO_DEFAULTS: dict = {}


def make_env(trace, *, goal: str = "bsld", backfill="none", machine=None, **options):
    from rtsched.rl.rlscheduler.env import JobPickingEnv

    return JobPickingEnv(trace, machine=machine, goal=goal, backfill=backfill, **options)


def describe(probe, env_config: dict) -> None:
    """Complete ``env_config`` (stored in the checkpoint) with the environment's resolved settings."""
    env_config.setdefault("features", probe.obsb.features)
    env_config.setdefault("pad", probe.obsb.pad)
    env_config.setdefault("seq_len", probe.seq_len)
    env_config.setdefault("window", probe.window)
