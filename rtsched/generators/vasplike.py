"""A synthetic VASP-like workload for RLSchert (seed 001), in two documented parameter sets.

The USTC VASP logs of the paper are not public, so sequences are drawn from parametric
distributions, in the paper's units (1 slot = 5 min, 1 resource unit = 10 cores).  Two named sets
(``PARAM_SETS``; docs/rl.md, "Calibration"):

* ``"stated"`` (``VaspLikeParams()``, the dataclass defaults; the shipped ``rlschert-vasplike-*``
  models were trained on it): the paper's stated figures (seed 001 §1.1, §1.5, §2.4, §5
  "fallback"), described below.  Its offered load is about 1.07 and SAF / SJF reach an average
  slowdown of 2.8 / 2.9 on the 16 held-out sequences, against the paper's 10.23 / 10.29 (Table 7).
* ``"calibrated"`` (``CALIBRATED``, the workload ``rtsched rl evaluate --trace vasplike`` runs):
  the same arrivals (rate 0.7 over 200 slots, Table 2) on the same 20 units, with runtimes and
  sizes fitted to the job set the paper's authors' released code samples from (the third-party
  ``MariaMegina/RLSchert_`` repository's ``final_vasp_data.pkl``: 4,870 VASP jobs, runtime mean
  15.6 slots, median 8; 80 % of jobs on 3 units, mean 3.45).  Jobs drawn from that set with the
  paper's Table 2 settings give SAF 8.6–10.9 and completion 70–80 slots over four sets of 16
  sequences (the paper: SAF 10.23, completion ≈ 80.3, Table 8); the stated mean of "10 units"
  gives neither.  Runtimes: the 70 % / 30 % short / long lognormal mixture fitted to the set's
  runtimes by maximum likelihood with the paper's 70 % share (short median 6.96 slots, σ 0.668;
  long median 24.87, σ 0.787); sizes: the set's empirical distribution of units (``size_pmf``).
  The pre-run and running predictions keep the ``"stated"`` calibration (Table 5, Fig. 6).

The ``"stated"`` set:

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
# Generator seeds reserved for held-out (test) sequences: evaluation draws its sequences from the start
# of this range (``rtsched rl evaluate --trace vasplike``: 1,000,000 + 0..15), training never uses them.
HELD_OUT_SEEDS = range(1_000_000, 1_001_000)


def training_seed(draw: int) -> int:
    """A training sequence's generator seed from a raw draw: the draw itself, moved past the held-out
    range when it falls inside it (a draw from [0, 2**31 - 1) lands there with probability 5e-7)."""
    return draw + len(HELD_OUT_SEEDS) if draw in HELD_OUT_SEEDS else draw


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
    # When set: P(size = k units) for k = 1, 2, ..., in place of the mode / uniform rule above.
    size_pmf: tuple[float, ...] | None = None
    prerun_sigma: tuple[float, float] = (0.37, 0.75)  # short, long
    final_sigma: tuple[float, float] = (0.044, 0.225)  # short, long
    slot: int = SLOT_S


# Units (10 cores each, ceil, capped at 10) of the 4,870 jobs of the authors' job set (see the module
# docstring): counts of 1, 2, ..., 10 units.
_AUTHORS_SET_UNIT_COUNTS = (66, 67, 3896, 19, 525, 135, 40, 40, 0, 82)

STATED = VaspLikeParams()
CALIBRATED = VaspLikeParams(short_median=6.96, short_sigma=0.668, long_median=24.87, long_sigma=0.787,
                            size_pmf=tuple(c / sum(_AUTHORS_SET_UNIT_COUNTS) for c in _AUTHORS_SET_UNIT_COUNTS))
PARAM_SETS: dict[str, VaspLikeParams] = {"stated": STATED, "calibrated": CALIBRATED}
# ``--trace`` names of the workload (it has no file) and the parameter set each stands for.
VASPLIKE_TRACES: dict[str, str] = {"vasplike": "calibrated", "vasplike-stated": "stated"}
UNITS = 20  # the cluster's resource units (seed 001 ``res_slot``; 10 cores each)


def trace_param_set(name) -> str | None:
    """The parameter set a ``--trace`` value names (``VASPLIKE_TRACES``), or None (a file, a trace)."""
    return VASPLIKE_TRACES.get(name) if isinstance(name, str) else None


def param_set(name: str) -> VaspLikeParams:
    """A named parameter set (``PARAM_SETS``); ValueError naming the known ones otherwise."""
    try:
        return PARAM_SETS[name]
    except KeyError:
        raise ValueError(f"unknown VASP-like parameter set {name!r} (known: {', '.join(PARAM_SETS)})") from None


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
    if P.size_pmf is None:
        size = np.where(rng.random(n) < P.size_mode_p, P.size_mode, rng.integers(1, P.size_max_other + 1, n))
    else:
        pmf = np.asarray(P.size_pmf, dtype=np.float64)
        size = 1 + rng.choice(len(pmf), size=n, p=pmf / pmf.sum())
    ps = np.where(short, P.prerun_sigma[0], P.prerun_sigma[1])
    p = np.maximum(1, np.rint(y * np.exp(ps * rng.standard_normal(n)))).astype(np.int64)
    fs = np.where(short, P.final_sigma[0], P.final_sigma[1])
    eta = fs * rng.standard_normal(n)
    jobs = [Job(first_id + i, int(arrive[i]) * P.slot, int(y[i]) * P.slot, int(p[i]) * P.slot, int(size[i]))
            for i in range(n)]
    running = [running_predictions(int(y[i]), int(p[i]), float(eta[i])) for i in range(n)]
    wl = Workload(jobs, name=name or f"vasplike-{seed}", max_nodes=None)
    return VaspLikeSequence(wl, p, running, short, P.slot)


__all__ = ["CALIBRATED", "HELD_OUT_SEEDS", "MAX_LEN", "PARAM_SETS", "RUN_STEPS", "SLOT_S", "STATED", "VaspLikeParams",
           "VaspLikeSequence", "generate_vasplike", "param_set", "running_predictions", "trace_param_set",
           "training_seed", "UNITS", "VASPLIKE_TRACES"]
