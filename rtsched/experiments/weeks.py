"""Mira weeks: policies on the real Mira logs with random RTJs (issue 23's Mira acceptance).

The weeks (``WEEKS``) are the four Mira logs of the shared data (``../shared/data/traces/mira``,
see its README), each with a 7-day results window on the real partition file
(``mira/mira-partitions.xml``):

* ``wk1`` (``wk1.log``, January 2018): 2018-01-21, as issue 13 fixed it (3 days into the log's
  bulk, which starts 2018-01-18);
* ``wk2`` (``wk2.log``, March 2018): 2018-03-18, the same place in its log (bulk from 2018-03-15);
* ``wk1-10`` (``wk1-10.log``, cut from wk1): 2018-01-22, its whole 6.98-day span of submits;
* ``dec`` (``mira_dec_wk1.log``, December 2014): 2014-12-01, its whole 6.93-day span.

A run (``run_week``) marks ``rt_percent`` % of the jobs as RTJs at random with the seed and
measures the mean bounded slowdown (seed 002 form, τ s) of the RTJs and BJs submitted in the
window, through the one run pipeline (``rtsched.pipeline.execute``: the schedule is re-checked by
the validator).  Every policy runs on the same jobs: those submitted before the window's end (a
later job cannot start before the window ends, so it changes only the order of window jobs still
waiting then; leaving them out saves ``replan`` two weeks of solving on wk1).  A policy name is a
scheme (``wcjs-jit``) or a registry policy, run under JIT checkpointing (``rtmix``,
``replan:k=2,ms=20``).

``paired_weeks`` gives per week the paired differences (policy − reference, per seed) of the two
means with 95 % bootstrap intervals (``milp.compare.paired_bootstrap``, the one used by
``rtsched compare``) and the week's verdict: no worse on either mean, better on both (means over
the seeds).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from heuristics.registry import SCHEMES, make_policy
from milp.compare import paired_bootstrap
from rtsched.errors import OptionError
from rtsched.io import read_workload
from rtsched.jobs import Workload
from rtsched.pipeline import RunSpec, execute
from rtsched.window import WindowSpec

DAYS = 7.0
RT_PERCENT = 10.0
TAU = 600  # s, the bound of the bounded slowdown (seed 002)
REFERENCE = "wcjs-jit"


@dataclass(frozen=True)
class Week:
    name: str
    log: str  # file name under traces/mira of the shared data
    start: str  # ISO date (UTC) of the results window's start

    def window(self, days: float = DAYS) -> WindowSpec:
        return WindowSpec(days=days, start=self.start)


WEEKS = (Week("wk1", "wk1.log", "2018-01-21"), Week("wk2", "wk2.log", "2018-03-18"),
         Week("wk1-10", "wk1-10.log", "2018-01-22"), Week("dec", "mira_dec_wk1.log", "2014-12-01"))


def week_named(name: str) -> Week:
    for w in WEEKS:
        if w.name == name:
            return w
    raise ValueError(f"unknown week {name!r}; choose from {', '.join(w.name for w in WEEKS)}")


def week_paths(data_dir: str | Path, week: Week) -> tuple[Path, Path]:
    """(the week's log, the Mira partition file) under the shared data folder ``data_dir``."""
    data = Path(data_dir)
    return data / "traces" / "mira" / week.log, data / "mira" / "mira-partitions.xml"


def week_workload(log: Path, week: Week, days: float = DAYS) -> Workload:
    """The log's jobs submitted before the end of the week's window (module docstring)."""
    full = read_workload(str(log))
    _, end = week.window(days).seconds(full.start_time)
    jobs = [j for j in full.jobs if j.submit < end]
    return Workload(jobs, name=f"{week.name}-until-window-end", max_nodes=full.max_nodes,
                    start_time=full.start_time, header=dict(full.header))


def run_week(week: Week, policy: str, seed: int, data_dir: str | Path, *, days: float = DAYS,
             rt_percent: float = RT_PERCENT, tau: int = TAU, workload: Workload | None = None,
             progress: Callable[[Any, Any], None] | None = None) -> dict[str, Any]:
    """One policy on one week with one RTJ seed: the window's mean RTJ and BJ bounded slowdowns,
    the run's wall and CPU seconds and, for ``replan``, its per-solve times (``DecisionStats``);
    ``progress(policy, view)`` is called after each of replan's scheduling passes."""
    log, partitions = week_paths(data_dir, week)
    wl = workload if workload is not None else week_workload(log, week, days)
    spec = RunSpec(trace=str(log), trace_format="cobalt", machine=str(partitions), **policy_fields(policy),
                   rt_percent=rt_percent, marking="random", seed=seed, tau=tau, window=week.window(days))
    pol = make_policy(policy) if policy.startswith("replan") else None
    if pol is not None and progress is not None:
        decide = pol.decide

        def decide_and_report(view):
            out = decide(view)
            progress(pol, view)
            return out

        pol.decide = decide_and_report
    t, cpu = time.perf_counter(), time.process_time()
    rec = execute(spec, workload=wl, policy=pol, time_decisions=True)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    label = week.name if days == DAYS else f"{week.name}/{days:g}d"  # a shorter window is another week
    row: dict[str, Any] = {"week": label, "policy": policy, "seed": seed,
                           **outcome_row(rec, f"{policy} on {week.name}, seed {seed}"),
                           "wall_s": wall, "cpu_s": cpu, "decide_s": rec.timings.get("decide_s")}
    if pol is not None and hasattr(pol, "stats"):
        row.update(decision_times(pol))
    return row


def policy_fields(name: str) -> dict[str, Any]:
    """The ``RunSpec`` fields that run ``name``: a seed-002 scheme as itself (its own checkpoint
    model), ``SCHEME:KEY=VALUE,...`` as that scheme with those policy options (e.g.
    ``wcjs-jit:priority=sjf``: WCJS with SJF as its batch order; numbers are read as numbers),
    anything else (an rtmix model, ``replan``) as a policy under JIT checkpointing."""
    if name.strip().lower() in SCHEMES:
        return {"scheme": name, "policy": None, "checkpoint": None}
    head, sep, rest = name.partition(":")
    if sep and head.strip().lower() in SCHEMES:
        options: dict[str, Any] = {}
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise OptionError(f"policy {name!r}: {item!r} is not KEY=VALUE (e.g. wcjs-jit:priority=sjf)")
            options[key.strip()] = _number_or_text(value.strip())
        return {"scheme": head.strip(), "policy": None, "checkpoint": None, "policy_options": options}
    return {"scheme": None, "policy": name, "checkpoint": "jit"}


def split_policies(text: str) -> list[str]:
    """A benchmark's policy list: separated by ``;`` when the text has one, else by ``,`` where a piece
    that holds ``=`` but no ``:`` continues the previous policy's options (``wcjs-jit:priority=sjf,
    backfill=sjf,rtmix`` is two policies), so options with commas need no other separator."""
    if ";" in text:
        return [p.strip() for p in text.split(";") if p.strip()]
    out: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if out and "=" in piece and ":" not in piece and ":" in out[-1]:
            out[-1] += "," + piece
        else:
            out.append(piece)
    return out


def _number_or_text(value: str) -> Any:
    """An option value as written: an int or a float where it reads as one, else the text."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def outcome_row(rec, what: str) -> dict[str, Any]:
    """A pipeline run's results-window figures (``rtsched.pipeline.execute``'s record): mean bounded
    slowdown (seed 002 form) and mean slowdown of the RTJs and BJs, their counts, the utilization and
    the preemptions; ``what`` names the run in the error raised when a window job never finished."""
    s = rec.summary
    if s["unfinished"]:
        raise RuntimeError(f"{what}: {s['unfinished']} window jobs never finished")
    rt, bj = s["summary"]["rt"], s["summary"]["batch"]
    return {"rtj_bsld": rt["mean_bsld_seed002"], "bj_bsld": bj["mean_bsld_seed002"], "n_rt": rt["n"], "n_bj": bj["n"],
            "rtj_sd": rt["mean_sd"], "bj_sd": bj["mean_sd"], "utilization": s["utilization"],
            "preemptions": sum(o.n_preemptions for o in rec.outcomes)}


def decision_times(pol) -> dict[str, Any]:
    """A ``replan`` run's passes, solves and per-solve wall / CPU seconds (mean, max)."""
    stats = pol.stats
    wall = [x.seconds for x in stats] or [0.0]
    cpu = [x.cpu_seconds for x in stats] or [0.0]
    return {"passes": len(pol.log), "followed": pol.skipped, "solves": len(stats),
            "proven": sum(x.status == "optimal" for x in stats), "largest_plan": max((x.jobs for x in stats), default=0),
            "solve_wall_mean": statistics.mean(wall), "solve_wall_max": max(wall),
            "solve_cpu_mean": statistics.mean(cpu), "solve_cpu_max": max(cpu)}


