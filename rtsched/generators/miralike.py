"""A Mira-like workload: sizes, walltimes, runtimes and arrivals drawn from the shipped fit to the
2018 Mira logs (``miralike_params.json``, written by ``scripts/fit_miralike.py``).

The model is empirical, not parametric; every table is in the JSON and documented in
``docs/generators.md``:

* Size: a Mira partition size (512 .. 49152 nodes) drawn from the logs' size frequencies
  (``sizes.nodes`` / ``sizes.count``; requests are rounded up to a partition size).
* Walltime: given the size's class (``size_classes``), a requested walltime (s) drawn from the
  class's empirical table (``walltime_s`` with ``walltime_count``).
* Runtime: ``ratio = runtime / walltime`` drawn from the quantile function (piecewise linear
  between the points ``runtime.ratio_quantile_probs``) of the job's group in ``runtime.groups``,
  the most specific that holds it: a group of its size class (``nodes``) and exact walltime, or
  of its size class and a band (lo, hi] of walltimes (the wide classes: any walltime), then a
  group of its exact walltime, then the pooled band holding its walltime; runtime =
  round(ratio * walltime) clipped to [1, walltime] s, so walltime >= runtime always holds.
* Arrivals: a renewal process in "operational time" with the daily cycle put back.  Gaps are drawn
  from the quantile function ``gap_quantiles`` at ``gap_quantile_probs`` (mean 1, in units of the mean gap
  86400 / ``jobs_per_day`` s); operational time tau runs at rate ``hourly_profile[h]`` (mean 1) during
  local hour h, so tau(t) = integral of the profile from 0 to t and each arrival's clock time is
  tau^-1 of the cumulated gaps.  t = 0 is local midnight; times are whole seconds (floored).
  ``jobs_per_day`` is fitted jointly with the job tables: it is the logs' offered node-seconds per
  day divided by the model's mean node-seconds per job (``mean_node_seconds``), so the generated
  offered load (``offered_load``) is the logs' (docs/generators.md).

Independent ``SeedSequence`` streams drive the arrivals, sizes, walltimes and ratios, so a longer
trace with the same seed starts with the jobs of a shorter one.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from rtsched.jobs import Job, Workload

PARAMS_PATH = Path(__file__).with_name("miralike_params.json")
SECONDS_PER_DAY = 86_400
SECONDS_PER_HOUR = 3_600


@dataclass(frozen=True)
class SizeClass:
    """The table of requested walltimes shared by a group of partition sizes."""

    nodes: tuple[int, ...]
    walltime_s: np.ndarray  # distinct requested walltimes, s
    walltime_cdf: np.ndarray  # cumulative probability of each walltime


@dataclass(frozen=True)
class RatioGroup:
    """Quantiles of runtime / walltime for the jobs of the sizes ``nodes`` (empty: any size) and of
    one walltime (``lo == hi``) or a band (lo, hi] of walltimes, s."""

    lo: int
    hi: int
    ratio_quantiles: np.ndarray
    nodes: tuple[int, ...] = ()

    def holds(self, walltime: int, nodes: int) -> bool:
        if self.nodes and nodes not in self.nodes:
            return False
        return walltime == self.hi if self.lo == self.hi else self.lo < walltime <= self.hi

    def mean(self, probs: np.ndarray) -> float:
        """Mean ratio of the piecewise-linear quantile function through (probs, ratio_quantiles)."""
        return float(np.sum(np.diff(probs) * (self.ratio_quantiles[1:] + self.ratio_quantiles[:-1]) / 2.0))

    def mean_inverse_bounded(self, probs: np.ndarray, walltime: float, tau: float) -> float:
        """E[1 / max(p, tau)] (1/s) for the runtime p = ratio · walltime (s): exact for the piecewise-linear
        quantile function, segment by segment (1/tau where p < tau, the integral of 1/p above; the
        generator's rounding to whole seconds is left out).  The weight of a job's wait in a bounded
        slowdown with bound tau."""
        if tau <= 0 or walltime <= 0:
            raise ValueError(f"tau and walltime must be positive, got {tau}, {walltime}")
        total = 0.0
        q = self.ratio_quantiles
        for u0, u1, r0, r1 in zip(probs[:-1].tolist(), probs[1:].tolist(), q[:-1].tolist(), q[1:].tolist()):
            du = u1 - u0
            p0, p1 = r0 * walltime, r1 * walltime  # p1 >= p0: the quantiles rise
            if du <= 0:
                continue
            if p1 <= tau:
                total += du / tau
                continue
            if p0 < tau:  # the segment crosses tau: its part below counts at 1/tau
                below = du * (tau - p0) / (p1 - p0)
                total += below / tau
                du, p0 = du - below, tau
            total += du / p0 if p1 == p0 else du * math.log(p1 / p0) / (p1 - p0)
        return total


@dataclass(frozen=True)
class MiraLikeParams:
    """The fitted model, as loaded from ``miralike_params.json``."""

    machine_nodes: int
    partition_sizes: tuple[int, ...]
    jobs_per_day: float
    hourly_profile: np.ndarray  # 24 rates, mean 1, hour 0 = local midnight
    gap_probs: np.ndarray  # probabilities of the gap quantile points (0 .. 1, finer in the tail)
    gap_quantiles: np.ndarray  # operational-time gaps (mean 1) at those probabilities
    size_nodes: np.ndarray  # partition sizes seen in the logs
    size_cdf: np.ndarray  # cumulative probability of each size
    classes: tuple[SizeClass, ...]
    ratio_probs: np.ndarray  # probabilities of the ratio quantile points
    ratio_groups: tuple[RatioGroup, ...]  # size-specific first; within each, single walltimes before bands
    sha256: str  # of the JSON file, recorded in generated headers

    def class_of(self, nodes: int) -> int:
        for i, c in enumerate(self.classes):
            if nodes in c.nodes:
                return i
        raise ValueError(f"partition size {nodes} is in no size class of the Mira-like model")

    def ratio_group_of(self, walltime: int, nodes: int) -> int:
        for i, g in enumerate(self.ratio_groups):  # the first that holds: the most specific
            if g.holds(walltime, nodes):
                return i
        raise ValueError(f"walltime {walltime} s on {nodes} nodes is in no runtime group of the Mira-like model")


def _cdf(counts: list[int]) -> np.ndarray:
    c = np.cumsum(np.asarray(counts, dtype=float))
    return c / c[-1]


def load_params(path: str | Path = PARAMS_PATH) -> MiraLikeParams:
    """Load and check a Mira-like parameter file (ValueError naming the file and key if malformed)."""
    resolved = Path(path).resolve()
    return _load_params(str(resolved), resolved.stat().st_mtime_ns)  # a rewritten file is reloaded


@lru_cache(maxsize=4)
def _load_params(path: str, mtime_ns: int) -> MiraLikeParams:
    raw = Path(path).read_bytes()
    try:
        d = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{path}: malformed Mira-like parameters ({type(exc).__name__}: {exc})") from None
    return params_from_dict(d, path, hashlib.sha256(raw).hexdigest())


def _ratio_group(g: dict) -> RatioGroup:
    q = np.asarray(g["ratio_quantiles"], dtype=float)
    nodes = tuple(int(n) for n in g.get("nodes", ()))
    if "walltime_s" in g:
        return RatioGroup(int(g["walltime_s"]), int(g["walltime_s"]), q, nodes)
    return RatioGroup(int(g["walltime_band_s"][0]), int(g["walltime_band_s"][1]), q, nodes)


def params_from_dict(d: dict, path: str = "<dict>", sha256: str = "") -> MiraLikeParams:
    """Build and check the model from the parsed JSON ``d`` (ValueError naming ``path`` and the key)."""
    try:
        arr = d["arrivals"]
        classes = tuple(
            SizeClass(tuple(int(n) for n in c["nodes"]), np.asarray(c["walltime_s"], dtype=np.int64),
                      _cdf(c["walltime_count"]))
            for c in d["size_classes"])
        rt = d["runtime"]
        groups = tuple(_ratio_group(g) for g in rt["groups"])
        # size-specific groups first; within each kind, exact walltimes before bands
        groups = tuple(sorted(groups, key=lambda g: (not g.nodes, g.lo != g.hi)))
        p = MiraLikeParams(
            machine_nodes=int(d["machine_nodes"]), partition_sizes=tuple(int(v) for v in d["partition_sizes"]),
            jobs_per_day=float(arr["jobs_per_day"]), hourly_profile=np.asarray(arr["hourly_profile"], dtype=float),
            gap_probs=np.asarray(arr["gap_quantile_probs"], dtype=float),
            gap_quantiles=np.asarray(arr["gap_quantiles"], dtype=float),
            size_nodes=np.asarray(d["sizes"]["nodes"], dtype=np.int64), size_cdf=_cdf(d["sizes"]["count"]),
            classes=classes, ratio_probs=np.asarray(rt["ratio_quantile_probs"], dtype=float),
            ratio_groups=groups, sha256=sha256)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: malformed Mira-like parameters ({type(exc).__name__}: {exc})") from None
    if len(p.hourly_profile) != 24 or np.any(p.hourly_profile <= 0):
        raise ValueError(f"{path}: arrivals.hourly_profile must be 24 positive rates")
    if p.jobs_per_day <= 0 or np.any(np.diff(p.gap_quantiles) < 0) or p.gap_quantiles[0] < 0:
        raise ValueError(f"{path}: arrivals.jobs_per_day must be > 0 and gap_quantiles non-decreasing, >= 0")
    for key, probs, n in (("arrivals.gap_quantile_probs", p.gap_probs, len(p.gap_quantiles)),
                          ("runtime.ratio_quantile_probs", p.ratio_probs, None)):
        if probs[0] != 0 or probs[-1] != 1 or np.any(np.diff(probs) <= 0) or (n is not None and len(probs) != n):
            raise ValueError(f"{path}: {key} must rise strictly from 0 to 1, one per quantile")
    try:
        for s in p.size_nodes.tolist():
            if s not in p.partition_sizes:
                raise ValueError(f"sizes.nodes has {s}, not a partition size")
            p.class_of(s)
        for c in p.classes:
            if np.any(c.walltime_s < 1):
                raise ValueError(f"size class {list(c.nodes)}: walltimes must be >= 1 s")
            for w in c.walltime_s.tolist():
                for n in c.nodes:
                    p.ratio_group_of(w, n)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    for g in p.ratio_groups:
        q = g.ratio_quantiles
        if len(q) != len(p.ratio_probs) or np.any(np.diff(q) < 0) or q[0] < 0 or q[-1] > 1:
            what = f"({g.lo}, {g.hi}] s" + (f" on {list(g.nodes)} nodes" if g.nodes else "")
            raise ValueError(f"{path}: runtime group {what}: ratio_quantiles must rise within [0, 1], "
                             "one per probability")
    return p


def mean_node_seconds(p: MiraLikeParams) -> float:
    """Expected node-seconds (size x runtime) of one generated job, from the tables (exact up to the
    rounding of runtimes to whole seconds)."""
    size_p = np.diff(np.concatenate([[0.0], p.size_cdf]))
    total = 0.0
    for nodes, prob in zip(p.size_nodes.tolist(), size_p.tolist()):
        c = p.classes[p.class_of(nodes)]
        wall_p = np.diff(np.concatenate([[0.0], c.walltime_cdf]))
        runtime = sum(wp * w * p.ratio_groups[p.ratio_group_of(w, nodes)].mean(p.ratio_probs)
                      for w, wp in zip(c.walltime_s.tolist(), wall_p.tolist()))
        total += prob * nodes * runtime
    return total


def offered_load(p: MiraLikeParams, load: float = 1.0) -> float:
    """Expected offered load of the model: node-seconds submitted per second / machine nodes."""
    return p.jobs_per_day * load * mean_node_seconds(p) / (SECONDS_PER_DAY * p.machine_nodes)


@lru_cache(maxsize=65536)
def runtime_prior(walltime: int, nodes: int, tau: float) -> tuple[float, float]:
    """What the shipped fit to Mira's logs expects of a job's runtime p given its request: (E[1 / max(p,
    tau)] in 1/s, E[p] in s) under the ratio group of (``walltime`` s, ``nodes``) (``RatioGroup``).  A
    scheduler may use it as its prior: the requested walltime is all it sees (``heuristics.priorities``'
    ``wsept`` orders).  Cached per request."""
    p = load_params()
    group = p.ratio_groups[p.ratio_group_of(int(walltime), int(nodes))]
    return group.mean_inverse_bounded(p.ratio_probs, float(walltime), float(tau)), group.mean(p.ratio_probs) * walltime


def quantile_draw(probs: np.ndarray, quantiles: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws: the piecewise-linear quantile function through (probs, quantiles) at ``u``."""
    return np.interp(u, probs, quantiles)


def operational_clock(profile: np.ndarray, days: float) -> tuple[np.ndarray, np.ndarray]:
    """Knots (t in s, tau in s) of the piecewise-linear operational clock over ``days`` (+1 hour)."""
    hours = math.ceil(days * 24) + 1
    t = np.arange(hours + 1, dtype=float) * SECONDS_PER_HOUR
    rates = profile[np.arange(hours) % 24]
    tau = np.concatenate([[0.0], np.cumsum(rates * SECONDS_PER_HOUR)])
    return t, tau


def miralike_arrivals(days: float, p: MiraLikeParams, rng: np.random.Generator, load: float = 1.0) -> np.ndarray:
    """Arrival times (s, int64, non-decreasing) in [0, days * 86400) of the Mira-like process.

    ``load`` multiplies the arrival rate (1.0: the logs' rate).
    """
    t_knots, tau_knots = operational_clock(p.hourly_profile, days)
    horizon = days * SECONDS_PER_DAY
    tau_end = float(np.interp(horizon, t_knots, tau_knots))
    mean_gap = SECONDS_PER_DAY / (p.jobs_per_day * load)  # operational s
    chunk = max(64, int(tau_end / mean_gap * 1.2))
    taus: list[np.ndarray] = []
    last = 0.0
    while last < tau_end:  # draw in chunks: the uniforms of a longer trace extend those of a shorter one
        gaps = quantile_draw(p.gap_probs, p.gap_quantiles, rng.random(chunk)) * mean_gap
        block = last + np.cumsum(gaps)
        taus.append(block)
        last = float(block[-1])
    tau = np.concatenate(taus)
    tau = tau[tau < tau_end]
    t = np.floor(np.interp(tau, tau_knots, t_knots)).astype(np.int64)
    return t[t < horizon]


def miralike_jobs(n: int, p: MiraLikeParams, rngs: list[np.random.Generator]) -> tuple[np.ndarray, ...]:
    """(nodes, walltime s, runtime s) of ``n`` jobs, from three streams (size, walltime, ratio)."""
    size_rng, wall_rng, ratio_rng = rngs
    nodes = p.size_nodes[np.searchsorted(p.size_cdf, size_rng.random(n), side="right").clip(max=len(p.size_nodes) - 1)]
    u_wall = wall_rng.random(n)
    u_ratio = ratio_rng.random(n)
    walltime = np.empty(n, dtype=np.int64)
    ratio = np.empty(n)
    cls = np.array([p.class_of(s) for s in nodes.tolist()], dtype=np.int64)
    for i, c in enumerate(p.classes):
        sel = cls == i
        idx = np.searchsorted(c.walltime_cdf, u_wall[sel], side="right").clip(max=len(c.walltime_s) - 1)
        walltime[sel] = c.walltime_s[idx]
    pairs = list(zip(walltime.tolist(), nodes.tolist()))
    group_of = {wn: p.ratio_group_of(*wn) for wn in set(pairs)}
    grp = np.array([group_of[wn] for wn in pairs], dtype=np.int64)
    for i, g in enumerate(p.ratio_groups):
        sel = grp == i
        ratio[sel] = quantile_draw(p.ratio_probs, g.ratio_quantiles, u_ratio[sel])
    runtime = np.clip(np.floor(ratio * walltime + 0.5).astype(np.int64), 1, walltime)
    return nodes, walltime, runtime


def generate_miralike(days: float = 7.0, seed: int = 0, *, load: float = 1.0,
                      params: str | Path | None = None, name: str | None = None) -> Workload:
    """A seeded Mira-like workload of ``days`` days of arrivals on the 49,152-node Mira.

    Args:
        days: length of the arrival window (s = days * 86400); ``jobs_per_day`` of the parameters
            (see docs/generators.md) a day at load 1.
        seed: seed of NumPy's ``SeedSequence``; same seed, same workload.
        load: multiplies the arrival rate (sizes and times are unchanged); 1.0 offers the logs'
            node-hours (``offered_load(load_params())`` of the machine).
        params: a parameter JSON (default: the shipped ``miralike_params.json``).
    Returns:
        A ``Workload`` (ids 1..n in submit order, times in s, sizes in nodes, all sizes Mira
        partition sizes, walltime >= runtime) with ``max_nodes = 49152`` and the header line
        ``Machine: mira``, so that a run of the written trace picks the Mira model by itself.
    """
    if not days > 0 or not math.isfinite(days):
        raise ValueError(f"days must be a positive number, got {days}")
    if not load > 0 or not math.isfinite(load):
        raise ValueError(f"load must be a positive number, got {load}")
    params_path = Path(params) if params is not None else PARAMS_PATH
    p = load_params(params_path)
    arr_rng, size_rng, wall_rng, ratio_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4))
    submit = miralike_arrivals(days, p, arr_rng, load)
    nodes, walltime, runtime = miralike_jobs(len(submit), p, [size_rng, wall_rng, ratio_rng])
    jobs = [Job(i + 1, s, r, w, z) for i, (s, r, w, z) in
            enumerate(zip(submit.tolist(), runtime.tolist(), walltime.tolist(), nodes.tolist()))]
    header = {
        "Machine": "mira",  # rtsched.pipeline.machine_spec_for: the trace runs on Mira, not a flat cluster
        "Generator": "rtsched.generators.miralike: empirical fit to the 2018 Mira logs (scripts/fit_miralike.py)",
        "Parameters": f"days={days} load={load} params={params_path.name} sha256:{p.sha256[:16]}",
        "Seed": str(seed),
    }
    return Workload(jobs, name=name or "miralike", max_nodes=p.machine_nodes, header=header)
