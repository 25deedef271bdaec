"""Online policies against the offline optimum on the same instances (seed 002 Table 3).

An online policy runs in the core simulator on the instance's jobs: they arrive at their submit
times and the policy sees their walltimes only (the simulator alone knows the runtimes).  The
machine is ``mira:<blocks>``, the aligned block model the exact solvers use.  Every slowdown comes
from :mod:`rtsched.metrics`.

Policy names: a seed-002 scheme label (``wcjs-jit``, ``jit-ckpt``, ``highpq``, ... — the scheme
fixes the checkpoint model) or a ``make_policy`` name (``wcjs``, ``preempt``, ``fcfs``, ...) run
under ``checkpoint`` (default JIT: Table 3 compares the formulation with WCJS under JIT-CKPT).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from heuristics.registry import SCHEMES
from rtsched.pipeline import RunSpec, execute

from milp.instance import Instance
from milp.solve import SolveResult, solve

OPTIMUM = "optimum"


@dataclass
class PolicyRun:
    """One policy (or the optimum) on one instance."""

    instance: str
    policy: str
    bj_sd_mean: float | None
    rtj_sd_mean: float | None
    status: str = "simulated"
    extra: dict[str, Any] = field(default_factory=dict)


def online_spec(instance: Instance, name: str, checkpoint: str = "jit") -> RunSpec:
    """The run pipeline's spec of policy ``name`` on ``instance``: a scheme label fixes its
    checkpoint model, any other policy name runs under ``checkpoint``; machine ``mira:<blocks>``."""
    key = name.strip().lower()
    if key in SCHEMES:
        return RunSpec(machine=f"mira:{instance.blocks}", scheme=key, io=instance.io)
    return RunSpec(machine=f"mira:{instance.blocks}", policy=name.strip(), checkpoint=checkpoint, io=instance.io)


def run_online(instance: Instance, name: str, checkpoint: str = "jit") -> PolicyRun:
    """Simulate ``name`` on ``instance`` through the run pipeline and read the SD means."""
    record = execute(online_spec(instance, name, checkpoint), workload=instance.workload())
    groups = record.summary["summary"]
    unfinished = record.summary["unfinished"]
    if unfinished:
        raise RuntimeError(f"{instance.name}: policy {name!r} left {unfinished} jobs unfinished")

    def mean(kind: str) -> float | None:
        return groups[kind]["mean_sd"] if groups[kind]["n"] > 0 else None

    preemptions = sum(o.n_preemptions for o in record.outcomes)
    return PolicyRun(instance.name, name, mean("batch"), mean("rt"),
                     extra={"preemptions": preemptions, "checkpoint": record.checkpoint.label})


def optimum_run(instance: Instance, **solve_kwargs: Any) -> tuple[PolicyRun, SolveResult]:
    res = solve(instance, **solve_kwargs)
    return PolicyRun(instance.name, OPTIMUM, res.bj_sd_mean, res.rtj_sd_mean, res.status,
                     {"theta": res.theta_used, "gap": res.gap, "seconds": res.seconds,
                      "preemptions": res.n_preempted}), res


def compare(instances: Sequence[Instance], policies: Sequence[str], checkpoint: str = "jit",
            **solve_kwargs: Any) -> list[PolicyRun]:
    """The optimum (``solve(**solve_kwargs)``) and every policy on every instance."""
    runs: list[PolicyRun] = []
    for inst in instances:
        runs.append(optimum_run(inst, **solve_kwargs)[0])
        for name in policies:
            runs.append(run_online(inst, name, checkpoint))
    return runs


def table3(runs: Sequence[PolicyRun]) -> list[dict[str, Any]]:
    """Table 3 layout: per algorithm, the mean over instances of the per-instance BJ and RTJ SD
    means (instances without BJs or RTJs are left out of that column), and the relative excess
    over the optimum (seed 002: "WCJS ... 69 % and 38 % worse")."""
    names: list[str] = []
    for r in runs:
        if r.policy not in names:
            names.append(r.policy)
    rows = []
    for name in names:
        sel = [r for r in runs if r.policy == name]
        bj = [r.bj_sd_mean for r in sel if r.bj_sd_mean is not None]
        rt = [r.rtj_sd_mean for r in sel if r.rtj_sd_mean is not None]
        rows.append({"algorithm": name, "instances": len(sel),
                     "bj_sd": sum(bj) / len(bj) if bj else math.nan,
                     "rtj_sd": sum(rt) / len(rt) if rt else math.nan,
                     "not_optimal": sum(1 for r in sel if r.status not in ("optimal", "simulated"))})
    opt = next((r for r in rows if r["algorithm"] == OPTIMUM), None)
    for r in rows:
        for col in ("bj_sd", "rtj_sd"):
            base = opt[col] if opt else math.nan
            r[f"{col}_vs_optimum"] = (r[col] / base - 1.0) if opt and base and not math.isnan(base) else math.nan
    return rows


__all__ = ["OPTIMUM", "PolicyRun", "online_spec", "run_online", "optimum_run", "compare", "table3"]
