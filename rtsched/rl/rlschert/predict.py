"""Remaining-runtime prediction for RLSchert (seed 001 §2), from what public traces hold.

The paper predicts a VASP job's runtime twice: before it starts (``len_param``, XGBoost on 26
VASP input parameters and system-log fields) and at every 5-min step while it runs (an RNN over
the run's energy-change and force series, combined with the input parameters).  Public traces
have neither the input files nor per-step run features, so here:

* **Before the start** (``PrerunModel``): a small MLP on job and user features known at submit
  time — log requested time (walltime), log nodes, the user's last two finished runtimes and the
  mean of their last ten (log, with a flag when the user has no history yet), the queue (one-hot,
  the most frequent queues), the hour of the day (sin, cos) — trained on the log runtime with an
  L1 loss and then on the MAPE itself (|ŷ − y| / y, the paper's Eq. 12, in 5-min units as the
  paper's discretised runtimes: see ``mape``).  Traces whose requested time *is* the runtime
  (Lublin: requested time −1, replaced by the actual runtime) drop the walltime feature and cap:
  it would leak the answer.
* **While running** — the substitute for the per-step run features: a *conditional model on the
  elapsed time*.  With ``μ(x)`` the log-median fit (the first, L1 stage of the pre-run model) and
  ``ε`` its training residuals (256 quantiles), the job's runtime is modelled as
  ``exp(μ(x) + ε)`` (capped at the walltime when it is a real cap: the mass above it sits on the
  walltime); knowing that it has already run ``e`` seconds, the estimate is the 1/y-weighted
  median (the MAPE-optimal point) of the candidates above ``e``.  When no candidate is above ``e``
  the estimate is ``e·(1 + 0.1)`` (``FALLBACK_OVERRUN``).  It is a non-parametric survival
  (hazard) model located at the pre-run fit; it changes with elapsed time as the paper's dynamic
  predictor does, but from elapsed time alone.
* **Baselines**: walltime as the estimate (``max(walltime, e)`` while running), and the user's
  history (the mean of the user's last two finished runtimes, Tsafrir et al.'s estimate; walltime
  while the user has none).

History is causal: a job sees the runtimes of jobs of its user that *ended* before its submit
time, the end approximated by submit + runtime (the workload does not keep the trace's waits).
Jobs of unknown user (−1) count as one user (for Mira's logs: "the recent jobs").  Times in s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rtsched.jobs import Workload

PREFIXES = tuple(round(0.1 * k, 1) for k in range(1, 11))  # 10 %, 20 %, …, 100 % of the run (seed 001 §2.4)
N_QUEUES = 8
UNIT_S = 300  # the paper's time unit, s (5 min)
FALLBACK_OVERRUN = 0.1  # a job past every candidate: estimate elapsed · (1 + this)
RESIDUAL_QUANTILES = 256


def to_units(seconds, unit: int = UNIT_S) -> np.ndarray:
    """Runtimes in the paper's units (seed 001 §1.1): ⌈s / unit⌉, at least 1."""
    return np.maximum(1.0, np.ceil(np.asarray(seconds, dtype=np.float64) / unit))


def mape(y, yhat, unit: int | None = UNIT_S) -> float:
    """Mean absolute percentage error (seed 001 Eq. 12), in %: 100 · mean(|y − ŷ| / y).

    With ``unit`` (s; the default is the paper's 5 min) both are taken in that unit, the actual
    runtime rounded up (at least 1 unit, as the paper's discretised runtimes) and the estimate at
    least 1 unit: one-second jobs would otherwise dominate the mean.  ``unit=None``: raw values."""
    y = np.asarray(y, dtype=np.float64)
    yhat = np.asarray(yhat, dtype=np.float64)
    if unit is not None:
        y = to_units(y, unit)
        yhat = np.maximum(1.0, yhat / unit)
    return float(100.0 * np.mean(np.abs(y - yhat) / y))


def running_mape(y, running, fractions=tuple(np.round(np.arange(0.1, 1.01, 0.1), 2))) -> list[float]:
    """MAPE (%, raw units) of the running predictions at each fraction of the jobs' runtimes
    (seed 001 Fig. 6): for each fraction f, job i's prediction after ``min(int(f · y_i), y_i − 1)``
    slots of running (``running[i][e]``: the predicted total length after e slots) against y_i."""
    y = [int(v) for v in y]
    return [mape(y, [r[min(int(f * yy), yy - 1)] for r, yy in zip(running, y)], unit=None) for f in fractions]


def walltime_is_runtime(workload: Workload, share: float = 0.95) -> bool:
    """Whether the trace's requested times are (almost all) the runtimes themselves (Lublin)."""
    jobs = workload.jobs
    return bool(jobs) and sum(j.walltime == j.runtime for j in jobs) >= share * len(jobs)


