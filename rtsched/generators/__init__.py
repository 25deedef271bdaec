"""Seeded workload generators and the traces shipped in ``traces/`` (docs/generators.md).

* ``generate_lublin``: the Lublin–Feitelson (2003) rigid-job model (``lublin99.c`` parameters).
* ``generate_miralike``: an empirical model fitted to the 2018 Mira logs (``miralike_params.json``).
* ``default_trace``: the shipped Mira-like week (read from ``traces/mira_like_week.swf``, or
  regenerated in memory from its seed when the file is absent).
* ``regenerate_shipped_traces``: rewrite the shipped traces byte-for-byte
  (``rtsched traces generate --shipped``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rtsched.generators.lublin import LublinParams, generate_lublin
from rtsched.generators.miralike import MiraLikeParams, generate_miralike, load_params
from rtsched.io import read_workload
from rtsched.io.swf import write_swf
from rtsched.jobs import Workload

__all__ = ["generate_lublin", "generate_miralike", "default_trace", "regenerate_shipped_traces",
           "shipped_trace", "SHIPPED", "SHIPPED_DIR", "LublinParams", "MiraLikeParams", "load_params"]

SHIPPED_DIR = Path(__file__).resolve().parents[2] / "traces"
REGENERATE = "rtsched traces generate --shipped  (from the repository root; --out DIR writes elsewhere)"


@dataclass(frozen=True)
class ShippedTrace:
    """One trace of ``traces/``: its file name and the exact generator call that makes it."""

    file: str
    call: str  # the call, as written in the file's header
    make: Callable[[], Workload]


SHIPPED: tuple[ShippedTrace, ...] = (
    ShippedTrace("mira_like_week.swf", "generate_miralike(days=7.0, seed=0)",
                 lambda: generate_miralike(days=7.0, seed=0, name="mira_like_week")),
    ShippedTrace("lublin_256_sample.swf", "generate_lublin(n_jobs=2000, nodes=256, seed=0)",
                 lambda: generate_lublin(n_jobs=2000, nodes=256, seed=0, name="lublin_256_sample")),
)


def shipped_trace(file: str) -> Workload:
    """The workload of a shipped trace, generated in memory (header as written in the file)."""
    for spec in SHIPPED:
        if spec.file == file:
            wl = spec.make()
            wl.header["Call"] = f"rtsched.generators.{spec.call}"
            wl.header["Regenerate"] = REGENERATE
            return wl
    raise ValueError(f"no shipped trace named {file!r}; known: {[s.file for s in SHIPPED]}")


def default_trace() -> Workload:
    """The shipped Mira-like week: ``traces/mira_like_week.swf``, or regenerated from its seed."""
    path = SHIPPED_DIR / "mira_like_week.swf"
    if path.exists():
        return read_workload(str(path), "swf")
    return shipped_trace("mira_like_week.swf")


def regenerate_shipped_traces(out_dir: str | os.PathLike[str]) -> list[str]:
    """Write every shipped trace into ``out_dir`` (created if needed); returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in SHIPPED:
        path = out / spec.file
        write_swf(shipped_trace(spec.file), path)
        written.append(str(path))
    return written
