"""Which jobs are real-time: the three job-variation modes of seed 002 §7.1.3.

* ``random`` (alias ``default``): R % of the trace's jobs, drawn uniformly without replacement,
  become RTJs; the rest stay BJs.
* ``short`` ("90 minute walltime threshold" in the paper, but its text and the authors' code use
  the *runtime*): the same, drawn only among jobs whose runtime is below ``short_max_runtime``
  (5,400 s).  When fewer jobs are eligible than R % of the trace asks for, all eligible jobs are
  marked and the shortfall is recorded in the workload header (``rt_marking_shortfall``).
* ``aps``: every trace job stays a BJ and new RTJs are injected, shaped like the Advanced Photon
  Source analysis jobs the authors used (anchors.md §1): runtime drawn from the APS sample
  (``../shared/data/aps/aps_runtimes_seconds.txt``) when present, else from the log-normal mixture
  fitted to it and shipped in ``rtsched/generators/aps_model.json``; nodes ~ Exp(scale 2048)
  rounded up to a Mira partition size; walltime = ceil(runtime × U(1, 2)); submit uniform over
  the trace's span [first submit, last submit].  The number injected makes RTJs R % of the
  resulting workload (``aps_share_of="total"``) or R % of the trace's job count
  (``aps_share_of="batch"``, the reading of the paper's "based on the number of jobs in the batch
  log").

Independently of the mode, ``noncheckpointable_percent`` % of the BJs are flagged
``checkpointable=False`` (never preempted; issue 3).

Every random draw comes from its own NumPy stream derived from ``seed``, so changing one option
(say, the non-checkpointable share) does not reshuffle which jobs are real-time.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np

from rtsched.errors import InputError
from rtsched.jobs import BATCH, RT, Job, Workload
from rtsched.machines.sizes import BLOCK_NODES, MIRA_BLOCKS, round_up_to_partition

MarkingMode = Literal["random", "default", "short", "aps"]
MARKING_MODES: tuple[str, ...] = ("random", "default", "short", "aps")

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_APS_SAMPLE = REPO_ROOT.parent / "shared" / "data" / "aps" / "aps_runtimes_seconds.txt"
APS_MODEL_PATH = Path(__file__).resolve().parent / "generators" / "aps_model.json"

# Stream ids: one independent random stream per purpose (see the module docstring).
_STREAM_MARK, _STREAM_APS, _STREAM_NOCKPT = 1, 2, 3


@dataclass(frozen=True, slots=True)
class RtMarking:
    """How to choose (or inject) the real-time jobs of a trace.

    Attributes:
        percent: R, the share of real-time jobs in % (0–100).
        mode: ``"random"``/``"default"``, ``"short"`` or ``"aps"`` (module docstring).
        seed: seed of every random draw.
        short_max_runtime: ``short`` mode: only jobs with runtime strictly below this are eligible (s).
        aps_path: ``aps`` mode: the APS runtime sample (one runtime in s a line).  ``None``: the
            shared sample when it exists, else the shipped parametric model.  ``"model"``: always
            the parametric model.
        aps_node_scale: scale of the exponential node-count distribution (nodes).
        aps_walltime_factor: walltime = runtime × U(low, high).
        aps_share_of: ``"total"`` (RTJs are R % of the result) or ``"batch"`` (R % of the trace).
        machine_blocks: the machine the injected sizes are rounded for (512-node blocks).
        noncheckpointable_percent: share (%) of BJs flagged never-preemptable.
    """

    percent: float
    mode: MarkingMode = "random"
    seed: int = 0
    short_max_runtime: int = 90 * 60
    aps_path: str | None = None
    aps_node_scale: float = 2048.0
    aps_walltime_factor: tuple[float, float] = (1.0, 2.0)
    aps_share_of: Literal["total", "batch"] = "total"
    machine_blocks: int = MIRA_BLOCKS
    noncheckpointable_percent: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.percent <= 100.0:
            raise ValueError(f"RtMarking.percent must be within [0, 100], got {self.percent}")
        if self.mode not in MARKING_MODES:
            raise ValueError(f"RtMarking.mode must be one of {MARKING_MODES}, got {self.mode!r}")
        if self.mode == "aps" and self.aps_share_of == "total" and self.percent >= 100.0:
            raise ValueError("RtMarking: aps mode cannot make RTJs 100 % of the workload (aps_share_of='total')")
        if self.aps_share_of not in ("total", "batch"):
            raise ValueError(f"RtMarking.aps_share_of must be 'total' or 'batch', got {self.aps_share_of!r}")
        low, high = self.aps_walltime_factor
        if not 1.0 <= low <= high:
            raise ValueError(f"RtMarking.aps_walltime_factor must satisfy 1 <= low <= high, got {self.aps_walltime_factor}")
        if not 0.0 <= self.noncheckpointable_percent <= 100.0:
            raise ValueError("RtMarking.noncheckpointable_percent must be within [0, 100]")
        if self.short_max_runtime <= 0 or self.aps_node_scale <= 0:
            raise ValueError("RtMarking.short_max_runtime and aps_node_scale must be positive")

    @property
    def label(self) -> str:
        mode = "random" if self.mode == "default" else self.mode
        return f"{mode}-{self.percent:g}%-seed{self.seed}"


def _rng(seed: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([seed, stream])


def _count(n: int, percent: float) -> int:
    """round-half-up(n × percent / 100): the number of jobs R % of ``n`` stands for."""
    return int(math.floor(n * percent / 100.0 + 0.5))


def mark_realtime(workload: Workload, marking: RtMarking) -> Workload:
    """A copy of ``workload`` with its real-time jobs chosen (or injected) as ``marking`` says.

    Jobs already marked real-time in the input are first reset to batch: the marking defines the
    RTJs completely, so marking the same trace twice gives the same result.
    """
    jobs = [j if j.kind == BATCH else j.with_kind(BATCH) for j in workload.jobs]
    header = dict(workload.header)
    header["rt_marking"] = marking.label
    if marking.mode in ("random", "default", "short"):
        jobs = _mark_existing(jobs, marking, header)
    else:
        jobs = jobs + _inject_aps(jobs, marking, header)
    jobs = _flag_noncheckpointable(jobs, marking)
    marked = Workload(jobs, name=workload.name, max_nodes=workload.max_nodes, start_time=workload.start_time,
                      header=header)
    return marked


def _mark_existing(jobs: list[Job], marking: RtMarking, header: dict[str, str]) -> list[Job]:
    wanted = _count(len(jobs), marking.percent)
    if marking.mode == "short":
        eligible = np.array([i for i, j in enumerate(jobs) if j.runtime < marking.short_max_runtime], dtype=np.int64)
    else:
        eligible = np.arange(len(jobs), dtype=np.int64)
    take = min(wanted, len(eligible))
    if take < wanted:
        header["rt_marking_shortfall"] = str(wanted - take)
    chosen = _rng(marking.seed, _STREAM_MARK).choice(eligible, size=take, replace=False) if take else []
    out = list(jobs)
    for i in chosen:
        out[int(i)] = out[int(i)].with_kind(RT)
    return out


def _inject_aps(jobs: list[Job], marking: RtMarking, header: dict[str, str]) -> list[Job]:
    n = len(jobs)
    if marking.aps_share_of == "batch":
        count = _count(n, marking.percent)
    else:  # RTJs = R % of (n + count)  ⇔  count = n·R / (100 − R)
        count = int(math.floor(n * marking.percent / (100.0 - marking.percent) + 0.5))
    if count == 0:
        return []
    if n == 0:
        raise InputError("aps marking needs a non-empty trace (its submit span places the RTJs)",
                         field="jobs")
    rng = _rng(marking.seed, _STREAM_APS)
    runtimes, source = _aps_runtimes(marking, rng, count)
    header["rt_marking_aps_source"] = source
    machine_nodes = marking.machine_blocks * BLOCK_NODES
    # Exp(scale) node counts; ceil so that a draw below 1 node still asks for one (→ 512-node block).
    raw_nodes = np.ceil(rng.exponential(marking.aps_node_scale, size=count)).astype(np.int64)
    nodes = [round_up_to_partition(int(min(max(x, 1), machine_nodes)), marking.machine_blocks) for x in raw_nodes]
    low, high = marking.aps_walltime_factor
    factors = rng.uniform(low, high, size=count)
    first = min(j.submit for j in jobs)
    last = max(j.submit for j in jobs)
    submits = rng.integers(first, last + 1, size=count)
    next_id = max(j.id for j in jobs) + 1
    injected = []
    for k in range(count):
        runtime = int(runtimes[k])
        injected.append(Job(id=next_id + k, submit=int(submits[k]), runtime=runtime,
                            walltime=max(runtime, int(math.ceil(runtime * factors[k]))), nodes=nodes[k], kind=RT,
                            queue="aps"))
    return injected


def _aps_runtimes(marking: RtMarking, rng: np.random.Generator, count: int) -> tuple[np.ndarray, str]:
    """``count`` APS runtimes (s) and a label of where they came from."""
    if marking.aps_path != "model":
        path = Path(marking.aps_path) if marking.aps_path else DEFAULT_APS_SAMPLE
        if marking.aps_path or path.exists():
            sample = read_aps_sample(str(path))
            return rng.choice(sample, size=count, replace=True), f"sample:{path.name}"
    model = aps_model()
    return sample_aps_model(model, rng, count), "model:aps_model.json"


@lru_cache(maxsize=8)
def read_aps_sample(path: str) -> np.ndarray:
    """The APS runtimes (s) of a one-value-a-line file; blank lines and ``#`` comments skipped."""
    values: list[int] = []
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"cannot read the APS runtime sample: {exc.strerror}", path=path) from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        item = line.split("#", 1)[0].strip()
        if not item:
            continue
        try:
            value = float(item)
        except ValueError:
            raise InputError(f"not a number: {item!r}", path=path, line=lineno, field="runtime") from None
        if not math.isfinite(value) or value <= 0:
            raise InputError(f"runtime must be a positive number of seconds, got {item!r}", path=path,
                             line=lineno, field="runtime")
        values.append(int(math.ceil(value)))
    if not values:
        raise InputError("the APS runtime sample is empty", path=path)
    return np.asarray(values, dtype=np.int64)


