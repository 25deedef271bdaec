"""The one environment-speed loop of the benchmarks: step an environment for a wall-clock budget
with actions from a chooser, resetting at each episode's end (imported by the bench scripts, which
run with bench/ on sys.path)."""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np


def masked_random(seed: int = 0) -> Callable[[Any], int]:
    """A chooser of uniformly random actions among the first ``action_masks().sum()`` slots (the
    picking environments put the visible jobs first), from a seeded stream."""
    rng = np.random.default_rng(seed)
    return lambda env: int(rng.integers(int(env.action_masks().sum())))


def steps_for(env, seconds: float, choose: Callable[[Any], int],
              episode_jobs: Callable[[Any, dict], int] = lambda env, info: 0) -> tuple[int, int, float]:
    """(steps, jobs, elapsed s): ``env`` (reset with seed 0) stepped with ``choose(env)`` for
    ``seconds`` of wall time; ``episode_jobs(env, info)`` counts the jobs of each finished episode."""
    env.reset(seed=0)
    steps = jobs = 0
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        _, _, term, trunc, info = env.step(choose(env))
        steps += 1
        if term or trunc:
            jobs += episode_jobs(env, info)
            env.reset()
    return steps, jobs, time.perf_counter() - t
