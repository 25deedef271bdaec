"""Online policies against the offline optimum on the same instances (seed 002 Table 3).

An online policy runs through the run pipeline (``rtsched.pipeline``) on the instance's jobs: they
arrive at their submit times and the policy sees their walltimes only (the simulator alone knows
the runtimes).  The machine is ``mira:<blocks>``, the aligned block model the exact solvers use.
Every slowdown comes from :mod:`rtsched.metrics`.

Policy names: a seed-002 scheme label (``wcjs-jit``, ``jit-ckpt``, ``highpq``, ... — the scheme
fixes the checkpoint model), a ``make_policy`` name (``wcjs``, ``preempt``, ``fcfs``, ...) run under
``checkpoint`` (default JIT: Table 3 compares the formulation with WCJS under JIT-CKPT), or a
trained model file.

Per instance and policy (``PolicyRun``), the gaps to that instance's optimum:
``bj_gap = bj_sd_mean / optimum's − 1`` and ``rtj_gap`` likewise for the RTJs (a policy may beat
the optimum on RTJs: the optimum minimises the BJ mean under the RTJ bound θ_used, it does not
minimise the RTJ mean; with ``rtj_tiebreak`` (the default, ``RTJ_TIEBREAK``) the optimum is the
least RTJ mean among the BJ-optimal schedules, the same for every method; without it, whichever
BJ-optimal schedule the solver found); ``decision_seconds`` is the time the policy spent deciding
(the optimum: its solve time).  A policy *matches the optimum* on an instance when its BJ mean is no
worse than the optimum's (to 1e-9) and its RTJ mean meets the bound θ_used the optimum met.
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from heuristics.registry import SCHEMES, policy_source
from rtsched.files import atomic_write_text
from rtsched.pipeline import RunSpec, execute, file_sha256
from rtsched.version import __version__

from milp.instance import Instance
from milp.plan import preemption_reasons
from milp.replan_hook import is_replan_name, replan_identity
from milp.solve import SolveResult, solve

OPTIMUM = "optimum"
REFERENCE = "wcjs-jit"  # the reference policy of the paired intervals (``rtsched compare --reference``)
YARDSTICK = "replan"  # the online yardstick: the paired intervals are also taken against it
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0
# Fewer paired instances than this give no interval: a bootstrap of 1-4 values says nothing.
MIN_PAIRED = 5
# The comparison's optimum is canonical by default: among the BJ-optimal schedules, the least RTJ
# mean (milp.solve's third stage), so RTJ gaps do not depend on a solver's tie-break.
RTJ_TIEBREAK = True
MATCH_TOLERANCE = 1e-9


@dataclass
class PolicyRun:
    """One policy (or the optimum) on one instance.  Slowdowns are per-kind means (None when the
    instance has no job of that kind); gaps are relative to the instance's optimum."""

    instance: str
    policy: str
    bj_sd_mean: float | None
    rtj_sd_mean: float | None
    status: str = "simulated"
    extra: dict[str, Any] = field(default_factory=dict)
    bj_gap: float | None = None
    rtj_gap: float | None = None
    decision_seconds: float | None = None
    matches_optimum: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"instance": self.instance, "policy": self.policy, "status": self.status,
               "bj_sd_mean": self.bj_sd_mean, "rtj_sd_mean": self.rtj_sd_mean, "bj_gap": self.bj_gap,
               "rtj_gap": self.rtj_gap, "decision_seconds": self.decision_seconds,
               "matches_optimum": self.matches_optimum, **self.extra}
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> "PolicyRun":
        """The run ``to_json`` wrote (its extra keys back in ``extra``)."""
        fixed = ("instance", "policy", "status", "bj_sd_mean", "rtj_sd_mean", "bj_gap", "rtj_gap", "decision_seconds",
                 "matches_optimum")
        return cls(row["instance"], row["policy"], row["bj_sd_mean"], row["rtj_sd_mean"], row["status"],
                   {k: v for k, v in row.items() if k not in fixed}, row["bj_gap"], row["rtj_gap"],
                   row["decision_seconds"], row["matches_optimum"])


