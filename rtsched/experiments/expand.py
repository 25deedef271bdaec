"""Expanding a grid into its runs: the cartesian product of its axes (``AXES`` order: trace,
machine, RTJ %, marking, policy/scheme, backfill, checkpoint, option set, τ, seed), each run's
configuration (what its key hashes: ``rtsched.experiments.keys``) and the input files as found on
this machine."""
from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Iterator

from rtsched.experiments.gridspec import DEFAULT_TAU, Grid, GridRun, Runner, TraceSpec
from rtsched.experiments.keys import SCHEMA_VERSION, canon_number, config_hash, options_text
from rtsched.experiments.paths import file_digest, looks_like_path, portable_path


def expand_runs(grid: Grid) -> list[GridRun]:
    """The runs of ``grid`` in expansion order; two runs with one configuration are an error."""
    runs: list[GridRun] = []
    seen: dict[str, GridRun] = {}
    aps = None
    if "aps" in grid.marking:  # (portable path, digest), the file here
        aps = (*grid._aps_input(), str(grid._input(grid.aps_path, "options.aps_path")))
    models = {r.name: (*grid._model_input(r.name), str(grid._input(r.name, f"policy {r.name!r}")))
              for r in grid.runners if r.kind == "policy" and looks_like_path(r.name, grid._base())}
    for tr in grid.traces:
        for run in _trace_runs(grid, tr, aps, models):
            if run.key in seen:
                raise ValueError(f"{grid._where()}: runs '{seen[run.key].describe()}' and '{run.describe()}' "
                                 f"have the same configuration ({run.key}); check for repeated axis values")
            seen[run.key] = run
            runs.append(run)
    return runs


def _trace_runs(grid: Grid, tr: TraceSpec, aps, models: dict) -> Iterator[GridRun]:
    """The runs of one trace of the grid, machine axis outermost."""
    machines_axis = grid.axes.get("machine")
    trace_path = grid._input(tr.path, f"{grid._where()}: trace {tr.name!r}")
    trace_cfg = {"path": portable_path(trace_path), "format": tr.format, "first_n": tr.first_n}
    for machine_text in machines_axis or [tr.machine]:
        inputs = {"trace": file_digest(trace_path)}
        machine = grid._machine(machine_text, tr, inputs)
        paths = {"trace": str(trace_path)}
        if "machine" in inputs:
            paths["machine"] = str(grid._input(machine_text, f"{grid._where()}: machine of trace {tr.name!r}"))
        for pct, mode, runner, backfill, ckpt in itertools.product(
                grid.rt_percent, grid.marking, grid.runners, grid.axes.get("backfill", [None]),
                grid.axes.get("checkpoint", [None])):
            for opt_set, tau, seed in itertools.product(grid.option_axes.get(runner.name, [{}]),
                                                        grid.axes.get("tau", [DEFAULT_TAU]), grid.seeds):
                run_inputs, run_paths = dict(inputs), dict(paths)
                config = {
                    "schema": SCHEMA_VERSION,
                    "trace": trace_cfg,
                    "machine": machine,
                    "window": tr.window.as_dict() if tr.window else None,
                    "rt_percent": pct,
                    "marking": mode,
                    "aps_path": None,
                    "marking_options": grid.marking_options,
                    "seed": seed,
                    "tau": tau,
                    "inputs": run_inputs,
                }
                if mode == "aps":
                    config["aps_path"], run_inputs["aps"], run_paths["aps"] = aps
                _set_runner(config, grid, runner, grid._options(runner, opt_set, backfill), models, run_paths)
                if ckpt is not None:
                    config["checkpoint"] = ckpt
                config = canon_number(config)
                detail = _detail(machine_text if machines_axis else None, backfill, ckpt, opt_set,
                                 tau if len(grid.axes.get("tau", ())) > 1 else None)
                yield GridRun(key=config_hash(config), config=config, label=tr.name, detail=detail, paths=run_paths)


def _set_runner(config: dict, grid: Grid, runner: Runner, options: dict, models: dict, paths: dict) -> None:
    """The scheme or policy of a run configuration; a model is keyed by its content (a file given
    by path, or a shipped model named by name such as ``rtmix``)."""
    if runner.kind == "scheme":
        config["scheme"] = runner.name
        config["scheme_options"] = options
        return
    name = runner.name
    if name in models:
        name, config["inputs"]["policy"], paths["policy"] = models[name]
    elif (shipped := _policy_source(name)) is not None and os.path.isfile(shipped):
        config["inputs"]["policy"] = file_digest(Path(shipped))
    config["policy"] = name
    config["policy_options"] = options


def _detail(machine, backfill, ckpt, opt_set, tau) -> str:
    parts = []
    if machine is not None:
        parts.append(f"machine={machine}")
    if backfill is not None:
        parts.append(f"backfill={backfill}")
    if ckpt is not None:
        parts.append(f"checkpoint={ckpt}")
    if opt_set:
        parts.append(options_text(opt_set))
    if tau is not None:
        parts.append(f"tau={tau}")
    return " ".join(parts)



def _policy_source(name: str) -> str | None:
    """The file a policy name stands for (``heuristics.registry.policy_source``: a shipped model's
    name), imported on use: the registry brings in the simulator and NumPy, which reading a grid
    for ``rtsched experiment status`` does not need otherwise."""
    from heuristics.registry import policy_source

    return policy_source(name)



__all__ = ["expand_runs"]
