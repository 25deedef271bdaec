"""Seed 002's Table 2 and Table 3 studies and the scaling study, as library calls.

``bench/bench_milp.py`` and ``notebooks/milp_tables.ipynb`` both call these; nothing here prints.

* Table 2: the partition-sequence MILP (T = 5) on the nine (#BJ, #RTJ, blocks) rows — model size
  in binaries (ours: as built, before the solver's presolve; the paper's: after CPLEX's
  preprocessing) and solve time (CBC here, CPLEX on 32 cores in the paper).
* Table 3: 20 random 5-BJ + 2-RTJ instances on 16 blocks, the exact optimum (fast model) vs WCJS
  under JIT-CKPT in the simulator; means over instances of the per-instance SD means.
* Scaling: the largest instances the fast model proves optimal within a limit as jobs grow.
"""
from __future__ import annotations

import time
from typing import Any, Iterable, Sequence

from milp.compare import OPTIMUM, PolicyRun, optimum_run, run_online, table3
from milp.instance import TABLE2_ROWS, random_instance, table2_instance, table3_instance
from milp.sequence_milp import build_sequence_milp
from milp.solve import solve
from rtsched.machines.sizes import BLOCK_NODES, PARTITION_BLOCKS

# Seed 002 Table 2 (IBM CPLEX, 32 cores, T = 5): (#BJ, #RTJ, blocks) -> (binaries, seconds)
PAPER_TABLE2: dict[tuple[int, int, int], tuple[int, int]] = {
    (2, 2, 4): (100, 3), (2, 2, 8): (202, 4), (2, 2, 16): (674, 11),
    (3, 2, 4): (129, 7), (3, 2, 8): (268, 15), (3, 2, 16): (883, 80),
    (4, 3, 4): (196, 43), (4, 3, 8): (502, 674), (4, 3, 16): (1314, 11 * 3600 + 52 * 60),
}
# Seed 002 Table 3: mean BJ SD and RTJ SD over 20 logs
PAPER_TABLE3: dict[str, tuple[float, float]] = {"formulation": (1.50, 1.08), "WCJS (JIT-CKPT)": (2.54, 1.50)}


def table2_row(n_bj: int, n_rt: int, blocks: int, *, seed: int = 0, sequences: int = 5,
               method: str = "milp-cbc", time_limit: float | None = 600.0, threads: int | None = None,
               strengthen: Any = None) -> dict[str, Any]:
    """One Table 2 row: the instance ``table2_instance(n_bj, n_rt, blocks, seed)`` solved by the
    sequence MILP with T = ``sequences`` (``strengthen``: milp.solve's, None = all)."""
    inst = table2_instance(n_bj, n_rt, blocks, seed)
    size = build_sequence_milp(inst, sequences).model.size()
    res = solve(inst, method, sequences=sequences, time_limit=time_limit, threads=threads, strengthen=strengthen)
    paper_bin, paper_s = PAPER_TABLE2.get((n_bj, n_rt, blocks), (None, None))
    return {"bj": n_bj, "rt": n_rt, "blocks": blocks, "T": sequences, "binaries": size["binaries"],
            "variables": size["variables"], "constraints": size["constraints"], "status": res.status,
            "seconds": res.seconds, "gap": res.gap, "bj_sd_mean": res.bj_sd_mean, "rtj_sd_mean": res.rtj_sd_mean,
            "theta": res.theta_used, "theta_star_status": res.theta_star_status,
            "theta_star": res.theta_star, "theta_star_bound": res.theta_star_bound, "restricted": res.restricted,
            "stages": [f"{st['stage']}:{st['status']}" for st in res.stages], "paper_binaries": paper_bin,
            # the largest relative gap CBC reported on its own (restricted) models, over the stages
            "solver_gap": max((st["solver_gap"] for st in res.stages if "solver_gap" in st), default=None),
            "paper_cplex_seconds": paper_s, "method": method, "solver": res.solver, "nodes": res.nodes,
            "root_bound": res.root_bound, "best_bound": res.best_bound}


def table2(rows: Iterable[tuple[int, int, int]] = TABLE2_ROWS, **kwargs: Any) -> list[dict[str, Any]]:
    return [table2_row(nb, nr, m, **kwargs) for nb, nr, m in rows]


def table3_study(count: int = 20, first_seed: int = 0, *, policies: Sequence[str] = ("wcjs",),
                 checkpoint: str = "jit", method: str = "cpsat", time_limit: float | None = None,
                 workers: int = 2, n_bj: int = 5, n_rt: int = 2, blocks: int = 16
                 ) -> tuple[list[PolicyRun], list[dict[str, Any]], list[Any]]:
    """(per-instance runs, the Table 3 rows, the optimum SolveResults) on seeds first_seed..+count−1."""
    runs: list[PolicyRun] = []
    results = []
    for seed in range(first_seed, first_seed + count):
        inst = table3_instance(seed, n_bj=n_bj, n_rt=n_rt, blocks=blocks)
        run, res = optimum_run(inst, method=method, time_limit=time_limit, workers=workers)
        runs.append(run)
        results.append(res)
        for name in policies:
            runs.append(run_online(inst, name, checkpoint))
    return runs, table3(runs), results


def scaling_sizes(blocks: int) -> list[int]:
    """Job sizes (nodes) for the scaling study: every partition size of the machine."""
    return [k * BLOCK_NODES for k in PARTITION_BLOCKS if k <= blocks]


def scaling_study(blocks: int, job_counts: Iterable[int], *, time_limit: float = 600.0, seed: int = 0,
                  rt_share: float = 2 / 7, workers: int = 2, stop_after_failure: bool = True,
                  submit_window: int = 3600) -> list[dict[str, Any]]:
    """The fast model on growing random instances (``rt_share`` of the jobs RTJs, sizes from
    ``scaling_sizes``); stops after the first size not proven optimal within ``time_limit``."""
    rows = []
    for n in job_counts:
        n_rt = max(1, round(n * rt_share))
        inst = random_instance(seed, n - n_rt, n_rt, blocks, sizes=scaling_sizes(blocks), submit_window=submit_window,
                               name=f"scale-{blocks}b-{n}j-s{seed}")
        t0 = time.perf_counter()
        res = solve(inst, "cpsat", time_limit=time_limit, workers=workers)
        rows.append({"blocks": blocks, "jobs": n, "bj": n - n_rt, "rt": n_rt, "status": res.status,
                     "seconds": time.perf_counter() - t0, "gap": res.gap, "bj_sd_mean": res.bj_sd_mean,
                     "theta": res.theta_used})
        if stop_after_failure and res.status != "optimal":
            break
    return rows


__all__ = ["PAPER_TABLE2", "PAPER_TABLE3", "OPTIMUM", "table2_row", "table2", "table3_study", "scaling_sizes",
           "scaling_study"]
