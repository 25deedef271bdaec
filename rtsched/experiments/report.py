"""Tables of a results folder.

* A seed-002 study (every run a scheme, varying only trace, RTJ %, marking, scheme, seed): mean
  RTJ/BJ slowdown per scheme and RTJ %, per category, and the headline comparison of seed 002
  §7.2 (10 % RTJs, baseline -> JIT-CKPT) beside the paper's numbers.
* Any other grid (policies, backfilling, checkpoint models, machines, option sets, ...): the
  generic table, mean / median / p95 of the slowdown (SD), the bounded slowdown (BSLD) and the
  wait per combination of the axes the runs differ in, for all jobs (and RTJs / BJs when there
  are RTJs).

Aggregation: each run's statistic (over the jobs of its results window) first, then the mean over
the runs (seeds) of a configuration; ``*_std`` is the standard deviation over the seeds.  Per-job
values come from ``rtsched.metrics`` (summary and job table); nothing here recomputes a slowdown.
"""
from __future__ import annotations

import itertools
import os
from pathlib import Path

from rtsched.experiments import store
from rtsched.experiments.checks import folder_checks, warning_lines
from rtsched.experiments.grid import MARKING_MODES
from rtsched.experiments.results import (AXIS_COLUMNS, CATEGORIES, _trace_ranks, broken_runs,
                                         load_job_tables, load_results, summary_frame)

# Seed 002 §7.2 (Mira wk1, 10 % RTJs, JIT-CKPT vs the baseline), mean slowdown: (baseline, JIT-CKPT).
PAPER_HEADLINE = {
    ("rt", "all"): (1.94, 1.25),
    ("batch", "all"): (2.26, 2.51),
    ("batch", "narrow-short"): (1.68, 1.94),
    ("rt", "wide-long"): (3.0, 1.2),
    ("rt", "wide-short"): (24.40, 5.06),
}

SCHEME_LABELS = {
    "baseline": "Baseline",
    "highpq": "High-priority queue",
    "no-ckpt": "NO-CKPT",
    "sys-ckpt": "SYS-CKPT",
    "app-ckpt-5": "APP-CKPT-5% (plain)",
    "app-ckpt-10": "APP-CKPT-10% (plain)",
    "jit-ckpt": "JIT-CKPT (plain)",
    "wcjs-app-5": "APP-CKPT-5%",
    "wcjs-app-10": "APP-CKPT-10%",
    "wcjs-jit": "JIT-CKPT",
    "wcjs-sys": "SYS-CKPT (WCJS)",
    "wcjs-no": "NO-CKPT (WCJS)",
}

DEFAULT_HEADLINE = {"rt_percent": 10, "baseline": "baseline", "heuristic": "wcjs-jit", "marking": "random"}
GROUP = ["trace", "marking", "rt_percent", "scheme"]


def report_settings(out_dir: str | os.PathLike) -> dict:
    """The ``[report]`` table of the grid that produced a results folder (may be empty)."""
    p = Path(out_dir) / store.MANIFEST
    if p.exists():
        manifest = store.read_json(p)
        settings = dict(manifest.get("report") or {})
        settings.setdefault("scheme_order", list(dict.fromkeys(r["config"]["scheme"] for r in manifest["runs"]
                                                               if "scheme" in r["config"])))
        return settings
    return {}


def _scheme_order(frame, settings: dict) -> list[str]:
    present = list(dict.fromkeys(frame["scheme"]))
    manifest_order = settings.get("scheme_order") or []
    order = [s for s in manifest_order if s in present]
    return order + [s for s in present if s not in order]


