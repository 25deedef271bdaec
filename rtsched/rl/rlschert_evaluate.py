"""``rtsched rl evaluate --trace vasplike``: policies on the VASP-like workload's held-out sequences.

The synthetic workload (``rtsched.generators.vasplike``) has no file: its trace names
(``VASPLIKE_TRACES``: ``vasplike`` = the calibrated parameter set, ``vasplike-stated`` = the paper's
stated figures, the shipped ``rlschert-vasplike-*`` models' training workload) stand for
``n_sequences`` held-out sequences, generator seeds ``HELD_OUT_SEEDS.start + 0, 1, ...`` (training
never draws them), on the paper's 20 resource units.  Policies: RLSchert models (files, training
folders or shipped names) and the heuristics on RLSchert's action space (``sjf``, ``saf``,
``fcfs``), each optionally ``+kill`` (the rule-based kill first).  Each (policy, sequence) is one
validated run of the pipeline, scored like a trace's rows plus ``avg_slowdown`` (seed 001 Eq. 13,
unbounded) and ``jobs`` (to average over all jobs, as the paper does).
"""
from __future__ import annotations

import os
from dataclasses import asdict
from typing import Iterable

from rtsched.errors import OptionError
from rtsched.generators.vasplike import HELD_OUT_SEEDS, UNITS, VASPLIKE_TRACES, param_set
from rtsched.metrics import job_columns
from rtsched.pipeline import RunSpec, execute

HEURISTICS = ("sjf", "saf", "fcfs")  # RLSchertHeuristicPolicy's names
DEFAULT_SEQUENCES = 16  # seed 001's test set: 16 sequences of 200 arrival slots


def is_vasplike_trace(name) -> bool:
    """Whether a ``--trace`` value names the synthetic VASP-like workload (not a file)."""
    return isinstance(name, str) and name.strip().lower() in VASPLIKE_TRACES


def vasplike_scheduler(policy: str) -> str:
    """``rtsched.rl.rlschert_results.scheduler``'s name for a ``--policies`` entry: a heuristic
    (``saf``, ``sjf+kill``, ...) or ``model:PATH[+kill]`` for an RLSchert model; OptionError naming the
    entry for a policy that cannot run on this workload."""
    from rtsched.rl.hook import is_model_path, model_source

    text = str(policy).strip()
    kill = text.lower().endswith("+kill")
    base = text[:-5] if kill else text
    if base.lower() in HEURISTICS:
        return base.lower() + ("+kill" if kill else "")
    if not is_model_path(base):
        raise OptionError(f"--policies {text}: not a policy of the VASP-like workload (its heuristics: "
                          f"{', '.join(HEURISTICS)}, optionally +kill; or an RLSchert model)")
    path = model_source(base)
    if not os.path.exists(path):
        raise OptionError(f"--policies {text}: model file not found ({path})")
    from rtsched.rl.ppo import load_model

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
    from rtsched.rl.rlschert_results import scheduler, vasplike_sequences

    params = param_set(VASPLIKE_TRACES[trace.strip().lower()])
    if not 1 <= n_sequences <= len(HELD_OUT_SEEDS):
        raise OptionError(f"--n-sequences: the VASP-like workload holds out {len(HELD_OUT_SEEDS)} sequences, "
                          f"got {n_sequences}")
    names = [(p, vasplike_scheduler(p)) for p in policies]
    sequences = vasplike_sequences(n_sequences, HELD_OUT_SEEDS.start, **asdict(params))
    spec = RunSpec(machine=f"flat:{UNITS}")
    rows: list[dict] = []
    for label, name in names:
        for k, seq in enumerate(sequences):
            policy = scheduler(name, seq.predictions, UNITS)
            if hasattr(policy, "greedy"):
                policy.greedy = greedy
            record = execute(spec, workload=seq.workload, policy=policy)
            # from each job's end (a killed job's turnaround includes its lost stints), not from the
            # first start as the rigid-job sequence scores of a trace's rows are
            cols = job_columns(record.result)
            rows.append({"policy": str(label).strip(), "backfill": "none", "start": HELD_OUT_SEEDS.start + k,
                         "avg_bsld": float(cols["bsld_rl"].mean()), "avg_wait": float(cols["wait"].mean()),
                         "avg_slowdown": float(cols["sd"].mean()), "jobs": len(cols["sd"]),
                         "kills": int(cols["n_kills"].sum())})
    return rows


__all__ = ["DEFAULT_SEQUENCES", "HEURISTICS", "evaluate_vasplike", "is_vasplike_trace", "vasplike_scheduler"]
