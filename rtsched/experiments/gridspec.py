"""A parsed grid (``Grid``: traces, policies/schemes and axes, with the input files they name) and
its runs (``GridRun``: key, configuration, label, the files as found here)."""
from __future__ import annotations

import copy
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from rtsched.experiments.paths import (REPO_ROOT, file_digest, format_from_extension, is_file_machine, portable_path,
                                       resolve_path, shared_data_dir)
from rtsched.window import WindowSpec

MARKING_MODES = ("random", "short", "aps")
MARKING_ALIASES = {"default": "random"}  # seed 002 calls uniform marking the "default" job variation
FORMATS = ("swf", "cobalt", "alcf")
DEFAULT_TAU = 600  # s: seed 002's bounded-slowdown bound

# The sweep axes, in expansion order (trace outermost, seed innermost).  ``policy`` and ``scheme``
# together are one axis: a run has either a policy or a scheme.
AXES = ("trace", "machine", "rt_percent", "marking", "policy", "scheme", "backfill", "checkpoint", "tau", "seed")
_AXIS_ALIASES = {"schemes": "scheme", "seeds": "seed", "traces": "trace", "machines": "machine"}
MAX_SEEDS = 10_000  # the largest seed count (seeds = N) a grid may ask for
MAX_SEED = 2**63 - 1  # the largest seed (an int64 column of summary.parquet)


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
        policy/scheme, backfill, checkpoint, option set, τ, seed): ``rtsched.experiments.expand``.

        Resolves the input files and hashes their content: a missing file raises FileNotFoundError
        naming the path as written and as resolved.
        """
        from rtsched.experiments.expand import expand_runs

        return expand_runs(self)

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
            fmt = tr.format or format_from_extension(tr.path)
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


def results_dir(name: "str | Grid") -> Path:
    """A results folder for library callers (notebooks, scripts): ``$RTSCHED_RESULTS/<name>`` if
    that variable is set, else ``<repo>/results/<name>`` (``results/`` is git-ignored)."""
    name = name.name if isinstance(name, Grid) else str(name)
    root = os.environ.get("RTSCHED_RESULTS")
    return (Path(root).expanduser() if root else REPO_ROOT / "results") / name


__all__ = ["AXES", "DEFAULT_TAU", "FORMATS", "Grid", "GridRun", "MARKING_ALIASES", "MARKING_MODES", "MAX_SEED",
           "MAX_SEEDS", "Runner", "TraceSpec", "results_dir"]