def slowdown_table(out_dir: str | os.PathLike, results=None):
    """Mean RTJ and BJ slowdown per (trace, marking, RTJ %, scheme), over seeds.

    Columns: runs, rt_mean_bsld, rt_mean_bsld_std, batch_mean_bsld, batch_mean_bsld_std, rt_mean_sd,
    batch_mean_sd, rt_mean_turnaround, batch_mean_turnaround (s), and utilization when reported.
    """
    import pandas as pd

    res = load_results(out_dir) if results is None else results
    if res.empty:
        return pd.DataFrame()
    metrics = [c for c in ("rt_mean_bsld", "batch_mean_bsld", "all_mean_bsld", "rt_mean_sd", "batch_mean_sd",
                           "rt_mean_turnaround", "batch_mean_turnaround", "utilization",
                           "productive_utilization") if c in res.columns]
    g = res.groupby(GROUP, sort=False)
    table = g[metrics].mean()
    for m in ("rt_mean_bsld", "batch_mean_bsld"):
        if m in res.columns:
            table[f"{m}_std"] = g[m].std(ddof=1)
    table.insert(0, "runs", g.size())
    cols = ["runs"] + [c for c in ("rt_mean_bsld", "rt_mean_bsld_std", "batch_mean_bsld", "batch_mean_bsld_std")
                       if c in table.columns]
    cols += [c for c in table.columns if c not in cols]
    return table[cols].reset_index()


def category_table(out_dir: str | os.PathLike, jobs=None):
    """Mean bounded slowdown, slowdown and turnaround per (trace, marking, RTJ %, scheme, kind,
    category), from the runs' job tables: the mean over each run's jobs, then over seeds."""
    import pandas as pd

    jt = load_job_tables(out_dir) if jobs is None else jobs
    if jt.empty:
        return pd.DataFrame()
    values = [c for c in ("bsld", "sd", "turnaround") if c in jt.columns]
    per_run = jt.groupby(["key"] + GROUP + ["kind", "category"], sort=False)[values].agg(["mean", "size"])
    flat = pd.DataFrame({f"mean_{v}": per_run[(v, "mean")] for v in values})
    flat["jobs"] = per_run[(values[0], "size")]
    flat = flat.reset_index()
    out = flat.groupby(GROUP + ["kind", "category"], sort=False).agg(
        runs=("key", "nunique"), jobs_per_run=("jobs", "mean"), **{f"mean_{v}": (f"mean_{v}", "mean") for v in values})
    out = out.reset_index()
    out["category"] = pd.Categorical(out["category"], categories=list(CATEGORIES), ordered=True)
    # traces in grid order, markings in the paper's order (random, short, aps)
    ranks = _trace_ranks(Path(out_dir))
    out["_t"] = out["trace"].map(ranks).fillna(len(ranks))
    marking_rank = {m: i for i, m in enumerate(MARKING_MODES)}
    out["_m"] = out["marking"].map(lambda m: marking_rank.get(m.split("[")[0], len(marking_rank)))
    out = out.sort_values(["_t", "trace", "_m", "rt_percent", "kind", "category"], kind="stable")
    return out.drop(columns=["_t", "_m"]).reset_index(drop=True)


def category_matrix(categories, value: str = "mean_bsld", scheme_order: list[str] | None = None):
    """A category table (``category_table``) as a matrix: rows (trace, marking, RTJ %, scheme) in
    ``scheme_order`` (default: as they appear), columns (kind, category), cells ``value``."""
    import pandas as pd

    if categories.empty:
        return pd.DataFrame()
    order = scheme_order or list(dict.fromkeys(categories["scheme"]))
    frame = categories.copy()
    frame["scheme"] = pd.Categorical(frame["scheme"], categories=order, ordered=True)
    frame["category"] = frame["category"].astype(str)
    matrix = frame.pivot_table(index=["trace", "marking", "rt_percent", "scheme"], columns=["kind", "category"],
                               values=value, observed=True)
    cols = [(k, c) for k in ("rt", "batch") for c in CATEGORIES if (k, c) in matrix.columns]
    return matrix[cols]


