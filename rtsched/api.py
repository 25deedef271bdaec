"""The one-call API for notebooks and scripts: ``rtsched.simulate(...)``.

    import rtsched
    run = rtsched.simulate("lublin_256.swf", machine="flat:256", policy="fcfs", backfill="easy")
    run.summary["all"]["mean_bsld"], run.jobs.head(), run.plot_gantt(), run.plot_utilization()

It builds a ``rtsched.pipeline.RunSpec`` from its arguments and runs it through the one run
pipeline, so a notebook's numbers are exactly what ``rtsched simulate`` prints for the same
options.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from rtsched import metrics
from rtsched.jobs import Job, Workload
from rtsched.pipeline import RunRecord, RunSpec, SpecError, execute
from rtsched.window import WindowSpec

JOB_FIELDS = ("id", "submit", "runtime", "walltime", "nodes")  # required DataFrame columns (s, nodes)
OPTIONAL_JOB_FIELDS = ("kind", "user", "group", "queue", "checkpointable")


class Run:
    """The result of ``simulate``: the run pipeline's record with notebook-friendly views.

    Attributes:
        record: the ``rtsched.pipeline.RunRecord`` (outcomes, schedule, provenance).
        summary: the metrics groups of ``rtsched simulate --json``'s ``summary`` (``all``, ``rt``,
            ``batch``: n, mean/median/percentiles of sd, bsld, wait, turnaround).
        jobs: one row per job (a pandas DataFrame, ``rtsched.metrics.job_table``).
        schedule: the segments (``rtsched.schedule.Schedule``).
    """

    def __init__(self, record: RunRecord) -> None:
        self.record = record

    @property
    def summary(self) -> dict:
        return self.record.summary["summary"]

    @property
    def jobs(self):
        return self.record.job_table()

    @property
    def schedule(self):
        return self.record.schedule

    def to_json(self) -> dict:
        """Everything ``rtsched simulate --json`` prints: what ran, then every metric."""
        return self.record.to_json()

    def plot_gantt(self, **options):
        """``rtsched.plots.gantt`` of this run (a matplotlib Figure)."""
        from rtsched.plots import gantt

        return gantt(self.record.schedule, self.record.machine, self.record.workload, **options)

    def plot_utilization(self, **options):
        """``rtsched.plots.utilization_over_time`` of this run (a matplotlib Figure)."""
        from rtsched.plots import utilization_over_time

        return utilization_over_time(self.record.result, **options)

    def plot_slowdowns(self, **options):
        """``rtsched.plots.slowdown_distributions`` of this run's jobs (a matplotlib Figure)."""
        from rtsched.plots import slowdown_distributions

        return slowdown_distributions(self.jobs, **options)

    def to_evalys(self, path: str | os.PathLike) -> str:
        """Write the run as an evalys ``jobs.csv`` (``rtsched.export.write_evalys_jobs``)."""
        from rtsched.export import write_evalys_jobs

        return write_evalys_jobs(self.record, path)

    def __repr__(self) -> str:
        p = self.record.provenance
        return (f"<rtsched Run: {p['jobs']} jobs of {p['trace'] or p['trace_name']} on {p['machine']}, "
                f"{p['policy']}, {p['checkpoint']}>")


def workload_from_frame(frame, name: str = "dataframe") -> Workload:
    """A ``Workload`` from a DataFrame with the columns ``JOB_FIELDS`` (times in s) and optionally
    ``OPTIONAL_JOB_FIELDS``.

    Times follow the trace readers' rules (``rtsched.io.cleaning``): a submit time is rounded down
    (``submit_seconds``), a runtime or walltime to the nearest second (``round_seconds``: 10.7 s
    is 11 s, as in an SWF file), and a runtime above the walltime is clipped to it, with a
    warning that counts them (the readers' default ``runtime_above_walltime="clip"``: a batch
    system kills a job at its walltime).  A missing column, or a value that is not a finite
    number (NaN, text) or not whole where it must be (``id``, ``nodes``), is an ``InputError``
    naming the column and the row.
    """
    import warnings

    import numpy as np
    import pandas as pd

    from rtsched.errors import InputError
    from rtsched.io.cleaning import round_seconds, submit_seconds

    missing = [c for c in JOB_FIELDS if c not in frame.columns]
    if missing:
        raise ValueError(f"the job DataFrame lacks column(s) {missing}; it needs {list(JOB_FIELDS)} "
                         f"(and may have {list(OPTIONAL_JOB_FIELDS)})")

    def numbers(column: str, whole: bool) -> np.ndarray:
        raw = frame[column]
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        bad = ~np.isfinite(values)
        if whole:
            bad |= np.isfinite(values) & (values != np.round(values))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = raw.iloc[row]
            value = value.item() if hasattr(value, "item") else value  # NumPy scalar: its plain value
            what = "a whole number" if whole else "a finite number of seconds"
            raise InputError(f"row {row} (index {frame.index[row]!r}): {value!r} is not {what}",
                             path=name, field=column)
        return values

    ids = numbers("id", whole=True).astype(np.int64)
    nodes = numbers("nodes", whole=True).astype(np.int64)
    submit = submit_seconds(numbers("submit", whole=False))
    runtime = round_seconds(numbers("runtime", whole=False))
    walltime = round_seconds(numbers("walltime", whole=False))
    over = runtime > walltime
    if over.any():
        first = int(np.flatnonzero(over)[0])
        warnings.warn(f"{name}: {int(over.sum())} job(s) have a runtime above their walltime (first: job "
                      f"{ids[first]}, runtime {runtime[first]} s > walltime {walltime[first]} s); clipped to the "
                      "walltime, as the trace readers do", stacklevel=3)
        runtime = np.where(over, walltime, runtime)
    extra = [c for c in OPTIONAL_JOB_FIELDS if c in frame.columns]
    extra_values = {c: frame[c].tolist() for c in extra}
    jobs = []
    for i in range(len(frame)):
        kwargs: dict[str, Any] = {"id": int(ids[i]), "submit": int(submit[i]), "runtime": int(runtime[i]),
                                  "walltime": int(walltime[i]), "nodes": int(nodes[i])}
        for k in extra:
            v = extra_values[k][i]
            kwargs[k] = bool(v) if k == "checkpointable" else (str(v) if k in ("kind", "queue") else int(v))
        try:
            jobs.append(Job(**kwargs))
        except ValueError as exc:
            raise InputError(f"row {i} (index {frame.index[i]!r}): {exc}", path=name) from None
    return Workload(jobs, name=name)


