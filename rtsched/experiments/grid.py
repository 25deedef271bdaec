"""Experiment grids: a TOML description expanded into hashed run configurations.

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

import copy
import hashlib
import itertools
import json
import math
import os
import re
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtsched.errors import InputError
from rtsched.window import WindowSpec

SCHEMA_VERSION = 1
REPO_ROOT = Path(__file__).resolve().parents[2]
MARKING_MODES = ("random", "short", "aps")
MARKING_ALIASES = {"default": "random"}  # seed 002 calls uniform marking the "default" job variation
FORMATS = ("swf", "cobalt", "alcf")
HASH_LENGTH = 16  # hex digits of SHA-256 kept in run keys
DEFAULT_TAU = 600  # s: seed 002's bounded-slowdown bound

# The sweep axes, in expansion order (trace outermost, seed innermost).  ``policy`` and ``scheme``
# together are one axis: a run has either a policy or a scheme.
AXES = ("trace", "machine", "rt_percent", "marking", "policy", "scheme", "backfill", "checkpoint", "tau", "seed")
_AXIS_ALIASES = {"schemes": "scheme", "seeds": "seed", "traces": "trace", "machines": "machine"}

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
_MODEL_SUFFIXES = (".pt",)


# ------------------------------------------------------------------------------------------- paths
def shared_data_dir() -> Path:
    """Where ``${SHARED_DATA}`` points: ``$SHARED_DATA`` if set, else ``../shared/data`` of the repo."""
    env = os.environ.get("SHARED_DATA")
    return Path(env).expanduser().resolve() if env else (REPO_ROOT.parent / "shared" / "data").resolve()


def resolve_path(text: str, base: Path | None = None) -> Path:
    """Resolve a grid path: ``${SHARED_DATA}`` (or ``$SHARED_DATA``) expanded, ``~`` expanded,
    relative paths taken from ``base`` (default: the repository root, where portable paths start)."""
    s = text.replace("${SHARED_DATA}", str(shared_data_dir())).replace("$SHARED_DATA", str(shared_data_dir()))
    p = Path(s).expanduser()
    if not p.is_absolute():
        p = (base or REPO_ROOT) / p
    return p.resolve()


def portable_path(path: Path) -> str:
    """The machine-independent spelling of a resolved path used in hashes: ``${SHARED_DATA}/...``
    in the shared data, repository-relative in the project, else the file's name alone -- the
    content's SHA-256 beside it in the run's ``inputs`` tells files apart, so a study copied with
    its traces to another folder or machine keeps its keys (before 2026-11-27 the absolute path
    was hashed; ``rtsched.experiments.migrate`` adopts such runs)."""
    path = path.resolve()
    for root, prefix in ((shared_data_dir(), "${SHARED_DATA}"), (REPO_ROOT, "")):
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue
        return f"{prefix}/{rel.as_posix()}" if prefix else rel.as_posix()
    return path.name


def results_dir(name: "str | Grid") -> Path:
    """A results folder for library callers (notebooks, scripts): ``$RTSCHED_RESULTS/<name>`` if
    that variable is set, else ``<repo>/results/<name>`` (``results/`` is git-ignored)."""
    name = name.name if isinstance(name, Grid) else str(name)
    root = os.environ.get("RTSCHED_RESULTS")
    return (Path(root).expanduser() if root else REPO_ROOT / "results") / name


def is_file_machine(spec: str | None) -> bool:
    return spec is not None and spec.strip().lower().endswith(".xml")


_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_digest(path: Path) -> str:
    """SHA-256 of a file's content (cached per path, size and mtime)."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


