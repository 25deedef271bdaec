"""Reading a grid file: TOML -> a checked ``Grid`` (every key, value and name validated before
anything runs; errors name the file, the key and the allowed values)."""
from __future__ import annotations

import itertools
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from rtsched.errors import InputError
from rtsched.experiments.gridspec import (_AXIS_ALIASES, AXES, FORMATS, MARKING_ALIASES, MARKING_MODES, MAX_SEED,
                                          MAX_SEEDS, Grid, Runner, TraceSpec)
from rtsched.experiments.keys import canon_number, canonical_json
from rtsched.experiments.paths import looks_like_path
from rtsched.window import WindowSpec

_TOP_KEYS = {"name", "description", "out_dir", "trace", "traces", "grid", "options", "scheme_options",
             "policy_options", "marking_options", "report"}
# RtMarking fields a grid may set in [marking_options] (percent, mode, seed, aps_path are the axes/options)
_MARKING_OPTION_KEYS = {"short_max_runtime", "aps_node_scale", "aps_walltime_factor", "aps_share_of",
                        "machine_blocks", "noncheckpointable_percent"}
_TRACE_KEYS = {"name", "path", "format", "machine", "window", "first_n"}
_OPTION_KEYS = {"tau", "aps_path", "validate"}
# [report]: the defaults of report() and plot() (rtsched.experiments.report, figures)
_REPORT_KEYS = {"scheme_order", "figure_schemes", "headline", "labels"}
_HEADLINE_KEYS = {"rt_percent", "baseline", "heuristic", "marking"}


def _as_list(value: Any, where: str) -> list:
    if isinstance(value, list):
        if not value:
            raise ValueError(f"{where}: empty list")
        return value
    return [value]


def _check_unknown(d: dict, allowed: set[str], where: str) -> None:
    unknown = set(d) - allowed
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")


def _no_repeats(axis: str, values: list) -> None:
    texts = [canonical_json({"v": v}) for v in values]
    if len(set(texts)) != len(texts):
        raise ValueError(f"[grid].{axis}: repeated values in {values}")


