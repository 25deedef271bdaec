"""Load RLScheduler's own job-picking environment (``HPCSimPickJobs.HPCEnv``, DIR-LAB/deep-batch-scheduler)
for side-by-side benchmarks.  The peer code is *not* part of rtsched and is never copied into it.

Setting up the peer code (once)::

    git clone https://github.com/DIR-LAB/deep-batch-scheduler /work/peer      # or: git archive of cd433e3
    export RLSCHEDULER_DIR=/work/peer          # or pass --rlscheduler-dir to the benchmark

The authors' environment module imports ``tensorflow`` (1.14, only for the PPO placeholders, never
called by the environment), ``gym`` (the 2019 API: ``gym.Env``, ``gym.spaces``,
``gym.utils.seeding.np_random`` returning a ``RandomState``) and ``scipy.signal``.  Installing that
stack is not needed: when ``gym`` or ``tensorflow`` cannot be imported, this module puts minimal
stand-ins in ``sys.modules`` *before* importing the peer module — an empty ``tensorflow``, and a
``gym`` whose ``Env`` is a plain base class, whose ``spaces`` are Gymnasium's and whose
``seeding.np_random(seed)`` returns ``(numpy.random.RandomState(seed), seed)`` as old gym did.  None of
the environment's own code (simulation, backfilling, observation, reward) is touched.  A separate venv
with the authors' pinned ``gym`` (``pip install gym==0.15.7 numpy scipy``; tensorflow can stay
shimmed) works the same way: the real ``gym`` is used when importable.

``PeerPickEnv`` wraps one ``HPCEnv`` so that a benchmark can drive it like ours: ``reset(start)``
runs the authors' ``reset()`` (including its two heuristic baseline schedules, SJF and F1, that
every training episode pays for) with the first job fixed to ``start``; ``valid_count()`` is the
number of occupied slots (the authors' mask: ``pairs[a][0] is not None``); ``step(a)`` is the
authors' ``step``.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import types

import numpy as np


def _install_shims() -> list[str]:
    """Stand-ins for the peer's 2019 imports that are missing here; returns the names shimmed."""
    shimmed = []
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        sys.modules["tensorflow"] = types.ModuleType("tensorflow")
        shimmed.append("tensorflow")
    try:
        import gym  # noqa: F401
        import gym.spaces  # noqa: F401
        import gym.utils.seeding  # noqa: F401
    except ImportError:
        from gymnasium import spaces

        gym = types.ModuleType("gym")

        class Env:  # the old gym.Env: a plain base class with seed()
            def seed(self, seed=None):
                return [seed]

        gym.Env = Env
        gym.spaces = spaces
        utils = types.ModuleType("gym.utils")
        seeding = types.ModuleType("gym.utils.seeding")

        def np_random(seed=None):
            return np.random.RandomState(seed), seed

        seeding.np_random = np_random
        utils.seeding = seeding
        gym.utils = utils
        sys.modules.update({"gym": gym, "gym.spaces": spaces, "gym.utils": utils, "gym.utils.seeding": seeding})
        shimmed.append("gym")
    return shimmed


def peer_dir(path: str | None = None) -> str:
    """The peer checkout: ``path``, else $RLSCHEDULER_DIR; an error naming both when missing."""
    d = path or os.environ.get("RLSCHEDULER_DIR")
    if not d or not os.path.exists(os.path.join(d, "HPCSimPickJobs.py")):
        raise FileNotFoundError(f"RLScheduler's code not found at {d!r} (HPCSimPickJobs.py); pass "
                                "--rlscheduler-dir or set RLSCHEDULER_DIR (see bench/peer_rlscheduler.py)")
    return os.path.abspath(d)


def load_peer_module(path: str | None = None):
    d = peer_dir(path)
    shims = _install_shims()
    if d not in sys.path:
        sys.path.insert(0, d)
    import HPCSimPickJobs  # the authors' module

    HPCSimPickJobs._rtsched_shims = shims
    return HPCSimPickJobs


class _FixedStart:
    """Stands in for the env's ``np_random`` during ``reset`` so that the authors' draw returns ``start``."""

    def __init__(self, start: int) -> None:
        self.start = start

    def randint(self, lo, hi=None):
        return self.start


class PeerPickEnv:
    """The authors' ``HPCEnv`` driven with a fixed first job per episode (see module docstring)."""

    def __init__(self, trace_path: str, backfill: bool, path: str | None = None) -> None:
        mod = load_peer_module(path)
        self.module = mod
        self.seq_len = mod.JOB_SEQUENCE_SIZE
        self.window = mod.MAX_QUEUE_SIZE
        with contextlib.redirect_stdout(io.StringIO()):  # the authors print while loading
            env = mod.HPCEnv(backfil=backfill, skip=False, job_score_type=0, batch_job_slice=0, build_sjf=False)
            env.seed(0)
            env.my_init(workload_file=trace_path)
        self.env = env

    def reset(self, start: int):
        env = self.env
        rng = env.np_random
        env.np_random = _FixedStart(start)
        try:
            obs, _critic = env.reset()
        finally:
            env.np_random = rng
        return obs

    def valid_count(self) -> int:
        """Occupied slots: the observation lists ``visible_jobs`` first (at most MAX_QUEUE_SIZE), then
        padding (``pairs[a][0] is None``); O(1) so that the benchmark's policy costs nothing."""
        return len(self.env.visible_jobs)

    def step(self, a: int):
        obs, rwd, done, *_ = self.env.step(a)
        return obs, rwd, done