def user_history(workload: Workload) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per job (in workload order): the mean of the user's last 2 finished runtimes, the mean of
    the log of the last 10, and how many finished jobs the user had (0: no history; the first two
    are NaN then).  "Finished" = submit + runtime ≤ this job's submit (causal)."""
    jobs = workload.jobs
    n = len(jobs)
    last2 = np.full(n, np.nan)
    loglast10 = np.full(n, np.nan)
    count = np.zeros(n, dtype=np.int64)
    ends = sorted(range(n), key=lambda i: jobs[i].submit + jobs[i].runtime)
    done: dict[int, list[int]] = {}
    k = 0
    for i in range(n):  # jobs are in submit order
        t = jobs[i].submit
        while k < n and jobs[ends[k]].submit + jobs[ends[k]].runtime <= t:
            j = jobs[ends[k]]
            done.setdefault(j.user, []).append(j.runtime)
            k += 1
        h = done.get(jobs[i].user)
        if h:
            last2[i] = float(np.mean(h[-2:]))
            loglast10[i] = float(np.mean(np.log(h[-10:])))
            count[i] = len(h)
    return last2, loglast10, count


def user_history_estimate(workload: Workload) -> np.ndarray:
    """The user-history baseline: the mean of the user's last two finished runtimes, or the walltime
    while the user has none (s)."""
    last2, _, _ = user_history(workload)
    wall = np.array([j.walltime for j in workload.jobs], dtype=np.float64)
    return np.where(np.isnan(last2), wall, last2)


@dataclass
class PrerunModel:
    """The pre-run predictor (see module docstring).  ``fit`` then ``predict``; ``running`` for the
    conditional estimate while a job runs."""

    use_walltime: bool = True
    hidden: int = 32
    epochs: int = 400
    seed: int = 0
    queues: list[str] = field(default_factory=list)
    mean_: np.ndarray | None = None
    std_: np.ndarray | None = None
    weights_: list | None = None
    loc_weights_: list | None = None
    unit: int = UNIT_S
    residuals_: np.ndarray | None = None

    # ------------------------------------------------------------------------------ features
    def features(self, workload: Workload) -> np.ndarray:
        jobs = workload.jobs
        last2, loglast10, count = user_history(workload)
        logn = np.log([j.nodes for j in jobs])
        hour = np.array([(j.submit % 86400) / 86400.0 for j in jobs]) * 2 * math.pi
        has = count > 0
        prior = np.log(np.array([j.walltime for j in jobs], dtype=np.float64)) if self.use_walltime else \
            np.full(len(jobs), np.nan)
        fill = np.nanmean(prior) if self.use_walltime else 0.0
        cols = [logn, np.sin(hour), np.cos(hour), has.astype(np.float64),
                np.where(has, np.log(np.where(has, last2, 1.0)), fill),
                np.where(has, loglast10, fill), np.log1p(count)]
        if self.use_walltime:
            cols.insert(0, prior)
        qs = [j.queue for j in jobs]
        for q in self.queues:
            cols.append(np.array([x == q for x in qs], dtype=np.float64))
        return np.stack(cols, axis=1)

    def fit(self, workload: Workload) -> "PrerunModel":
        """Train on every job of ``workload`` (their features use only earlier jobs)."""
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)  # a tiny network: threads only add hand-offs (and the machine is shared)
        try:
            return self._fit(workload)
        finally:
            torch.set_num_threads(before)

    def _fit(self, workload: Workload) -> "PrerunModel":
        import torch

        if self.use_walltime and walltime_is_runtime(workload):
            self.use_walltime = False
        counts: dict[str, int] = {}
        for j in workload.jobs:
            counts[j.queue] = counts.get(j.queue, 0) + 1
        self.queues = [q for q, c in sorted(counts.items(), key=lambda kv: -kv[1])[:N_QUEUES] if len(counts) > 1]
        x = self.features(workload)
        self.mean_ = x.mean(axis=0)
        self.std_ = x.std(axis=0) + 1e-6
        y = np.array([j.runtime for j in workload.jobs], dtype=np.float64)
        torch.manual_seed(self.seed)
        xt = torch.as_tensor((x - self.mean_) / self.std_, dtype=torch.float32)
        ly = torch.as_tensor(np.log(y), dtype=torch.float32)
        yt = torch.as_tensor(to_units(y, self.unit), dtype=torch.float32)
        log_unit = math.log(self.unit)
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], self.hidden), torch.nn.ReLU(),
                                  torch.nn.Linear(self.hidden, self.hidden), torch.nn.ReLU(),
                                  torch.nn.Linear(self.hidden, 1))
        with torch.no_grad():
            net[-1].bias.fill_(float(ly.median()))
        opt = torch.optim.Adam(net.parameters(), lr=1e-2, weight_decay=1e-4)
        for epoch in range(self.epochs):
            if epoch == self.epochs // 2:
                self.loc_weights_ = _numpy_layers(net)
            out = net(xt).squeeze(-1)
            if epoch < self.epochs // 2:
                loss = (out - ly).abs().mean()  # the log-median first: stable
            else:
                est = torch.clamp(torch.exp((out - log_unit).clamp(max=30.0)), min=1.0)
                loss = ((est - yt).abs() / yt).mean()  # then MAPE itself, in units
            opt.zero_grad()
            loss.backward()
            opt.step()
        self.weights_ = _numpy_layers(net)
        res = np.log(y) - self._mu(x, self.loc_weights_)
        # RESIDUAL_QUANTILES evenly spaced quantiles stand for the sample: ``running`` is called at
        # every decision for every visible running job
        self.residuals_ = np.quantile(res, (np.arange(RESIDUAL_QUANTILES) + 0.5) / RESIDUAL_QUANTILES)
        return self

    def _mu(self, x: np.ndarray, layers=None) -> np.ndarray:
        layers = layers or self.weights_
        if layers is None:
            raise RuntimeError("PrerunModel: call fit() first")
        h = (x - self.mean_) / self.std_
        for i, (w, b) in enumerate(layers):
            h = h @ w + b
            if i < len(layers) - 1:
                h = np.maximum(h, 0.0)
        return h[:, 0]

    def location(self, workload: Workload) -> np.ndarray:
        """The log-median fit exp(μ(x)) of the jobs' runtimes, s: the conditional model's location
        (``running``'s first argument)."""
        return np.exp(self._mu(self.features(workload), self.loc_weights_))

    def predict(self, workload: Workload) -> np.ndarray:
        """The MAPE-optimal pre-run estimates of the jobs' runtimes, s (at least one unit, which is
        how MAPE counts them; ≤ walltime when it is a real cap)."""
        est = np.maximum(np.exp(self._mu(self.features(workload))), float(self.unit))
        if self.use_walltime:
            est = np.minimum(est, [j.walltime for j in workload.jobs])
        return np.maximum(est, 1.0)

    def running(self, location: float, elapsed: float, walltime: float | None = None) -> float:
        """The estimate of the total runtime (s) of a job of location ``location`` (``location()``)
        known to have run ``elapsed`` s and to be still running (see module docstring);
        ``walltime`` caps it when given."""
        ys = np.exp(math.log(max(location, 1e-9)) + self.residuals_)  # sorted
        if walltime is not None:
            ys = np.minimum(ys, float(walltime))
        ys = ys[np.searchsorted(ys, elapsed, side="right"):]
        if len(ys):
            c = np.cumsum(1.0 / ys)
            est = float(ys[np.searchsorted(c, 0.5 * c[-1])])
        else:
            est = elapsed * (1.0 + FALLBACK_OVERRUN)
        if walltime is not None:
            est = min(est, float(walltime))
        return max(est, float(elapsed) + 1.0)


