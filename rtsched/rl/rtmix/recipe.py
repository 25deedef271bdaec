"""rtmix's entry for ``rtsched.rl.api.train``: behaviour cloning on expert data, then PPO
(``rtsched.rl.rtmix.train``); the environment draws its own Mira-like episodes (no trace)."""
from __future__ import annotations

from typing import Callable

from rtsched.rl.rtmix.env import RtMixEnv
from rtsched.rl.rtmix.train import ENV_OPTIONS, FINE_TUNE, train_rtmix

PPO_DEFAULTS = FINE_TUNE
__all__ = ["ENV_OPTIONS", "PPO_DEFAULTS", "make_env", "train"]


def make_env(trace=None, *, goal: str = "bsld", backfill="none", machine=None, **options):
    """An ``RtMixEnv`` with ``options`` (``ENV_OPTIONS``); it draws its episodes from a generator,
    so no trace, goal or backfilling."""
    if machine is not None:
        options["machine"] = machine
    return RtMixEnv(**options)


def train(trace=None, epochs: int = 100, out: str | None = None, progress: Callable | None = None, *,
          goal: str = "bsld", backfill="none", machine=None, resume: bool = True, init_from: str | None = None,
          on_trajectory: Callable | None = None, ray_address: str | None = None, **options) -> dict:
    """``rtsched.rl.api.train`` for rtmix: cloning on expert decisions (``data``:
    ``rtsched.experiments.rtmix``), then PPO; the environment options go in ``options``."""
    return train_rtmix(options.pop("data", None), out, epochs=epochs, progress=progress,
                       on_trajectory=on_trajectory, resume=resume, **options)