def headline_table(out_dir: str | os.PathLike, results=None, categories=None, *, rt_percent=None, baseline=None,
                   heuristic=None, marking=None, trace=None):
    """Baseline -> heuristic mean slowdown at one RTJ % (default: 10 %, baseline -> wcjs-jit,
    random marking; the grid's ``[report.headline]`` overrides), beside seed 002's numbers.

    Rows: (kind, category) with category ``all`` first; columns: measured baseline/heuristic mean
    bounded slowdown and the change in %, the same for the plain slowdown (SD), the paper's numbers
    where it gives them, and the number of runs (seeds) behind each measured value.
    """
    import pandas as pd

    settings = {**DEFAULT_HEADLINE, **(report_settings(out_dir).get("headline") or {})}
    rt_percent = settings["rt_percent"] if rt_percent is None else rt_percent
    baseline = baseline or settings["baseline"]
    heuristic = heuristic or settings["heuristic"]
    res = load_results(out_dir) if results is None else results
    if res.empty:
        return pd.DataFrame()
    marking = marking or settings.get("marking")
    if marking not in set(res["marking"]):
        marking = res["marking"].iloc[0]
    trace = trace or res["trace"].iloc[0]
    sel = res[(res["rt_percent"] == rt_percent) & (res["marking"] == marking) & (res["trace"] == trace)]
    a, b = sel[sel["scheme"] == baseline], sel[sel["scheme"] == heuristic]
    if a.empty or b.empty:
        return pd.DataFrame()
    rows = []

    def add(kind, cat, base_bsld, heur_bsld, base_sd, heur_sd, n_a, n_b):
        paper = PAPER_HEADLINE.get((kind, cat))
        rows.append({
            "kind": "RTJ" if kind == "rt" else "BJ", "category": cat,
            "baseline_bsld": base_bsld, "heuristic_bsld": heur_bsld, "change_bsld_%": _pct(base_bsld, heur_bsld),
            "baseline_sd": base_sd, "heuristic_sd": heur_sd, "change_sd_%": _pct(base_sd, heur_sd),
            "paper_baseline": paper[0] if paper else None, "paper_heuristic": paper[1] if paper else None,
            "paper_change_%": _pct(*paper) if paper else None, "runs": f"{n_a}/{n_b}",
        })

    for kind in ("rt", "batch"):
        add(kind, "all", _mean(a, f"{kind}_mean_bsld"), _mean(b, f"{kind}_mean_bsld"), _mean(a, f"{kind}_mean_sd"),
            _mean(b, f"{kind}_mean_sd"), len(a), len(b))
    cats = category_table(out_dir, jobs=load_job_tables(out_dir, where={"key": list(a["key"]) + list(b["key"])})) \
        if categories is None else categories
    if not cats.empty:
        c = cats[(cats["rt_percent"] == rt_percent) & (cats["marking"] == marking) & (cats["trace"] == trace)]
        for kind in ("rt", "batch"):
            for cat in CATEGORIES:
                ca = c[(c["scheme"] == baseline) & (c["kind"] == kind) & (c["category"] == cat)]
                cb = c[(c["scheme"] == heuristic) & (c["kind"] == kind) & (c["category"] == cat)]
                if ca.empty and cb.empty:
                    continue
                add(kind, cat, _first(ca, "mean_bsld"), _first(cb, "mean_bsld"), _first(ca, "mean_sd"),
                    _first(cb, "mean_sd"), _first(ca, "runs"), _first(cb, "runs"))
    out = pd.DataFrame(rows)
    out.attrs.update({"rt_percent": rt_percent, "baseline": baseline, "heuristic": heuristic, "marking": marking,
                      "trace": trace})
    return out


def _mean(frame, col):
    return float(frame[col].mean()) if col in frame.columns and len(frame) else None


def _first(frame, col):
    if col not in frame.columns or frame.empty:
        return None
    v = frame[col].iloc[0]
    return v.item() if hasattr(v, "item") else v


def _pct(a, b):
    if a is None or b is None or a != a or b != b or a == 0:
        return None
    return round(100.0 * (b - a) / a, 1)


def is_seed002(results) -> bool:
    """Whether a folder's runs (``load_results``) form a seed-002 study: every run a scheme, and
    nothing but trace, RTJ %, marking, scheme (with its options) and seed telling them apart."""
    if results.empty:
        return True
    if results["scheme"].isna().any():
        return False
    if any(results[c].notna().any() for c in ("policy", "backfill", "checkpoint")):
        return False
    if results["tau"].nunique() > 1 or results.groupby("trace")["machine"].nunique(dropna=False).max() > 1:
        return False
    return True