# ------------------------------------------------------------------------------------------- hashing
def _canon_number(x: Any) -> Any:
    """10 and 10.0 hash alike: integral floats become ints."""
    if isinstance(x, bool):
        return x
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"non-finite number {x!r} in a run configuration")
        return int(x) if x.is_integer() else x
    if isinstance(x, dict):
        return {str(k): _canon_number(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_canon_number(v) for v in x]
    return x


def canonical_json(config: dict) -> str:
    """Canonical JSON of a run configuration: sorted keys, no whitespace, integral floats as ints."""
    return json.dumps(_canon_number(config), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def config_hash(config: dict) -> str:
    """Stable key of a run configuration: SHA-256 of its canonical JSON, first 16 hex digits."""
    return hashlib.sha256(canonical_json(config).encode("ascii")).hexdigest()[:HASH_LENGTH]


def options_text(options: dict) -> str:
    """``k=v,k2=v2`` (sorted keys): how a run's options are shown in labels and tables."""
    return ",".join(f"{k}={_value_text(options[k])}" for k in sorted(options))


def _value_text(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":")) if isinstance(v, (dict, list)) else str(v)


# ------------------------------------------------------------------------------------------- grid
@dataclass(frozen=True)
class TraceSpec:
    """One trace of a grid, paths as written in the TOML (``machine`` None: the grid's machine
    axis, else the pipeline's rule: Mira for Cobalt/ALCF logs, the SWF header's size)."""

    name: str
    path: str
    format: str | None
    machine: str | None
    window: WindowSpec | None = None
    first_n: int | None = None


@dataclass(frozen=True)
class Runner:
    """What schedules a run: a seed-002 ``scheme`` or a ``policy`` (registry name, user class or
    model file), as written in the grid (registry names normalised)."""

    kind: str  # "scheme" | "policy"
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass
class Grid:
    """A parsed grid file.

    ``axes`` holds the value lists of the axes the file gives (``AXES``; ``runners`` stands for
    policy and scheme together); ``option_axes`` the option sets per policy/scheme name (each
    a list of dicts; runs of that policy/scheme are multiplied by it).
    """

    name: str
    traces: list[TraceSpec]
    runners: list[Runner]
    axes: dict[str, list] = field(default_factory=dict)
    option_axes: dict[str, list[dict]] = field(default_factory=dict)
    aps_path: str | None = "${SHARED_DATA}/aps/aps_runtimes_seconds.txt"
    validate: bool = True
    scheme_options: dict[str, dict] = field(default_factory=dict)
    policy_options: dict[str, dict] = field(default_factory=dict)
    marking_options: dict = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    description: str = ""
    out_dir: str | None = None
    source: Path | None = None
    text: str = ""
    base: Path | None = None  # folder that relative paths start from (the grid file's)

    # --- the seed-002 axes by their old names (notebooks, scripts; settable, e.g. fewer seeds) ---
    @property
    def rt_percent(self) -> list:
        return self.axes.get("rt_percent", [0])

    @rt_percent.setter
    def rt_percent(self, values: list) -> None:
        self.axes["rt_percent"] = list(values)

    @property
    def marking(self) -> list[str]:
        return self.axes.get("marking", ["random"])

    @marking.setter
    def marking(self, values: list[str]) -> None:
        self.axes["marking"] = list(values)

    @property
    def schemes(self) -> list[str]:
        return [r.name for r in self.runners if r.kind == "scheme"]

    @schemes.setter
    def schemes(self, names: list[str]) -> None:
        self.runners = [r for r in self.runners if r.kind != "scheme"] + [Runner("scheme", n) for n in names]

    @property
    def policies(self) -> list[str]:
        return [r.name for r in self.runners if r.kind == "policy"]

    @property
    def seeds(self) -> list[int]:
        return self.axes.get("seed", [0])

    @seeds.setter
    def seeds(self, values: list[int]) -> None:
        self.axes["seed"] = list(values)

    @property
    def tau(self) -> int:
        return self.axes.get("tau", [DEFAULT_TAU])[0]

    def default_out_dir(self) -> Path:
        """``out_dir`` of the grid file (relative to the grid file), else ``./results/<name>``."""
        if self.out_dir:
            return resolve_path(self.out_dir, self._base())
        return Path("results") / self.name

    def _base(self) -> Path:
        return self.base or Path.cwd()

    def varying_axes(self) -> list[str]:
        """The axes with more than one value (``policy`` for policy/scheme; ``options`` for
        option sets), in ``AXES`` order: what tells runs of this grid apart besides the seed."""
        out = []
        if len(self.traces) > 1:
            out.append("trace")
        for axis in AXES[1:]:
            if axis in ("policy", "scheme"):
                if axis == "policy" and len(self.runners) > 1:
                    out.append("policy")
                continue
            if len(self.axes.get(axis, ())) > 1:
                out.append(axis)
        if any(len(v) > 1 for v in self.option_axes.values()):
            out.append("options")
        return out

    # --- expansion ---
    def expand(self) -> list["GridRun"]:
        """The runs of the grid, in a fixed order (``AXES``: trace, machine, RTJ %, marking,
        policy/scheme, backfill, checkpoint, option set, τ, seed).

        Resolves the input files and hashes their content: a missing file raises FileNotFoundError
        naming the path as written and as resolved.
        """
        runs: list[GridRun] = []
        seen: dict[str, GridRun] = {}
        machines_axis = self.axes.get("machine")
        aps = self._aps_input() if "aps" in self.marking else None
        models = {r.name: self._model_input(r.name) for r in self.runners if r.kind == "policy"
                  and _looks_like_path(r.name, self._base())}
        for tr in self.traces:
            trace_path = self._input(tr.path, f"{self._where()}: trace {tr.name!r}")
            trace_cfg = {"path": portable_path(trace_path), "format": tr.format, "first_n": tr.first_n}
            for machine_text in machines_axis or [tr.machine]:
                inputs = {"trace": file_digest(trace_path)}
                machine = self._machine(machine_text, tr, inputs)
                paths = {"trace": str(trace_path)}
                if "machine" in inputs:
                    paths["machine"] = str(self._input(machine_text, f"{self._where()}: machine of trace {tr.name!r}"))
                for pct, mode, runner, backfill, ckpt in itertools.product(
                        self.rt_percent, self.marking, self.runners, self.axes.get("backfill", [None]),
                        self.axes.get("checkpoint", [None])):
                    for opt_set, tau, seed in itertools.product(self.option_axes.get(runner.name, [{}]),
                                                                self.axes.get("tau", [DEFAULT_TAU]), self.seeds):
                        run_inputs = dict(inputs)
                        run_paths = dict(paths)
                        aps_portable = None
                        if mode == "aps":
                            aps_portable, run_inputs["aps"] = aps
                            run_paths["aps"] = str(self._input(self.aps_path, "options.aps_path"))
                        options = self._options(runner, opt_set, backfill)
                        config = {
                            "schema": SCHEMA_VERSION,
                            "trace": trace_cfg,
                            "machine": machine,
                            "window": tr.window.as_dict() if tr.window else None,
                            "rt_percent": pct,
                            "marking": mode,
                            "aps_path": aps_portable,
                            "marking_options": self.marking_options,
                            "seed": seed,
                            "tau": tau,
                            "inputs": run_inputs,
                        }
                        if runner.kind == "scheme":
                            config["scheme"] = runner.name
                            config["scheme_options"] = options
                        else:
                            name = runner.name
                            if name in models:
                                run_paths["policy"] = str(self._input(name, f"policy {name!r}"))
                                name, run_inputs["policy"] = models[name]
                            elif (shipped := _policy_source(name)) is not None and os.path.isfile(shipped):
                                # a shipped model named by name (rtmix): keyed by its content, like a path
                                run_inputs["policy"] = file_digest(Path(shipped))
                            config["policy"] = name
                            config["policy_options"] = options
                        if ckpt is not None:
                            config["checkpoint"] = ckpt
                        config = _canon_number(config)
                        key = config_hash(config)
                        detail = _detail(machine_text if machines_axis else None, backfill, ckpt, opt_set,
                                         tau if len(self.axes.get("tau", ())) > 1 else None)
                        run = GridRun(key=key, config=config, label=tr.name, detail=detail, paths=run_paths)
                        if key in seen:
                            raise ValueError(f"{self._where()}: runs '{seen[key].describe()}' and '{run.describe()}' "
                                             f"have the same configuration ({key}); check for repeated axis values")
                        seen[key] = run
                        runs.append(run)
        return runs

    def _where(self) -> str:
        """The grid in a message: its file when it came from one, else its name."""
        return str(self.source) if self.source else f"grid {self.name}"

    def _input(self, text: str, what: str) -> Path:
        """An input file of the grid: relative to the grid file's folder (or, for grids written
        before that rule, the repository root, with a FutureWarning)."""
        p = resolve_path(text, self._base())
        if p.exists():
            return p
        legacy = resolve_path(text, REPO_ROOT)
        if legacy.exists() and not Path(os.path.expanduser(text)).is_absolute():
            try:
                suggestion = os.path.relpath(legacy, self._base())
            except ValueError:
                suggestion = str(legacy)
            warnings.warn(f"{self.source or self.name}: {text!r} is not found beside the grid file and is read from "
                          f"the repository root ({legacy}); grid paths are relative to the grid file: write "
                          f"{suggestion!r}", FutureWarning, stacklevel=3)
            return legacy
        hint = ""
        if "SHARED_DATA" in text or "shared/data" in text:
            hint = (f"; the shared data folder is {shared_data_dir()} (set $SHARED_DATA or place the data at "
                    "../shared/data beside the repository)")
        raise FileNotFoundError(f"{what}: file not found: {text!r} -> {p}{hint}")

    def _machine(self, text: str | None, tr: TraceSpec, inputs: dict) -> str | None:
        """The machine as hashed: a partition file as a portable path (its digest into ``inputs``),
        a spec as written, None for the pipeline's rule (Cobalt/ALCF logs: ``mira``, which is what
        grids without a machine hashed before)."""
        if text is None:
            fmt = tr.format or _format_from_extension(tr.path)
            return "mira" if fmt in ("cobalt", "alcf") else None
        if is_file_machine(text):
            path = self._input(text, f"{self._where()}: machine of trace {tr.name!r}")
            inputs["machine"] = file_digest(path)
            return portable_path(path)
        return text.strip()

    def _aps_input(self) -> tuple[str, str]:
        if not self.aps_path:
            raise ValueError(f"{self._where()}: marking 'aps' needs options.aps_path")
        path = self._input(self.aps_path, f"{self._where()}: options.aps_path")
        return portable_path(path), file_digest(path)

    def _model_input(self, text: str) -> tuple[str, str]:
        """(portable path, content digest) of a model file or training folder used as a policy."""
        path = self._input(text, f"{self._where()}: policy {text!r}")
        model = path / "checkpoint.pt" if path.is_dir() else path
        if not model.is_file():
            raise FileNotFoundError(f"{self._where()}: policy {text!r}: {path} holds no checkpoint.pt")
        return portable_path(path), file_digest(model)

    def _options(self, runner: Runner, opt_set: dict, backfill: str | None) -> dict:
        fixed = (self.scheme_options if runner.kind == "scheme" else self.policy_options).get(runner.name, {})
        options = {**fixed, **opt_set}
        if backfill is not None:
            options["backfill"] = backfill
        return options


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


def _format_from_extension(path: str) -> str | None:
    p = path.lower().removesuffix(".gz")
    return {".swf": "swf", ".log": "cobalt", ".csv": "alcf"}.get(os.path.splitext(p)[1])


def _policy_source(name: str) -> str | None:
    """The file a policy name stands for (``heuristics.registry.policy_source``: a shipped model's
    name), imported on use: the registry brings in the simulator and NumPy, which reading a grid
    for ``rtsched experiment status`` does not need otherwise."""
    from heuristics.registry import policy_source

    return policy_source(name)


def _looks_like_path(name: str, base: Path) -> bool:
    """A policy value names a model file or training folder (not a registry name or a class)."""
    if name.endswith(_MODEL_SUFFIXES) or "/" in name or os.sep in name or "SHARED_DATA" in name:
        return True
    return ":" not in name and resolve_path(name, base).exists()


@dataclass(frozen=True)
class GridRun:
    """One run: its key (hash), its canonical configuration, the trace label for reports, and
    the values of the grid's other axes as text (``detail``, e.g. ``backfill=easy``)."""

    key: str
    config: dict
    label: str
    detail: str = ""
    # the input files as found on this machine ("trace", "machine", "aps", "policy"): the
    # configuration holds their portable names only (``portable_path``)
    paths: dict = field(default_factory=dict, compare=False)

    @property
    def runner(self) -> str:
        """The run's scheme or policy name."""
        c = self.config
        return c["scheme"] if "scheme" in c else c["policy"]

    def describe(self) -> str:
        c = self.config
        rt = f" {c['rt_percent']}% {c['marking']}" if c["rt_percent"] else ""
        text = f"{self.label}{rt} {self.runner} seed {c['seed']}"
        return f"{text} {self.detail}" if self.detail else text

    def task(self, out_dir: Path, validate: bool) -> dict:
        """A picklable work item for a worker process: configuration plus resolved paths."""
        c = self.config
        machine = c["machine"]
        policy = c.get("policy")

        def where(what: str, portable: str) -> str:  # a run built without paths: from the portable name
            return self.paths.get(what) or str(resolve_path(portable))

        return {
            "key": self.key,
            "label": self.label,
            "config": copy.deepcopy(c),
            "trace_path": where("trace", c["trace"]["path"]),
            "machine": where("machine", machine) if is_file_machine(machine) else machine,
            "policy": where("policy", policy) if policy is not None and "policy" in c["inputs"] else policy,
            "aps_path": where("aps", c["aps_path"]) if c.get("aps_path") else None,
            "out_dir": str(out_dir),
            "validate": validate,
        }


# ------------------------------------------------------------------------------------------- parsing
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
    name = data.get("name") or (source.stem if source else None)
    if not name:
        raise ValueError("a grid needs a name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise ValueError(f"name {name!r}: use letters, digits, '_', '-', '.' only (it names a folder)")
    base = source.resolve().parent if source else Path.cwd()
    g = data.get("grid")
    if not isinstance(g, dict):
        raise ValueError("[grid] table is required (e.g. policy = [...] or scheme = [...], seeds = N)")
    axes_raw, option_raw = _split_grid_table(g)
    traces = _parse_traces(data, axes_raw, base)
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
    opts = data.get("options", {})
    if not isinstance(opts, dict):
        raise ValueError("[options]: expected a table")
    _check_unknown(opts, _OPTION_KEYS, "[options]")
    if "tau" in axes_raw and "tau" in opts:
        raise ValueError("tau is given both in [grid] and in [options]; keep one")
    if "tau" in axes_raw or "tau" in opts:
        axes["tau"] = _taus(axes_raw["tau"][1] if "tau" in axes_raw else opts["tau"],
                            "[grid].tau" if "tau" in axes_raw else "[options].tau")
    axes["seed"] = _seeds(axes_raw)
    for axis, values in axes.items():
        _no_repeats(axis, values)
    _no_repeats("policy/scheme", [r.name for r in runners])
    names = {r.name for r in runners}
    scheme_options = _options_tables(data, "scheme_options", {r.name for r in runners if r.kind == "scheme"},
                                     "[grid].scheme")
    policy_options = _options_tables(data, "policy_options", {r.name for r in runners if r.kind == "policy"},
                                     "[grid].policy")
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
    if "backfill" in axes:
        for table, opts_by_name in (("scheme_options", scheme_options), ("policy_options", policy_options)):
            for n, o in opts_by_name.items():
                if "backfill" in o:
                    raise ValueError(f"[{table}.{n}].backfill: backfill is an axis of the grid ([grid].backfill)")
    marking_options = data.get("marking_options", {})
    if not isinstance(marking_options, dict):
        raise ValueError("[marking_options]: expected a table")
    _check_unknown(marking_options, _MARKING_OPTION_KEYS, "[marking_options]")
    report = data.get("report", {})
    if not isinstance(report, dict):
        raise ValueError("[report]: expected a table")
    _check_unknown(report, _REPORT_KEYS, "[report]")
    for key in ("headline", "labels"):
        if not isinstance(report.get(key, {}), dict):
            raise ValueError(f"[report].{key}: expected a table")
    _check_unknown(report.get("headline", {}), _HEADLINE_KEYS, "[report].headline")
    out_dir = data.get("out_dir")
    if out_dir is not None and (not isinstance(out_dir, str) or not out_dir.strip()):
        raise ValueError(f"out_dir: expected a folder path, got {out_dir!r}")
    return Grid(name=name, traces=traces, runners=runners, axes=axes, option_axes=option_axes,
                aps_path=opts.get("aps_path", Grid.aps_path), validate=bool(opts.get("validate", True)),
                scheme_options=scheme_options, policy_options=policy_options,
                marking_options=dict(marking_options), report=dict(report),
                description=str(data.get("description", "")), out_dir=out_dir, source=source, text=text, base=base)


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
        out.append(_canon_number(float(x)))
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
            elif ":" in v and not _looks_like_path(v, base):
                module, _, attr = v.partition(":")
                if not module or not attr:
                    raise ValueError(f"{where}: {v!r}: a user policy is written package.module:Class")
                runners.append(Runner("policy", v))
            elif _looks_like_path(v, base) or _a_loader_takes(v):
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
    try:
        return [normalize_backfill(v, option=where) for v in values]
    except ValueError as exc:
        raise ValueError(str(exc)) from None


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


MAX_SEEDS = 10_000  # the largest seed count (seeds = N) a grid may ask for
MAX_SEED = 2**63 - 1  # the largest seed (an int64 column of summary.parquet)


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


def expand_grid(path_or_grid: "str | os.PathLike | Grid") -> list[GridRun]:
    """Runs of a grid file (or a parsed ``Grid``)."""
    grid = path_or_grid if isinstance(path_or_grid, Grid) else load_grid(path_or_grid)
    return grid.expand()
