"""The RL papers' test protocol: every policy on the same sequences of a trace, through the run
pipeline, in RLScheduler's compatibility mode (committed head, the authors' event order).

This module imports no PyTorch: a heuristic-only evaluation never loads it; a trained model
reaches the policy registry through its loader (``rtsched.rl.hook``), which loads PyTorch then.
"""
from __future__ import annotations

import os
from typing import Iterable

import numpy as np

from heuristics.backfill import normalize_backfill
from heuristics.committed import COMMITTED_BACKFILLS
from heuristics.priorities import PRIORITIES
from heuristics.registry import make_policy
from rtsched.errors import OptionError
from rtsched.pipeline import RunSpec, execute
from rtsched.rl.sequences import start_bounds
from rtsched.rl.trace import RLTrace, load_trace


def machine_spec(trace: RLTrace, machine=None) -> str:
    """The evaluation machine: ``machine`` (a spec) or a flat cluster of the trace's MaxNodes."""
    return str(machine) if machine is not None else f"flat:{trace.max_nodes}"


def sequence_starts(trace: RLTrace, seq_len: int, n_sequences: int = 10, seed: int = 1) -> list[int]:
    """``n_sequences`` first jobs drawn with ``seed`` uniformly from [seq_len, N − seq_len − 1), as the
    authors' test script does."""
    lo, hi = start_bounds(len(trace), seq_len)
    return [int(s) for s in np.random.default_rng(seed).integers(lo, hi + 1, size=n_sequences)]


def sequence_policy(name, trace: RLTrace, start: int, seq_len: int, backfill: str, *, greedy: bool = True,
                    norms: str = "trace", seed: int | None = None):
    """The policy ``name`` for one sequence: a priority under the committed-head rule, a trained model
    (given the sequence's extra SWF columns and the evaluated trace's normalisation when ``norms`` is
    ``"trace"``, the authors' practice; ``seed``: its sampling generator's seed, the policy's default
    when None), or a policy object as given."""
    if hasattr(name, "decide"):
        return name
    key = str(name).strip().lower()
    if key in PRIORITIES:
        return make_policy(key, committed=True, backfill=backfill)
    try:
        return make_policy(os.fspath(name), backfill=backfill, greedy=greedy, extras=trace.extras(start, seq_len),
                           norms=trace.norms() if norms == "trace" else None, seed=seed)
    except ValueError as exc:
        if isinstance(exc, OptionError) or "unknown policy" not in str(exc):
            raise
        raise OptionError(f"unknown policy {name!r}: not a priority name ({', '.join(PRIORITIES)}) or a trained "
                          "model file") from None


def sampled_runs(policy, greedy: bool, sample_seed: int, repeats: int) -> list[int | None]:
    """The sampling seeds of one (policy, sequence): ``sample_seed + r`` for repeat r = 0 … ``repeats`` − 1
    when a trained model samples its actions; ``[None]`` (one run, nothing drawn) for priorities, greedy
    models and policy objects (run as given)."""
    if greedy or hasattr(policy, "decide") or str(policy).strip().lower() in PRIORITIES:
        return [None]
    return [sample_seed + r for r in range(repeats)]


def evaluate(policies: Iterable, trace, starts: Iterable[int] | None = None, n_sequences: int = 10,
             seq_len: int = 1024, backfill="none", seed: int = 1, *, machine=None, goals=("bsld", "wait"),
             greedy: bool = True, norms: str = "trace", sample_seed: int = 0, repeats: int = 1) -> list[dict]:
    """Schedule the same sequences with every policy and report each one's scores.

    ``policies``: priority names (``fcfs``, ``sjf``, ``f1``, ``wfp3``, ``unicep``, ``wfp3-authors``,
    ``unicep-authors``, ...), model files/folders, or policy objects.  ``starts``: first jobs
    (0-based) of the sequences (default: ``sequence_starts``).  Each (policy, sequence) is one run
    of the pipeline (``rtsched.pipeline.execute``, validated) on the trace cleaned as the papers do
    (``rtsched.rl.trace``).  Returns ``[{"policy", "backfill", "start", "avg_bsld", "avg_wait", ...}]``
    (goals other than bsld and wait keep their own name).

    ``greedy=False``: trained models sample each action from their masked softmax (the authors' test
    script, ``compare-pick-jobs.py``), ``repeats`` runs per sequence, run r with the generator seed
    ``sample_seed + r`` (``sampled_runs``); their rows also carry ``repeat`` and ``sample_seed``, one row
    per run (a policy's mean over its rows is then the mean over sequences of the per-sequence means).
    """
    if repeats < 1:
        raise OptionError(f"--repeats: at least 1 run per sequence, got {repeats}")
    tr = load_trace(trace)
    backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS, option="--backfill")
    starts = sequence_starts(tr, seq_len, n_sequences, seed) if starts is None else [int(s) for s in starts]
    for s in starts:
        if not 0 <= s <= len(tr) - seq_len:
            raise OptionError(f"sequence start (--starts) {s} outside [0, {len(tr) - seq_len}] for {seq_len}-job "
                              f"sequences of a {len(tr)}-job trace")
    spec = RunSpec(trace=tr.path, machine=machine_spec(tr, machine), event_order="rlscheduler")
    rows: list[dict] = []
    for p in policies:
        label = getattr(p, "name", type(p).__name__) if hasattr(p, "decide") else (
            str(p).strip().lower() if str(p).strip().lower() in PRIORITIES else os.fspath(p))
        for s in starts:
            for r, run_seed in enumerate(sampled_runs(p, greedy, sample_seed, repeats)):
                policy = sequence_policy(p, tr, s, seq_len, backfill, greedy=greedy, norms=norms, seed=run_seed)
                record = execute(spec, workload=tr.window(s, seq_len), policy=policy)
                row = {"policy": label, "backfill": backfill, "start": s}
                if run_seed is not None:
                    row.update(repeat=r, sample_seed=run_seed)
                for g in goals:
                    row[f"avg_{g}" if g in ("bsld", "wait") else g] = record.sequence_score(g)
                rows.append(row)
    return rows


