"""Experiment grids: a TOML description expanded into hashed run configurations.

A grid names one or more traces (each with its format, machine and results window), and the axes
of the sweep: RTJ percentages, marking modes, schemes and seeds.  ``expand`` takes the cartesian
product; every run configuration is a plain JSON-able dict whose canonical JSON (sorted keys, no
spaces) is hashed (SHA-256, first 16 hex digits) into the run's key and result file names.

The hash covers everything that changes a run's numbers: the trace (as a portable path *and* the
SHA-256 of its content), the machine (spec, plus the file digest for a partition XML), the window,
the RTJ percentage, marking mode and seed, the scheme and its options, the bounded-slowdown bound
τ, and the APS sample (only for ``aps`` marking).  It leaves out what does not: labels, the output
folder, worker count, whether the validator runs.  Paths are hashed in a portable form
(``${SHARED_DATA}/...`` for the shared data, repository-relative for the project's own files), so
the same grid hashes the same on every machine holding the same data.

TOML format (see docs/study.md)::

    name = "headline_wk1"                 # output folder default: results/<name>
    description = "..."

    [[traces]]                            # or a single [trace] table
    name = "wk1"                          # label (default: the file's stem)
    path = "${SHARED_DATA}/traces/mira/wk1.log"   # or relative to the repository root
    format = "cobalt"                     # swf | cobalt | alcf (default: from the extension)
    machine = "${SHARED_DATA}/mira/mira-partitions.xml"   # mira | mira:BLOCKS | flat:N | a .xml
    window = { start = "2018-01-21", days = 7 }    # ISO date (UTC) or epoch s; or offset = s
    # first_n = 500                       # only the first N jobs

    [grid]
    rt_percent = [10]
    marking = ["random"]                  # random | short | aps
    schemes = ["baseline", "wcjs-jit"]
    seeds = 5                             # 5 -> 0..4, or an explicit list [1, 2, 3]

    [options]
    tau = 600                             # bounded-slowdown bound, s (seed 002: 10 min)
    aps_path = "${SHARED_DATA}/aps/aps_runtimes_seconds.txt"
    validate = true                       # re-check every schedule (not part of the hash)

    [scheme_options.wcjs-jit]             # keyword options for that scheme (part of its hash)

    [marking_options]                     # more rtsched.rtmarking.RtMarking fields (part of the hash)
    noncheckpointable_percent = 10        # e.g. 10 % of the BJs can never be preempted

    [report]                              # defaults of report() and plot(); not part of the hash
    figure_schemes = ["baseline", "wcjs-app-5", "wcjs-app-10", "wcjs-jit"]
    headline = { rt_percent = 10, baseline = "baseline", heuristic = "wcjs-jit", marking = "random" }
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

_TOP_KEYS = {"name", "description", "out_dir", "trace", "traces", "grid", "options", "scheme_options",
             "marking_options", "report"}
# RtMarking fields a grid may set in [marking_options] (percent, mode, seed, aps_path are the axes/options)
_MARKING_OPTION_KEYS = {"short_max_runtime", "aps_node_scale", "aps_walltime_factor", "aps_share_of",
                        "machine_blocks", "noncheckpointable_percent"}
_TRACE_KEYS = {"name", "path", "format", "machine", "window", "first_n"}
_GRID_KEYS = {"rt_percent", "marking", "schemes", "seeds"}
_OPTION_KEYS = {"tau", "aps_path", "validate"}


# ------------------------------------------------------------------------------------------- paths
def shared_data_dir() -> Path:
    """Where ``${SHARED_DATA}`` points: ``$SHARED_DATA`` if set, else ``../shared/data`` of the repo."""
    env = os.environ.get("SHARED_DATA")
    return Path(env).expanduser().resolve() if env else (REPO_ROOT.parent / "shared" / "data").resolve()


def resolve_path(text: str, base: Path | None = None) -> Path:
    """Resolve a grid path: ``${SHARED_DATA}`` (or ``$SHARED_DATA``) expanded, relative paths taken
    from the repository root (``base`` overrides), ``~`` expanded."""
    s = text.replace("${SHARED_DATA}", str(shared_data_dir())).replace("$SHARED_DATA", str(shared_data_dir()))
    p = Path(s).expanduser()
    if not p.is_absolute():
        p = (base or REPO_ROOT) / p
    return p.resolve()


def portable_path(path: Path) -> str:
    """The machine-independent spelling of a resolved path used in hashes."""
    path = path.resolve()
    for root, prefix in ((shared_data_dir(), "${SHARED_DATA}"), (REPO_ROOT, "")):
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue
        return f"{prefix}/{rel.as_posix()}" if prefix else rel.as_posix()
    return path.as_posix()


def results_dir(name: "str | Grid") -> Path:
    """A results folder for library callers (notebooks, scripts): ``$RTSCHED_RESULTS/<name>`` if
    that variable is set, else ``<repo>/results/<name>`` (``results/`` is git-ignored)."""
    name = name.name if isinstance(name, Grid) else str(name)
    root = os.environ.get("RTSCHED_RESULTS")
    return (Path(root).expanduser() if root else REPO_ROOT / "results") / name


def is_file_machine(spec: str) -> bool:
    return spec.strip().lower().endswith(".xml")


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


# ------------------------------------------------------------------------------------------- grid
@dataclass(frozen=True)
class TraceSpec:
    """One trace of a grid, paths as written in the TOML."""

    name: str
    path: str
    format: str | None
    machine: str
    window: WindowSpec | None = None
    first_n: int | None = None


@dataclass
class Grid:
    """A parsed grid file."""

    name: str
    traces: list[TraceSpec]
    rt_percent: list[float]
    marking: list[str]
    schemes: list[str]
    seeds: list[int]
    tau: int = 600
    aps_path: str | None = "${SHARED_DATA}/aps/aps_runtimes_seconds.txt"
    validate: bool = True
    scheme_options: dict[str, dict] = field(default_factory=dict)
    marking_options: dict = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    description: str = ""
    out_dir: str | None = None
    source: Path | None = None
    text: str = ""

    def default_out_dir(self) -> Path:
        """``out_dir`` of the grid file (relative to the current directory), else ``results/<name>``."""
        return Path(self.out_dir) if self.out_dir else Path("results") / self.name

    def expand(self) -> list["GridRun"]:
        """The runs of the grid, in a fixed order (trace, RTJ %, marking, scheme, seed).

        Resolves the input files and hashes their content: a missing file raises FileNotFoundError
        naming the path as written and as resolved.
        """
        runs: list[GridRun] = []
        seen: set[str] = set()
        for tr in self.traces:
            trace_path = _existing(tr.path, f"grid {self.name}: trace {tr.name!r}")
            inputs = {"trace": file_digest(trace_path)}
            if is_file_machine(tr.machine):
                machine_path = _existing(tr.machine, f"grid {self.name}: machine of trace {tr.name!r}")
                machine = portable_path(machine_path)
                inputs["machine"] = file_digest(machine_path)
            else:
                machine_path = None
                machine = tr.machine.strip()
            trace_cfg = {"path": portable_path(trace_path), "format": tr.format, "first_n": tr.first_n}
            for pct, mode, scheme, seed in itertools.product(self.rt_percent, self.marking, self.schemes, self.seeds):
                run_inputs = dict(inputs)
                aps = None
                if mode == "aps":
                    if not self.aps_path:
                        raise ValueError(f"grid {self.name}: marking 'aps' needs options.aps_path")
                    aps_resolved = _existing(self.aps_path, f"grid {self.name}: options.aps_path")
                    aps = portable_path(aps_resolved)
                    run_inputs["aps"] = file_digest(aps_resolved)
                config = {
                    "schema": SCHEMA_VERSION,
                    "trace": trace_cfg,
                    "machine": machine,
                    "window": tr.window.as_dict() if tr.window else None,
                    "rt_percent": pct,
                    "marking": mode,
                    "aps_path": aps,
                    "scheme": scheme,
                    "scheme_options": self.scheme_options.get(scheme, {}),
                    "marking_options": self.marking_options,
                    "seed": seed,
                    "tau": self.tau,
                    "inputs": run_inputs,
                }
                config = _canon_number(config)
                key = config_hash(config)
                if key in seen:
                    raise ValueError(f"grid {self.name}: two runs with the same configuration ({key}); "
                                     "check for repeated values in the axes")
                seen.add(key)
                runs.append(GridRun(key=key, config=config, label=tr.name))
        return runs


@dataclass(frozen=True)
class GridRun:
    """One run: its key (hash), its canonical configuration, and the trace label for reports."""

    key: str
    config: dict
    label: str

    def describe(self) -> str:
        c = self.config
        return (f"{self.label} {c['rt_percent']}% {c['marking']} {c['scheme']} seed {c['seed']}")

    def task(self, out_dir: Path, validate: bool) -> dict:
        """A picklable work item for a worker process: configuration plus resolved paths."""
        c = self.config
        return {
            "key": self.key,
            "label": self.label,
            "config": copy.deepcopy(c),
            "trace_path": str(resolve_path(c["trace"]["path"])),
            "machine": str(resolve_path(c["machine"])) if is_file_machine(c["machine"]) else c["machine"],
            "aps_path": str(resolve_path(c["aps_path"])) if c.get("aps_path") else None,
            "out_dir": str(out_dir),
            "validate": validate,
        }


def _existing(text: str, what: str) -> Path:
    p = resolve_path(text)
    if not p.exists():
        hint = ""
        if "SHARED_DATA" in text or "shared/data" in text:
            hint = (f"; the shared data folder is {shared_data_dir()} (set $SHARED_DATA or place the data at "
                    "../shared/data beside the repository)")
        raise FileNotFoundError(f"{what}: file not found: {text!r} -> {p}{hint}")
    return p


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


def parse_grid(text: str, source: Path | None = None) -> Grid:
    """Parse grid TOML text (``source`` names the file in error messages)."""
    where = str(source) if source else "<grid>"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", path=where) from exc
    try:
        return _grid_from_dict(data, source, text)
    except (ValueError, TypeError, KeyError) as exc:
        raise InputError(str(exc), path=where) from exc


def _grid_from_dict(data: dict, source: Path | None, text: str) -> Grid:
    _check_unknown(data, _TOP_KEYS, "top level")
    name = data.get("name") or (source.stem if source else None)
    if not name:
        raise ValueError("a grid needs a name")
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise ValueError(f"name {name!r}: use letters, digits, '_', '-', '.' only (it names a folder)")
    if ("trace" in data) == ("traces" in data):
        raise ValueError("give exactly one of [trace] (one table) or [[traces]] (a list of tables)")
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
        if "path" not in t:
            raise ValueError(f"{w}: 'path' is required")
        fmt = t.get("format")
        if fmt is not None and fmt not in FORMATS:
            raise ValueError(f"{w}.format: {fmt!r} is not one of {FORMATS}")
        tname = t.get("name") or Path(t["path"]).stem
        if tname in names:
            raise ValueError(f"{w}: two traces named {tname!r}")
        names.add(tname)
        first_n = t.get("first_n")
        if first_n is not None and (not isinstance(first_n, int) or first_n < 1):
            raise ValueError(f"{w}.first_n: expected a positive integer, got {first_n!r}")
        traces.append(TraceSpec(name=tname, path=str(t["path"]), format=fmt, machine=str(t.get("machine", "mira")),
                                window=WindowSpec.from_dict(t.get("window"), f"{w}.window"), first_n=first_n))
    g = data.get("grid")
    if not isinstance(g, dict):
        raise ValueError("[grid] table is required (rt_percent, marking, schemes, seeds)")
    _check_unknown(g, _GRID_KEYS, "[grid]")
    for key in ("rt_percent", "schemes"):
        if key not in g:
            raise ValueError(f"[grid].{key} is required")
    rt = [_canon_number(float(x)) for x in _as_list(g["rt_percent"], "[grid].rt_percent")]
    for x in rt:
        if not 0 <= x <= 100:
            raise ValueError(f"[grid].rt_percent: {x} is outside [0, 100]")
    marking = [MARKING_ALIASES.get(str(m), str(m)) for m in _as_list(g.get("marking", "random"), "[grid].marking")]
    for m in marking:
        if m not in MARKING_MODES:
            raise ValueError(f"[grid].marking: {m!r} is not one of {MARKING_MODES} (or 'default' = 'random')")
    schemes = [str(s) for s in _as_list(g["schemes"], "[grid].schemes")]
    seeds_raw = g.get("seeds", 1)
    if isinstance(seeds_raw, int) and not isinstance(seeds_raw, bool):
        if seeds_raw < 1:
            raise ValueError(f"[grid].seeds: {seeds_raw} must be >= 1 (a count) or a list of seeds")
        seeds = list(range(seeds_raw))
    else:
        seeds = [int(s) for s in _as_list(seeds_raw, "[grid].seeds")]
    for axis, values in (("rt_percent", rt), ("marking", marking), ("schemes", schemes), ("seeds", seeds)):
        if len(set(values)) != len(values):
            raise ValueError(f"[grid].{axis}: repeated values in {values}")
    opts = data.get("options", {})
    _check_unknown(opts, _OPTION_KEYS, "[options]")
    tau = opts.get("tau", 600)
    if not isinstance(tau, int) or tau < 1:
        raise ValueError(f"[options].tau: expected a positive integer number of seconds, got {tau!r}")
    scheme_options = data.get("scheme_options", {})
    for s in scheme_options:
        if s not in schemes:
            raise ValueError(f"[scheme_options.{s}]: {s!r} is not among [grid].schemes")
    marking_options = data.get("marking_options", {})
    if not isinstance(marking_options, dict):
        raise ValueError("[marking_options]: expected a table")
    _check_unknown(marking_options, _MARKING_OPTION_KEYS, "[marking_options]")
    report = data.get("report", {})
    return Grid(name=name, traces=traces, rt_percent=rt, marking=marking, schemes=schemes, seeds=seeds, tau=tau,
                aps_path=opts.get("aps_path", Grid.aps_path), validate=bool(opts.get("validate", True)),
                scheme_options={k: dict(v) for k, v in scheme_options.items()},
                marking_options=dict(marking_options), report=dict(report),
                description=str(data.get("description", "")), out_dir=data.get("out_dir"), source=source,
                text=text)


def load_grid(path: str | os.PathLike) -> Grid:
    """Read and check a grid TOML file."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"grid file not found: {p}")
    return parse_grid(p.read_text(encoding="utf-8"), p)


def expand_grid(path_or_grid: "str | os.PathLike | Grid") -> list[GridRun]:
    """Runs of a grid file (or a parsed ``Grid``)."""
    grid = path_or_grid if isinstance(path_or_grid, Grid) else load_grid(path_or_grid)
    return grid.expand()
