"""Reading a results folder back: one row per run, and the per-job tables."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from rtsched.experiments import store
from rtsched.experiments.grid import MARKING_MODES

CATEGORIES = ("narrow-short", "narrow-long", "wide-short", "wide-long")
KINDS = ("rt", "batch")
CONFIG_COLUMNS = ["key", "trace", "trace_path", "format", "machine", "window_start", "window_days", "rt_percent",
                  "marking", "scheme", "seed", "tau"]

# Job-table columns (rtsched.metrics.JOB_COLUMNS) the study reads, and their short names here.
JOB_COLUMNS = {"id": "id", "kind": "kind", "category": "category", "nodes": "nodes", "runtime": "runtime",
               "walltime": "walltime", "turnaround": "turnaround", "wait": "wait", "sd": "sd",
               "bsld_seed002": "bsld", "n_preemptions": "n_preemptions"}


def _flatten(prefix: str, obj, out: dict) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(obj, (str, int, float, bool)) or obj is None:
        out[prefix] = obj


def _options_text(options: dict) -> str:
    return ",".join(f"{k}={options[k]}" for k in sorted(options))


def _variant_labels(records: list[dict], axis: str) -> dict[str, str]:
    """Display label per record key for ``axis`` (``scheme`` or ``marking``): the plain name, unless
    one folder holds the same name with different ``{axis}_options`` (runs of two grids written
    into one folder); then those with options get ``name[k=v,...]`` so tables never pool them."""
    variants: dict[str, set[str]] = {}
    for rec in records:
        c = rec["config"]
        variants.setdefault(c[axis], set()).add(_options_text(c.get(f"{axis}_options") or {}))
    labels = {}
    for rec in records:
        c = rec["config"]
        opts = _options_text(c.get(f"{axis}_options") or {})
        labels[rec["key"]] = f"{c[axis]}[{opts}]" if opts and len(variants[c[axis]]) > 1 else c[axis]
    return labels


def _config_rows(records: list[dict]) -> list[dict]:
    scheme = _variant_labels(records, "scheme")
    marking = _variant_labels(records, "marking")
    rows = []
    for rec in records:
        c = rec["config"]
        w = c.get("window") or {}
        rows.append({
            "key": rec["key"], "trace": rec.get("label"), "trace_path": c["trace"]["path"],
            "format": c["trace"].get("format"), "machine": c["machine"],
            "window_start": w.get("start", w.get("offset")), "window_days": w.get("days"),
            "rt_percent": c["rt_percent"], "marking": marking[rec["key"]], "scheme": scheme[rec["key"]],
            "seed": c["seed"], "tau": c["tau"],
        })
    return rows


def iter_records(out_dir: str | os.PathLike) -> Iterable[dict]:
    """The summary records of the finished runs of a results folder (sorted by key)."""
    folder = store.runs_dir(Path(out_dir))
    if not folder.is_dir():
        raise FileNotFoundError(f"{out_dir}: not a results folder (no {store.RUNS}/ inside)")
    for p in sorted(folder.glob("*.json")):
        if p.name.endswith(".error.json"):
            continue
        rec = store.read_json(p)
        if store.table_path(Path(out_dir), rec.get("key", "")).exists():
            yield rec


def load_results(out_dir: str | os.PathLike):
    """One row per finished run: the configuration columns (``CONFIG_COLUMNS``), then the metrics.

    Metrics columns: ``{all,rt,batch}_{metric}`` from ``summary_dict()["summary"]``, the other
    scalar entries of the summary flattened with dots (``categories.narrow-short.rt.mean_bsld``,
    ``utilization``, ...), and ``simulate_s`` / ``total_s`` timings.
    """
    import pandas as pd

    rows = []
    records = list(iter_records(out_dir))
    for rec, row in zip(records, _config_rows(records)):
        metrics = dict(rec.get("metrics") or {})
        groups = metrics.pop("summary", {}) or {}
        for group, values in groups.items():
            if isinstance(values, dict):
                for k, v in values.items():
                    if isinstance(v, (int, float, str, bool)) or v is None:
                        row[f"{group}_{k}"] = v
        flat: dict = {}
        _flatten("", metrics, flat)
        row.update(flat)
        res = rec.get("resolved", {})
        for k in ("jobs", "rt_jobs", "batch_jobs", "jobs_in_table"):
            row[k] = res.get(k)
        for k, v in (rec.get("timings") or {}).items():
            row[k] = v
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=CONFIG_COLUMNS)
    frame = pd.DataFrame(rows)
    # markings in the paper's order (random, short, aps); traces as they come (manifest order)
    rank = {m: i for i, m in enumerate(MARKING_MODES)}
    frame["_marking_rank"] = frame["marking"].map(lambda m: rank.get(m.split("[")[0], len(rank)))
    frame["_trace_rank"] = frame["trace"].map(_trace_ranks(Path(out_dir))).fillna(len(frame))
    frame = frame.sort_values(["_trace_rank", "trace", "_marking_rank", "rt_percent", "scheme", "seed"], kind="stable")
    return frame.drop(columns=["_marking_rank", "_trace_rank"]).reset_index(drop=True)


def _trace_ranks(out_dir: Path) -> dict[str, int]:
    """Trace label -> its position in the grid (manifest order), so tables list traces as written."""
    p = out_dir / store.MANIFEST
    if not p.exists():
        return {}
    labels = dict.fromkeys(r["label"] for r in store.read_json(p).get("runs", []))
    return {label: i for i, label in enumerate(labels)}


def normalize_job_table(table):
    """The study's view of a ``rtsched.metrics.job_table``: the columns of ``JOB_COLUMNS``, the
    seed-002 bounded slowdown (τ of the run) named ``bsld``."""
    missing = sorted(set(JOB_COLUMNS) - set(table.columns))
    if missing:
        raise KeyError(f"job table lacks column(s) {missing}; it has {list(table.columns)}")
    return table[list(JOB_COLUMNS)].rename(columns=JOB_COLUMNS)


def load_job_tables(out_dir: str | os.PathLike, where: dict | None = None):
    """Per-job rows of every finished run (normalised by ``normalize_job_table``), with the run's
    key, trace, rt_percent, marking, scheme and seed attached.  ``where`` filters runs on config
    columns (a value or a list of values each)."""
    import pandas as pd

    out = Path(out_dir)
    frames = []
    records = list(iter_records(out))
    for rec, row in zip(records, _config_rows(records)):
        if where and not all((row[k] in v) if isinstance(v, (list, tuple, set)) else row[k] == v
                             for k, v in where.items()):
            continue
        jt = normalize_job_table(pd.read_parquet(store.table_path(out, rec["key"])))
        for k in ("key", "trace", "rt_percent", "marking", "scheme", "seed"):
            jt[k] = row[k]
        frames.append(jt)
    if not frames:
        return pd.DataFrame(columns=["kind", "bsld", "turnaround", "category", "key", "trace", "rt_percent",
                                     "marking", "scheme", "seed"])
    return pd.concat(frames, ignore_index=True)


def load_errors(out_dir: str | os.PathLike) -> list[dict]:
    """The error records of a results folder (runs that failed and were not re-run since)."""
    return [store.read_json(p) for p in sorted(store.runs_dir(Path(out_dir)).glob("*.error.json"))]