def paired_weeks(rows: Sequence[dict[str, Any]], policy: str, reference: str = REFERENCE) -> dict[str, dict[str, Any]]:
    """Per week that both ran (on common seeds): the means of ``policy`` and ``reference``, the
    paired per-seed differences ``policy − reference`` with 95 % bootstrap intervals (None with
    fewer seeds than ``paired_bootstrap`` needs), the verdicts ``no_worse`` (both means ≤ the
    reference's) and ``better`` (both <), and per seed: ``better_on_both`` (seeds better on both
    means), ``bj_worse`` (seeds with a higher BJ mean) and ``bj_worse_max`` (the largest such excess, 0
    without one)."""
    out: dict[str, dict[str, Any]] = {}
    weeks = list(dict.fromkeys(r["week"] for r in rows))
    for wk in weeks:
        mine = {r["seed"]: r for r in rows if r["week"] == wk and r["policy"] == policy}
        theirs = {r["seed"]: r for r in rows if r["week"] == wk and r["policy"] == reference}
        seeds = sorted(set(mine) & set(theirs))
        if not seeds:
            continue
        rec: dict[str, Any] = {"seeds": seeds}
        verdict_le, verdict_lt = True, True
        for key in ("rtj_bsld", "bj_bsld"):
            a = statistics.mean(mine[s][key] for s in seeds)
            b = statistics.mean(theirs[s][key] for s in seeds)
            ci = paired_bootstrap([mine[s][key] - theirs[s][key] for s in seeds])
            rec[key] = {"policy": a, "reference": b, "diff": a - b, "ci": list(ci) if ci else None}
            verdict_le &= a <= b
            verdict_lt &= a < b
        rec["no_worse"], rec["better"] = verdict_le, verdict_lt
        excess = [mine[s]["bj_bsld"] - theirs[s]["bj_bsld"] for s in seeds]
        rec["better_on_both"] = sum(mine[s]["bj_bsld"] < theirs[s]["bj_bsld"]
                                    and mine[s]["rtj_bsld"] < theirs[s]["rtj_bsld"] for s in seeds)
        rec["bj_worse"] = sum(e > 0 for e in excess)
        rec["bj_worse_max"] = max([e for e in excess if e > 0], default=0.0)
        out[wk] = rec
    return out


__all__ = ["Week", "WEEKS", "week_named", "week_paths", "week_workload", "run_week", "policy_fields", "split_policies", "outcome_row", "decision_times",
           "paired_weeks", "REFERENCE", "DAYS", "RT_PERCENT", "TAU"]