GENERIC_METRICS = ("sd", "bsld", "wait")
GENERIC_STATS = ("mean", "median", "p95")


def generic_table(out_dir: str | os.PathLike, summary=None, *, group: str = "all"):
    """Mean / median / p95 of SD, BSLD and wait per combination of the axes the runs differ in
    (trace always; machine, scheme, policy, backfill, checkpoint, policy options, RTJ %, marking,
    τ when they vary), for one job group (``all``, ``rt``, ``batch``) over each run's whole
    results window.  Each run's statistic first, then the mean over its seeds (``runs``)."""
    import pandas as pd

    frame = summary_frame(out_dir) if summary is None else summary
    if frame.empty:
        return pd.DataFrame()
    sel = frame[(frame["category"] == "all") & (frame["job_group"] == group)].copy()
    rank = _manifest_rank(Path(out_dir))
    sel["_rank"] = sel["key"].map(rank).fillna(len(rank))
    sel = sel.sort_values(["_rank", "key"], kind="stable")
    axes = ["trace"] + [c for c in AXIS_COLUMNS[1:] if sel[c].nunique(dropna=False) > 1]
    if "scheme" not in axes and "policy" not in axes:
        axes.insert(1, "scheme" if sel["scheme"].notna().all() else "policy")
    stats = [f"{s}_{m}" for m in GENERIC_METRICS for s in GENERIC_STATS]
    g = sel.groupby(axes, sort=False, dropna=False)
    table = g[stats].mean()
    table.insert(0, "runs", g.size())
    table.insert(1, "jobs_per_run", g["n"].mean())
    table = table.reset_index()
    table.attrs["axes"] = axes
    table.attrs["tau"] = sorted(set(int(t) for t in sel["tau"]))
    return table


def _manifest_rank(out_dir: Path) -> dict[str, int]:
    """Run key -> its position in the grid (manifest order), so tables follow the grid's order."""
    p = out_dir / store.MANIFEST
    if not p.exists():
        return {}
    try:
        return {r["key"]: i for i, r in enumerate(store.read_json(p).get("runs", []))}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def report_tables(out_dir: str | os.PathLike, *, generic: bool | None = None) -> dict:
    """All report tables as DataFrames.

    A seed-002 study (``is_seed002``; ``generic=True`` forces the generic form): ``slowdown``,
    ``categories``, ``headline``; otherwise ``summary`` (``generic_table`` of every job group, a
    ``group`` column first).  Always ``errors`` (failed runs no later run has fixed), ``broken``
    (runs whose result files are broken; the next ``run_grid`` runs them again) and ``checks``
    (``rtsched.experiments.checks.folder_checks``: identical seeds, changed inputs, fixed failures).
    """
    import pandas as pd

    res = load_results(out_dir)
    checks = folder_checks(out_dir)
    errors = pd.DataFrame([{"key": e.get("key"), "label": e.get("label"), "error": e.get("error")}
                           for e in checks["failed"]], columns=["key", "label", "error"])
    broken = pd.DataFrame(broken_runs(out_dir), columns=["key", "label", "problem"])
    if generic or (generic is None and not is_seed002(res)):
        summary = summary_frame(out_dir)
        groups = ["all"] + (["rt", "batch"] if len(res) and (res["rt_jobs"] > 0).any() else [])
        parts = []
        for group in groups:
            t = generic_table(out_dir, summary, group=group)
            if not t.empty:
                t.insert(0, "group", group)
                parts.append(t)
        table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        if parts:
            table.attrs.update(parts[0].attrs)
        return {"summary": table, "errors": errors, "broken": broken, "checks": checks}
    jobs = load_job_tables(out_dir)
    cats = category_table(out_dir, jobs=jobs)
    heads = []
    for trace in dict.fromkeys(res["trace"]) if len(res) else ():
        head = headline_table(out_dir, res, cats, trace=trace)
        if not head.empty:
            attrs = dict(head.attrs)
            head.insert(0, "trace", trace)
            head.attrs.update(attrs)
            heads.append(head)
    headline = pd.concat(heads, ignore_index=True) if heads else pd.DataFrame()
    if heads:
        headline.attrs.update(heads[0].attrs)
        headline.attrs["per_trace"] = {h["trace"].iloc[0]: dict(h.attrs) for h in heads}
    return {"slowdown": slowdown_table(out_dir, res), "categories": cats, "headline": headline, "errors": errors,
            "broken": broken, "checks": checks}