@lru_cache(maxsize=1)
def aps_model() -> dict:
    """The shipped log-normal mixture fitted to the APS sample (``scripts/fit_aps.py``)."""
    with open(APS_MODEL_PATH) as fh:
        model = json.load(fh)
    k = len(model["weights"])
    if not (k == len(model["mu"]) == len(model["sigma"])) or abs(sum(model["weights"]) - 1.0) > 1e-3:
        raise InputError("inconsistent mixture (weights, mu, sigma)", path=str(APS_MODEL_PATH), field="weights")
    return model


def sample_aps_model(model: dict, rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` runtimes (s) from the log-normal mixture: ln(runtime) ~ Σ w_k N(μ_k, σ_k²), rounded and clipped."""
    weights = np.asarray(model["weights"], dtype=float)
    component = rng.choice(len(weights), size=count, p=weights / weights.sum())
    mu = np.asarray(model["mu"])[component]
    sigma = np.asarray(model["sigma"])[component]
    values = np.rint(np.exp(rng.normal(mu, sigma)))
    return np.clip(values, model["min_s"], model["max_s"]).astype(np.int64)


def _flag_noncheckpointable(jobs: list[Job], marking: RtMarking) -> list[Job]:
    if marking.noncheckpointable_percent <= 0:
        return jobs
    batch = np.array([i for i, j in enumerate(jobs) if j.kind == BATCH], dtype=np.int64)
    take = _count(len(batch), marking.noncheckpointable_percent)
    if take == 0:
        return jobs
    chosen = _rng(marking.seed, _STREAM_NOCKPT).choice(batch, size=take, replace=False)
    out = list(jobs)
    for i in chosen:
        out[int(i)] = replace(out[int(i)], checkpointable=False)
    return out