def online_policy(name):
    """A policy for ``evaluate_online``: ``"NAME"`` or ``"NAME+BACKFILL"`` of the textbook batch policies
    (``heuristics.registry``; e.g. ``fcfs+easy`` = EASY, ``sjf+easy``, ``smallest`` = seed 004's SJF by
    cores), a model file/folder, or a policy object."""
    if hasattr(name, "decide"):
        return name
    text = os.fspath(name)
    base, _, backfill = text.partition("+")
    if base.strip().lower() in PRIORITIES:
        return make_policy(base.strip().lower(), backfill=backfill.strip().lower() or "none")
    return make_policy(text)


def evaluate_online(policies: Iterable, trace, starts: Iterable[int], n_jobs: int, *, machine=None,
                    keep_series: bool = False) -> list[dict]:
    """Seed 004's metrics for every policy on the same trace segments (jobs [s, s + n_jobs)), each
    one validated run of the pipeline in the core's ``"rlscheduler"`` event order (the split-window
    agent's training order).

    Rows: ``policy``, ``start``, ``avg_wait`` (s, every job of the segment), ``avg_queue`` (time-average
    number of waiting jobs from the first to the last arrival, ``rtsched.metrics.mean_queue_length``),
    ``utilization`` (busy cores over the same window), ``avg_bsld`` (τ = 10 s), ``forced`` (the
    split-window policy's starts on an idle machine, ``SplitWindowPolicy.n_forced``); with
    split-window policies also ``avg_invisible`` and ``partial_fraction`` (seed 004 Fig. 6); with
    ``keep_series`` also ``queue_series`` = (times, lengths) (``rtsched.metrics.queue_length_series``).
    """
    from rtsched import metrics

    tr = load_trace(trace)
    spec = RunSpec(trace=tr.path, machine=machine_spec(tr, machine), event_order="rlscheduler")
    starts = [int(s) for s in starts]
    for s in starts:
        if not 0 <= s <= len(tr) - n_jobs:
            raise OptionError(f"segment start {s} outside [0, {len(tr) - n_jobs}] for {n_jobs}-job segments")
    rows = []
    for p in policies:
        label = getattr(p, "name", None) if hasattr(p, "decide") else os.fspath(p)
        for s in starts:
            policy = online_policy(p)
            wl = tr.window(s, n_jobs)
            rec = execute(spec, workload=wl, policy=policy)
            outs = rec.outcomes
            submit = np.array([o.job.submit for o in outs], dtype=np.int64)
            start = np.array([o.first_start for o in outs], dtype=np.int64)
            window = (int(submit.min()), int(submit.max()))
            row = {"policy": label, "start": s, "avg_wait": float((start - submit).mean()),
                   "avg_queue": metrics.mean_queue_length(submit, start, window),
                   "utilization": metrics.utilization(rec.result, window)["utilization"] if window[1] > window[0]
                   else 0.0,
                   "avg_bsld": rec.sequence_score("bsld"), "forced": int(getattr(policy, "n_forced", 0))}
            obsb = getattr(policy, "obsb", None)
            if obsb is not None:  # seed 004 Fig. 6 diagnostics of the split-window policy
                row.update({k: v for k, v in obsb.diagnostics().items() if k != "decisions"})
            if keep_series:
                row["queue_series"] = metrics.queue_length_series(submit, start)
            rows.append(row)
    return rows


__all__ = ["evaluate", "evaluate_online", "machine_spec", "online_policy", "sampled_runs", "sequence_policy",
           "sequence_starts"]
