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

from heuristics.registry import SCHEMES, make_policy, scheme
from rtsched import metrics
from rtsched.checkpoint import CheckpointModel
from rtsched.machines import machine_from_spec
from rtsched.sim.core import Simulator
from rtsched.validate import validate_schedule

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


def build_online_policy(name: str, checkpoint: str = "jit"):
    """(policy, checkpoint model) for a scheme label or a ``make_policy`` name."""
    key = name.strip().lower()
    if key in SCHEMES:
        return scheme(key)
    return make_policy(key), CheckpointModel.parse(checkpoint)


def run_online(instance: Instance, name: str, checkpoint: str = "jit") -> PolicyRun:
    """Simulate ``name`` on ``instance`` (machine ``mira:<blocks>``) and read the SD means."""
    policy, ckpt = build_online_policy(name, checkpoint)
    machine = machine_from_spec(f"mira:{instance.blocks}")
    workload = instance.workload()
    sim = Simulator(workload, machine, checkpoint=ckpt, io=instance.io)
    result = sim.run(policy)
    validate_schedule(result.schedule, workload, machine, sim.io)
    table = metrics.job_table(result)
    if len(table) != len(instance.jobs):
        raise RuntimeError(f"{instance.name}: policy {name!r} left {len(instance.jobs) - len(table)} jobs unfinished")
    summary = metrics.summarize(table, by=("kind",), metrics=("sd",), include_all=False)

    def mean(kind: str) -> float | None:
        row = summary.loc[kind]
        return float(row["mean_sd"]) if int(row["n"]) > 0 else None

    preemptions = int(table["n_preemptions"].sum())
    return PolicyRun(instance.name, name, mean("batch"), mean("rt"), extra={"preemptions": preemptions,
                                                                          "checkpoint": ckpt.label})


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


__all__ = ["OPTIMUM", "PolicyRun", "build_online_policy", "run_online", "optimum_run", "compare", "table3"]
