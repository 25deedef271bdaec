"""Seed-002 Figs. 3-7 for a results folder: one PNG per (trace, marking, category).

For a grid that is not a seed-002 study (policies, backfilling, ...), each box group is one
combination of the axes the runs differ in (``variant_labels``), e.g. ``fcfs backfill=easy``.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rtsched.experiments.report import (SCHEME_LABELS, _manifest_rank, _scheme_order, is_seed002, report_settings,
                                       slowdown_table)
from rtsched.experiments.results import CATEGORIES, load_job_tables, load_results, summary_frame, variant_labels
from rtsched.experiments.store import disk_full_names
from rtsched.plots import PALETTE, new_figure, save_figure, study_boxplots

FIGURE_CATEGORIES = ("overall",) + CATEGORIES
POLICY_LABELS = {"fcfs": "FCFS", "sjf": "SJF", "f1": "F1", "wfp3": "WFP3", "unicep": "UNICEP", "saf": "SAF",
                 "smallest": "smallest"}
_METRIC_NAMES = {"sd": "slowdown", "bsld": "bounded slowdown", "bsld_rl": "bounded slowdown (τ = 10 s)",
                 "bsld_seed002": "bounded slowdown (τ = 10 min)", "wait": "wait", "turnaround": "turnaround",
                 "response": "response time"}
_STATS = {"mean": "mean", "median": "median", "p5": "5th pct.", "p25": "25th pct.", "p75": "75th pct.",
          "p95": "95th pct."}


def metric_label(metric: str) -> tuple[str, float]:
    """An axis label with units for a summary statistic column, and the divisor that converts its
    values to those units: times (wait, turnaround) in hours, slowdowns and ratios as they are."""
    stat, _, name = metric.partition("_")
    if stat not in _STATS or not name:
        return metric.replace("_", " "), 1.0
    if name in ("wait", "turnaround", "response"):
        return f"{_STATS[stat]} {_METRIC_NAMES[name]} (h)", 3600.0
    return f"{_STATS[stat]} {_METRIC_NAMES.get(name, name.replace('_', ' '))}", 1.0


def plot(out_dir: str | os.PathLike, fig_dir: str | os.PathLike | None = None, *, schemes: list[str] | None = None,
         markings: list[str] | None = None, dpi: int = 120) -> list[Path]:
    """Write boxplot figures like seed 002 Figs. 3-7 for every trace and marking mode of a results
    folder: ``FIG_DIR/{trace}_{marking}_{category}.png`` for category in overall, narrow-short,
    narrow-long, wide-short, wide-long (bounded slowdown and turnaround; RTJs left, BJs right;
    whiskers 5 %/95 %, boxes 25/50/75, a dot for the mean).  A category without jobs gets no
    figure, a study without RTJs no real-time panels.

    Args:
        fig_dir: output folder (default ``OUT_DIR/figures``).
        schemes: the schemes to show, in order (default: the grid's ``[report].figure_schemes``,
            else every scheme in the results); for a generic grid, variant labels.
        markings: the marking modes to draw (default: all present).
    Returns:
        the PNG paths written.
    """
    out = Path(out_dir)
    fig_dir = Path(fig_dir) if fig_dir else out / "figures"
    settings = report_settings(out)
    res = load_results(out)
    if res.empty:
        return []
    tau = int(res["tau"].iloc[0])
    labels = {**SCHEME_LABELS, **(settings.get("labels") or {})}
    wanted = schemes or settings.get("figure_schemes")
    variants = None
    if not is_seed002(res):  # box groups: the combinations of the axes the runs differ in
        variants = variant_labels(res)
        rank = _manifest_rank(out)
        res = res.assign(scheme=res["key"].map(variants), _rank=res["key"].map(rank).fillna(len(rank)))
        res = res.sort_values(["_rank", "key"], kind="stable").drop(columns="_rank")
        wanted = schemes
    written: list[Path] = []
    for (trace, marking), part in res.groupby(["trace", "marking"], sort=False):
        if markings and marking not in markings:
            continue
        present = _scheme_order(part, settings) if variants is None else list(dict.fromkeys(part["scheme"]))
        order = [s for s in wanted if s in present] if wanted else present
        if not order:
            continue
        if variants is None:
            jobs = load_job_tables(out, where={"trace": trace, "marking": marking, "scheme": order})
        else:
            jobs = load_job_tables(out, where={"key": list(part.loc[part["scheme"].isin(order), "key"])})
            jobs["scheme"] = jobs["key"].map(variants)
        pcts = sorted(set(part["rt_percent"]))
        seeds = part["seed"].nunique()
        # the job groups to draw: no real-time panels for a study without RTJs
        kinds = [k for k in ("rt", "batch") if (jobs["kind"] == k).any()] or ["rt", "batch"]
        for cat in FIGURE_CATEGORIES:
            sel = jobs if cat == "overall" else jobs[jobs["category"] == cat]
            if sel.empty:  # no job of this category in these runs: no blank figure
                continue
            marking_text = f"RTJ marking {marking} · " if "rt" in kinds else ""
            title = (f"{trace} · {marking_text}{cat} · {seeds} seed(s), jobs pooled "
                     f"(whiskers 5/95 %, box 25/50/75 %, dot = mean)")
            fig = study_boxplots(sel, schemes=order, rt_percents=pcts, labels=labels, title=title, tau=tau,
                                 kinds=kinds)
            target = fig_dir / f"{trace}_{marking}_{cat}.png"
            with disk_full_names(target):
                written.append(save_figure(fig, target, dpi=dpi))
    return written


def summary_bars(results, *, metric: str = "mean_bsld_rl", group: str = "all", x: str = "policy",
                 hue: str = "backfill", facet: str = "trace", log: bool = True, title: str = ""):
    """Grouped bars of one summary statistic of a grid: one panel per ``facet`` value, ``x`` on the
    axis, one bar per ``hue`` value, the mean over seeds (error bars: min and max over seeds).

    ``results`` is a results folder or its ``summary_frame`` (``rtsched.experiments.results``);
    ``metric`` any of its statistic columns (e.g. ``mean_bsld_rl``, ``mean_wait``, ``p95_sd``).
    Returns a matplotlib Figure (no pyplot)."""
    frame = summary_frame(results) if isinstance(results, (str, os.PathLike)) else results
    frame = frame.rename(columns={"group": "job_group"})  # a frame read from a summary of before 2026-11-27
    sel = frame[(frame["job_group"] == group) & (frame["category"] == "all")]
    if isinstance(results, (str, os.PathLike)):  # the grid's order, not the key order
        rank = _manifest_rank(Path(results))
        sel = sel.assign(_rank=sel["key"].map(rank).fillna(len(rank))).sort_values(["_rank", "key"], kind="stable")
    if sel.empty:
        raise ValueError(f"no runs with job group {group!r} in these results")
    if metric not in sel.columns:
        raise ValueError(f"unknown statistic {metric!r}; the summary has {[c for c in sel.columns if '_' in c][:12]}...")
    panels = list(dict.fromkeys(sel[facet].astype(str)))
    xs = list(dict.fromkeys(sel[x].astype(str)))
    hues = list(dict.fromkeys(sel[hue].astype(str)))
    seeds = int(sel["seed"].nunique()) if "seed" in sel.columns else 1
    ylabel, scale = metric_label(metric)
    fig = new_figure((max(6.0, 1.2 * len(xs) * len(panels)), 4.2))
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True, squeeze=False)[0])
    width = 0.8 / max(len(hues), 1)
    spread = False  # whether any bar's seeds differ
    for ax, panel in zip(axes, panels):
        part = sel[sel[facet].astype(str) == panel]
        for hi, h in enumerate(hues):
            vals, lo, hi_err = [], [], []
            for xv in xs:
                v = part[(part[x].astype(str) == xv) & (part[hue].astype(str) == h)][metric].astype(float) / scale
                m = float(v.mean()) if len(v) else float("nan")
                vals.append(m)
                # clipped at 0: the mean of identical values can round above their max (0.1 x 3)
                lo.append(max(m - float(v.min()), 0.0) if len(v) else 0.0)
                hi_err.append(max(float(v.max()) - m, 0.0) if len(v) else 0.0)
                spread = spread or (len(v) > 1 and float(v.max()) > float(v.min()))
            pos = np.arange(len(xs)) + (hi - (len(hues) - 1) / 2) * width
            # error bars only where there is a spread to show (several seeds)
            ax.bar(pos, vals, width, yerr=[lo, hi_err] if seeds > 1 else None, label=f"{hue}: {h}",
                   color=PALETTE[hi % len(PALETTE)], capsize=2, error_kw={"linewidth": 0.8})
        ax.set_xticks(np.arange(len(xs)))
        ax.set_xticklabels([POLICY_LABELS.get(v, v) for v in xs] if x == "policy" else xs)
        ax.set_title(f"{facet} {panel}")
        ax.set_xlabel(x)
        ax.grid(axis="y", alpha=0.3)
        if log:
            ax.set_yscale("log")
    axes[0].set_ylabel(ylabel)
    axes[-1].legend(fontsize=8)
    if seeds <= 1:
        seeds_text = "1 seed"
    elif spread:
        seeds_text = f"mean over {seeds} seeds, bars min–max"
    else:
        seeds_text = f"{seeds} seeds, identical results (no spread)"
    fig.suptitle(f"{title + ' · ' if title else ''}{group} jobs · {seeds_text}")
    return fig


def scheme_bars(out_dir: str | os.PathLike, *, trace: str | None = None, marking: str | None = None,
                schemes: list[str] | None = None):
    """Seed 002 §7's per-scheme comparison as bars, one figure for one (trace, marking) of a study's
    results folder (default: the first): (a) RTJ and (b) BJ mean bounded slowdown (τ = 10 min),
    (c) system and productive utilization; one group per RTJ percentage, one bar per scheme; with
    several seeds the bar is the mean over seeds and the error bar ± one standard deviation.
    Returns a matplotlib Figure (no pyplot)."""
    out = Path(out_dir)
    settings = report_settings(out)
    table = slowdown_table(out)
    if table.empty:
        raise ValueError(f"{out}: no seed-002 study results to plot")
    trace = trace if trace is not None else str(table["trace"].iloc[0])
    marking = marking if marking is not None else str(table["marking"].iloc[0])
    part = table[(table["trace"].astype(str) == trace) & (table["marking"].astype(str) == marking)]
    if part.empty:
        raise ValueError(f"{out}: no results for trace {trace!r} and marking {marking!r}")
    order = [s for s in (schemes or _scheme_order(part, settings)) if s in set(part["scheme"])]
    labels = {**SCHEME_LABELS, **(settings.get("labels") or {})}
    pcts = sorted(set(part["rt_percent"]))
    seeds = int(part["runs"].max())
    fig = new_figure((13, 4.2))
    axes = fig.subplots(1, 3)
    width = 0.8 / max(len(order), 1)
    panels = (("rt_mean_bsld", "(a) real-time jobs", "mean bounded slowdown (τ = 10 min)"),
              ("batch_mean_bsld", "(b) batch jobs", "mean bounded slowdown (τ = 10 min)"),
              ("utilization", "(c) utilization", "share of the machine's node-hours"))
    for ax, (col, name, ylabel) in zip(axes, panels):
        for si, scheme in enumerate(order):
            rows = part[part["scheme"] == scheme].set_index("rt_percent")
            pos = np.arange(len(pcts)) + (si - (len(order) - 1) / 2) * width
            vals = [float(rows.loc[p, col]) if p in rows.index else np.nan for p in pcts]
            err = None
            if seeds > 1 and f"{col}_std" in rows.columns:
                err = [float(rows.loc[p, f"{col}_std"]) if p in rows.index else 0.0 for p in pcts]
            color = PALETTE[si % len(PALETTE)]
            ax.bar(pos, vals, width, yerr=err, color=color, capsize=2, error_kw={"linewidth": 0.8},
                   label=labels.get(scheme, scheme))
            if col == "utilization" and "productive_utilization" in rows.columns:
                prod = [float(rows.loc[p, "productive_utilization"]) if p in rows.index else np.nan for p in pcts]
                ax.bar(pos, prod, width, facecolor="none", edgecolor="black", hatch="//", linewidth=0.5)
        ax.set_xticks(np.arange(len(pcts)))
        ax.set_xticklabels([f"{p:g}%" for p in pcts])
        ax.set_xlabel("% RTJs")
        ax.set_ylabel(ylabel)
        ax.set_title(name)
        ax.grid(axis="y", alpha=0.3)
    axes[2].set_ylim(0, 1.0)
    from matplotlib.patches import Patch

    handles, _ = axes[0].get_legend_handles_labels()
    handles.append(Patch(facecolor="none", edgecolor="black", hatch="//", label="productive (overheads removed)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    spread = f"mean over {seeds} seeds, error bars ± 1 std" if seeds > 1 else "1 seed"
    fig.suptitle(f"{trace} · RTJ marking {marking} · per scheme · {spread}")
    return fig
