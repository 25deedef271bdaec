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
                    norms: str = "trace"):
    """The policy ``name`` for one sequence: a priority under the committed-head rule, a trained model
    (given the sequence's extra SWF columns and the evaluated trace's normalisation when ``norms`` is
    ``"trace"``, the authors' practice), or a policy object as given."""
    if hasattr(name, "decide"):
        return name
    key = str(name).strip().lower()
    if key in PRIORITIES:
        return make_policy(key, committed=True, backfill=backfill)
    try:
        return make_policy(os.fspath(name), backfill=backfill, greedy=greedy, extras=trace.extras(start, seq_len),
                           norms=trace.norms() if norms == "trace" else None)
    except ValueError as exc:
        if isinstance(exc, OptionError) or "unknown policy" not in str(exc):
            raise
        raise OptionError(f"unknown policy {name!r}: not a priority name ({', '.join(PRIORITIES)}) or a trained "
                          "model file") from None


def evaluate(policies: Iterable, trace, starts: Iterable[int] | None = None, n_sequences: int = 10,
             seq_len: int = 1024, backfill="none", seed: int = 1, *, machine=None, goals=("bsld", "wait"),
             greedy: bool = True, norms: str = "trace") -> list[dict]:
    """Schedule the same sequences with every policy and report each one's scores.

    ``policies``: priority names (``fcfs``, ``sjf``, ``f1``, ``wfp3``, ``unicep``, ``wfp3-authors``,
    ``unicep-authors``, ...), model files/folders, or policy objects.  ``starts``: first jobs
    (0-based) of the sequences (default: ``sequence_starts``).  Each (policy, sequence) is one run
    of the pipeline (``rtsched.pipeline.execute``, validated) on the trace cleaned as the papers do
    (``rtsched.rl.trace``).  Returns ``[{"policy", "backfill", "start", "avg_bsld", "avg_wait", ...}]``
    (goals other than bsld and wait keep their own name).
    """
    tr = load_trace(trace)
    backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS, option="--backfill")
    starts = sequence_starts(tr, seq_len, n_sequences, seed) if starts is None else [int(s) for s in starts]
    for s in starts:
        if not 0 <= s <= len(tr) - seq_len:
            raise OptionError(f"sequence start {s} outside [0, {len(tr) - seq_len}] for {seq_len}-job sequences of "
                              f"a {len(tr)}-job trace")
    spec = RunSpec(trace=tr.path, machine=machine_spec(tr, machine), event_order="rlscheduler")
    rows: list[dict] = []
    for p in policies:
        label = getattr(p, "name", type(p).__name__) if hasattr(p, "decide") else (
            str(p).strip().lower() if str(p).strip().lower() in PRIORITIES else os.fspath(p))
        for s in starts:
            policy = sequence_policy(p, tr, s, seq_len, backfill, greedy=greedy, norms=norms)
            record = execute(spec, workload=tr.window(s, seq_len), policy=policy)
            row = {"policy": label, "backfill": backfill, "start": s}
            for g in goals:
                row[f"avg_{g}" if g in ("bsld", "wait") else g] = record.sequence_score(g)
            rows.append(row)
    return rows


__all__ = ["evaluate", "machine_spec", "sequence_policy", "sequence_starts"]