def _numpy_layers(net) -> list:
    import torch

    return [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy())
            for m in net if isinstance(m, torch.nn.Linear)]


def chronological_split(workload: Workload, test_share: float = 0.2) -> tuple[Workload, Workload]:
    """The first (1 − share) of the jobs (by submit) and the rest, as two workloads.  The test
    part keeps the earlier jobs' history: callers evaluate on ``whole`` and mask (see
    ``evaluate_predictors``)."""
    n = len(workload.jobs)
    cut = int(round(n * (1 - test_share)))
    return workload.replace_jobs(workload.jobs[:cut]), workload.replace_jobs(workload.jobs[cut:])


def evaluate_predictors(workload: Workload, test_share: float = 0.2, seed: int = 0, epochs: int = 400) -> dict:
    """MAPE (%) on the last ``test_share`` of the jobs of a model trained on the others.

    Returns ``{"jobs", "train", "test", "walltime", "user_history", "prerun", "running",
    "running_by_prefix", "use_walltime", "unit"}`` (MAPE in the paper's 5-min units, ``mape``):
    walltime as estimate, user-history average, the pre-run model, and the conditional model
    averaged over the 10 prefixes 10 %, …, 100 % of each job's run (at a prefix f the job has run e = min(f·y, y − 1) s and is known to be still running;
    seed 001 §2.4's protocol) with each prefix's value."""
    n = len(workload.jobs)
    cut = int(round(n * (1 - test_share)))
    train, _ = chronological_split(workload, test_share)
    model = PrerunModel(seed=seed, epochs=epochs).fit(train)
    y = np.array([j.runtime for j in workload.jobs], dtype=np.float64)[cut:]
    wall = np.array([j.walltime for j in workload.jobs], dtype=np.float64)[cut:]
    pre = model.predict(workload)[cut:]  # features of the test jobs use the whole earlier history
    loc = model.location(workload)[cut:]
    hist = user_history_estimate(workload)[cut:]
    by_prefix = {}
    cap = wall if model.use_walltime else [None] * len(y)
    for f in PREFIXES:
        e = np.minimum(np.floor(f * y), y - 1)
        est = [model.running(m, ei, c) for m, ei, c in zip(loc, e, cap)]
        by_prefix[f] = mape(y, est)
    return {"jobs": n, "train": cut, "test": n - cut, "use_walltime": model.use_walltime, "unit": model.unit,
            "walltime": mape(y, wall), "user_history": mape(y, hist), "prerun": mape(y, pre),
            "running": float(np.mean(list(by_prefix.values()))), "running_by_prefix": by_prefix}


__all__ = ["PREFIXES", "UNIT_S", "PrerunModel", "to_units", "chronological_split", "evaluate_predictors", "mape",
           "user_history", "user_history_estimate", "walltime_is_runtime"]
