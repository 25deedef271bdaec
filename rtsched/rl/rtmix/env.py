"""``rtsched/RtMix-v0``: real-time/batch mixes on Mira partitions, one masked decision at a time.

Description
    The one core simulator (``rtsched.sim.core.Simulator``, driven by ``advance()``/``apply()``) runs
    an RTJ/BJ mix on a Mira machine (``mira:BLOCKS`` or a Cobalt partition XML) under a checkpoint
    model (``jit`` by default; ``no``, ``sys[:S]``, ``app-PCT``).  At each scheduling point the agent
    takes actions one at a time (``rtsched.rl.rtmix.core.RtMixPass``): start a visible waiting job on the
    partition the machine's rule picks, free one of up to K WCJS-eligible candidate partitions for
    a waiting RTJ by preempting its checkpointable BJs (``eligibility="any"``: any partition of its
    size holding no RTJ or non-checkpointable job, as ``replan`` may), with ``bj_candidates`` > 0 (off by default)
    free one of up to that many partitions for a waiting BJ the same way, or wait for the next event.  A point where
    waiting is the only legal action, or where exactly one action is legal, is not an agent step
    (the environment takes it).  With ``wake`` a pass that leaves a job waiting also asks for a
    scheduling point when a running BJ becomes splittable (``RtMixPass.split_wake``: where
    ``replan`` plans a preemption between events).  With ``shield`` (``"start"`` or ``"preempt"``) the
    mask forces an RTJ that can start (or, ``"preempt"``, be given a preemption candidate) to be
    served first (``rtsched.rl.rtmix.core``).  These options are off by default (the action
    space and the episodes of the agents trained before them).  The agent never sees an actual runtime.

Action space
    ``Discrete(window + candidates + bj_candidates + 1)``; ``info["action_mask"]`` and ``action_masks()`` (sb3-contrib's
    protocol) mark the legal ones.  An illegal action is replaced by waiting when that is legal, else
    by the first legal action (so that unmasked random agents run).

Observation space
    ``Box(0, 100, ((window + candidates + bj_candidates + 1) · F,), float32)``: one row of F features
    per action slot, F = 28, or 30 with BJ-preemption slots (docs/rl.md lists them with units and
    normalisation).

Reward
    0 at every step; at the end ``−(mean BJ slowdown) − penalty · max(0, mean RTJ slowdown − θ)``
    (slowdown = (completion − submit) / runtime, ``rtsched.metrics.slowdown``): the offline
    objective of docs/offline-model.md (minimise the BJ mean while the RTJ mean stays within θ) with
    the bound as a fixed linear penalty (θ = 1.2, penalty 10 by default).  A kind with no job counts 0.
    With ``baseline`` (a policy name, e.g. ``"wcjs"``), the same quantity for that policy on the same
    jobs (under the environment's checkpoint model) is subtracted: the reward is the agent's gain
    over the baseline, which removes most of the spread between easy and hard instances (used in
    training; ``info["baseline_reward"]`` reports it).

Episode end
    When the simulation has no event left (every job finished).  Episodes are generated instances
    (``rtsched.generators.smallmix``: Table 3's 5 BJs + 2 RTJs on 16 blocks by default), the generator
    seed drawn from ``seed_range`` with the environment's RNG, or given: ``reset(options={"seed": s})``;
    ``reset(options={"jobs": [Job, ...]})`` runs given jobs.  Every finished schedule is checked by
    the independent validator.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from heuristics.registry import make_policy
from rtsched.checkpoint import CheckpointModel
from rtsched.errors import OptionError
from rtsched.generators.smallmix import random_jobs
from rtsched.jobs import Job, Workload
from rtsched.machines import machine_from_spec
from rtsched.metrics import slowdown
from rtsched.rl.rtmix.core import BATCH_BACKFILL, BATCH_PRIORITY, OBS_HIGH, RtMixPass, RtMixSpec
from rtsched.sim.core import Simulator
from rtsched.validate import validate_schedule

# Generator seeds: expert plans are solved on EXPERT_SEEDS, PPO draws its episodes from TRAIN_SEEDS,
# and benchmarks evaluate on seeds from EVAL_SEED_BASE on (never used in training).
EXPERT_SEEDS = range(100_000, 200_000)
TRAIN_SEEDS = range(200_000, 900_000)
EVAL_SEED_BASE = 5_000_000


def episode_reward(bj_mean: float, rt_mean: float, theta: float, penalty: float) -> float:
    """The terminal reward: −BJ mean − penalty · max(0, RTJ mean − θ)."""
    return -bj_mean - penalty * max(0.0, rt_mean - theta)


class RtMixEnv(gym.Env):
    """Gymnasium environment of the ``rtmix`` agent (module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, machine: str = "mira:16", checkpoint: str = "jit", *, n_bj: int = 5, n_rt: int = 2,
                 window: int = 8, candidates: int = 4, theta: float = 1.2, penalty: float = 10.0,
                 seed_range: tuple[int, int] = (TRAIN_SEEDS.start, TRAIN_SEEDS.stop), wcjs=None,
                 generator: dict | None = None, validate: bool = True, baseline: str | None = None,
                 order: str = "submit", bj_candidates: int = 0, eligibility: str = "wcjs",
                 wake: bool = False, shield: str = "none", conserve: float | None = None,
                 shield_theta: float = 1.2, batch_priority: str = BATCH_PRIORITY,
                 batch_backfill: str = BATCH_BACKFILL, rt_wake: bool = False, refit_window: bool = False,
                 low_rt_batch: bool = False, horizon_features: bool = False,
                 defer_weight: float | None = None) -> None:
        super().__init__()
        self.machine_spec = str(machine)
        self.machine = machine_from_spec(self.machine_spec) if isinstance(machine, str) else machine
        if not self.machine.partitioned:
            raise OptionError(f"machine: RtMix needs a partitioned (Mira) machine (mira, mira:BLOCKS or a partition "
                              f".xml), not {self.machine.describe()}")
        self.checkpoint_text = checkpoint
        self.checkpoint = CheckpointModel.parse(checkpoint)
        self.spec_ = RtMixSpec.from_settings(
            {"window": window, "candidates": candidates, "order": order, "bj_candidates": bj_candidates,
             "eligibility": eligibility, "wake": wake, "shield": shield, "conserve": conserve,
             "shield_theta": shield_theta, "batch_priority": batch_priority, "batch_backfill": batch_backfill,
             "rt_wake": rt_wake, "refit_window": refit_window, "low_rt_batch": low_rt_batch,
             "horizon_features": horizon_features, "defer_weight": defer_weight}, wcjs)
        self.n_bj, self.n_rt = int(n_bj), int(n_rt)
        self.theta, self.penalty = float(theta), float(penalty)
        self.seed_range = (int(seed_range[0]), int(seed_range[1]))
        self.generator = dict(generator or {})
        blocks = getattr(self.machine, "blocks", None)
        self.blocks = int(blocks) if blocks is not None else self.machine.total_nodes // 512
        self.validate = validate
        self.baseline = baseline
        if baseline is not None:
            make_policy(baseline)  # an unknown name fails here, not at the first episode's end
        self.window = self.spec_.n_actions  # slots of the kernel network (one per action)
        self.n_features = self.spec_.n_features
        self.observation_space = spaces.Box(0.0, OBS_HIGH, (self.spec_.n_actions * self.n_features,), dtype=np.float32)
        self.action_space = spaces.Discrete(self.spec_.n_actions)
        self.norms: dict = {}
        self.sim: Simulator | None = None
        self.pass_: RtMixPass | None = None
        self._done = True
        self.n_steps = 0
        self.instance_seed: int | None = None
        self.jobs: list[Job] = []
        # Called with every scheduling pass (``RtMixPass``) of the run, the forced ones included: an
        # expert that labels the agent's states (DAgger) sees every event, as a policy does.
        self.pass_observer = None

    # ------------------------------------------------------------------------------ episode
    def config(self) -> dict:
        """The JSON-able settings (stored in model files)."""
        return {"machine": self.machine_spec, "checkpoint": self.checkpoint_text, "n_bj": self.n_bj,
                "n_rt": self.n_rt, "window": self.spec_.window, "candidates": self.spec_.candidates,
                "theta": self.theta, "penalty": self.penalty, "seed_range": list(self.seed_range),
                "generator": self.generator, "baseline": self.baseline, "order": self.spec_.order,
                # only when set: the settings (and model files) of the agents before the option stay as they were
                **self.spec_.optional_settings()}

    def make_jobs(self, seed: int) -> list[Job]:
        return random_jobs(seed, self.n_bj, self.n_rt, self.blocks, **self.generator)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "jobs" in options:
            jobs = list(options["jobs"])
            self.instance_seed = None
        else:
            s = options.get("seed")
            if s is None:
                s = int(self.np_random.integers(self.seed_range[0], self.seed_range[1]))
            self.instance_seed = int(s)
            jobs = self.make_jobs(self.instance_seed)
        self.jobs = jobs
        wl = Workload(jobs, name=f"rtmix-{self.instance_seed}", max_nodes=self.machine.total_nodes)
        self.workload = wl
        self.sim = Simulator(wl, self.machine, checkpoint=self.checkpoint)
        self.n_steps = 0
        self._done = not self.sim.advance()
        if not self._done:
            self.pass_ = RtMixPass(self.sim.view, self.spec_, self.checkpoint)
            if self.pass_observer is not None:
                self.pass_observer(self.pass_)
            self._to_decision()
        return self._obs(), self._info()

    def _flush_and_advance(self) -> bool:
        """Apply the pass's decisions, move to the next scheduling point; False when the run is over."""
        sim = self.sim
        if self.pass_ is not None:
            decisions = self.pass_.final_decisions()
            if decisions:
                sim.apply(decisions)
        if not sim.advance():
            self.pass_ = None
            return False
        self.pass_ = RtMixPass(sim.view, self.spec_, self.checkpoint)
        if self.pass_observer is not None:
            self.pass_observer(self.pass_)
        return True

    def _to_decision(self) -> None:
        """Take the forced actions until the agent has a choice or the run ends."""
        while True:
            ps = self.pass_
            if ps.has_choice():
                mask = ps.mask()
                if int(mask.sum()) > 1:
                    return
                ps.apply(int(np.flatnonzero(mask)[0]))
                continue
            if not self._flush_and_advance():
                self._done = True
                return

    @property
    def finished(self) -> bool:
        """Whether the episode is over (also right after a ``reset`` whose instance leaves no choice)."""
        return self._done

    @property
    def network_shape(self) -> tuple[int, int]:
        """(n_features, window) of this agent's networks (``rtsched.rl.nets.build_networks``): the features per action row and one slot per action."""
        return self.n_features, self.window

    def action_masks(self) -> np.ndarray:
        """Legal actions (never empty: after the end only the wait slot is marked)."""
        if self._done or self.pass_ is None:
            m = np.zeros(self.spec_.n_actions, dtype=bool)
            m[self.spec_.wait_action] = True
            return m
        return self.pass_.mask().copy()

    def _obs(self) -> np.ndarray:
        if self._done or self.pass_ is None:
            return np.zeros(self.observation_space.shape, dtype=np.float32)
        return self.pass_.observe()

    def _info(self) -> dict:
        return {"action_mask": self.action_masks(), "instance_seed": self.instance_seed}

    def step(self, action):
        if self._done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        a = int(action)
        mask = self.pass_.mask()
        if not (0 <= a < len(mask)) or not mask[a]:
            a = self.spec_.wait_action if mask[self.spec_.wait_action] else int(np.flatnonzero(mask)[0])
        self.n_steps += 1
        if a == self.spec_.wait_action:
            if not self._flush_and_advance():
                self._done = True
        else:
            self.pass_.apply(a)
        if not self._done:
            self._to_decision()
        if not self._done:
            return self._obs(), 0.0, False, False, self._info()
        bj, rt = self.means()
        reward = episode_reward(bj, rt, self.theta, self.penalty)
        info = self._info() | {"bj_sd_mean": bj, "rtj_sd_mean": rt, "decisions": self.n_steps}
        if self.baseline is not None:
            base = episode_reward(*self.baseline_means(), self.theta, self.penalty)
            info["baseline_reward"] = base
            reward -= base
        return self._obs(), float(reward), True, False, info

    # ------------------------------------------------------------------------------ results
    def result(self):
        """The finished run's ``SimResult`` (validated)."""
        res = self.sim.result("rtmix-env")
        if self.validate:
            validate_schedule(res.schedule, self.workload, self.machine, self.sim.io, forbid_rt_preemption=True)
        return res

    def baseline_means(self) -> tuple[float, float]:
        """(mean BJ, mean RTJ slowdown) of the ``baseline`` policy on this episode's jobs."""
        res = Simulator(self.workload, self.machine, checkpoint=self.checkpoint).run(make_policy(self.baseline))
        return _means(res)

    def means(self) -> tuple[float, float]:
        """(mean BJ slowdown, mean RTJ slowdown) of the finished episode (0 for a kind with no job)."""
        return _means(self.result())


def _means(res) -> tuple[float, float]:
    bj, rt = [], []
    for o in res.outcomes:
        sd = float(slowdown(o.end - o.job.submit, o.job.runtime))
        (rt if o.job.kind == "rt" else bj).append(sd)
    return (sum(bj) / len(bj) if bj else 0.0), (sum(rt) / len(rt) if rt else 0.0)
