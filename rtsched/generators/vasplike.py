"""A synthetic VASP-like workload for RLSchert (seed 001), from the paper's stated distributions.

The USTC VASP logs of the paper are not public, so sequences are drawn from its stated figures
(seed 001 §1.1, §1.5, §2.4, §5 "fallback"), in the paper's units (1 slot = 5 min, 1 resource unit
= 10 cores):

* arrivals: Bernoulli, one job per slot with probability ``job_rate`` (0.7) over ``simu_len`` (200)
  slots;
* runtime: 70 % "single ionic step" jobs, lognormal with median 3 slots (σ 0.6), and 30 % "multiple
  ionic steps" jobs, median 20 slots (σ 0.7): mean ≈ 10 slots (50 min); capped to [1, 100] slots;
* size: 3 units with probability 0.7, otherwise uniform on 1..6 (mean ≈ 3.15 units, cap 10);
* the pre-run prediction ``len_param`` = runtime · exp(σ·z), σ 0.37 (short) / 0.75 (long), giving the
  paper's XGBoost MAPE of about 30 % / 67 % (Table 5), rounded, at least 1 slot;
* the running prediction ``run[e]`` (predicted *total* length after e slots of running, e = 0..99):
  it moves from ``len_param`` at e = 0 to the runtime times a final error exp(η), η ~ N(0, 0.044)
  (short) or N(0, 0.225) (long) — Fig. 6's end points (≈ 3.5 % / 18 %) — along
  ``log run[e] = log y + w log(len_param / y) + f η``, f = min(e / y, 1), w = (1 − f)·exp(−e / τ),
  τ = 2 slots: the run features tell much after a few steps (Table 5: 10.3 % averaged over the
  prefixes against 39.8 % before the run); at least e + 1 and padded with its last value after the
  job's end (seed 001 §2.3).

Times in the returned ``Workload`` are seconds (``slot`` s per slot) and its requested time
(walltime) is ``len_param``: the only duration a policy may plan with.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rtsched.jobs import Job, Workload

SLOT_S = 300
MAX_LEN = 100  # slots
RUN_STEPS = 100  # entries of a running-prediction array


@dataclass(frozen=True)
class VaspLikeParams:
    job_rate: float = 0.7
    simu_len: int = 200  # arrival slots
    short_share: float = 0.7
    short_median: float = 3.0
    short_sigma: float = 0.6
    long_median: float = 20.0
    long_sigma: float = 0.7
    size_mode: int = 3
    size_mode_p: float = 0.7
    size_max_other: int = 6
    prerun_sigma: tuple[float, float] = (0.37, 0.75)  # short, long
    final_sigma: tuple[float, float] = (0.044, 0.225)  # short, long
    slot: int = SLOT_S


@dataclass
class VaspLikeSequence:
    """One generated sequence: the workload (s) and, per job in workload order, the pre-run
    prediction and the running predictions (both in slots)."""

    workload: Workload
    prerun: np.ndarray  # slots, per job
    running: list[np.ndarray]  # per job: predicted total length (slots) after e = 0..99 slots
    short: np.ndarray  # bool per job: a "single ionic step" job
    slot: int = SLOT_S


def running_predictions(y: int, p: int, eta: float, steps: int = RUN_STEPS, tau: float = 2.0) -> np.ndarray:
    """The running-prediction array of a job of runtime ``y`` and pre-run prediction ``p`` slots."""
    e = np.arange(steps, dtype=np.float64)
    f = np.minimum(e / y, 1.0)
    w = (1.0 - f) * np.exp(-e / tau)
    run = np.exp(np.log(y) + w * np.log(p / y) + f * eta)
    run = np.maximum(np.rint(run), e + 1)
    run[0] = p
    return run.astype(np.int64)


def generate_vasplike(seed: int, params: VaspLikeParams = VaspLikeParams(), *, name: str | None = None,
                      first_id: int = 1) -> VaspLikeSequence:
    """A seeded VASP-like sequence (see module docstring)."""
    rng = np.random.default_rng(seed)
    P = params
    arrive = np.flatnonzero(rng.random(P.simu_len) < P.job_rate)
    n = len(arrive)
    short = rng.random(n) < P.short_share
    med = np.where(short, P.short_median, P.long_median)
    sig = np.where(short, P.short_sigma, P.long_sigma)
    y = np.clip(np.rint(med * np.exp(sig * rng.standard_normal(n))), 1, MAX_LEN).astype(np.int64)
    size = np.where(rng.random(n) < P.size_mode_p, P.size_mode, rng.integers(1, P.size_max_other + 1, n))
    ps = np.where(short, P.prerun_sigma[0], P.prerun_sigma[1])
    p = np.maximum(1, np.rint(y * np.exp(ps * rng.standard_normal(n)))).astype(np.int64)
    fs = np.where(short, P.final_sigma[0], P.final_sigma[1])
    eta = fs * rng.standard_normal(n)
    jobs = [Job(first_id + i, int(arrive[i]) * P.slot, int(y[i]) * P.slot, int(p[i]) * P.slot, int(size[i]))
            for i in range(n)]
    running = [running_predictions(int(y[i]), int(p[i]), float(eta[i])) for i in range(n)]
    wl = Workload(jobs, name=name or f"vasplike-{seed}", max_nodes=None)
    return VaspLikeSequence(wl, p, running, short, P.slot)


__all__ = ["MAX_LEN", "RUN_STEPS", "SLOT_S", "VaspLikeParams", "VaspLikeSequence", "generate_vasplike",
           "running_predictions"]
