"""The project's one metrics module: per-job table, group summaries, utilization (DESIGN.md "Metrics").

Everything that reports a slowdown, a wait or a utilization computes it here.  Definitions
(times in integer seconds, node figures in node-seconds unless a name says hours):

* turnaround = final end − submit; wait = turnaround − runtime (all time not spent on useful
  work: queueing, preemption, checkpoint/restart overheads, lost work — of preemptions and of
  kills, ``t_lost``); first_wait =
  first start − submit.
* slowdown SD = turnaround / runtime (seed 002, Def. 1).
* bounded slowdown, two forms, the bound τ named wherever a value is reported:
  - ``bsld_seed002`` (seed 002, Def. 2, τ = 600 s): (wait + max(runtime, τ)) / max(runtime, τ);
  - ``bsld_rl`` (RL papers, seeds 000/003, τ = 10 s): max(1, turnaround / max(runtime, τ)).
* categories (seed 002 §7.1.1): narrow = nodes ≤ 4096, wide = nodes > 4096 (on Mira: ≥ 4608);
  short = duration ≤ 7200 s, long > 7200 s; the duration is the runtime (study categories) or
  the walltime (WCJS thresholds) — see ``Categories``.
* utilization over a window [t0, t1): node-seconds of all schedule segments clipped to the
  window / (machine nodes × (t1 − t0)); overhead utilization: checkpoint writes + restart reads +
  run time whose progress was later lost, same clipping; productive utilization = utilization −
  overhead utilization (seed 002 eq. 26) = useful work / capacity.  Segments count the nodes
  they occupy (the allocation, e.g. a whole Mira partition).

Percentiles use NumPy's default linear interpolation between order statistics.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from rtsched.jobs import JOB_KINDS
from rtsched.schedule import CKPT, KINDS, RESTART, RUN, Schedule
from rtsched.series import step_series
from rtsched.sim.result import SimResult

TAU_SEED002 = 600  # s, seed 002's bound (10 min)
TAU_RL = 10  # s, the RL papers' bound
BsldForm = Literal["seed002", "rl"]
BSLD_FORMS: tuple[str, ...] = ("seed002", "rl")

CATEGORY_NAMES: tuple[str, ...] = ("narrow-short", "narrow-long", "wide-short", "wide-long")
STATS: tuple[str, ...] = ("mean", "median", "p5", "p25", "p75", "p95")
SUMMARY_METRICS: tuple[str, ...] = ("sd", "bsld_seed002", "bsld_rl", "wait", "first_wait", "turnaround")

# Columns of ``job_table`` in order (units: s, node-seconds, dimensionless ratios).
JOB_COLUMNS: tuple[str, ...] = (
    "id", "kind", "user", "nodes", "allocated_nodes", "runtime", "walltime", "submit", "first_start", "end",
    "turnaround", "wait", "first_wait", "sd", "bsld_seed002", "bsld_rl", "category", "n_preemptions",
    "n_kills", "t_ckpt", "t_restart", "t_lost", "t_pre", "jit_delay", "ckpt_node_seconds", "restart_node_seconds",
    "lost_node_seconds",
)


# ------------------------------------------------------------------------------- categories
@dataclass(frozen=True, slots=True)
class Categories:
    """Job categories of seed 002 §7.1.1.

    Attributes:
        narrow_max_nodes: a job with at most this many requested nodes is narrow, else wide.
        short_max_seconds: a job whose duration is at most this many seconds is short, else long.
        duration: ``"runtime"`` (the studies' categories, the default) or ``"walltime"``
            (what an online policy such as WCJS may use for its thresholds).
    """

    narrow_max_nodes: int = 4096
    short_max_seconds: int = 7200
    duration: Literal["runtime", "walltime"] = "runtime"

    def __post_init__(self) -> None:
        if self.duration not in ("runtime", "walltime"):
            raise ValueError(f"Categories.duration must be 'runtime' or 'walltime', got {self.duration!r}")

    def label(self, nodes: int, runtime: int, walltime: int) -> str:
        """The category name of one job (nodes; runtime and walltime in s)."""
        d = runtime if self.duration == "runtime" else walltime
        return ("narrow-" if nodes <= self.narrow_max_nodes else "wide-") + \
            ("short" if d <= self.short_max_seconds else "long")

    def labels(self, nodes: np.ndarray, runtime: np.ndarray, walltime: np.ndarray) -> np.ndarray:
        """Vectorised ``label`` (object array of category names)."""
        return np.array(CATEGORY_NAMES, dtype=object)[self.codes(nodes, runtime, walltime)]

    def codes(self, nodes: np.ndarray, runtime: np.ndarray | None, walltime: np.ndarray | None) -> np.ndarray:
        """Each job's category as its index in ``CATEGORY_NAMES`` (int8); only the duration the
        categories use (runtime or walltime) is read."""
        d = np.asarray(runtime if self.duration == "runtime" else walltime)
        code = (np.asarray(nodes) > self.narrow_max_nodes).astype(np.int8) * 2  # wide: 2, 3
        code += d > self.short_max_seconds  # long: 1, 3
        return code


SEED002_CATEGORIES = Categories()  # study categories (runtime)
WCJS_CATEGORIES = Categories(duration="walltime")  # what the WCJS policy may see


# ------------------------------------------------------------------------ per-job formulas
def slowdown(turnaround, runtime):
    """SD = turnaround / runtime (seed 002 Def. 1).  Scalars or arrays, times in s."""
    return np.asarray(turnaround, dtype=np.float64) / np.asarray(runtime, dtype=np.float64)


def bounded_slowdown_seed002(turnaround, runtime, tau: float = TAU_SEED002):
    """(wait + max(runtime, τ)) / max(runtime, τ), wait = turnaround − runtime (seed 002 Def. 2; s)."""
    turnaround = np.asarray(turnaround, dtype=np.float64)
    runtime = np.asarray(runtime, dtype=np.float64)
    bound = np.maximum(runtime, float(tau))
    return (turnaround - runtime + bound) / bound


def bounded_slowdown_rl(turnaround, runtime, tau: float = TAU_RL):
    """max(1, turnaround / max(runtime, τ)) (RL papers, seeds 000/003; s)."""
    turnaround = np.asarray(turnaround, dtype=np.float64)
    runtime = np.asarray(runtime, dtype=np.float64)
    return np.maximum(1.0, turnaround / np.maximum(runtime, float(tau)))


# ---------------------------------------------------------- per-sequence scores (RL papers)
SEQUENCE_GOALS: tuple[str, ...] = ("bsld", "wait", "turnaround", "slowdown", "utilization", "fairness")


def sequence_metric(goal: str, submit, runtime, start, nodes=None, machine_nodes: int | None = None,
                    users=None, *, tau: float = TAU_RL, util_window: str = "last_end") -> float:
    """One scheduled sequence's score as the RL papers (seeds 000/003) define it, from plain arrays
    of rigid jobs (each runs once, from ``start`` for ``runtime`` s; times in s).

    * bsld: mean ``bounded_slowdown_rl`` (τ = 10 s, the actual runtime as both papers use);
    * wait: mean start − submit; turnaround: mean wait + run; slowdown: mean ``slowdown``;
    * utilization: Σ run·nodes / (machine nodes × (t_end − first submit)), t_end = the last
      completion (seed 003 §8 item 10) or, with ``util_window="last_start"``, the last start (the
      authors' code, which produced their Table VI);
    * fairness: the maximum over users of the user's mean bsld (seed 003 §V-F, "Max" aggregator);
      jobs of unknown user (−1) form one user.

    Natural sign: lower is better except utilization.
    """
    submit = np.asarray(submit, dtype=np.float64)
    runtime = np.asarray(runtime, dtype=np.float64)
    start = np.asarray(start, dtype=np.float64)
    if len(submit) == 0:
        return 0.0
    if np.any(start < 0):
        raise ValueError("sequence_metric: some jobs never started")
    turnaround = start - submit + runtime
    if goal == "bsld":
        return float(bounded_slowdown_rl(turnaround, runtime, tau).mean())
    if goal == "wait":
        return float((start - submit).mean())
    if goal == "turnaround":
        return float(turnaround.mean())
    if goal == "slowdown":
        return float(slowdown(turnaround, runtime).mean())
    if goal == "utilization":
        if nodes is None or not machine_nodes:
            raise ValueError("utilization needs job nodes and the machine size")
        nodes = np.asarray(nodes, dtype=np.float64)
        t_end = start.max() if util_window == "last_start" else (start + runtime).max()
        span = max(t_end - submit.min(), 1.0)
        return float((runtime * nodes).sum() / (span * machine_nodes))
    if goal == "fairness":
        users = np.full(len(submit), -1) if users is None else np.asarray(users)
        b = bounded_slowdown_rl(turnaround, runtime, tau)
        _, inv = np.unique(users, return_inverse=True)
        return float((np.bincount(inv, weights=b) / np.bincount(inv)).max())
    raise ValueError(f"unknown goal {goal!r}; choose from {', '.join(SEQUENCE_GOALS)}")


def queue_length_series(submit, start) -> tuple[np.ndarray, np.ndarray]:
    """The number of waiting jobs over time, as a step function: ``(times, lengths)`` with
    ``lengths[i]`` holding on [times[i], times[i + 1]).  A job waits on [submit, first start)."""
    submit = np.asarray(submit, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    return step_series(np.concatenate([submit, start]),
                       np.concatenate([np.ones(len(submit), dtype=np.int64), -np.ones(len(start), dtype=np.int64)]))


def mean_queue_length(submit, start, window: tuple[int, int] | None = None) -> float:
    """Time-average number of waiting jobs over [t0, t1) (seed 004's L̃): Σ_j |[submit_j, start_j) ∩
    [t0, t1)| / (t1 − t0).  Default window: first submit to last submit (the arrival period, so that
    the drain after the last arrival does not dilute it).  0.0 for an empty window."""
    submit = np.asarray(submit, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    if len(submit) == 0:
        return 0.0
    t0, t1 = window if window is not None else (int(submit.min()), int(submit.max()))
    if t1 <= t0:
        return 0.0
    return float(_overlap(submit, start, t0, t1).sum() / (t1 - t0))


# -------------------------------------------------------------------------------- windows
def _check_window(window: tuple[int, int] | None) -> tuple[int, int] | None:
    if window is None:
        return None
    t0, t1 = int(window[0]), int(window[1])
    if t1 < t0:
        raise ValueError(f"window [{t0}, {t1}) ends before it starts")
    return t0, t1


def default_window(result: SimResult) -> tuple[int, int]:
    """[first submit, last end) of a run, s: the utilization window when none is stated.

    The last end is the latest of the jobs' ends and the schedule's segment ends; (0, 0) for a
    run without jobs.
    """
    outs = result.outcomes
    if not len(outs):
        return (0, 0)
    t0 = int(outs.job_column("submit").min())
    t1 = max(int(outs.column("end").max()), t0)
    segs = result.schedule.segments
    if len(segs):
        t1 = max(t1, int(segs.column("end").max()))
    return (t0, t1)


# ------------------------------------------------------------------------------ job table
class JobColumns(dict):
    """The per-job table as NumPy columns (``JOB_COLUMNS``), without pandas: what the summaries
    are computed from.  ``attrs`` records tau_seed002, tau_rl, window and the categories' basis;
    ``to_frame()`` gives the ``pandas.DataFrame`` of ``job_table``.  ``codes`` holds the
    ``kind`` and ``category`` columns as small integers with their levels (what the summaries
    group by: comparing integers, not strings); a table may carry a grouping column only as codes."""

    def __init__(self, columns: dict, attrs: dict, codes: dict | None = None) -> None:
        super().__init__(columns)
        self.attrs = attrs
        self.codes: dict[str, tuple[np.ndarray, list]] = dict(codes or {})

    def __len__(self) -> int:  # the number of jobs (rows), as for a DataFrame
        for values in self.values():
            return len(values)
        for codes, _ in self.codes.values():
            return len(codes)
        return 0

    @property
    def columns(self) -> list[str]:
        return list(self.keys()) + [c for c in self.codes if c not in self]

    def select(self, mask: np.ndarray) -> "JobColumns":
        """The rows where ``mask`` holds."""
        return JobColumns({k: v[mask] for k, v in self.items()}, dict(self.attrs),
                          {k: (c[mask], levels) for k, (c, levels) in self.codes.items()})

    def to_frame(self):
        import pandas as pd

        frame = pd.DataFrame(dict(self), columns=list(JOB_COLUMNS))
        frame.attrs.update(self.attrs)
        return frame


def _kept(result: SimResult, window: tuple[int, int] | None) -> np.ndarray | None:
    """The jobs of the job table: finished, submitted in ``window``; None when that is all of them."""
    outs = result.outcomes
    keep = outs.column("end") >= 0
    if window is not None:
        submit = outs.job_column("submit")
        keep &= (submit >= window[0]) & (submit < window[1])
    return None if keep.all() else keep


def _rows(values: np.ndarray, keep: np.ndarray | None) -> np.ndarray:
    return values if keep is None else values[keep]


def job_columns(result: SimResult, window: tuple[int, int] | None = None, *, tau_seed002: int = TAU_SEED002,
                tau_rl: int = TAU_RL, categories: Categories = SEED002_CATEGORIES) -> JobColumns:
    """The columns of ``job_table`` as NumPy arrays (same arguments; no pandas)."""
    window = _check_window(window)
    outs = result.outcomes
    keep = _kept(result, window)

    def job(name: str) -> np.ndarray:  # a fresh array: the run's own columns stay as they are
        return outs.job_column(name)[keep] if keep is not None else outs.job_column(name).copy()

    def out(name: str) -> np.ndarray:
        return _rows(outs.column(name), keep)

    submit, runtime, walltime, nodes = job("submit"), job("runtime"), job("walltime"), job("nodes")
    first_start, end, allocated = out("first_start"), out("end"), out("allocated_nodes")
    t_ckpt, t_restart, t_lost = out("t_ckpt"), out("t_restart"), out("t_lost")
    turnaround = end - submit
    kind_code = (~job("is_rt")).astype(np.int8)  # index in JOB_KINDS: rt 0, batch 1
    category_code = categories.codes(nodes, runtime, walltime)
    data = {
        "id": job("id"),
        "kind": np.array(JOB_KINDS, dtype=object)[kind_code],
        "user": job("user"),
        "nodes": nodes,
        "allocated_nodes": allocated,
        "runtime": runtime,
        "walltime": walltime,
        "submit": submit,
        "first_start": first_start,
        "end": end,
        "turnaround": turnaround,
        "wait": turnaround - runtime,
        "first_wait": first_start - submit,
        "sd": slowdown(turnaround, runtime),
        "bsld_seed002": bounded_slowdown_seed002(turnaround, runtime, tau_seed002),
        "bsld_rl": bounded_slowdown_rl(turnaround, runtime, tau_rl),
        "category": np.array(CATEGORY_NAMES, dtype=object)[category_code],
        "n_preemptions": out("n_preemptions"),
        "n_kills": out("n_kills"),
        "t_ckpt": t_ckpt,
        "t_restart": t_restart,
        "t_lost": t_lost,
        "t_pre": t_restart + t_lost,
        "jit_delay": out("jit_delay"),
        "ckpt_node_seconds": t_ckpt * allocated,
        "restart_node_seconds": t_restart * allocated,
        "lost_node_seconds": t_lost * allocated,
    }
    codes = {"kind": (kind_code, list(JOB_KINDS)), "category": (category_code, list(CATEGORY_NAMES))}
    return JobColumns(data, _table_attrs(window, tau_seed002, tau_rl, categories), codes)


def _table_attrs(window: tuple[int, int] | None, tau_seed002: int, tau_rl: int, categories: Categories) -> dict:
    return {"tau_seed002": int(tau_seed002), "tau_rl": int(tau_rl), "window": list(window) if window else None,
            "category_duration": categories.duration}


def _summary_columns(result: SimResult, window: tuple[int, int] | None, tau_seed002: int, tau_rl: int,
                     categories: Categories) -> JobColumns:
    """The part of ``job_columns`` that ``summary_dict`` reads: the ``SUMMARY_METRICS`` columns
    and the kind and category codes (the same values, fewer columns built)."""
    outs = result.outcomes
    keep = _kept(result, window)
    submit, runtime = _rows(outs.job_column("submit"), keep), _rows(outs.job_column("runtime"), keep)
    first_start, end = _rows(outs.column("first_start"), keep), _rows(outs.column("end"), keep)
    walltime = _rows(outs.job_column("walltime"), keep) if categories.duration == "walltime" else None
    turnaround = end - submit
    data = {"sd": slowdown(turnaround, runtime),
            "bsld_seed002": bounded_slowdown_seed002(turnaround, runtime, tau_seed002),
            "bsld_rl": bounded_slowdown_rl(turnaround, runtime, tau_rl),
            "wait": turnaround - runtime, "first_wait": first_start - submit, "turnaround": turnaround}
    codes = {"kind": ((~_rows(outs.job_column("is_rt"), keep)).astype(np.int8), list(JOB_KINDS)),
             "category": (categories.codes(_rows(outs.job_column("nodes"), keep), runtime, walltime),
                          list(CATEGORY_NAMES))}
    return JobColumns(data, _table_attrs(window, tau_seed002, tau_rl, categories), codes)


def job_table(result: SimResult, window: tuple[int, int] | None = None, *, tau_seed002: int = TAU_SEED002,
              tau_rl: int = TAU_RL, categories: Categories = SEED002_CATEGORIES):
    """One row per finished job (a ``pandas.DataFrame``, columns ``JOB_COLUMNS``).

    Args:
        result: the simulation result.
        window: the results window [t0, t1) in s; only jobs with t0 ≤ submit < t1 are kept.
            ``None`` keeps every finished job.
        tau_seed002: τ of ``bsld_seed002``, s.
        tau_rl: τ of ``bsld_rl``, s.
        categories: the category thresholds and whether they apply to runtime or walltime.

    Columns: id, kind ("rt"/"batch"), user, nodes (requested), allocated_nodes, runtime,
    walltime, submit, first_start, end, turnaround, wait, first_wait (s); sd, bsld_seed002,
    bsld_rl (ratios); category; n_preemptions; n_kills (``Kill`` decisions); t_ckpt, t_restart,
    t_lost, t_pre = t_restart + t_lost, jit_delay (s); ckpt_node_seconds, restart_node_seconds, lost_node_seconds.
    ``table.attrs`` records tau_seed002, tau_rl, window and the categories' duration basis.
    """
    return job_columns(result, window, tau_seed002=tau_seed002, tau_rl=tau_rl, categories=categories).to_frame()


# ------------------------------------------------------------------------------ summaries
def _stats(values: np.ndarray, scratch: bool = False) -> dict[str, float]:
    """mean, median, p5, p25, p75, p95 of ``values`` (NaN for an empty array); ``scratch``: the
    caller's own float64 copy, which the percentiles may reorder (no second copy)."""
    if len(values) == 0:
        return {s: math.nan for s in STATS}
    v = np.asarray(values, dtype=np.float64)
    mean = float(v.mean())  # before the percentiles reorder a scratch copy (the sum's order matters)
    q = np.percentile(v, [50, 5, 25, 75, 95], overwrite_input=scratch)
    return {"mean": mean, "median": float(q[0]), "p5": float(q[1]), "p25": float(q[2]), "p75": float(q[3]),
            "p95": float(q[4])}


def _column(table, name: str) -> np.ndarray:
    values = table[name]
    return values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)


def _levels(values: np.ndarray, column: str) -> list:
    if column == "kind":
        known = list(JOB_KINDS)
    elif column == "category":
        known = list(CATEGORY_NAMES)
    else:
        known = []
    extra = sorted(set(values.tolist()) - set(known), key=str) if len(values) else []
    return known + extra


def _codes(table, column: str) -> tuple[np.ndarray, list]:
    """Grouping column ``column`` as (codes, levels): ``levels`` as ``_levels`` orders them (the
    known ones first), each row's code its level's index (-1: equal to none)."""
    if isinstance(table, JobColumns) and column in table.codes:
        return table.codes[column]
    values = _column(table, column).astype(object)
    levels = _levels(values, column)
    codes = np.full(len(values), -1, dtype=np.int64)
    for i, level in enumerate(levels):
        codes[values == level] = i
    return codes, levels


def _levels_in(codes: np.ndarray, levels: list, column: str, where: np.ndarray | None) -> list[int]:
    """The indices of the levels a summary of the rows ``where`` lists: the known ones, then the
    others present in those rows (as ``_levels`` of those rows)."""
    known = len(_levels(np.zeros(0), column))
    if len(levels) == known:
        return list(range(known))
    present = set(np.unique(codes if where is None else codes[where]).tolist())
    return list(range(known)) + [i for i in range(known, len(levels)) if i in present]


class _GroupStats:
    """``_stats`` of metric columns over sets of rows, each distinct set computed once: a group
    with the same rows as another (``batch`` when no job is real-time, a category that holds every
    job) reuses its figures (the same values in the same order give the same figures)."""

    def __init__(self, arrays: dict[str, np.ndarray], n_rows: int) -> None:
        self.arrays = arrays
        self.n_rows = n_rows
        self.memo: dict[bytes | None, dict] = {}

    def row(self, mask: np.ndarray | None) -> dict:
        """{"n": rows, "{stat}_{metric}": value, ...} over the rows where ``mask`` holds (all: None)."""
        n = self.n_rows if mask is None else int(np.count_nonzero(mask))
        key = None if n == self.n_rows else np.packbits(mask).tobytes()
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = {"n": n}
            for m, values in self.arrays.items():
                for st, v in (_stats(values) if key is None else _stats(values[mask], scratch=True)).items():
                    hit[f"{st}_{m}"] = v
        return dict(hit)


def summary_rows(table, by: Sequence[str] = ("kind",), *, metrics: Sequence[str] = SUMMARY_METRICS,
                 include_all: bool = True) -> list[tuple[str, dict]]:
    """``summarize``'s rows as (label, row dict) pairs, from a ``JobColumns`` or a DataFrame."""
    return _grouped_rows(table, tuple(by), tuple(metrics), include_all)


def _grouped_rows(table, by: tuple, metrics: tuple, include_all: bool, where: np.ndarray | None = None,
                  stats: _GroupStats | None = None) -> list[tuple[str, dict]]:
    """``summary_rows`` of the rows ``where`` holds (None: all), the same as of ``table[where]``;
    ``stats``: the figures of ``metrics`` over ``table``, shared by several calls."""
    have = set(table.columns)
    missing = [c for c in (*by, *metrics) if c not in have]
    if missing:
        raise KeyError(f"summarize: the table lacks column(s) {missing}; it has {list(table.columns)}")
    if stats is None:
        stats = _GroupStats({m: _column(table, m).astype(np.float64) for m in metrics}, len(table))
    rows: list[tuple[str, dict]] = []

    def add(label: str, keys: dict, mask: np.ndarray | None) -> None:
        row = dict(keys)
        row.update(stats.row(mask))
        rows.append((label, row))

    if include_all:
        add("all", {c: "all" for c in by}, where)
    if by:
        coded = [_codes(table, c) for c in by]
        combos: list[tuple] = [()]
        for c, (codes, levels) in zip(by, coded):
            combos = [k + (i,) for k in combos for i in _levels_in(codes, levels, c, where)]
        for combo in combos:
            mask = np.ones(len(table), dtype=bool) if where is None else where.copy()
            for (codes, _), i in zip(coded, combo):
                mask &= codes == i
            names = [levels[i] for (_, levels), i in zip(coded, combo)]
            add("/".join(str(x) for x in names), dict(zip(by, names)), mask)
    return rows


def summarize(table, by: Sequence[str] = ("kind",), *, metrics: Sequence[str] = SUMMARY_METRICS,
              include_all: bool = True):
    """Group statistics of a job table (a ``pandas.DataFrame``, one row per group).

    Args:
        table: a ``job_table`` or ``job_columns`` (or any table with the ``by`` and ``metrics``
            columns).
        by: grouping columns, e.g. ``("kind",)``, ``("category",)`` or ``("category", "kind")``.
            Every known level appears even when empty (kinds rt, batch; the four categories).
        metrics: columns to summarise (default sd, bsld_seed002, bsld_rl, wait, first_wait,
            turnaround).
        include_all: add a first row ``"all"`` over the whole table.

    Returns:
        index ``group`` (``"all"``, ``"rt"``, ``"narrow-short/rt"``, ...: the levels joined by
        ``/``); columns: the ``by`` columns (``"all"`` in the all row), ``n``, then
        ``{stat}_{metric}`` for stat in mean, median, p5, p25, p75, p95 (NaN for empty groups;
        units those of the metric: ratios or s).
    """
    import pandas as pd

    rows = summary_rows(table, by, metrics=metrics, include_all=include_all)
    return pd.DataFrame([r for _, r in rows], index=pd.Index([label for label, _ in rows], name="group"))


# ----------------------------------------------------------------------------- utilization
def segment_lost_seconds(schedule: Schedule) -> np.ndarray:
    """Seconds of each run segment whose progress was later lost (aligned with ``schedule.segments``).

    A run segment advancing a job from ``progress_from`` to ``progress_to`` loses work when a later
    segment of the same job starts from a lower progress point r (a restart after a preemption):
    lost = progress_to − max(progress_from, r_min), r_min the lowest progress any later segment of
    the job starts from.  The lost part is the segment's last ``lost`` seconds (progress advances
    one second of work per second of run).  Checkpoint and restart segments lose nothing (0).
    Computed on the columns; only the jobs with more than one segment are walked.
    """
    segs = schedule.segments
    lost = np.zeros(len(segs), dtype=np.int64)
    if not len(segs):
        return lost
    job = segs.column("job_id")
    multi = np.flatnonzero(_job_segment_counts(job) > 1)  # one uninterrupted run: nothing later can undo its work
    if not len(multi):
        return lost
    start, end = segs.column("start")[multi], segs.column("end")[multi]
    order = multi[np.lexsort((end, start, job[multi]))]  # each job's segments by (start, end)
    job_o = job[order].tolist()
    kind_o = segs.column("kind")[order].tolist()
    p_from = segs.column("progress_from")[order].tolist()
    p_to = segs.column("progress_to")[order].tolist()
    run = KINDS.index(RUN)
    r_min = math.inf
    for k in range(len(order) - 1, -1, -1):  # backwards: the later segments of a job first
        if k == len(order) - 1 or job_o[k] != job_o[k + 1]:
            r_min = math.inf
        if kind_o[k] == run and r_min < p_to[k]:
            lost[order[k]] = p_to[k] - max(p_from[k], r_min)
        if p_from[k] < r_min:
            r_min = p_from[k]
    return lost


def _job_segment_counts(job: np.ndarray) -> np.ndarray:
    """For each segment, how many segments its job has (``job``: the segments' job ids): a count
    per id in a table when the ids span a range not much wider than their number, else by sorting."""
    low, high = int(job.min()), int(job.max())
    if high - low <= 4 * len(job) + (1 << 16):
        offset = job - low
        return np.bincount(offset)[offset]
    _, inverse, counts = np.unique(job, return_inverse=True, return_counts=True)
    return counts[inverse]


def _overlap(start: np.ndarray, end: np.ndarray, t0: int, t1: int) -> np.ndarray:
    return np.maximum(0, np.minimum(end, t1) - np.maximum(start, t0))


def utilization(result: SimResult, window: tuple[int, int] | None = None) -> dict:
    """Utilization of the machine over [t0, t1) (default ``default_window``: first submit to last end).

    Returns a JSON-ready dict:
        window: [t0, t1] (s); machine_nodes; capacity_node_seconds = machine_nodes × (t1 − t0);
        busy_node_seconds (all segments clipped to the window), run_node_seconds,
        ckpt_node_seconds (checkpoint writes), restart_node_seconds (restart reads),
        lost_node_seconds (run time whose progress was later lost, attributed to the last seconds
        of the run segments concerned), overhead_node_seconds = ckpt + restart + lost,
        useful_node_seconds = busy − overhead;
        utilization = busy / capacity, overhead_utilization = overhead / capacity,
        productive_utilization = utilization − overhead_utilization (seed 002 eq. 26);
        chr_ckpt = ckpt node-hours, chr_pre = restart + lost node-hours (system core-hours lost
        inside the window; per job see ``job_table``).
    Ratios are 0.0 for an empty window or a machine of 0 nodes.
    """
    window = _check_window(window) or default_window(result)
    t0, t1 = window
    segs = result.schedule.segments
    start, end, nodes = segs.column("start"), segs.column("end"), segs.column("nodes")
    kind = segs.column("kind")  # codes: index in KINDS
    lost = segment_lost_seconds(result.schedule)

    occupied = _overlap(start, end, t0, t1) * nodes
    run = int(occupied[kind == KINDS.index(RUN)].sum())
    ckpt = int(occupied[kind == KINDS.index(CKPT)].sum())
    restart = int(occupied[kind == KINDS.index(RESTART)].sum())
    lost_ns = int((_overlap(end - lost, end, t0, t1) * nodes).sum()) if lost.any() else 0
    busy = int(occupied.sum())
    overhead = ckpt + restart + lost_ns
    capacity = int(result.machine_nodes) * (t1 - t0)
    util = busy / capacity if capacity > 0 else 0.0
    over = overhead / capacity if capacity > 0 else 0.0
    return {
        "window": [t0, t1],
        "machine_nodes": int(result.machine_nodes),
        "capacity_node_seconds": capacity,
        "busy_node_seconds": busy,
        "run_node_seconds": run,
        "ckpt_node_seconds": ckpt,
        "restart_node_seconds": restart,
        "lost_node_seconds": lost_ns,
        "overhead_node_seconds": overhead,
        "useful_node_seconds": busy - overhead,
        "utilization": util,
        "overhead_utilization": over,
        "productive_utilization": util - over,
        "chr_ckpt": ckpt / 3600.0,
        "chr_pre": (restart + lost_ns) / 3600.0,
    }


# ---------------------------------------------------------------------------- JSON summary
def _json_value(v):
    if v is None:
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    return v


def _group_dict(row: dict, form: str) -> dict:
    out = {k: _json_value(v) for k, v in row.items()}
    for s in STATS:
        out[f"{s}_bsld"] = out[f"{s}_bsld_{form}"]
    return out


def _groups(table, form: str, where: np.ndarray | None, stats: _GroupStats) -> dict[str, dict]:
    rows = _grouped_rows(table, ("kind",), SUMMARY_METRICS, True, where, stats)
    return {label: _group_dict({k: v for k, v in row.items() if k != "kind"}, form) for label, row in rows}


def summary_dict(result: SimResult, window: tuple[int, int] | None = None, tau_seed002: int = TAU_SEED002,
                 tau_rl: int = TAU_RL, bsld: BsldForm = "seed002", *,
                 categories: Categories = SEED002_CATEGORIES, table=None) -> dict:
    """The run's metrics as a JSON-ready dict (no NaN: empty groups give n = 0 and None values).

    Args:
        result: the simulation result.
        window: the results window [t0, t1) in s: it selects the jobs (by submit) and is the
            utilization window.  ``None``: every finished job, utilization over ``default_window``.
        tau_seed002, tau_rl: the two bounds, s.
        bsld: which bounded-slowdown form ``mean_bsld`` etc. report ("seed002" or "rl"); both
            forms are always present as ``*_bsld_seed002`` and ``*_bsld_rl``.
        categories: category thresholds and basis.
        table: the ``job_table`` (or ``job_columns``) of this result built with the same window,
            τs and categories, when the caller has it already (saves building it twice; checked
            against its attrs).

    Keys: summary {all, rt, batch} and categories {name: {all, rt, batch}}, each group with n and
    {mean, median, p5, p25, p75, p95}_{sd, bsld, bsld_seed002, bsld_rl, wait, first_wait,
    turnaround}; utilization, productive_utilization, overhead_utilization; bsld_tau (s, of the
    chosen form), bsld_form, tau_seed002, tau_rl; node_hours_lost {ckpt, restart, lost_work}
    (inside the window); window [t0, t1]; window_selects_jobs; jobs_in_window (all jobs submitted
    in the window) and unfinished (those of them that never ended); category_duration.
    """
    if bsld not in BSLD_FORMS:
        raise ValueError(f"bsld must be one of {BSLD_FORMS}, got {bsld!r}")
    win = _check_window(window)
    if table is None:
        table = _summary_columns(result, win, tau_seed002, tau_rl, categories)
    else:
        expected = _table_attrs(win, tau_seed002, tau_rl, categories)
        got = {k: table.attrs.get(k) for k in expected}
        if got != expected:
            raise ValueError(f"summary_dict: the table was built with {got}, not {expected}")
    outs = result.outcomes
    in_window = None  # every job
    if win is not None:
        submit = outs.job_column("submit")
        in_window = (submit >= win[0]) & (submit < win[1])
    ends = outs.column("end")
    unfinished = ends < 0 if in_window is None else (ends < 0) & in_window
    util = utilization(result, win)
    # the groups: every one a set of the table's rows, each distinct set's figures computed once
    stats = _GroupStats({m: _column(table, m).astype(np.float64) for m in SUMMARY_METRICS}, len(table))
    summary = _groups(table, bsld, None, stats)
    category, levels = _codes(table, "category")
    cats = {name: _groups(table, bsld, category == levels.index(name), stats) for name in CATEGORY_NAMES}
    return {
        "summary": summary,
        "categories": cats,
        "utilization": util["utilization"],
        "productive_utilization": util["productive_utilization"],
        "overhead_utilization": util["overhead_utilization"],
        "bsld_tau": int(tau_seed002 if bsld == "seed002" else tau_rl),
        "bsld_form": bsld,
        "tau_seed002": int(tau_seed002),
        "tau_rl": int(tau_rl),
        "node_hours_lost": {"ckpt": util["ckpt_node_seconds"] / 3600.0,
                            "restart": util["restart_node_seconds"] / 3600.0,
                            "lost_work": util["lost_node_seconds"] / 3600.0},
        "window": util["window"],
        "window_selects_jobs": win is not None,
        "jobs_in_window": len(outs) if in_window is None else int(np.count_nonzero(in_window)),
        "unfinished": int(np.count_nonzero(unfinished)),
        "category_duration": categories.duration,
    }


__all__ = [
    "BSLD_FORMS", "CATEGORY_NAMES", "Categories", "JOB_COLUMNS", "JobColumns", "job_columns", "summary_rows", "SEED002_CATEGORIES", "STATS", "SUMMARY_METRICS",
    "TAU_RL", "TAU_SEED002", "WCJS_CATEGORIES", "bounded_slowdown_rl", "bounded_slowdown_seed002", "default_window",
    "job_table", "mean_queue_length", "queue_length_series", "segment_lost_seconds", "slowdown", "summarize", "summary_dict", "utilization",
]
