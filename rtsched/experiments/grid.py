"""Experiment grids: a TOML description expanded into hashed run configurations.

This module gathers the grid's public names; the work is done by one module each:
``gridparse`` (TOML -> a checked ``Grid``), ``gridspec`` (``Grid``, ``GridRun`` and the axes),
``expand`` (a grid's runs), ``keys`` (canonical JSON and run keys) and ``paths`` (input files,
portable paths and content digests).

A grid names one or more traces (each with its format, machine and results window) and the axes of
the sweep.  Every run option is an axis (``AXES``): trace, machine, RTJ percentage, marking mode,
policy or seed-002 scheme, backfilling, checkpoint model, τ, seed, and the options of a policy or
scheme.  ``expand`` takes the cartesian product; every run configuration is a plain JSON-able dict
whose canonical JSON (sorted keys, no spaces) is hashed (SHA-256, first 16 hex digits) into the
run's key and result file names.  Each run becomes one ``rtsched.pipeline.RunSpec``
(``rtsched.experiments.runner.spec_of``).

The hash covers everything that changes a run's numbers: the trace (as a portable path *and* the
SHA-256 of its content), the machine (spec, plus the file digest for a partition XML), the window,
the RTJ percentage, marking mode and seed, the policy or scheme and its options (backfilling
included), the checkpoint model, the bounded-slowdown bound τ, the APS sample (only for ``aps``
marking) and a model file's content.  It leaves out what does not: labels, the output folder, the
worker count, the backend, whether the validator runs.  Paths are hashed in a portable form
(``${SHARED_DATA}/...`` for the shared data, repository-relative for the project's own files), so
the same grid hashes the same on every machine holding the same data.  A configuration holds a key
only when the grid sets it (``policy``, ``checkpoint``, ``backfill``), so the seed-002 grids written
before these axes existed keep their keys (tests/test_experiments_keys.py).

Paths in a grid (traces, machine files, the APS sample, model files, ``out_dir``) are relative to
the grid file's folder.  A relative path that is missing there but exists relative to the
repository root (how grids were read before) is still found, with a FutureWarning.

TOML format (docs/study.md has the full description)::

    name = "batch-policies"               # output folder default: ./results/<name>
    [[traces]]                            # or a single [trace] table, or [grid].trace = [paths]
    path = "lublin_256.swf"               # relative to this file; ${SHARED_DATA}/... for the shared data
    machine = "flat:256"                  # mira | mira:BLOCKS | flat:N | a .xml (default: the trace's)
    # format, window = { start = "2018-01-21", days = 7 }, first_n = 500, name = "label"

    [grid]                                # a scalar is one value, a list is an axis
    policy = ["fcfs", "sjf", "f1"]        # registry names, package.module:Class, model files
    # scheme = ["baseline", "wcjs-jit"]   # seed-002 schemes (alias: schemes); with policy: one axis
    backfill = ["none", "easy"]
    # checkpoint = ["jit", "app-5"]  rt_percent = [10, 20]  marking = ["random"]  tau = [600]
    # machine = ["flat:128", "flat:256"]  (then not in the trace tables)
    seeds = 1                             # a count (0..N-1) or a list; seed = [3, 7] also works
    # wcjs.rt_narrow = [1.1, 1.5]         # an option axis of one policy / scheme (runs of others
    # wcjs-jit = [{ config = "curie" }, { threshold_estimate = "current" }]   # are not multiplied)

    [options]                             # tau = 600 (s), aps_path = "...", validate = true
    [policy_options.wcjs]                 # fixed options of a policy (part of its hash)
    [scheme_options.wcjs-jit]             # fixed options of a scheme (part of its hash)
    [marking_options]                     # more rtsched.rtmarking.RtMarking fields (part of the hash)
    [report]                              # defaults of report() and plot(); not part of the hash
"""
from __future__ import annotations

import os

from rtsched.experiments.expand import expand_runs
from rtsched.experiments.gridparse import load_grid, parse_grid
from rtsched.experiments.gridspec import (_AXIS_ALIASES, AXES, DEFAULT_TAU, FORMATS, MARKING_ALIASES,  # noqa: F401
                                          MARKING_MODES, MAX_SEED, MAX_SEEDS, Grid, GridRun, Runner, TraceSpec,
                                          results_dir)
from rtsched.experiments.keys import (HASH_LENGTH, SCHEMA_VERSION, canon_number, canonical_json,  # noqa: F401
                                      config_hash, options_text)
from rtsched.experiments.paths import (_DIGESTS, MODEL_SUFFIXES, REPO_ROOT, file_digest,  # noqa: F401
                                       format_from_extension, is_file_machine, looks_like_path, portable_path,
                                       resolve_path, shared_data_dir)


def expand_grid(path_or_grid: "str | os.PathLike | Grid") -> list[GridRun]:
    """Runs of a grid file (or a parsed ``Grid``)."""
    grid = path_or_grid if isinstance(path_or_grid, Grid) else load_grid(path_or_grid)
    return expand_runs(grid)


__all__ = ["AXES", "DEFAULT_TAU", "FORMATS", "HASH_LENGTH", "MARKING_ALIASES", "MARKING_MODES", "MAX_SEED",
           "MAX_SEEDS", "REPO_ROOT", "SCHEMA_VERSION", "Grid", "GridRun", "Runner", "TraceSpec", "canonical_json",
           "config_hash", "expand_grid", "file_digest", "is_file_machine", "load_grid", "options_text", "parse_grid",
           "portable_path", "resolve_path", "results_dir", "shared_data_dir"]