def online_spec(instance: Instance, name: str, checkpoint: str = "jit") -> RunSpec:
    """The run pipeline's spec of policy ``name`` on ``instance``: a scheme label fixes its
    checkpoint model, any other policy name runs under ``checkpoint``; machine ``mira:<blocks>``."""
    key = name.strip().lower()
    if key in SCHEMES:
        return RunSpec(machine=f"mira:{instance.blocks}", scheme=key, io=instance.io)
    return RunSpec(machine=f"mira:{instance.blocks}", policy=name.strip(), checkpoint=checkpoint, io=instance.io)


def run_online(instance: Instance, name: str, checkpoint: str = "jit") -> PolicyRun:
    """Simulate ``name`` on ``instance`` through the run pipeline and read the SD means."""
    record = execute(online_spec(instance, name, checkpoint), workload=instance.workload(), time_decisions=True)
    groups = record.summary["summary"]
    unfinished = record.summary["unfinished"]
    if unfinished:
        raise RuntimeError(f"{instance.name}: policy {name!r} left {unfinished} jobs unfinished")

    def mean(kind: str) -> float | None:
        return groups[kind]["mean_sd"] if groups[kind]["n"] > 0 else None

    preemptions = sum(o.n_preemptions for o in record.outcomes)
    return PolicyRun(instance.name, name, mean("batch"), mean("rt"),
                     extra={"preemptions": preemptions, "checkpoint": record.checkpoint.label},
                     decision_seconds=record.timings["decide_s"])


def optimum_run(instance: Instance, **solve_kwargs: Any) -> tuple[PolicyRun, SolveResult]:
    """Solve ``instance``; besides θ_used and the solve's figures, the row counts the plan's
    preemptions an online scheduler could not copy: those begun before the job they make room for
    arrived (``preemptions_anticipatory``); and, apart, those that serve batch jobs only
    (``preemptions_for_bjs_only``: the heuristic schemes preempt only for RTJs, but preempting a
    checkpointable BJ for a BJ already waiting is an ordinary online move, ``replan`` makes it, so
    these need the future only when they are also anticipatory).  With
    ``rtj_tiebreak=True`` it adds ``rtj_sd_mean_before_tiebreak``, the BJ stage's plan's RTJ mean."""
    res = solve(instance, **solve_kwargs)
    reasons = preemption_reasons(instance, res.placements or [])
    extra = {"theta": res.theta_used, "gap": res.gap, "seconds": res.seconds, "preemptions": res.n_preempted,
             "preemptions_anticipatory": sum(r.anticipatory for r in reasons),
             "preemptions_for_bjs_only": sum(not r.for_rtj for r in reasons)}
    tie = next((st for st in res.stages if st["stage"] == "rtj_tiebreak"), None)
    if tie is not None and "rtj_sd_mean_before" in tie:  # the BJ stage's own plan's RTJ mean
        extra["rtj_sd_mean_before_tiebreak"] = tie["rtj_sd_mean_before"]
    return PolicyRun(instance.name, OPTIMUM, res.bj_sd_mean, res.rtj_sd_mean, res.status, extra,
                     bj_gap=0.0 if res.bj_sd_mean is not None else None,
                     rtj_gap=0.0 if res.rtj_sd_mean is not None else None,
                     decision_seconds=res.seconds, matches_optimum=res.status == "optimal"), res


def _gap(value: float | None, best: float | None) -> float | None:
    if value is None or best is None or best == 0:
        return None
    return value / best - 1.0


def meets_theta(run: PolicyRun, theta: float | None) -> bool:
    """Whether ``run``'s RTJ mean is within the θ an optimum used (always, without RTJs)."""
    return run.rtj_sd_mean is None or (theta is not None and run.rtj_sd_mean <= theta + MATCH_TOLERANCE)


def score_against(run: PolicyRun, opt: PolicyRun) -> PolicyRun:
    """Set ``run``'s gaps to the instance's optimum ``opt`` and whether it matches it (BJ mean no worse,
    RTJ mean within the θ the optimum used, optimum proven); returns ``run``."""
    run.bj_gap = _gap(run.bj_sd_mean, opt.bj_sd_mean)
    run.rtj_gap = _gap(run.rtj_sd_mean, opt.rtj_sd_mean)
    bj_ok = run.bj_sd_mean is None or (opt.bj_sd_mean is not None
                                       and run.bj_sd_mean <= opt.bj_sd_mean * (1 + MATCH_TOLERANCE))
    run.matches_optimum = bool(bj_ok and meets_theta(run, opt.extra.get("theta")) and opt.status == "optimal")
    return run


