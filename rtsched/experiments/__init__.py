"""Experiment grids: TOML grid -> hashed runs -> result files -> summary.parquet, tables, figures.

    from rtsched.experiments import run_grid, load_results, report, plot
    run_grid("experiments/headline_wk1.toml", jobs=2)      # resumable; ./results/headline_wk1/
    run_grid("grid.toml", backend="ray", shard=(0, 4))     # a Ray task per run; a quarter of the grid
    print(report("results/headline_wk1"))
    plot("results/headline_wk1", "results/headline_wk1/figures")

See ``rtsched.experiments.grid`` for the grid format (every run option can be an axis),
``rtsched.experiments.store`` for the layout of a results folder and its locks, and
``rtsched.experiments.backends`` for where runs execute.
"""
from __future__ import annotations

from pathlib import Path

from rtsched.experiments.figures import plot, scheme_bars
from rtsched.experiments.grid import (REPO_ROOT, Grid, GridRun, canonical_json, config_hash,
                                      expand_grid, load_grid, parse_grid, results_dir, shared_data_dir)
from rtsched.experiments.report import (PAPER_HEADLINE, category_matrix, category_table, generic_table,
                                        headline_table, report, report_tables, slowdown_table)
from rtsched.experiments.results import (broken_runs, load_errors, load_job_tables, load_results, read_summary,
                                         summary_frame, write_summary)
from rtsched.experiments.runner import plan, run_grid

__all__ = ["run_grid", "plan", "load_results", "load_job_tables", "load_errors", "broken_runs", "summary_frame",
           "read_summary", "write_summary", "report", "report_tables", "generic_table", "slowdown_table", "category_table",
           "category_matrix", "headline_table", "plot", "scheme_bars", "load_grid", "parse_grid", "expand_grid", "config_hash",
           "canonical_json", "Grid", "GridRun", "PAPER_HEADLINE", "REPO_ROOT", "shared_data_dir", "results_dir",
           "first_available_grid"]


def first_available_grid(*paths: str) -> Path:
    """The first grid (paths relative to the repository root) whose input files all exist.

    Lets a notebook or a script use the real traces when ``../shared/data`` is there and fall back
    to a grid on the project's shipped traces otherwise.
    """
    problems = []
    for p in paths:
        path = Path(p) if Path(p).is_absolute() else REPO_ROOT / p
        try:
            load_grid(path).expand()
            return path
        except (FileNotFoundError, OSError) as exc:
            problems.append(f"{p}: {exc}")
    raise FileNotFoundError("no grid has all its inputs:\n  " + "\n  ".join(problems))
