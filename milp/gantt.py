"""Gantt chart of a schedule on the 512-node blocks (seed 002 Fig. 1 style) and the Table 2 / 3 plots.

Each segment is drawn as a rectangle: time (s) on x, the blocks of its partition on y.  RTJs are
red, BJs blue; checkpoint writes and restart reads are hatched.
"""
from __future__ import annotations

from typing import Any, Sequence

from rtsched.schedule import CKPT, RESTART, Schedule

from milp.instance import Instance

RT_COLOR = "#d62728"
BJ_COLOR = "#1f77b4"


def plot_gantt(instance: Instance, schedule: Schedule, ax=None, title: str | None = None,
               time_unit: float = 60.0, legend: bool = True):
    """Draw ``schedule`` (segments on the instance's aligned partitions); returns the axes.

    ``time_unit``: seconds per x unit (default minutes); ``legend``: draw the key (right of the
    axes, so it never hides a job)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.35 * instance.blocks + 1.5))
    kind = {j.id: j.kind for j in instance.jobs}
    parts = instance.partitions
    t_max = 0.0
    for seg in schedule:
        p = parts[seg.partition]
        x0, x1 = seg.start / time_unit, seg.end / time_unit
        t_max = max(t_max, x1)
        color = RT_COLOR if kind[seg.job_id] == "rt" else BJ_COLOR
        overhead = seg.kind in (CKPT, RESTART)
        ax.add_patch(Rectangle((x0, p.first), x1 - x0, p.k, facecolor=color, alpha=0.35 if overhead else 0.8,
                               edgecolor="black", linewidth=0.6, hatch="//" if overhead else None))
        if not overhead:
            ax.text((x0 + x1) / 2, p.first + p.k / 2, f"J{seg.job_id}", ha="center", va="center", fontsize=8,
                    color="white", fontweight="bold")
    for j in instance.jobs:
        ax.axvline(j.submit / time_unit, color=RT_COLOR if j.kind == "rt" else BJ_COLOR, linestyle=":",
                   linewidth=0.6, alpha=0.6)
    ax.set_xlim(0, t_max * 1.02 if t_max else 1)
    ax.set_ylim(0, instance.blocks)
    ax.set_yticks(range(instance.blocks))
    ax.set_yticklabels([f"B{b:02d}" for b in range(instance.blocks)], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (min)" if time_unit == 60 else f"time (×{time_unit:g} s)")
    ax.set_ylabel("512-node block")
    if legend:
        ax.legend(handles=_gantt_key(), loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                  frameon=False)
    if title:
        ax.set_title(title)
    return ax


def _gantt_key() -> list:
    """The legend handles of a schedule plot: job kinds, overheads and the submit-time marks."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return [Patch(color=RT_COLOR, label="RTJ"), Patch(color=BJ_COLOR, label="BJ"),
            Patch(facecolor="white", edgecolor="black", hatch="//", label="checkpoint / restart"),
            Line2D([], [], color=RT_COLOR, linestyle=":", linewidth=0.8, label="RTJ submit"),
            Line2D([], [], color=BJ_COLOR, linestyle=":", linewidth=0.8, label="BJ submit")]


def plot_schedules(instance: Instance, schedules: dict[str, Schedule], title: str | None = None,
                   time_unit: float = 60.0):
    """One instance's schedules stacked (one panel per entry of ``schedules``, {panel title:
    schedule}) on a shared time axis, with one key below the last panel; returns the Figure."""
    import matplotlib.pyplot as plt

    n = len(schedules)
    fig, axes = plt.subplots(n, 1, figsize=(10, (0.16 * instance.blocks + 1.0) * n + 0.6), sharex=True,
                             squeeze=False, layout="constrained")
    for ax, (name, sched) in zip(axes[:, 0], schedules.items()):
        plot_gantt(instance, sched, ax=ax, title=name, time_unit=time_unit, legend=False)
        if ax is not axes[-1, 0]:
            ax.set_xlabel("")
    fig.legend(handles=_gantt_key(), loc="outside lower center", ncol=5, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title)
    return fig


def plot_gap_boxes(runs: Sequence[Any], policies: Sequence[str], title: str | None = None):
    """The distribution over instances of each policy's BJ and RTJ slowdown gap to the optimum (%,
    ``PolicyRun.bj_gap`` / ``rtj_gap`` of ``milp.compare.compare``): one box per policy (whiskers at
    the extremes, line = median, triangle = mean, every instance as a dot when there are few);
    returns the Figure."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    n_inst = len({r.instance for r in runs})
    for ax, col, label in ((axes[0], "bj_gap", "BJ"), (axes[1], "rtj_gap", "RTJ")):
        data = [[getattr(r, col) * 100 for r in runs if r.policy == p and getattr(r, col) is not None]
                for p in policies]
        ax.boxplot(data, tick_labels=list(policies), showmeans=True, whis=(0, 100),
                   medianprops={"color": "black"},
                   meanprops={"marker": "^", "markerfacecolor": "#2ca02c", "markeredgecolor": "#2ca02c"})
        if n_inst <= 20:
            for i, vals in enumerate(data, start=1):
                ax.plot([i] * len(vals), vals, "o", color="#7f7f7f", markersize=3, alpha=0.7)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(f"{label} mean slowdown vs the optimum")
        ax.set_ylabel(f"{label} slowdown gap to the optimum (%)")
        ax.tick_params(axis="x", rotation=30)
        ax.grid(axis="y", alpha=0.3)
    axes[1].legend(handles=[Line2D([], [], color="black", label="median"),
                            Line2D([], [], marker="^", color="#2ca02c", linestyle="", label="mean"),
                            Line2D([], [], marker="o", color="#7f7f7f", linestyle="", label="one instance")],
                   fontsize=8, loc="upper right")
    fig.suptitle(title or f"slowdown gap to the proven optimum, {n_inst} instances (0 % = optimal)")
    return fig


def plot_table2(rows: Sequence[dict[str, Any]], ax=None):
    """Solve time per Table 2 row, ours beside the paper's CPLEX time (log scale)."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.8))
    labels = [f"{r['bj']}/{r['rt']} × {r['blocks']}" for r in rows]
    x = np.arange(len(rows))
    ours = [r["seconds"] for r in rows]
    paper = [r["paper_cplex_seconds"] or np.nan for r in rows]
    ax.bar(x - 0.2, ours, 0.4, label="ours (CBC)", color=BJ_COLOR)
    ax.bar(x + 0.2, paper, 0.4, label="paper (CPLEX, 32 cores)", color="#7f7f7f")
    for xi, r in zip(x, rows):
        if r["status"] != "optimal":  # stopped at the time limit: the bar is a lower bound
            ax.text(xi - 0.2, r["seconds"] * 1.08, "time limit\n(not proven)", ha="center", va="bottom",
                    fontsize=7)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    top = max([v for v in ours + paper if v == v] or [1.0])
    ax.set_ylim(top=top * 3)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_xlabel("#BJ/#RTJ × 512-node blocks (T = 5 periods)")
    ax.set_ylabel("solve time (s, log)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("Table 2: partition-sequence MILP solve time, CBC (ours) vs the paper's CPLEX")
    return ax


__all__ = ["plot_gap_boxes", "plot_gantt", "plot_schedules", "plot_table2"]