def generic_report(out_dir: str | os.PathLike, tables: dict) -> str:
    """The text of the generic report (``report_tables``'s ``summary``)."""
    table = tables["summary"]
    lines: list[str] = []
    if table.empty:
        return f"{out_dir}: no finished runs\n" + "\n".join(_problem_lines(tables)) + "\n"
    runs = int(table[table["group"] == "all"]["runs"].sum())
    taus = table.attrs.get("tau") or []
    tau_text = ", ".join(str(t) for t in taus)
    lines.append(f"# Results: {out_dir}  ({runs} finished runs)")
    lines.append(f"Per run: mean, median and 95th percentile over the jobs of its results window; then the mean "
                 f"over the runs (seeds) of each row.  SD = turnaround / runtime; BSLD = bounded slowdown "
                 f"(τ = {tau_text} s); wait in s.")
    axes = list(table.attrs.get("axes") or [c for c in AXIS_COLUMNS if c in table.columns])
    names = {"all": "All jobs", "rt": "Real-time jobs (RTJs)", "batch": "Batch jobs (BJs)"}
    for group, part in table.groupby("group", sort=False):
        lines.append("")
        lines.append(f"## {names.get(group, group)}")
        header = axes + ["runs", "jobs/run"] + [f"{m.upper()} {s}" for m in GENERIC_METRICS for s in GENERIC_STATS]
        body = []
        for _, r in part.iterrows():
            row = [_cell(r[a]) for a in axes] + [str(int(r["runs"])), _fmt(r["jobs_per_run"], 0)]
            row += [_fmt(r[f"{s}_{m}"], 0 if m == "wait" else 2) for m in GENERIC_METRICS for s in GENERIC_STATS]
            body.append(row)
        lines.extend(_text_table(header, body, left=len(axes)))
    lines.extend(_problem_lines(tables))
    return "\n".join(lines) + "\n"


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v) if str(v) else "–"


def _problem_lines(tables: dict) -> list[str]:
    """The warnings (``checks.warning_lines``), the runs with a broken result, then the failed runs:
    a heading and a line per run."""
    lines = warning_lines(tables["checks"]) if "checks" in tables else []
    for name, column, heading in (
            ("broken", "problem", "run(s) with a broken result (run the grid again to recompute them)"),
            ("errors", "error", "failed run(s) (runs/KEY.error.json)")):
        frame = tables.get(name)
        if frame is None or frame.empty:
            continue
        lines += ["", f"## {len(frame)} {heading}"]
        for _, r in frame.iterrows():
            why = str(r[column]).splitlines()[0] if r[column] else ""
            lines.append(f"  {r['key']}  {r['label']}: {why}")
    return lines


