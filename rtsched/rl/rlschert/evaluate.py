"""``rtsched rl evaluate --trace vasplike``: policies on the VASP-like workload's held-out sequences.

The synthetic workload (``rtsched.generators.vasplike``) has no file: its trace names
(``VASPLIKE_TRACES``: ``vasplike`` = the calibrated parameter set, ``vasplike-stated`` = the paper's
stated figures, the shipped ``rlschert-vasplike-*`` models' training workload) stand for
``n_sequences`` held-out sequences, generator seeds ``HELD_OUT_SEEDS.start + 0, 1, ...`` (training
never draws them), on the paper's 20 resource units.  Policies: RLSchert models (files, training
folders or shipped names) and the heuristics on RLSchert's action space (``sjf``, ``saf``,
``fcfs``), each optionally ``+kill`` (the rule-based kill first) or ``+rkill`` (the remaining-time
kill first).  Each (policy, sequence) is one
validated run of the pipeline, scored like a trace's rows plus ``avg_slowdown`` (seed 001 Eq. 13,
unbounded) and ``jobs`` (to average over all jobs, as the paper does).
"""
from __future__ import annotations

import os
from dataclasses import asdict
from typing import Iterable

from rtsched.errors import OptionError
from rtsched.generators.vasplike import HELD_OUT_SEEDS, UNITS, param_set, trace_param_set
from rtsched.rl.rlschert.results import sequence_columns, vasplike_sequences

HEURISTICS = ("sjf", "saf", "fcfs")  # RLSchertHeuristicPolicy's names
DEFAULT_SEQUENCES = 16  # seed 001's test set: 16 sequences of 200 arrival slots


def vasplike_scheduler(policy: str) -> str:
    """``rtsched.rl.rlschert.results.scheduler``'s name for a ``--policies`` entry: a heuristic
    (``saf``, ``sjf+kill``, ...) or ``model:PATH[+kill]`` for an RLSchert model; OptionError naming the
    entry for a policy that cannot run on this workload."""
    from rtsched.rl.hook import is_model_path, model_source

    text = str(policy).strip()
    kill = text.lower().endswith("+kill")
    remaining = text.lower().endswith("+rkill")
    base = text[:-5] if kill else text[:-6] if remaining else text
    if base.lower() in HEURISTICS:
        return base.lower() + ("+kill" if kill else "+rkill" if remaining else "")
    if not is_model_path(base) or remaining:
        raise OptionError(f"--policies {text}: not a policy of the VASP-like workload (its heuristics: "
                          f"{', '.join(HEURISTICS)}, optionally +kill or +rkill; or an RLSchert model, "
                          f"optionally +kill)")
    path = model_source(base)
    if not os.path.exists(path):
        raise OptionError(f"--policies {text}: model file not found ({path})")
    from rtsched.rl.modelfiles import load_model

    agent = load_model(path).agent
    if agent != "rlschert":
        raise OptionError(f"--policies {text}: a model of the {agent} agent cannot run on the VASP-like workload "
                          f"(RLSchert models and the {', '.join(HEURISTICS)} heuristics can)")
    return f"model:{path}" + ("+kill" if kill else "")


def evaluate_vasplike(policies: Iterable[str], trace: str = "vasplike", n_sequences: int = DEFAULT_SEQUENCES, *,
                      greedy: bool = True) -> list[dict]:
    """Every policy on the same held-out sequences.  Rows: ``policy`` (as given), ``backfill``
    (``"none"``: the RLSchert action space already picks among the visible jobs that fit now),
    ``start`` (the sequence's generator seed), ``avg_bsld`` (τ = 10 s), ``avg_wait`` (s, lost work of
    killed jobs included), ``avg_slowdown`` (Eq. 13), ``jobs``, ``kills``."""
    params = trace_param_set(trace)
    if params is None:
        raise OptionError(f"--trace {trace}: not a name of the VASP-like workload")
    if not 1 <= n_sequences <= len(HELD_OUT_SEEDS):
        raise OptionError(f"--n-sequences: the VASP-like workload holds out {len(HELD_OUT_SEEDS)} sequences, "
                          f"got {n_sequences}")
    names = [(str(p).strip(), vasplike_scheduler(p)) for p in policies]
    sequences = vasplike_sequences(n_sequences, HELD_OUT_SEEDS.start, **asdict(param_set(params)))
    rows: list[dict] = []
    for label, name in names:
        for k, seq in enumerate(sequences):
            cols = sequence_columns(name, seq, UNITS, greedy=greedy)
            rows.append({"policy": label, "backfill": "none", "start": HELD_OUT_SEEDS.start + k,
                         "avg_bsld": float(cols["bsld_rl"].mean()), "avg_wait": float(cols["wait"].mean()),
                         "avg_slowdown": float(cols["sd"].mean()), "jobs": len(cols["sd"]),
                         "kills": int(cols["n_kills"].sum())})
    return rows


__all__ = ["DEFAULT_SEQUENCES", "HEURISTICS", "evaluate_vasplike", "vasplike_scheduler"]
