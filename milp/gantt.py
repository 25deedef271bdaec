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
               time_unit: float = 60.0):
    """Draw ``schedule`` (segments on the instance's aligned partitions); returns the axes.

    ``time_unit``: seconds per x unit (default minutes)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

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
    ax.legend(handles=[Patch(color=RT_COLOR, label="RTJ"), Patch(color=BJ_COLOR, label="BJ"),
                       Patch(facecolor="white", edgecolor="black", hatch="//", label="checkpoint / restart")],
              loc="upper right", fontsize=8)
    if title:
        ax.set_title(title)
    return ax


def plot_table2(rows: Sequence[dict[str, Any]], ax=None):
    """Solve time per Table 2 row, ours beside the paper's CPLEX time (log scale)."""
    import matplotlib.pyplot as plt
    import numpy as np

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.5))
    labels = [f"{r['bj']}/{r['rt']} × {r['blocks']}" for r in rows]
    x = np.arange(len(rows))
    ours = [r["seconds"] for r in rows]
    paper = [r["paper_cplex_seconds"] or np.nan for r in rows]
    ax.bar(x - 0.2, ours, 0.4, label="ours (CBC)", color=BJ_COLOR)
    ax.bar(x + 0.2, paper, 0.4, label="paper (CPLEX, 32 cores)", color="#7f7f7f")
    for xi, r in zip(x, rows):
        if r["status"] != "optimal":
            ax.text(xi - 0.2, r["seconds"], "limit", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_xlabel("#BJ/#RTJ × blocks (T = 5)")
    ax.set_ylabel("solve time (s)")
    ax.legend(fontsize=8)
    return ax


__all__ = ["plot_gantt", "plot_table2"]