def _fmt(v, digits=2):
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def report(out_dir: str | os.PathLike, tables: dict | None = None) -> str:
    """A plain-text report of a results folder (what ``rtsched experiment report`` prints)."""
    tables = tables or report_tables(out_dir)
    if "summary" in tables:
        return generic_report(out_dir, tables)
    settings = report_settings(out_dir)
    lines: list[str] = []
    sd = tables["slowdown"]
    if sd.empty:
        return f"{out_dir}: no finished runs\n" + "\n".join(_problem_lines(tables)) + "\n"
    tau = None
    res = load_results(out_dir)
    if "tau" in res.columns and len(res):
        tau = int(res["tau"].iloc[0])
    lines.append(f"# Results: {out_dir}  ({len(res)} finished runs; bounded slowdown τ = {tau} s; "
                 "mean over each run's jobs in the window, then over seeds)")
    for ((trace, marking), part), (metric, what) in itertools.product(
            sd.groupby(["trace", "marking"], sort=False),
            (("bsld", f"bounded slowdown (τ = {tau} s)"), ("sd", "slowdown (SD)"))):
        lines.append("")
        lines.append(f"## Mean {what}, RTJ / BJ — trace {trace}, marking {marking}")
        order = _scheme_order(part, settings)
        pcts = sorted(set(part["rt_percent"]))
        header = ["scheme"] + [f"{p:g}% RTJ" for p in pcts] + ["seeds"]
        body = []
        for s in order:
            row = [s]
            n = set()
            for p in pcts:
                r = part[(part["scheme"] == s) & (part["rt_percent"] == p)]
                if r.empty:
                    row.append("–")
                    continue
                r = r.iloc[0]
                row.append(f"{_fmt(r.get(f'rt_mean_{metric}'))} / {_fmt(r.get(f'batch_mean_{metric}'))}")
                n.add(int(r["runs"]))
            row.append(",".join(str(x) for x in sorted(n)))
            body.append(row)
        lines.extend(_text_table(header, body))
    cats = tables["categories"]
    if not cats.empty:
        for (trace, marking), part in cats.groupby(["trace", "marking"], sort=False):
            lines.append("")
            lines.append(f"## Mean bounded slowdown per category, RTJ / BJ — trace {trace}, marking {marking}")
            order = _scheme_order(part, settings)
            header = ["RTJ %", "scheme"] + list(CATEGORIES)
            body = []
            for p in sorted(set(part["rt_percent"])):
                for s in order:
                    row = [f"{p:g}", s]
                    for cat in CATEGORIES:
                        vals = []
                        for kind in ("rt", "batch"):
                            r = part[(part["rt_percent"] == p) & (part["scheme"] == s) & (part["kind"] == kind)
                                     & (part["category"] == cat)]
                            vals.append(_fmt(float(r["mean_bsld"].iloc[0])) if len(r) else "–")
                        row.append(" / ".join(vals))
                    body.append(row)
            lines.extend(_text_table(header, body))
    heads = tables["headline"]
    if heads.empty:
        lines.append("")
        lines.append("## Headline: not available (needs the baseline and the heuristic at the headline RTJ %)")
    for trace, head in (heads.groupby("trace", sort=False) if not heads.empty else ()):
        lines.append("")
        at = heads.attrs.get("per_trace", {}).get(trace, heads.attrs)
        lines.append(f"## Headline — {at.get('rt_percent')} % RTJs, {at.get('baseline')} -> {at.get('heuristic')}, "
                     f"trace {at.get('trace')}, marking {at.get('marking')} (paper: seed 002 §7.2, Mira wk1)")
        header = ["jobs", "category", "BSLD base", "BSLD heur", "Δ%", "SD base", "SD heur", "Δ%", "paper base",
                  "paper heur", "paper Δ%", "runs"]
        body = [[r["kind"], r["category"], _fmt(r["baseline_bsld"]), _fmt(r["heuristic_bsld"]), _fmt(r["change_bsld_%"], 1),
                 _fmt(r["baseline_sd"]), _fmt(r["heuristic_sd"]), _fmt(r["change_sd_%"], 1), _fmt(r["paper_baseline"]),
                 _fmt(r["paper_heuristic"]), _fmt(r["paper_change_%"], 1), r["runs"]] for _, r in head.iterrows()]
        lines.extend(_text_table(header, body))
    lines.extend(_problem_lines(tables))
    return "\n".join(lines) + "\n"


def _text_table(header: list[str], body: list[list[str]], left: int = 2) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    fmt = "  ".join(f"{{:<{w}}}" if i < left else f"{{:>{w}}}" for i, w in enumerate(widths))
    out = [fmt.format(*header), fmt.format(*["-" * w for w in widths])]
    out.extend(fmt.format(*[str(x) for x in row]) for row in body)
    return out