def compare_instance(instance: Instance, policies: Sequence[str], checkpoint: str = "jit",
                     **solve_kwargs: Any) -> list[PolicyRun]:
    """The optimum and every policy on one instance, with each policy's gaps to the optimum."""
    opt, _ = optimum_run(instance, **solve_kwargs)
    return [opt, *(score_against(run_online(instance, name, checkpoint), opt) for name in policies)]


def _compare_task(args: tuple) -> list[PolicyRun]:
    instance, policies, checkpoint, solve_kwargs = args
    return compare_instance(instance, policies, checkpoint, **solve_kwargs)


# ------------------------------------------------------------------------------ resumable runs
def _policy_identity(name: str) -> Any:
    """What decides a policy's runs: its name, and for a model (a file, a training folder or a
    shipped model's name) the bytes of its file: a retrained or newly shipped model must not reuse
    old results."""
    if is_replan_name(name):  # every option, defaults included: a changed default must not reuse old rows
        return ["replan", replan_identity(name)]
    source = name if os.path.isfile(name) else policy_source(name)
    if source is not None and os.path.isfile(source):
        return [name, file_sha256(source)]
    return name


def run_keys(instances: Sequence[Instance], policies: Sequence[str], checkpoint: str,
             solve_kwargs: dict[str, Any]) -> list[str]:
    """SHA-256 of everything that decides each instance's comparison rows: the instance (jobs, blocks,
    I/O model), the policies, the checkpoint model, the solve options (not the CPU counts) and the
    rtsched version.  (The policies' model files are read once for all instances.)"""
    shared = {"policies": [_policy_identity(p) for p in policies], "checkpoint": checkpoint, "version": __version__,
              "solve": {k: v for k, v in sorted(solve_kwargs.items()) if k not in ("workers", "threads")}}
    return [hashlib.sha256(json.dumps({**shared, "instance": inst.to_dict(), "io": repr(inst.io)}, sort_keys=True,
                                      default=str).encode()).hexdigest() for inst in instances]


def run_key(instance: Instance, policies: Sequence[str], checkpoint: str, solve_kwargs: dict[str, Any]) -> str:
    """:func:`run_keys` of one instance."""
    return run_keys([instance], policies, checkpoint, solve_kwargs)[0]


