"""Seed-002 Figs. 3-7 for a results folder: one PNG per (trace, marking, category).

For a grid that is not a seed-002 study (policies, backfilling, ...), each box group is one
combination of the axes the runs differ in (``variant_labels``), e.g. ``fcfs backfill=easy``.
"""
from __future__ import annotations

import os
from pathlib import Path

from rtsched.experiments.report import SCHEME_LABELS, _manifest_rank, _scheme_order, is_seed002, report_settings
from rtsched.experiments.results import CATEGORIES, load_job_tables, load_results, variant_labels
from rtsched.plots import save_figure, study_boxplots

FIGURE_CATEGORIES = ("overall",) + CATEGORIES


def plot(out_dir: str | os.PathLike, fig_dir: str | os.PathLike | None = None, *, schemes: list[str] | None = None,
         markings: list[str] | None = None, dpi: int = 120) -> list[Path]:
    """Write boxplot figures like seed 002 Figs. 3-7 for every trace and marking mode of a results
    folder: ``FIG_DIR/{trace}_{marking}_{category}.png`` for category in overall, narrow-short,
    narrow-long, wide-short, wide-long (bounded slowdown and turnaround; RTJs left, BJs right;
    whiskers 5 %/95 %, boxes 25/50/75, a dot for the mean).

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
        for cat in FIGURE_CATEGORIES:
            sel = jobs if cat == "overall" else jobs[jobs["category"] == cat]
            title = (f"{trace} · RTJ marking {marking} · {cat} · {seeds} seed(s), jobs pooled "
                     f"(whiskers 5/95 %, box 25/50/75 %, dot = mean)")
            fig = study_boxplots(sel, schemes=order, rt_percents=pcts, labels=labels, title=title, tau=tau)
            written.append(save_figure(fig, fig_dir / f"{trace}_{marking}_{cat}.png", dpi=dpi))
    return written