def parse_grid(text: str, source: Path | None = None) -> Grid:
    """Parse grid TOML text (``source`` names the file in error messages; relative paths start
    from its folder, else from the current directory)."""
    where = str(source) if source else "<grid>"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", path=where) from exc
    try:
        return _grid_from_dict(data, source, text)
    except (ValueError, TypeError, KeyError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(str(exc), path=where) from exc


def _grid_from_dict(data: dict, source: Path | None, text: str) -> Grid:
    _check_unknown(data, _TOP_KEYS, "top level")
    name = _grid_name(data, source)
    base = source.resolve().parent if source else Path.cwd()
    g = data.get("grid")
    if not isinstance(g, dict):
        raise ValueError("[grid] table is required (e.g. policy = [...] or scheme = [...], seeds = N)")
    axes_raw, option_raw = _split_grid_table(g)
    traces = _parse_traces(data, axes_raw, base)
    opts = data.get("options", {})
    if not isinstance(opts, dict):
        raise ValueError("[options]: expected a table")
    _check_unknown(opts, _OPTION_KEYS, "[options]")
    axes, runners = _parse_axes(axes_raw, opts, traces, base)
    names = {r.name for r in runners}
    scheme_options = _options_tables(data, "scheme_options", {r.name for r in runners if r.kind == "scheme"},
                                     "[grid].scheme")
    policy_options = _options_tables(data, "policy_options", {r.name for r in runners if r.kind == "policy"},
                                     "[grid].policy")
    option_axes = _parse_option_axes(option_raw, names, axes)
    if "backfill" in axes:
        for table, opts_by_name in (("scheme_options", scheme_options), ("policy_options", policy_options)):
            for n, o in opts_by_name.items():
                if "backfill" in o:
                    raise ValueError(f"[{table}.{n}].backfill: backfill is an axis of the grid ([grid].backfill)")
    marking_options = data.get("marking_options", {})
    if not isinstance(marking_options, dict):
        raise ValueError("[marking_options]: expected a table")
    _check_unknown(marking_options, _MARKING_OPTION_KEYS, "[marking_options]")
    out_dir = data.get("out_dir")
    if out_dir is not None and (not isinstance(out_dir, str) or not out_dir.strip()):
        raise ValueError(f"out_dir: expected a folder path, got {out_dir!r}")
    return Grid(name=name, traces=traces, runners=runners, axes=axes, option_axes=option_axes,
                aps_path=opts.get("aps_path", Grid.aps_path), validate=bool(opts.get("validate", True)),
                scheme_options=scheme_options, policy_options=policy_options,
                marking_options=dict(marking_options), report=_report_table(data),
                description=str(data.get("description", "")), out_dir=out_dir, source=source, text=text, base=base)


def _grid_name(data: dict, source: Path | None) -> str:
    name = data.get("name") or (source.stem if source else None)
    if not name:
        raise ValueError("a grid needs a name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise ValueError(f"name {name!r}: use letters, digits, '_', '-', '.' only (it names a folder)")
    return name


def _parse_axes(axes_raw: dict, opts: dict, traces: list[TraceSpec], base: Path) -> tuple[dict[str, list], list[Runner]]:
    """The axes' value lists (``AXES`` names) and the policies/schemes, each checked."""
    axes: dict[str, list] = {}
    if "machine" in axes_raw:
        given = [t.name for t in traces if t.machine is not None]
        if given:
            raise ValueError(f"[grid].machine is an axis, so the trace tables must not set machine "
                             f"(trace {given[0]!r} does)")
        axes["machine"] = _machines(axes_raw["machine"])
    if "rt_percent" in axes_raw:
        axes["rt_percent"] = _rt_percents(axes_raw["rt_percent"])
    if "marking" in axes_raw:
        axes["marking"] = _markings(axes_raw["marking"])
    runners = _runners(axes_raw, base)
    if "backfill" in axes_raw:
        axes["backfill"] = _backfills(axes_raw["backfill"])
    if "checkpoint" in axes_raw:
        axes["checkpoint"] = _checkpoints(axes_raw["checkpoint"])
    if "tau" in axes_raw and "tau" in opts:
        raise ValueError("tau is given both in [grid] and in [options]; keep one")
    if "tau" in axes_raw or "tau" in opts:
        axes["tau"] = _taus(axes_raw["tau"][1] if "tau" in axes_raw else opts["tau"],
                            "[grid].tau" if "tau" in axes_raw else "[options].tau")
    axes["seed"] = _seeds(axes_raw)
    for axis, values in axes.items():
        _no_repeats(axis, values)
    _no_repeats("policy/scheme", [r.name for r in runners])
    return axes, runners


def _parse_option_axes(option_raw: dict, names: set[str], axes: dict) -> dict[str, list[dict]]:
    """The option sets per policy/scheme (``wcjs.rt_narrow = [...]``, lists of tables)."""
    option_axes = {}
    for target, spec in option_raw.items():
        target = _runner_name(target, names)
        if target not in names:
            raise ValueError(f"[grid].{target}: not an axis ({', '.join(sorted(set(AXES) | set(_AXIS_ALIASES)))}) "
                             f"nor a policy or scheme of the grid ({', '.join(sorted(names))})")
        option_axes[target] = _option_sets(spec, f"[grid].{target}")
        if "backfill" in axes:
            for s in option_axes[target]:
                if "backfill" in s:
                    raise ValueError(f"[grid].{target}: backfill is an axis of the grid already ([grid].backfill)")
    return option_axes


def _report_table(data: dict) -> dict:
    """``[report]``: the defaults of report() and plot(), checked."""
    report = data.get("report", {})
    if not isinstance(report, dict):
        raise ValueError("[report]: expected a table")
    _check_unknown(report, _REPORT_KEYS, "[report]")
    for key in ("headline", "labels"):
        if not isinstance(report.get(key, {}), dict):
            raise ValueError(f"[report].{key}: expected a table")
    _check_unknown(report.get("headline", {}), _HEADLINE_KEYS, "[report].headline")
    return dict(report)


def _split_grid_table(g: dict) -> tuple[dict, dict]:
    """[grid] -> (axes by canonical name, option specs by policy/scheme name)."""
    axes: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for key, value in g.items():
        axis = _AXIS_ALIASES.get(key, key)
        if axis in AXES:
            if axis in axes:
                raise ValueError(f"[grid]: {axis!r} is given twice (as {key!r} and another spelling); keep one")
            axes[axis] = (key, value)
            continue
        if isinstance(value, dict) or (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
            options.setdefault(key, value)
            continue
        target, dot, option = key.rpartition(".")
        if dot and target:  # "wcjs.rt_narrow" = [...] (a quoted key)
            spec = options.setdefault(target, {})
            if not isinstance(spec, dict):
                raise ValueError(f"[grid].{key}: {target!r} already has a list of option sets")
            spec[option] = value
            continue
        allowed = sorted(set(AXES) | set(_AXIS_ALIASES))
        raise ValueError(f"[grid]: unknown key {key!r}; axes are {', '.join(allowed)}, or a policy/scheme name "
                         "with a table of its option axes (e.g. wcjs.rt_narrow = [1.1, 1.5])")
    return axes, options


def _axis_values(raw: tuple[str, Any]) -> tuple[str, list]:
    key, value = raw
    return f"[grid].{key}", _as_list(value, f"[grid].{key}")


def _parse_traces(data: dict, axes_raw: dict, base: Path) -> list[TraceSpec]:
    given = [k for k in ("trace", "traces") if k in data] + (["[grid].trace"] if "trace" in axes_raw else [])
    if len(given) != 1:
        raise ValueError("give exactly one of [trace] (one table), [[traces]] (a list of tables) or "
                         f"[grid].trace (a list of paths); got {', '.join(given) or 'none'}")
    if "trace" in axes_raw:
        where, paths = _axis_values(axes_raw["trace"])
        raw_traces = []
        for p in paths:
            if not isinstance(p, str) or not p.strip():
                raise ValueError(f"{where}: expected trace file paths, got {p!r} (use [[traces]] tables for "
                                 "per-trace machine, window, format)")
            raw_traces.append({"path": p})
    else:
        raw_traces = [data["trace"]] if "trace" in data else data["traces"]
    if not isinstance(raw_traces, list) or not raw_traces:
        raise ValueError("[[traces]]: expected a non-empty list of tables")
    traces = []
    names = set()
    for i, t in enumerate(raw_traces):
        w = f"traces[{i}]"
        if not isinstance(t, dict):
            raise ValueError(f"{w}: expected a table")
        _check_unknown(t, _TRACE_KEYS, w)
        if "path" not in t or not isinstance(t["path"], str):
            raise ValueError(f"{w}: 'path' is required (a file path)")
        fmt = t.get("format")
        if fmt is not None and fmt not in FORMATS:
            raise ValueError(f"{w}.format: {fmt!r} is not one of {FORMATS}")
        tname = str(t.get("name") or Path(t["path"]).stem)
        if tname in names:
            raise ValueError(f"{w}: two traces named {tname!r} (give each a name)")
        names.add(tname)
        first_n = t.get("first_n")
        if first_n is not None and (not isinstance(first_n, int) or isinstance(first_n, bool) or first_n < 1):
            raise ValueError(f"{w}.first_n: expected a positive integer, got {first_n!r}")
        machine = t.get("machine")
        if machine is not None:
            machine = _machines(("machine", machine), where=f"{w}.machine")[0]
        traces.append(TraceSpec(name=tname, path=t["path"], format=fmt, machine=machine,
                                window=WindowSpec.from_dict(t.get("window"), f"{w}.window"), first_n=first_n))
    return traces


def _machines(raw, where: str | None = None) -> list[str]:
    from rtsched.machines import check_machine_spec

    key, value = raw if isinstance(raw, tuple) else ("machine", raw)
    where = where or f"[grid].{key}"
    out = []
    for m in _as_list(value, where):
        if not isinstance(m, str) or not m.strip():
            raise ValueError(f"{where}: expected a machine (mira, mira:BLOCKS, flat:N or a partition .xml), got {m!r}")
        try:
            check_machine_spec(m)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        out.append(m.strip())
    return out


def _rt_percents(raw) -> list:
    where, values = _axis_values(raw)
    out = []
    for x in values:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or not 0 <= x <= 100:
            raise ValueError(f"{where}: {x!r} is not a percentage in [0, 100]")
        out.append(canon_number(float(x)))
    return out


def _markings(raw) -> list[str]:
    where, values = _axis_values(raw)
    out = [MARKING_ALIASES.get(str(m), str(m)) for m in values]
    for m in out:
        if m not in MARKING_MODES:
            raise ValueError(f"{where}: {m!r} is not one of {MARKING_MODES} (or 'default' = 'random')")
    return out


def _runners(axes_raw: dict, base: Path) -> list[Runner]:
    from heuristics.registry import SCHEMES, available_policies

    order = [a for a in axes_raw if a in ("policy", "scheme")]
    if not order:
        raise ValueError("[grid]: give the policies (policy = [...]) or seed-002 schemes (scheme = [...]) to run")
    known = available_policies()
    runners = []
    for axis in order:
        where, values = _axis_values(axes_raw[axis])
        for v in values:
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"{where}: expected names, got {v!r}")
            v = v.strip()
            if axis == "scheme":
                if v.lower() not in SCHEMES:
                    raise ValueError(f"{where}: unknown scheme {v!r}; choose from {', '.join(SCHEMES)}")
                runners.append(Runner("scheme", v.lower()))
                continue
            normal = v.lower().replace("_", "-")
            if normal in known:
                runners.append(Runner("policy", normal))
            elif ":" in v and not looks_like_path(v, base):
                module, _, attr = v.partition(":")
                if not module or not attr:
                    raise ValueError(f"{where}: {v!r}: a user policy is written package.module:Class")
                runners.append(Runner("policy", v))
            elif looks_like_path(v, base) or _a_loader_takes(v):
                runners.append(Runner("policy", v))
            else:
                raise ValueError(f"{where}: unknown policy {v!r}; choose from {', '.join(known)}, a model file "
                                 "(.pt or a training folder), or package.module:Class")
    return runners


def _a_loader_takes(name: str) -> bool:
    from heuristics.registry import policy_loaders

    return any(loader.matches(name) for loader in policy_loaders())


def _backfills(raw) -> list[str]:
    from heuristics.backfill import normalize_backfill

    where, values = _axis_values(raw)
    for v in values:
        _named_backfill(v, where)
    try:
        return [normalize_backfill(v, option=where) for v in values]
    except ValueError as exc:
        raise ValueError(str(exc)) from None


def _named_backfill(value, where: str) -> None:
    """Refuse ``backfill = true`` / ``false`` in a grid (issue 26): ``true`` ran RLScheduler's strict
    backfilling, which nobody reading the grid would guess; a grid names its backfilling, as the
    API's ``backfill`` does.  (Model files that store the boolean still load: heuristics.backfill.)"""
    from heuristics.backfill import BACKFILLS

    if isinstance(value, bool):
        name, meant = ("rlscheduler", "RLScheduler's strict backfilling, what true ran") if value else \
            ("none", "no backfilling")
        raise ValueError(f"{where} = {str(value).lower()}: a backfilling is named, not switched on; write "
                         f"\"{name}\" ({meant}) or another of {', '.join(BACKFILLS)}")


def _no_boolean_backfill(options: dict, where: str) -> None:
    """A policy's or scheme's option table (``where`` names it) with ``backfill = true``: refused."""
    if "backfill" in options:
        _named_backfill(options["backfill"], f"{where}.backfill")


def _checkpoints(raw) -> list[str]:
    from rtsched.checkpoint import CheckpointModel

    where, values = _axis_values(raw)
    out = []
    for v in values:
        if not isinstance(v, str):
            raise ValueError(f"{where}: expected checkpoint models (no, sys[:SECONDS], app-PCT, jit), got {v!r}")
        try:
            CheckpointModel.parse(v)
        except ValueError as exc:  # the parser says why (unknown name, or a value out of range)
            raise ValueError(f"{where}: {exc}") from None
        out.append(v.strip().lower())
    return out


def _taus(value, where: str) -> list[int]:
    values = _as_list(value, where)
    for t in values:
        if isinstance(t, bool) or not isinstance(t, int) or t < 1:
            raise ValueError(f"{where}: expected a positive integer number of seconds, got {t!r}")
    return values


def _seeds(axes_raw: dict) -> list[int]:
    """``seeds = N`` counts (0..N-1); ``seeds``/``seed`` as a list names them; ``seed = S`` is one."""
    if "seed" not in axes_raw:
        return [0]
    key, value = axes_raw["seed"]
    where = f"[grid].{key}"
    if key == "seeds" and not isinstance(value, list):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{where}: {value!r} must be a count >= 1 or a list of non-negative integer seeds")
        if value > MAX_SEEDS:
            raise ValueError(f"{where}: {value:,} seeds: at most MAX_SEEDS = {MAX_SEEDS:,} (seed 002 used 10)")
        return list(range(value))
    values = _as_list(value, where)
    for s in values:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise ValueError(f"{where}: seeds are non-negative integers, got {s!r}")
        if s > MAX_SEED:
            raise ValueError(f"{where}: seed {s} is larger than MAX_SEED = 2**63 - 1 (seeds are stored as 64-bit "
                             "integers in summary.parquet)")
    return values


def _options_tables(data: dict, key: str, names: set[str], axis: str) -> dict[str, dict]:
    tables = data.get(key, {})
    if not isinstance(tables, dict):
        raise ValueError(f"[{key}]: expected tables [{key}.NAME]")
    out = {}
    for n, opts in tables.items():
        n = _runner_name(n, names)
        if n not in names:
            raise ValueError(f"[{key}.{n}]: {n!r} is not among {axis} ({', '.join(sorted(names)) or 'none'})")
        if not isinstance(opts, dict):
            raise ValueError(f"[{key}.{n}]: expected a table of options")
        _no_boolean_backfill(opts, f"[{key}.{n}]")
        out[n] = dict(opts)
    return out


def _runner_name(name: str, names: set[str]) -> str:
    """``name`` as the grid's policy/scheme axis spells it (registry names are normalised there:
    ``WFP2`` and ``wfp_2`` name ``wfp2``'s options too)."""
    if name in names:
        return name
    normal = name.strip().lower().replace("_", "-")
    return normal if normal in names else name


def _option_sets(spec, where: str) -> list[dict]:
    """A list of option tables (each one set), or a table of option axes (their product)."""
    if isinstance(spec, list):
        sets = [dict(s) for s in spec]
    else:
        keys = list(spec)
        values = [_as_list(spec[k], f"{where}.{k}") for k in keys]
        sets = [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    for s in sets:
        _no_boolean_backfill(s, where)
    _no_repeats(where.removeprefix("[grid]."), sets)
    return sets


def load_grid(path: str | os.PathLike) -> Grid:
    """Read and check a grid TOML file."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"grid file not found: {p}")
    if p.is_dir():
        raise FileNotFoundError(f"{p} is a folder, not a grid TOML file (give the grid file; a results folder "
                                "is named with --out)")
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        kind = "binary data" if b"\0" in data[:4096] else "not UTF-8 text"
        raise InputError(f"encoding: {kind} (byte {data[exc.start]:#04x} at offset {exc.start}); a grid file is "
                         "UTF-8 TOML", path=str(p), line=line) from None
    return parse_grid(text, p)


__all__ = ["load_grid", "parse_grid"]