def _cache_path(cache_dir: str | os.PathLike, instance: Instance, key: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", instance.name or "instance")[:80]
    return Path(cache_dir) / f"{safe}-{key[:16]}.json"


def _cached(path: Path, key: str) -> list[PolicyRun] | None:
    """The rows saved at ``path`` for ``key``, or None (absent, another key, or unreadable: redone)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") != key:
            return None
        return [PolicyRun.from_json(row) for row in data["runs"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def compare(instances: Sequence[Instance], policies: Sequence[str], checkpoint: str = "jit", *, jobs: int = 1,
            progress: Callable[[Instance, list[PolicyRun]], None] | None = None, rtj_tiebreak: bool = RTJ_TIEBREAK,
            cache_dir: str | os.PathLike | None = None, **solve_kwargs: Any) -> list[PolicyRun]:
    """The optimum (``solve(rtj_tiebreak=..., **solve_kwargs)``: by default the canonical one, the
    least RTJ mean among the BJ-optimal schedules) and every policy on every instance.

    ``jobs`` > 1 handles instances in that many processes (each solve then gets one CP-SAT worker
    and one MILP solver thread unless ``workers`` / ``threads`` is given); ``progress(instance,
    runs)`` is called as each instance finishes.
    ``cache_dir``: each finished instance's rows are saved there (one JSON file per instance,
    written atomically, keyed by :func:`run_keys`); a later call with the same inputs takes them from
    there instead of solving again, so an interrupted comparison (Ctrl-C, SIGTERM, SIGKILL) resumes
    where it stopped.  Cached instances are reported to ``progress`` first.
    Runs are returned in instance order, the optimum first, then the policies in the given order.
    """
    policies = list(policies)
    solve_kwargs["rtj_tiebreak"] = rtj_tiebreak
    by_name: dict[str, list[PolicyRun]] = {}
    keys: dict[str, tuple[Path, str]] = {}
    if cache_dir is not None:
        os.makedirs(cache_dir, exist_ok=True)
        for inst, key in zip(instances, run_keys(instances, policies, checkpoint, solve_kwargs)):
            path = _cache_path(cache_dir, inst, key)
            keys[inst.name] = (path, key)
            cached = _cached(path, key)
            if cached is not None:
                by_name[inst.name] = cached
                if progress is not None:
                    progress(inst, cached)

    def finished(inst: Instance, runs: list[PolicyRun]) -> None:
        by_name[inst.name] = runs
        if inst.name in keys:
            path, key = keys[inst.name]
            atomic_write_text(path, json.dumps({"key": key, "instance": inst.name,
                                                "runs": [r.to_json() for r in runs]}, allow_nan=False))
        if progress is not None:
            progress(inst, runs)

    todo = [inst for inst in instances if inst.name not in by_name]
    tasks = [(inst, policies, checkpoint, solve_kwargs) for inst in todo]
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            finished(task[0], _compare_task(task))
    else:
        one = {"workers": 1} if "workers" not in solve_kwargs else {}
        if solve_kwargs.get("threads") is None:
            one["threads"] = 1
        tasks = [(i, p, c, {**kw, **one}) for i, p, c, kw in tasks]
        with cf.ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(_compare_task, task): task[0] for task in tasks}
            for fut in cf.as_completed(futures):
                finished(futures[fut], fut.result())
    return [r for inst in instances for r in by_name[inst.name]]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def paired_bootstrap(diffs: Sequence[float], samples: int = BOOTSTRAP_SAMPLES,
                     seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float] | None:
    """(mean, lo, hi): the mean of paired per-instance differences and its 95 % percentile bootstrap
    interval (``samples`` resamples of the instances, seeded: the same numbers on every run); None
    without differences."""
    import numpy as np

    d = np.asarray([x for x in diffs if x is not None and math.isfinite(x)], dtype=float)
    if d.size < MIN_PAIRED:
        return None
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(samples, d.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(d.mean()), float(lo), float(hi)


def paired(runs: Sequence[PolicyRun], policy: str, against: str) -> dict[str, Any] | None:
    """Paired per-instance differences ``policy − against`` of the BJ and RTJ SD means, with their
    95 % bootstrap intervals (``paired_bootstrap``): ``{"against", "instances", "bj": [mean, lo,
    hi], "rtj": [...]}``; None when ``against`` did not run or is ``policy``."""
    if policy == against:
        return None
    mine = {r.instance: r for r in runs if r.policy == policy}
    theirs = {r.instance: r for r in runs if r.policy == against}
    common = [i for i in mine if i in theirs]
    if not common:
        return None
    out: dict[str, Any] = {"against": against, "instances": len(common)}
    for key, attr in (("bj", "bj_sd_mean"), ("rtj", "rtj_sd_mean")):
        diffs = [getattr(mine[i], attr) - getattr(theirs[i], attr) for i in common
                 if getattr(mine[i], attr) is not None and getattr(theirs[i], attr) is not None]
        ci = paired_bootstrap(diffs)
        out[key] = list(ci) if ci is not None else None
    return out


def table3(runs: Sequence[PolicyRun], reference: str = REFERENCE, yardstick: str | None = YARDSTICK) -> list[dict[str, Any]]:
    """Table 3 layout, one row per algorithm: the mean over instances of the per-instance BJ and
    RTJ SD means (instances without BJs or RTJs are left out of that column); the relative excess
    of those means over the optimum's (seed 002: "WCJS ... 69 % and 38 % worse"); the mean, the
    best and the worst of the per-instance gaps; θ violations (instances whose RTJ mean exceeds the
    θ the optimum used); how many instances it matches the optimum on; the mean decision time per
    instance (s); how many optima are not proven; and the paired 95 % bootstrap intervals of its BJ
    and RTJ differences against ``reference`` (``vs_reference``) and against the online yardstick
    ``yardstick`` (``vs_yardstick``; by name, or the first policy whose name starts with it)."""
    names: list[str] = []
    for r in runs:
        if r.policy not in names:
            names.append(r.policy)
    theta = {r.instance: r.extra.get("theta") for r in runs if r.policy == OPTIMUM}
    yard = yardstick_name(names, yardstick)
    rows = []
    for name in names:
        sel = [r for r in runs if r.policy == name]
        bj = [r.bj_sd_mean for r in sel if r.bj_sd_mean is not None]
        rt = [r.rtj_sd_mean for r in sel if r.rtj_sd_mean is not None]
        bj_gaps = [r.bj_gap for r in sel if r.bj_gap is not None]
        rt_gaps = [r.rtj_gap for r in sel if r.rtj_gap is not None]
        secs = [r.decision_seconds for r in sel if r.decision_seconds is not None]
        rows.append({"algorithm": name, "instances": len(sel),
                     "bj_sd": _mean(bj), "rtj_sd": _mean(rt),
                     "bj_gap_mean": _mean(bj_gaps), "rtj_gap_mean": _mean(rt_gaps),
                     "bj_gap_worst": max(bj_gaps) if bj_gaps else math.nan,
                     "rtj_gap_worst": max(rt_gaps) if rt_gaps else math.nan,
                     "bj_gap_best": min(bj_gaps) if bj_gaps else math.nan,
                     "rtj_gap_best": min(rt_gaps) if rt_gaps else math.nan,
                     "theta_violations": (None if name == OPTIMUM else
                                          sum(1 for r in sel if not meets_theta(r, theta.get(r.instance)))),
                     "matches_optimum": sum(1 for r in sel if r.matches_optimum),
                     "decision_seconds": _mean(secs),
                     "not_optimal": sum(1 for r in sel if r.status not in ("optimal", "simulated"))})
    for r in rows:
        online = r["algorithm"] != OPTIMUM
        r["vs_reference"] = paired(runs, r["algorithm"], reference) if online else None
        r["vs_yardstick"] = paired(runs, r["algorithm"], yard) if online and yard else None
    opt = next((r for r in rows if r["algorithm"] == OPTIMUM), None)
    for r in rows:
        for col in ("bj_sd", "rtj_sd"):
            base = opt[col] if opt else math.nan
            r[f"{col}_vs_optimum"] = (r[col] / base - 1.0) if opt and base and not math.isnan(base) else math.nan
    return rows


def hindsight_best(runs: Sequence[PolicyRun], tolerance: float = 0.05) -> dict[str, Any]:
    """How close the online policies get to the optimum *together*: on every instance, the policy a
    clairvoyant chooser would take afterwards — the least BJ mean among the policies whose RTJ mean
    meets the optimum's θ_used (``extra["theta"]``), or, where none does, the one with the least RTJ
    mean (then BJ mean).  A yardstick for an agent's BJ target: no single online policy of the set
    does better than this per-instance choice.

    Returns ``{"instances", "meets_theta" (instances where some policy meets θ_used), "bj_sd" (mean of
    the chosen BJ means), "optimum_bj_sd", "bj_sd_vs_optimum" (relative excess of the means),
    "bj_gap_mean" (mean per-instance gap), "within" (instances whose chosen BJ gap ≤ ``tolerance``),
    "chosen" ({policy: instances it was chosen on})}``; instances without BJs are left out."""
    by_instance: dict[str, list[PolicyRun]] = {}
    for r in runs:
        by_instance.setdefault(r.instance, []).append(r)
    chosen_bj: list[float] = []
    optimum_bj: list[float] = []
    gaps: list[float] = []
    meets = 0
    chosen: dict[str, int] = {}
    for inst, rs in by_instance.items():
        opt = next((r for r in rs if r.policy == OPTIMUM), None)
        online = [r for r in rs if r.policy != OPTIMUM and r.bj_sd_mean is not None]
        if opt is None or opt.bj_sd_mean is None or not online:
            continue
        ok = [r for r in online if meets_theta(r, opt.extra.get("theta"))]
        if ok:
            meets += 1
            pick = min(ok, key=lambda r: r.bj_sd_mean)
        else:
            pick = min(online, key=lambda r: (r.rtj_sd_mean, r.bj_sd_mean))
        chosen[pick.policy] = chosen.get(pick.policy, 0) + 1
        chosen_bj.append(pick.bj_sd_mean)
        optimum_bj.append(opt.bj_sd_mean)
        gaps.append(pick.bj_sd_mean / opt.bj_sd_mean - 1.0)
    mean_chosen, mean_opt = _mean(chosen_bj), _mean(optimum_bj)
    return {"instances": len(gaps), "meets_theta": meets, "bj_sd": mean_chosen, "optimum_bj_sd": mean_opt,
            "bj_sd_vs_optimum": mean_chosen / mean_opt - 1.0 if gaps else math.nan, "bj_gap_mean": _mean(gaps),
            "within": sum(1 for g in gaps if g <= tolerance + MATCH_TOLERANCE), "chosen": chosen}


def yardstick_name(names: Sequence[str], yardstick: str | None) -> str | None:
    """The policy that stands for the yardstick: ``yardstick`` itself, else the first ``replan:...``."""
    if yardstick is None:
        return None
    if yardstick in names:
        return yardstick
    return next((n for n in names if n.startswith(yardstick + ":")), None)


def _verdict(ci: list[float] | None) -> str:
    """What a paired interval supports: "lower" (it lies below 0), "higher", or "unclear"."""
    if ci is None:
        return "unclear"
    return "lower" if ci[2] < 0 else "higher" if ci[1] > 0 else "unclear"


def reading(rows: Sequence[dict[str, Any]], reference: str = REFERENCE) -> str:
    """A one-line reading of a ``table3`` that says only what its figures support: against the
    reference, which policies the paired 95 % intervals put lower (better) or higher on both
    means; among the policies that keep θ on every instance, the one closest to the optimum on BJ
    slowdown (BJ alone is never compared across policies that break θ: a policy that ignores the
    RTJs can beat the optimum's BJ mean); and whether any policy matches the optimum everywhere."""
    online = [r for r in rows if r["algorithm"] != OPTIMUM and not math.isnan(r["bj_gap_mean"])]
    if not online:
        return "no online policy was compared"
    n = max(r["instances"] for r in rows)

    def pct(x: float) -> str:
        return "–" if x is None or math.isnan(x) else f"{x * 100:+.0f} %"

    parts = []
    ref = next((r for r in online if r["algorithm"] == reference), None)
    if ref is not None and len(online) > 1:
        groups: dict[str, list[str]] = {}
        for r in online:
            if r is ref or r.get("vs_reference") is None:
                continue
            v = r["vs_reference"]
            bj, rt = _verdict(v["bj"]), _verdict(v["rtj"])
            if bj == rt == "lower":
                groups.setdefault("lower on both means", []).append(r["algorithm"])
            elif bj == rt == "higher":
                groups.setdefault("higher on both", []).append(r["algorithm"])
            elif "lower" in (bj, rt) and "higher" in (bj, rt):
                groups.setdefault("lower on one mean and higher on the other", []).append(r["algorithm"])
            elif "lower" in (bj, rt):
                groups.setdefault("lower on one mean, the other unclear", []).append(r["algorithm"])
            elif "higher" in (bj, rt):
                groups.setdefault("higher on one mean, the other unclear", []).append(r["algorithm"])
            else:
                groups.setdefault("not distinguishable", []).append(r["algorithm"])
        said = "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items())
        if n < MIN_PAIRED:
            parts.append(f"over {n} instances (too few for paired intervals against {reference})")
        else:
            parts.append(f"over {n} instances, against {reference} (paired 95 % intervals) — {said}")
    else:
        parts.append(f"over {n} instances")
    keep = [r for r in online if r["theta_violations"] == 0]
    if keep:
        best = min(keep, key=lambda r: (r["bj_gap_mean"], r["rtj_gap_mean"]))
        parts.append(f"of the policies that keep θ on every instance, {best['algorithm']} is closest to the optimum "
                     f"on BJ slowdown (BJ {pct(best['bj_gap_mean'])}, from {pct(best['bj_gap_best'])} to "
                     f"{pct(best['bj_gap_worst'])})")
    else:
        parts.append("every policy breaks θ on some instance, so BJ gaps are not compared")
    always = [r["algorithm"] for r in online if r["matches_optimum"] == r["instances"]]
    parts.append(f"{', '.join(always)} match{'es' if len(always) == 1 else ''} the optimum on every instance"
                 if always else "none matches the optimum on every instance")
    return "; ".join(parts) + "."


__all__ = ["OPTIMUM", "REFERENCE", "YARDSTICK", "PolicyRun", "paired", "paired_bootstrap", "yardstick_name", "compare", "compare_instance", "hindsight_best", "meets_theta", "online_spec",
           "optimum_run", "reading", "run_online", "score_against", "table3"]
