"""Figures for any run, and the seed-002 study figures.  Every function returns a matplotlib
``Figure`` built without pyplot, so it never switches the user's backend or keeps figures alive;
``save_figure`` writes one atomically.

* ``gantt(schedule, machine, workload)`` — the schedule over time on the machine's resources:
  512-node blocks (aligned Mira), node cards (a Cobalt partition file) or processors (a flat
  cluster; ids assigned by ``rtsched.resources``).  RTJs red, BJs blue, checkpoint writes and
  restart reads hatched.
* ``utilization_over_time(result)`` — nodes in use / machine nodes, and queue length, over time.
* ``slowdown_distributions(jobs)`` — per-category boxes of slowdown and bounded slowdown for
  RTJs and BJs (a ``job_table``).
* ``learning_curve(history)`` — an RL training history (``progress.json``): score per epoch.
* ``window_sweep(rows)`` — seed 004 Fig. 5: average wait and queue length against the tail size M_t,
  one panel per window size M, references as horizontal lines.
* ``queue_over_time(series)`` — seed 004's queue length over time, one line per policy.
* ``study_boxplots`` — seed 002 Figs. 3-7: one figure per job category, top row bounded slowdown,
  bottom row turnaround; left RTJs, right BJs; one group per RTJ percentage, one box per scheme;
  whiskers at the 5th and 95th percentiles, a dot for the mean, no fliers (as in the paper).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from rtsched.errors import OptionError
from rtsched.files import atomic_write

LOG_SPAN = 30.0  # study_boxplots: whisker ratio (about 1.5 decades) from which a slowdown panel is log

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
                   turnaround_unit: str = "h", whis: tuple[float, float] = (5.0, 95.0),
                   log_slowdown: bool | None = None, kinds: Sequence[str] = ("rt", "batch")):
    """Build one seed-002-style figure from a per-job frame.

    Args:
        jobs: rows with columns ``kind`` (rt/batch), ``rt_percent``, ``scheme``, ``bsld``,
            ``turnaround`` (s): all jobs of the category shown, pooled over seeds.
        schemes: the schemes, in legend order.
        rt_percents: the x groups (default: those present).
        labels: legend label per scheme.
        tau: the bounded-slowdown bound τ in s, named in the axis label.
        turnaround_unit: ``s``, ``min`` or ``h``.
        log_slowdown: a log scale for the slowdown panels; ``None`` (default): per panel, when its
            whiskers span a factor of ``LOG_SPAN`` (30, about 1.5 decades) or more (wide-short
            jobs), else linear as in the paper.
        kinds: the job groups drawn, one column each (``rt``, ``batch``): a study without RTJs
            passes ``("batch",)`` and gets no empty real-time panels.
    Returns:
        the matplotlib Figure.
    """
    from matplotlib.patches import Patch

    labels = labels or {}
    pcts = sorted(set(jobs["rt_percent"])) if rt_percents is None else list(rt_percents)
    scale = {"s": 1.0, "min": 60.0, "h": 3600.0}[turnaround_unit]
    kind_labels = {"rt": "Real-time jobs", "batch": "Batch jobs"}
    columns = [(k, kind_labels[k]) for k in kinds]
    fig_width = 12.0 if len(columns) > 1 else 8.0
    fig = new_figure((fig_width, 7.5))
    axes = fig.subplots(2, len(columns), squeeze=False)
    n = len(schemes)
    width = 0.8
    tau_text = f"{tau // 60} min" if tau % 60 == 0 and tau >= 60 else f"{tau} s"
    rows = (("bsld", f"Bounded slowdown (τ = {tau_text})", 1.0), ("turnaround", f"Turnaround time ({turnaround_unit})",
                                                                 scale))
    groups = {k: g for k, g in jobs.groupby(["kind", "rt_percent", "scheme"], sort=False)} if len(jobs) else {}
    for r, (col, ylabel, div) in enumerate(rows):
        for c, (kind, kind_label) in enumerate(columns):
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
            ax.set_title(f"({'abcd'[r * len(columns) + c]}) {kind_label}")
            ax.grid(axis="y", alpha=0.3)
            if col == "bsld" and stats and (log_slowdown or (log_slowdown is None and max(
                    st["whishi"] for st in stats) >= LOG_SPAN * max(min(st["whislo"] for st in stats), 1e-9))):
                ax.set_yscale("log")
    handles = [Patch(facecolor=PALETTE[i % len(PALETTE)], label=labels.get(s, s)) for i, s in enumerate(schemes)]
    if title:
        fig.suptitle(title, fontsize="medium")
    _legend_below(fig, handles, fig_width)
    return fig


def _legend_below(fig, handles: list, fig_width: float) -> None:
    """The legend below the panels ("outside": constrained layout makes room for it), in as many
    rows as its entries need to fit the figure's width (an entry: about 0.075 in a character at
    the legend's 10 pt, plus 0.7 in for the patch and the gap), so that every entry shows."""
    entry_in = 0.7 + 0.075 * max((len(h.get_label()) for h in handles), default=1)
    ncol = max(1, min(len(handles), int(fig_width // entry_in)))
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False)


def save_figure(fig, path: str | os.PathLike, dpi: int = 120) -> Path:
    """Write a figure as PNG atomically (temporary file in the same folder, then ``os.replace``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # constrained layout already fits the labels: no second ("tight") draw
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi))
    return path


def new_figure(size: tuple[float, float]):
    """A constrained-layout Figure not registered with pyplot (no backend switch, no global state)."""
    from matplotlib.figure import Figure

    return Figure(figsize=size, layout="constrained")


RT_COLOR = "#d62728"
BJ_COLOR = "#1f77b4"
TIME_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def time_unit_seconds(time_unit) -> float:
    """Seconds per ``time_unit``; an unknown unit is an ``OptionError`` naming the parameter and
    the units it takes (never a KeyError from inside the plot)."""
    if not isinstance(time_unit, str) or time_unit not in TIME_UNITS:
        raise OptionError(f"time_unit: unknown unit {time_unit!r}; choose from {', '.join(TIME_UNITS)}")
    return TIME_UNITS[time_unit]


def gantt(schedule, machine, workload=None, *, time_unit: str = "h", title: str = "", label_jobs: int = 40,
          size: tuple[float, float] | None = None):
    """The schedule as rectangles: time on x (``time_unit``), the machine's resource units on y.

    ``workload`` (the jobs as run) colours RTJs and BJs apart; without it every job is a BJ.
    Job ids are written inside the rectangles when there are at most ``label_jobs`` jobs.
    """
    from matplotlib.patches import Patch, Rectangle

    from rtsched.resources import segment_ranges
    from rtsched.schedule import CKPT, RESTART

    rmap = segment_ranges(schedule, machine)
    kinds = {j.id: j.kind for j in workload.jobs} if workload is not None else {}
    div = time_unit_seconds(time_unit)
    segs = schedule.segments
    fig = new_figure(size or (11, min(2.0 + 0.12 * min(rmap.units, 96), 9.0)))
    ax = fig.add_subplot()
    t0 = min((sg.start for sg in segs), default=0)
    t1 = max((sg.end for sg in segs), default=1)
    n_jobs = len({sg.job_id for sg in segs})
    for sg, ranges in zip(segs, rmap.ranges):
        color = RT_COLOR if kinds.get(sg.job_id) == "rt" else BJ_COLOR
        overhead = sg.kind in (CKPT, RESTART)
        x0, w = (sg.start - t0) / div, (sg.end - sg.start) / div
        for lo, hi in ranges:
            ax.add_patch(Rectangle((x0, lo), w, hi - lo, facecolor=color, alpha=0.35 if overhead else 0.8,
                                   edgecolor="black", linewidth=0.3, hatch="//" if overhead else None))
        if not overhead and n_jobs <= label_jobs and ranges:
            lo, hi = ranges[0]
            ax.text(x0 + w / 2, (lo + hi) / 2, str(sg.job_id), ha="center", va="center", fontsize=7, color="white")
    ax.set_xlim(0, (t1 - t0) / div)
    ax.set_ylim(rmap.units, 0)
    ax.set_xlabel(f"time since the first start ({time_unit})")
    ax.set_ylabel(f"{rmap.unit_name}s ({rmap.unit_nodes} node{'s' if rmap.unit_nodes > 1 else ''} each)")
    handles = [Patch(color=BJ_COLOR, label="BJ"), Patch(facecolor="white", edgecolor="black", hatch="//",
                                                        label="checkpoint / restart")]
    if any(k == "rt" for k in kinds.values()):
        handles.insert(0, Patch(color=RT_COLOR, label="RTJ"))
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)  # beside, never over a job
    ax.set_title(title or f"{getattr(machine, 'name', '')}: {n_jobs} jobs")
    return fig


def utilization_over_time(result, *, time_unit: str = "h", title: str = ""):
    """Two panels over time: the share of the machine's nodes held by jobs (all segments, overheads
    included) and the number of waiting jobs (from submit to first start, and between the segments
    of a preempted job)."""
    from rtsched.series import step_series  # NumPy on first use: plotting is never on a start-up path

    segs = result.schedule.segments
    div = time_unit_seconds(time_unit)
    times, deltas = [], []
    for sg in segs:
        times += [sg.start, sg.end]
        deltas += [sg.nodes, -sg.nodes]
    qt, qd = [], []
    by_job: dict[int, list] = {}
    for sg in segs:
        by_job.setdefault(sg.job_id, []).append(sg)
    for o in result.outcomes:
        if o.first_start < 0:
            continue
        qt += [o.job.submit, o.first_start]
        qd += [1, -1]
        parts = sorted(by_job.get(o.job.id, []), key=lambda x: x.start)
        for a, b in zip(parts, parts[1:]):
            if b.start > a.end:  # requeued between two stints
                qt += [a.end, b.start]
                qd += [1, -1]
    fig = new_figure((11, 5))
    ax_u, ax_q = fig.subplots(2, 1, sharex=True)
    t0 = min(times + qt, default=0)
    if times:
        t, v = step_series(times, deltas)
        ax_u.step((t - t0) / div, v / result.machine_nodes, where="post", color=BJ_COLOR, linewidth=0.8)
    if qt:
        t, v = step_series(qt, qd)
        ax_q.step((t - t0) / div, v, where="post", color="#555555", linewidth=0.8)
    ax_u.set_ylabel(f"utilization\n(share of {result.machine_nodes} nodes)")
    ax_u.set_ylim(0, 1.02)
    ax_q.set_ylabel("waiting jobs")
    ax_q.set_xlabel(f"time since the first submit ({time_unit})")
    for ax in (ax_u, ax_q):
        ax.grid(alpha=0.3)
    ax_u.set_title(title or f"{result.machine_name} · {result.policy_name}")
    return fig


def slowdown_distributions(jobs, *, tau: int | None = None, title: str = "", whis: tuple[float, float] = (5.0, 95.0),
                           log: bool = True):
    """Per-category boxes (narrow/wide × short/long, and all jobs) of slowdown and bounded slowdown,
    RTJs and BJs side by side, from a ``job_table`` (whiskers at the 5th/95th percentiles, mean dot)."""
    from matplotlib.patches import Patch

    from rtsched.metrics import CATEGORY_NAMES

    cats = ("all",) + tuple(CATEGORY_NAMES)
    fig = new_figure((11, 6))
    axes = fig.subplots(2, 1, sharex=True)
    tau = tau if tau is not None else jobs.attrs.get("tau_seed002", 600)
    for ax, (col, label) in zip(axes, (("sd", "slowdown"), ("bsld_seed002", f"bounded slowdown (τ = {tau} s)"))):
        stats, pos, colors = [], [], []
        for ci, cat in enumerate(cats):
            sel = jobs if cat == "all" else jobs[jobs["category"] == cat]
            for ki, (kind, color) in enumerate((("rt", RT_COLOR), ("batch", BJ_COLOR))):
                st = box_stats(sel[sel["kind"] == kind][col].to_numpy(dtype=float), whis)
                if st is not None:
                    stats.append(st)
                    pos.append(ci * 3 + ki)
                    colors.append(color)
        if stats:
            art = ax.bxp(stats, positions=pos, widths=0.8, patch_artist=True, showmeans=True, showfliers=False,
                         meanprops={"marker": "o", "markerfacecolor": "black", "markeredgecolor": "black",
                                    "markersize": 3},
                         medianprops={"color": "black", "linewidth": 1.0})
            for box, color in zip(art["boxes"], colors):
                box.set_facecolor(color)
                box.set_alpha(0.8)
        ax.set_ylabel(label)
        if log:
            ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks([ci * 3 + 0.5 for ci in range(len(cats))])
    axes[1].set_xticklabels(cats)
    from matplotlib.lines import Line2D

    axes[1].set_xlabel("job category")
    fig.legend(handles=[Patch(color=RT_COLOR, label="RTJ"), Patch(color=BJ_COLOR, label="BJ"),
                        Line2D([], [], marker="o", color="black", linestyle="", markersize=3, label="mean"),
                        Patch(facecolor="white", edgecolor="black",
                              label=f"box 25/50/75 %, whiskers {whis[0]:g}/{whis[1]:g} %")],
               loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title)
    return fig


def learning_curve(history, *, key: str = "mean_return", label: str = "", title: str = "",
                   references: dict | None = None, ylabel: str = ""):
    """An RL training history (the list in ``progress.json``, or a ``train`` result's
    ``history``): ``key`` per epoch (default the mean trajectory return, i.e. minus the episode's
    goal, e.g. −bsld), with the min–max band of the epoch's trajectories when recorded.  ``history``
    may also be a mapping {label: history}: one panel per run (seed 003 Fig. 10 layout), each with
    its own y scale, since runs on different traces differ by orders of magnitude.  A validation
    curve is ``key="validation"`` over ``selection.json``'s rows (``rtsched.rl.runs.read_run``).
    ``references``: {label: value} drawn as dashed horizontal lines in every panel (e.g. a heuristic's
    validation figure), or {run label: {label: value}} per panel; ``ylabel`` names the y axis (default
    from ``key``)."""
    runs = dict(history) if hasattr(history, "items") else {label or key: history}
    n = max(len(runs), 1)
    cols = 1 if n == 1 else 2
    rows = (n + cols - 1) // cols
    fig = new_figure((8, 4) if n == 1 else (10, 2.8 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    ylabel = ylabel or ("mean return per trajectory" if key == "mean_return" else key.replace("_", " "))
    for i, (ax, (name, hist)) in enumerate(zip(axes, runs.items())):
        epochs = [h.get("epoch", j + 1) for j, h in enumerate(hist)]
        values = [h.get(key) for h in hist]
        color = BJ_COLOR if n == 1 else f"C{i}"
        ax.plot(epochs, values, color=color, marker="o", markersize=2.5, linewidth=1.0,
                label="mean over the epoch's trajectories" if key == "mean_return" else key.replace("_", " "))
        lows = [h.get("min_return") for h in hist]
        highs = [h.get("max_return") for h in hist]
        if key == "mean_return" and hist and all(v is not None for v in lows + highs):
            ax.fill_between(epochs, lows, highs, color=color, alpha=0.15, label="min–max of the epoch")
        for j, (ref_label, value) in enumerate(_panel_references(references, name).items()):
            shown = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
            ax.axhline(value, color=f"C{(i + 1 + j) % 10}" if n == 1 else "0.45", linestyle=("--", ":", "-.")[j % 3],
                       linewidth=0.9, label=f"{ref_label} {shown}")
        ax.set_xlabel("epoch")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if n > 1:
            counted = "epochs" if key == "mean_return" else "scored epochs"
            ax.set_title(f"{name} ({len(hist)} {counted})", fontsize=10)
        ax.legend(fontsize=7, loc="lower right" if key == "mean_return" else "best")
    for ax in axes[n:]:
        ax.set_visible(False)
    if title:
        (axes[0].set_title if n == 1 else fig.suptitle)(title)
    return fig


def _panel_references(references: dict | None, run: str) -> dict[str, float]:
    """``learning_curve``'s reference lines for panel ``run``: a flat {label: value} serves every
    panel, a nested {run: {label: value}} only its own."""
    if not references:
        return {}
    if all(isinstance(v, dict) for v in references.values()):
        return dict(references.get(run, {}))
    return dict(references)


def window_sweep(rows, *, references: dict | None = None, title: str = ""):
    """Seed 004 Fig. 5 layout: for each window size M (one panel) the average wait (left axis, dots)
    and the average queue length (right axis, crosses) against the tail size M_t.  ``rows``: dicts
    with ``head``, ``tail``, ``avg_wait`` (s), ``avg_queue``, optionally ``teacher_wait`` (s, the
    configuration's SJF window teacher, a faint line); ``references``: {label: (avg_wait, avg_queue)}
    drawn as horizontal lines (e.g. EASY, SJF)."""
    sizes = sorted({int(r["head"]) + int(r["tail"]) for r in rows})
    fig = new_figure((max(4.6 * max(len(sizes), 1), 6.0), 4.2))
    axes = fig.subplots(1, max(len(sizes), 1), squeeze=False)[0]
    handles = []
    for ax, m in zip(axes, sizes):
        rs = sorted((r for r in rows if int(r["head"]) + int(r["tail"]) == m), key=lambda r: int(r["tail"]))
        tails = [int(r["tail"]) for r in rs]
        h_wait, = ax.plot(tails, [r["avg_wait"] / 3600.0 for r in rs], "o-", color=RT_COLOR,
                          label="agent: average wait (h, left)")
        teacher = []
        if all("teacher_wait" in r for r in rs):  # the imitation target of each configuration (bench --recipe clone)
            teacher = [ax.plot(tails, [r["teacher_wait"] / 3600.0 for r in rs], "s:", color=RT_COLOR, alpha=0.5,
                               label="its SJF window teacher: average wait (h, left)")[0]]
        ax2 = ax.twinx()
        h_queue, = ax2.plot(tails, [r["avg_queue"] for r in rs], "x--", color="#2ca02c",
                            label="agent: average queue length (jobs, right)")
        refs = []
        for i, (lab, (w, q)) in enumerate((references or {}).items()):
            color = PALETTE[(i + 4) % len(PALETTE)]
            refs.append(ax.axhline(w / 3600.0, color=color, linewidth=1.0, linestyle=":", label=f"{lab}: wait"))
            refs.append(ax2.axhline(q, color=color, linewidth=1.0, linestyle="-.", label=f"{lab}: queue length"))
        handles = [h_wait, *teacher, h_queue] + refs
        ax.set_title(f"window M = {m} slots (head M_h = M − M_t)", fontsize=9)
        ax.set_xlabel("tail slots M_t")
        ax.set_xticks(sorted(set(tails)))
        ax.set_ylabel("average wait (h)", color=RT_COLOR)
        ax2.set_ylabel("average queue length (jobs)", color="#2ca02c")
        ax.grid(alpha=0.3)
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=7, frameon=False)
    if title:
        fig.suptitle(title)
    return fig


def queue_over_time(series: dict, *, time_unit: str = "d", title: str = ""):
    """Queue length over time, one step line per label: ``series`` {label: (times, lengths)} (the
    ``queue_series`` of ``rtsched.rl.evaluate.evaluate_online``; times in s)."""
    scale = time_unit_seconds(time_unit)
    fig = new_figure((8, 3.6))
    ax = fig.add_subplot()
    t0 = min((float(t[0]) for t, _ in series.values() if len(t)), default=0.0)
    for i, (label, (times, lengths)) in enumerate(series.items()):
        ax.step([(float(x) - t0) / scale for x in times], list(lengths), where="post", linewidth=0.9,
                color=PALETTE[i % len(PALETTE)], label=label)
    ax.set_xlabel(f"time since the first arrival ({time_unit})")
    ax.set_ylabel("waiting jobs")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return fig
