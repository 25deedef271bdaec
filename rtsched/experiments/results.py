"""Reading a results folder back: one row per run, the per-job tables, and the long-format
summary (``summary.parquet``: one row per run x job group x category, with provenance).

A record that cannot be read, or whose job table is broken, is left out of every table and listed
by ``broken_runs`` (``report`` names those runs; the next ``run_grid`` runs them again).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from rtsched.experiments import store
from rtsched.experiments.grid import MARKING_MODES, GridRun, options_text

CATEGORIES = ("narrow-short", "narrow-long", "wide-short", "wide-long")
KINDS = ("rt", "batch")
CONFIG_COLUMNS = ["key", "trace", "trace_path", "format", "machine", "window_start", "window_days", "rt_percent",
                  "marking", "scheme", "policy", "backfill", "checkpoint", "policy_options", "seed", "tau"]
# The run options a folder's runs may differ in (summary.parquet columns; generic report axes).
AXIS_COLUMNS = ["trace", "machine", "scheme", "policy", "backfill", "checkpoint", "policy_options", "rt_percent",
                "marking", "tau"]
SUMMARY_GROUPS = ("all", "rt", "batch")

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


def run_options(config: dict) -> dict:
    """The options of a run's policy or scheme (``backfill`` included)."""
    return dict(config.get("scheme_options" if "scheme" in config else "policy_options") or {})


def _variant_labels(records: list[dict], axis: str) -> dict[str, str]:
    """Display label per record key for ``axis`` (``scheme`` or ``marking``): the plain name, unless
    one folder holds the same name with different ``{axis}_options`` (runs of two grids written
    into one folder); then those with options get ``name[k=v,...]`` so tables never pool them."""
    variants: dict[str, set[str]] = {}
    for rec in records:
        c = rec["config"]
        if c.get(axis) is None:
            continue
        variants.setdefault(c[axis], set()).add(options_text(c.get(f"{axis}_options") or {}))
    labels = {}
    for rec in records:
        c = rec["config"]
        if c.get(axis) is None:
            labels[rec["key"]] = None
            continue
        opts = options_text(c.get(f"{axis}_options") or {})
        labels[rec["key"]] = f"{c[axis]}[{opts}]" if opts and len(variants[c[axis]]) > 1 else c[axis]
    return labels


def _config_rows(records: list[dict]) -> list[dict]:
    scheme = _variant_labels(records, "scheme")
    marking = _variant_labels(records, "marking")
    rows = []
    for rec in records:
        c = rec["config"]
        w = c.get("window") or {}
        options = run_options(c)
        backfill = options.pop("backfill", None)
        rows.append({
            "key": rec["key"], "trace": rec.get("label"), "trace_path": c["trace"]["path"],
            "format": c["trace"].get("format"), "machine": _machine_of(rec),
            "window_start": w.get("start", w.get("offset")), "window_days": w.get("days"),
            "rt_percent": c["rt_percent"], "marking": marking[rec["key"]], "scheme": scheme[rec["key"]],
            "policy": c.get("policy"), "backfill": backfill, "checkpoint": c.get("checkpoint"),
            "policy_options": options_text(options),
            "seed": c["seed"], "tau": c["tau"],
        })
    return rows


def _machine_of(rec: dict) -> str | None:
    """The machine as configured, else (the pipeline's rule) as the run resolved it."""
    return rec["config"].get("machine") or (rec.get("provenance") or {}).get("machine_spec")


def read_record(out_dir: Path, key: str) -> tuple[dict | None, str | None]:
    """(record, None) of a finished run, or (None, why not): ``store.result_problem``'s rule,
    reading the record once."""
    path = store.summary_path(out_dir, key)
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "missing"
    except (OSError, UnicodeDecodeError, ValueError):
        return None, "its record (.json) is not valid JSON"
    if not isinstance(rec, dict) or rec.get("key") != key:
        return None, "its record names another run"
    table = rec.get("table") or {}
    problem = store.parquet_problem(store.table_path(out_dir, key), table.get("bytes"), table.get("sha256"))
    return (rec, None) if problem is None else (None, problem)


def _record_paths(out_dir: Path) -> list[Path]:
    folder = store.runs_dir(Path(out_dir))
    if not folder.is_dir():
        raise FileNotFoundError(f"{out_dir}: not a results folder (no {store.RUNS}/ inside)")
    return [p for p in sorted(folder.glob("*.json")) if not p.name.endswith(".error.json")]


def iter_records(out_dir: str | os.PathLike) -> Iterable[dict]:
    """The records of the finished runs of a results folder (sorted by key); broken ones are
    skipped (``broken_runs`` lists them)."""
    out = Path(out_dir)
    for p in _record_paths(out):
        rec, _ = read_record(out, p.name.removesuffix(".json"))
        if rec is not None:
            yield rec


