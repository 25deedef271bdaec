"""The ``rtmix`` agent taught by the optimum: solve small instances, extract expert actions, train.

This module sits above both ``milp`` (the exact CP-SAT solve) and ``rtsched.rl`` (the environment,
behaviour cloning and PPO), which may not import each other (docs/architecture.md).

* ``solve_plan(seed)`` — the Table-3-style instance of generator seed ``seed`` solved to proven
  optimality (``milp.solve.solve``, CP-SAT, θ = 1.2 lexicographic), as plain JSON-able data: the
  jobs, θ used, the means and the plan's segments;
* ``solve_plans(seeds, cache=...)`` — many of them, one JSON file per seed in ``cache`` (solved once);
* ``expert_dataset(plans, env)`` — the expert's decision points (``rtsched.rl.rtmix.expert``) and the
  outcome class of every plan;
* ``train_rtmix(...)`` — behaviour cloning on the expert data, then PPO fine-tuning
  (``rtsched.rl.rtmix.train``), with per-epoch checkpoints and progress.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any, Callable, Iterable

import numpy as np

from rtsched.files import atomic_write_text
from rtsched.jobs import Job
from rtsched.schedule import Schedule, Segment


def solve_plan(seed: int, *, n_bj: int = 5, n_rt: int = 2, blocks: int = 16, theta: float = 1.2,
               time_limit: float | None = 60.0, workers: int = 1) -> dict[str, Any]:
    """Solve generator seed ``seed``'s instance; a JSON-able record (status, θ used, means, jobs,
    segments)."""
    from milp.instance import random_instance
    from milp.solve import solve

    inst = random_instance(seed, n_bj, n_rt, blocks, name=f"rtmix-{seed}")
    res = solve(inst, theta=theta, time_limit=time_limit, workers=workers)
    return {"seed": seed, "blocks": blocks, "status": res.status, "theta_used": res.theta_used,
            "bj_sd_mean": res.bj_sd_mean, "rtj_sd_mean": res.rtj_sd_mean, "seconds": res.seconds,
            "n_preempted": res.n_preempted,
            "jobs": [[j.id, j.submit, j.runtime, j.walltime, j.nodes, j.kind] for j in inst.jobs],
            "segments": [[s.job_id, s.start, s.end, s.kind, s.partition, s.nodes, s.progress_from, s.progress_to]
                         for s in res.segments]}


def plan_jobs(rec: dict) -> list[Job]:
    return [Job(i, sub, rt, wt, n, kind) for i, sub, rt, wt, n, kind in rec["jobs"]]


def plan_schedule(rec: dict) -> Schedule:
    sched = Schedule(machine_name=f"mira-aligned-{rec['blocks']}")
    for row in rec["segments"]:
        sched.add(Segment(*row))
    return sched


def _solve_task(args) -> dict:
    seed, kwargs = args
    return solve_plan(seed, **kwargs)


def solve_plans(seeds: Iterable[int], cache: str | None = None, jobs: int = 1,
                progress: Callable[[int, int, dict], None] | None = None, **kwargs) -> list[dict]:
    """``solve_plan`` for every seed; with ``cache``, each record is read from / written to
    ``cache/SEED.json`` (atomically), so an interrupted run loses at most the solves in flight."""
    seeds = list(seeds)
    out: dict[int, dict] = {}
    todo = []
    for s in seeds:
        path = os.path.join(cache, f"{s}.json") if cache else None
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                out[s] = json.load(fh)
        else:
            todo.append(s)

    def done(rec: dict) -> None:
        out[rec["seed"]] = rec
        if cache:
            os.makedirs(cache, exist_ok=True)
            atomic_write_text(os.path.join(cache, f"{rec['seed']}.json"), json.dumps(rec))
        if progress is not None:
            progress(len(out), len(seeds), rec)

    if jobs <= 1:
        for s in todo:
            done(solve_plan(s, **kwargs))
    else:
        import concurrent.futures as cf

        with cf.ProcessPoolExecutor(max_workers=jobs) as pool:
            for rec in pool.map(_solve_task, [(s, kwargs) for s in todo]):
                done(rec)
    return [out[s] for s in seeds]


def expert_dataset(plans: list[dict], env, on_plan_only: bool = False) -> dict[str, Any]:
    """The expert's (observation, mask, action) triples over ``plans`` (only optimal ones), and the
    count of each outcome class (``rtsched.rl.rtmix.expert``).  ``on_plan_only`` keeps only the
    decisions taken before an episode's first divergence from its plan."""
    from rtsched.rl.rtmix.expert import expert_episode

    obs, masks, acts = [], [], []
    classes: Counter = Counter()
    n_on, n_all = 0, 0
    for rec in plans:
        if rec["status"] != "optimal":
            classes["not_optimal"] += 1
            continue
        ep = expert_episode(env, plan_jobs(rec), plan_schedule(rec))
        classes[ep.outcome] += 1
        for o, m, a, on in zip(ep.obs, ep.masks, ep.actions, ep.on_plan):
            n_all += 1
            n_on += on
            if on_plan_only and not on:
                continue
            obs.append(o)
            masks.append(m)
            acts.append(a)
    return {"obs": np.asarray(obs, dtype=np.float32).reshape(len(obs), -1),
            "mask": np.asarray(masks, dtype=bool).reshape(len(masks), -1),
            "act": np.asarray(acts, dtype=np.int64), "classes": dict(classes),
            "decisions": n_all, "decisions_on_plan": n_on}


__all__ = ["solve_plan", "solve_plans", "plan_jobs", "plan_schedule", "expert_dataset"]