def simulate(trace=None, *, machine: str | None = None, policy: str = "wfp2", backfill: str | None = None,
             scheme: str | None = None, checkpoint: str | None = None, rt_percent: float = 0.0,
             marking: str = "random", seed: int = 0, window: str | WindowSpec | None = None,
             tau: int = metrics.TAU_SEED002, tau_rl: int = metrics.TAU_RL, bsld_form: str = "seed002",
             event_order: str = "design", first_n: int | None = None, validate: bool = True,
             **policy_options: Any) -> Run:
    """Simulate ``trace`` and return a ``Run`` (the same pipeline as ``rtsched simulate``).

    Args:
        trace: a trace file path (SWF, Cobalt log, ALCF CSV), a ``Workload``, a pandas DataFrame
            with the columns ``JOB_FIELDS`` (optionally ``OPTIONAL_JOB_FIELDS``), or None for the
            embedded default (the shipped Mira-like week).
        machine: ``mira``, ``mira:BLOCKS``, ``flat:N`` or a partition ``.xml``; None: the trace's
            (its header's machine or size; Mira for Cobalt logs and the default week).
        policy, backfill, **policy_options: the policy by name (``heuristics.registry``) and its
            options; or ``scheme`` (a seed-002 scheme, which also sets the checkpoint model).
            ``backfill`` is a name (``heuristics.backfill.BACKFILLS``) or None; True and False
            are refused (True once meant RLScheduler's backfilling, silently).
        checkpoint: ``no``, ``sys[:S]``, ``app-PCT``, ``jit`` (default: the scheme's, else ``no``).
        rt_percent, marking, seed: real-time marking (``rtsched.rtmarking``).
        window: a results window, ``"2018-01-21/7"`` or a ``WindowSpec``.
        tau, tau_rl, bsld_form: the bounded-slowdown bounds (s) and which form ``mean_bsld`` reports.
        event_order: ``design`` or ``rlscheduler`` (the RL papers' compatibility order).
        first_n: only the first N >= 1 jobs of a trace file (None: every job; 0 is refused).

    A bad value raises an ``OptionError`` (a ``ValueError``) whose message starts with the
    parameter's name and says what it takes.
    """
    _check_arguments(first_n=first_n, backfill=backfill)
    options = dict(policy_options)
    if backfill is not None:
        options["backfill"] = backfill
    if isinstance(window, str):
        window = WindowSpec.parse(window, "window")
    workload = None
    path = None
    if trace is None:
        if first_n:
            raise ValueError("first_n applies to a trace file")
    elif isinstance(trace, Workload):
        workload = trace.head(first_n) if first_n else trace
    elif hasattr(trace, "columns") and hasattr(trace, "itertuples"):
        workload = workload_from_frame(trace)
        workload = workload.head(first_n) if first_n else workload
    else:
        path = os.fspath(trace)
    spec = RunSpec(trace=path, reader_options={"first_n": first_n} if (first_n and path) else {},
                   rt_percent=rt_percent, marking=marking, seed=seed, machine=machine, scheme=scheme, policy=policy,
                   policy_options=options, checkpoint=checkpoint, window=window, tau=tau, tau_rl=tau_rl,
                   bsld_form=bsld_form, event_order=event_order, validate=validate)
    if workload is not None and machine is None and workload.max_nodes:
        spec = replace(spec, machine=f"flat:{workload.max_nodes}")
    try:
        return Run(execute(spec, workload=workload))
    except SpecError as exc:  # the spec's field is this function's parameter: name it
        field = exc.field or ""
        if not field or str(exc).startswith(f"{field}:"):
            raise
        raise SpecError(f"{field}: {exc}", field) from None


def _check_arguments(*, first_n, backfill) -> None:
    """Refuse values the run would otherwise read as something else (``first_n=0`` as every job,
    ``backfill=True`` as RLScheduler's backfilling); the message names the parameter."""
    from heuristics.backfill import BACKFILLS

    if first_n is not None and (isinstance(first_n, bool) or not isinstance(first_n, int) or first_n < 1):
        raise SpecError(f"first_n: must be a whole number >= 1 (None: every job), got {first_n!r}", "first_n")
    if backfill is not None and not isinstance(backfill, str):
        raise SpecError(f"backfill: give a backfilling name ({', '.join(BACKFILLS)}) or None, got {backfill!r}",
                        "backfill")


__all__ = ["JOB_FIELDS", "OPTIONAL_JOB_FIELDS", "Run", "simulate", "workload_from_frame"]