def broken_runs(out_dir: str | os.PathLike) -> list[dict]:
    """The runs of a folder whose record or job table is broken: ``{"key", "label", "problem"}``
    (label from the manifest when the folder has one)."""
    out = Path(out_dir)
    labels = {}
    manifest = out / store.MANIFEST
    if manifest.exists():
        try:
            for r in store.read_json(manifest).get("runs", []):
                labels[r["key"]] = GridRun(r["key"], r["config"], r["label"], r.get("detail", "")).describe()
        except (OSError, ValueError, KeyError, TypeError):
            pass
    out_list = []
    for p in _record_paths(out):
        key = p.name.removesuffix(".json")
        _, problem = read_record(out, key)
        if problem is not None:
            out_list.append({"key": key, "label": labels.get(key, ""), "problem": problem})
    return out_list


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


def variant_labels(results) -> dict[str, str]:
    """Run key -> a short label of the run's values on the axes the folder's runs differ in
    (machine, scheme/policy, backfill, checkpoint, options, τ; trace, marking and RTJ % are drawn
    apart already), e.g. ``fcfs backfill=easy``."""
    axes = [c for c in ("machine", "scheme", "policy", "backfill", "checkpoint", "policy_options", "tau")
            if results[c].nunique(dropna=False) > 1]
    if "scheme" not in axes and "policy" not in axes:
        axes.insert(0, "scheme" if results["scheme"].notna().all() else "policy")
    labels = {}
    for _, r in results.iterrows():
        parts = []
        for a in axes:
            v = r[a]
            if v is None or v != v or v == "":
                continue
            parts.append(str(v) if a in ("scheme", "policy") else f"{a}={v}")
        labels[r["key"]] = " ".join(parts) or r["key"]
    return labels


def summary_rows(rec: dict) -> list[dict]:
    """The long-format rows of one run record: one per job group (``all``, ``rt``, ``batch``) and
    category (``all`` for the whole results window, then seed 002's four), each with the run's
    configuration, its provenance (key = config hash, trace SHA-256, rtsched version) and the
    group's statistics (``n``, ``{mean,median,p5,p25,p75,p95}_{sd,bsld,wait,turnaround,...}``)."""
    from heuristics.registry import SCHEMES
    from rtsched.metrics import TAU_RL

    c = rec["config"]
    prov = rec.get("provenance") or {}
    resolved = rec.get("resolved") or {}
    metrics = rec.get("metrics") or {}
    options = run_options(c)
    backfill = options.pop("backfill", None)
    window = c.get("window")
    scheme = c.get("scheme")
    base = {
        "key": rec["key"],
        "trace": rec.get("label"),
        "trace_path": c["trace"]["path"],
        "trace_sha256": prov.get("trace_sha256") or resolved.get("trace_sha256"),
        "trace_format": c["trace"].get("format") or prov.get("trace_format"),
        "first_n": c["trace"].get("first_n"),
        "results_window": _window_text(window),
        "machine": _machine_of(rec),
        "scheme": scheme,
        "policy": c.get("policy") or (SCHEMES[scheme][0] if scheme in SCHEMES else None),
        "backfill": backfill,
        "checkpoint": prov.get("checkpoint") or resolved.get("checkpoint"),
        "policy_options": options_text(options),
        "rt_percent": float(c["rt_percent"]),
        "marking": c["marking"],
        "seed": int(c["seed"]),
        "tau": int(c["tau"]),
        "tau_rl": int(metrics.get("tau_rl") or TAU_RL),
        "rtsched_version": prov.get("rtsched_version") or (rec.get("env") or {}).get("rtsched"),
        "jobs": resolved.get("jobs"),
        "rt_jobs": resolved.get("rt_jobs"),
        "utilization": metrics.get("utilization"),
        "productive_utilization": metrics.get("productive_utilization"),
    }
    rows = []
    sources = [("all", metrics.get("summary") or {})]
    sources += [(cat, (metrics.get("categories") or {}).get(cat) or {}) for cat in CATEGORIES]
    for category, groups in sources:
        for group in SUMMARY_GROUPS:
            stats = groups.get(group) or {}
            row = {**base, "category": category, "job_group": group}
            row.update({k: (float(v) if isinstance(v, (int, float)) and k != "n" else v) for k, v in stats.items()
                        if isinstance(v, (int, float)) or v is None})
            rows.append(row)
    return rows


def _window_text(window: dict | None) -> str | None:
    from rtsched.window import WindowSpec

    return WindowSpec.from_dict(window).text() if window else None


# summary.parquet's columns and types (fixed, so that folders and versions can be queried together).
# No SQL reserved words (``group``, ``window`` before 2026-11-27: ``SUMMARY_RENAMES`` reads old files).
SUMMARY_TEXT = ("key", "trace", "job_group", "category", "trace_path", "trace_sha256", "trace_format",
                "results_window", "machine", "scheme", "policy", "backfill", "checkpoint", "policy_options", "marking",
                "rtsched_version")
