"""Figures in the style of seed 002 Figs. 3-7: boxplots of bounded slowdown and turnaround.

One figure per job category (overall, narrow-short, narrow-long, wide-short, wide-long): top row
bounded slowdown, bottom row turnaround time; left column RTJs, right column BJs.  On each x axis,
one group per RTJ percentage; within a group, one box per scheme, colour-coded with a legend on
top.  Whiskers at the 5th and 95th percentiles, boxes at 25/50/75, a dot for the mean, no fliers
(as in the paper).  Figures are written atomically (temporary file + ``os.replace``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from rtsched.files import atomic_write

PALETTE = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974",
           "#64b5cd"]


def box_stats(values, whis: tuple[float, float] = (5.0, 95.0), label: str = "") -> dict | None:
    """Matplotlib ``bxp`` statistics: whiskers at the ``whis`` percentiles, quartile box, median,
    mean; None for an empty sample (NaNs dropped)."""
    import numpy as np

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    lo, q1, med, q3, hi = np.percentile(v, [whis[0], 25, 50, 75, whis[1]])
    return {"label": label, "whislo": lo, "q1": q1, "med": med, "q3": q3, "whishi": hi, "mean": float(v.mean()),
            "fliers": []}


def study_boxplots(jobs, *, schemes: Sequence[str], rt_percents: Sequence[float] | None = None,
                   labels: dict[str, str] | None = None, title: str = "", tau: int = 600,
                   turnaround_unit: str = "h", whis: tuple[float, float] = (5.0, 95.0), log_slowdown: bool = False):
    """Build one seed-002-style figure from a per-job frame.

    Args:
        jobs: rows with columns ``kind`` (rt/batch), ``rt_percent``, ``scheme``, ``bsld``,
            ``turnaround`` (s): all jobs of the category shown, pooled over seeds.
        schemes: the schemes, in legend order.
        rt_percents: the x groups (default: those present).
        labels: legend label per scheme.
        tau: the bounded-slowdown bound τ in s, named in the axis label.
        turnaround_unit: ``s``, ``min`` or ``h``.
    Returns:
        the matplotlib Figure.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    labels = labels or {}
    pcts = sorted(set(jobs["rt_percent"])) if rt_percents is None else list(rt_percents)
    scale = {"s": 1.0, "min": 60.0, "h": 3600.0}[turnaround_unit]
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5), constrained_layout=True)
    n = len(schemes)
    width = 0.8
    tau_text = f"{tau // 60} min" if tau % 60 == 0 and tau >= 60 else f"{tau} s"
    rows = (("bsld", f"Bounded slowdown (τ = {tau_text})", 1.0), ("turnaround", f"Turnaround time ({turnaround_unit})",
                                                                 scale))
    groups = {k: g for k, g in jobs.groupby(["kind", "rt_percent", "scheme"], sort=False)} if len(jobs) else {}
    for r, (col, ylabel, div) in enumerate(rows):
        for c, (kind, kind_label) in enumerate((("rt", "Real-time jobs"), ("batch", "Batch jobs"))):
            ax = axes[r][c]
            stats, positions, colors = [], [], []
            for gi, p in enumerate(pcts):
                for si, s in enumerate(schemes):
                    g = groups.get((kind, p, s))
                    if g is None or col not in g:
                        continue
                    st = box_stats(g[col].to_numpy(dtype=float) / div, whis)
                    if st is None:
                        continue
                    stats.append(st)
                    positions.append(gi * (n + 1) + si)
                    colors.append(PALETTE[si % len(PALETTE)])
            if stats:
                art = ax.bxp(stats, positions=positions, widths=width, patch_artist=True, showmeans=True,
                             showfliers=False, meanprops={"marker": "o", "markerfacecolor": "black",
                                                          "markeredgecolor": "black", "markersize": 3.5},
                             medianprops={"color": "black", "linewidth": 1.0})
                for box, color in zip(art["boxes"], colors):
                    box.set_facecolor(color)
                    box.set_alpha(0.85)
            else:
                ax.text(0.5, 0.5, "no jobs", ha="center", va="center", transform=ax.transAxes, color="gray")
            ax.set_xticks([gi * (n + 1) + (n - 1) / 2 for gi in range(len(pcts))])
            ax.set_xticklabels([f"{p:g}%" for p in pcts])
            ax.set_xlim(-1, len(pcts) * (n + 1) - 1)
            ax.set_xlabel("% RTJs")
            ax.set_ylabel(ylabel)
            ax.set_title(f"({'abcd'[r * 2 + c]}) {kind_label}")
            ax.grid(axis="y", alpha=0.3)
            if col == "bsld" and log_slowdown:
                ax.set_yscale("log")
    handles = [Patch(facecolor=PALETTE[i % len(PALETTE)], label=labels.get(s, s)) for i, s in enumerate(schemes)]
    if title:
        fig.suptitle(title)
    # legend on top, under the title (constrained layout makes room for both)
    fig.get_layout_engine().set(rect=(0, 0, 1, 0.93))
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.965), ncol=min(len(handles), 7),
               frameon=False)
    return fig


def save_figure(fig, path: str | os.PathLike, dpi: int = 120) -> Path:
    """Write a figure as PNG atomically (temporary file in the same folder, then ``os.replace``)."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # constrained layout already fits the labels: no second ("tight") draw
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi))
    finally:
        plt.close(fig)
    return path