SUMMARY_INTS = ("n", "first_n", "seed", "tau", "tau_rl", "jobs", "rt_jobs")
SUMMARY_FLOATS = ("rt_percent", "utilization", "productive_utilization")
SUMMARY_RENAMES = {"group": "job_group", "window": "results_window"}  # old column -> its name now
SUMMARY_VERSION = 2  # 1: with ``group``/``window`` and without ``tau_rl`` or units
# The unit of each column (summary.parquet's metadata ``rtsched.units``; statistics columns by metric).
_FIXED_UNITS = {"n": "jobs", "first_n": "jobs", "jobs": "jobs", "rt_jobs": "jobs", "rt_percent": "%",
                "tau": "s (τ of bsld and bsld_seed002)", "tau_rl": "s (τ of bsld_rl)",
                "utilization": "fraction of the machine's node-seconds", "productive_utilization":
                "fraction of the machine's node-seconds", "seed": "-"}
_METRIC_UNITS = {"sd": "ratio", "bsld": "ratio (τ = tau)", "bsld_seed002": "ratio (τ = tau)",
                 "bsld_rl": "ratio (τ = tau_rl)", "wait": "s", "first_wait": "s", "turnaround": "s"}


def summary_units(columns) -> dict[str, str]:
    """Column -> unit of summary.parquet's numeric columns."""
    units = {}
    for c in columns:
        if c in _FIXED_UNITS:
            units[c] = _FIXED_UNITS[c]
            continue
        stat, _, metric = c.partition("_")
        if metric in _METRIC_UNITS:
            units[c] = _METRIC_UNITS[metric]
    return units


def _summary_columns() -> list[str]:
    from rtsched.metrics import STATS, SUMMARY_METRICS

    metrics = ("sd", "bsld") + tuple(SUMMARY_METRICS[1:])  # bsld: the run's chosen form (seed002 unless said)
    lead = ["key", "trace", "job_group", "category", "n", "trace_path", "trace_sha256", "trace_format", "first_n",
            "results_window", "machine", "scheme", "policy", "backfill", "checkpoint", "policy_options", "rt_percent",
            "marking", "seed", "tau", "tau_rl", "rtsched_version", "jobs", "rt_jobs", "utilization",
            "productive_utilization"]
    return lead + [f"{s}_{m}" for m in metrics for s in STATS]


def read_summary(path: str | os.PathLike):
    """A ``summary.parquet`` (of any version) as a DataFrame with today's column names
    (``SUMMARY_RENAMES``: ``group`` -> ``job_group``, ``window`` -> ``results_window``)."""
    import pandas as pd

    frame = pd.read_parquet(path)
    return frame.rename(columns={old: new for old, new in SUMMARY_RENAMES.items() if old in frame.columns})


def summary_frame(out_dir: str | os.PathLike):
    """``summary.parquet``'s content, built from the finished runs' records: one row per run x
    group x category, sorted by key, category, group, with fixed columns and types (the same
    bytes whichever backend or worker count produced the runs: no timings, hosts or process ids)."""
    import pandas as pd

    columns = _summary_columns()
    rows = [row for rec in iter_records(out_dir) for row in summary_rows(rec)]
    frame = pd.DataFrame(rows)
    for c in columns:
        if c not in frame.columns:
            frame[c] = None
    frame = frame[columns]
    if len(frame):
        order = {g: i for i, g in enumerate(SUMMARY_GROUPS)}
        cats = {c: i for i, c in enumerate(("all",) + CATEGORIES)}
        frame = frame.assign(_g=frame["job_group"].map(order), _c=frame["category"].map(cats))
        frame = frame.sort_values(["key", "_c", "_g"], kind="stable").drop(columns=["_g", "_c"])
    frame = frame.reset_index(drop=True)
    types = {c: "string" for c in SUMMARY_TEXT} | {c: "Int64" for c in SUMMARY_INTS}
    types |= {c: "float64" for c in columns if c not in types}
    return frame.astype(types)


def write_summary(out_dir: str | os.PathLike) -> Path | None:
    """(Re)write ``OUT_DIR/summary.parquet`` from the finished runs (atomically); returns its path,
    or None when the folder holds no finished run.  Call it holding ``store.FolderLock``."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    frame = summary_frame(out)
    if frame.empty:
        return None
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = {**(table.schema.metadata or {}), b"rtsched.summary_version": str(SUMMARY_VERSION).encode(),
            b"rtsched.units": json.dumps(summary_units(frame.columns), ensure_ascii=False, sort_keys=True).encode()}
    table = table.replace_schema_metadata(meta)
    return store.atomic_write(out / store.SUMMARY, lambda tmp: pq.write_table(table, tmp))


def summary_is_stale(out_dir: str | os.PathLike) -> bool:
    """Whether a run record is newer than ``summary.parquet`` (or it is missing)."""
    out = Path(out_dir)
    records = _record_paths(out)  # not a results folder: said here, before anyone locks (creates) it
    try:
        written = (out / store.SUMMARY).stat().st_mtime_ns
    except FileNotFoundError:
        return True
    if any(p.stat().st_mtime_ns > written for p in records):
        return True
    return _summary_version(out / store.SUMMARY) < SUMMARY_VERSION  # an older layout: rewritten


def _summary_version(path: Path) -> int:
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
    except Exception:  # noqa: BLE001 - unreadable: rewrite it
        return 0
    return int(meta.get(b"rtsched.summary_version", b"1"))


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
