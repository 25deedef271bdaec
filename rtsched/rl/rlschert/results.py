"""RLSchert's results table (seed 001 Tables 6–7): every scheduler on the same held-out sequences,
each run through the run pipeline (``rtsched.pipeline.execute``: simulated on the core, validated
with the lost work) and measured by ``rtsched.metrics`` (slowdown, Eq. 13; completion, Eq. 14).

Workloads: ``vasplike_sequences`` (the synthetic VASP-like generator; test seeds apart from the
training ones) and ``trace_sequences`` (windows of a trace with pre-run estimates as requested
times and the conditional model's running predictions, ``rtsched.rl.rlschert.env.trace_predictions``).
Schedulers (``scheduler``): ``sjf``, ``saf``, ``fcfs`` on RLSchert's action space (visible jobs that fit
now), optionally ``+kill`` (the rule-based kill first) or ``+rkill`` (the remaining-time kill first,
``RLSchertCore.remaining_kill``), and trained models (``model:PATH``,
``model:PATH+kill`` for a no-kill model with the rule-based kill).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rtsched.generators.vasplike import HELD_OUT_SEEDS, generate_vasplike
from rtsched.jobs import Workload
from rtsched.metrics import job_columns
from rtsched.pipeline import RunSpec, execute
from rtsched.rl.rlschert.core import ArrayPredictions, RLSchertConfig, RLSchertHeuristicPolicy

# Seed 001 Table 7 (test set, average slowdown): without / with kill.
PAPER_TABLE7 = {"RLSchert (PPO kill)": 8.32, "RLSchert + rule kill": 8.69, "RLSchert without kill": 8.93,
                "DeepRM": 9.63, "SJF": 10.29, "SAF": 10.23, "SJF + rule kill": 10.25, "SAF + rule kill": 10.33}
TEST_SEED0 = HELD_OUT_SEEDS.start  # test sequences' seeds start here (training never draws them)


@dataclass
class Sequence:
    workload: Workload
    predictions: object
    label: str


def vasplike_sequences(n: int = 16, first_seed: int = TEST_SEED0, **params) -> list[Sequence]:
    from rtsched.generators.vasplike import VaspLikeParams

    out = []
    for k in range(n):
        q = generate_vasplike(first_seed + k, VaspLikeParams(**params))
        out.append(Sequence(q.workload, ArrayPredictions({j.id: r for j, r in zip(q.workload.jobs, q.running)},
                                                         q.slot), f"vasplike-{first_seed + k}"))
    return out


def trace_sequences(trace, starts, seq_len: int = 256) -> list[Sequence]:
    from rtsched.rl.rlschert.env import trace_predictions

    tr, jobs, preds = trace_predictions(trace)
    out = []
    for s in starts:
        win = jobs[s:s + seq_len]
        t0 = win[0].submit
        wl = Workload([j.__class__(j.id, j.submit - t0, j.runtime, j.walltime, j.nodes, j.kind, j.user, j.group,
                                   j.queue, j.checkpointable) for j in win], name=f"{tr.name}@{s}")
        out.append(Sequence(wl, preds, wl.name))
    return out


def scheduler(name: str, predictions, units: int, mode: str = "event", *, greedy: bool = True):
    """A fresh core policy for one sequence (module docstring for the names); a model samples its
    actions when not ``greedy``."""
    kill = name.endswith("+kill")
    remaining = name.endswith("+rkill")
    base = name[:-5] if kill else name[:-6] if remaining else name
    if base.startswith("model:"):
        if remaining:
            raise ValueError(f"{name}: the remaining-time kill (+rkill) goes with a heuristic, not a model")
        from rtsched.rl.rlschert.policy import RLSchertPolicy

        return RLSchertPolicy(base[6:], predictions=predictions, units=units, rule_kill=kill, greedy=greedy)
    return RLSchertHeuristicPolicy(base, RLSchertConfig(mode=mode), units, rule_kill=kill or remaining,
                                   predictions=predictions, kill_rule="remaining" if remaining else "rule")


def sequence_columns(name: str, seq: Sequence, machine_nodes: int, mode: str = "event", *,
                     greedy: bool = True) -> dict:
    """``rtsched.metrics.job_columns`` of one sequence scheduled by ``scheduler(name)`` through the run
    pipeline (validated with the lost work): turnarounds from each job's end, so a killed job's counts
    its lost stints."""
    policy = scheduler(name, seq.predictions, machine_nodes, mode, greedy=greedy)
    rec = execute(RunSpec(machine=f"flat:{machine_nodes}"), workload=seq.workload, policy=policy)
    return job_columns(rec.result)


def evaluate_rlschert(names, sequences: list[Sequence], machine_nodes: int, slot: int = 300,
                      mode: str = "event") -> list[dict]:
    """Mean slowdown (Eq. 13, over all jobs of all sequences), mean completion (slots), kills and lost
    slots per scheduler; each run validated by the pipeline."""
    rows = []
    for name in names:
        sd, comp, kills, lost, per_seq, jobs = [], [], 0, 0.0, [], []
        for seq in sequences:
            cols = sequence_columns(name, seq, machine_nodes, mode)
            sd.extend(cols["sd"].tolist())
            comp.extend((cols["turnaround"] / slot).tolist())
            kills += int(cols["n_kills"].sum())
            lost += float(cols["t_lost"].sum()) / slot
            per_seq.append(float(cols["sd"].mean()))
            jobs.append(len(cols["sd"]))
        rows.append({"scheduler": name, "slowdown": float(np.mean(sd)), "completion": float(np.mean(comp)),
                     "kills": kills, "lost_slots": lost, "sequences": len(sequences),
                     "slowdown_per_sequence": per_seq, "jobs_per_sequence": jobs})
    return rows



def plot_prediction_error(fractions, running_mapes, prerun_mape: float | None = None, title: str = ""):
    """Seed 001 Fig. 6 layout: MAPE (%) of the running runtime prediction against the share of the
    job's runtime elapsed, with the pre-run prediction's MAPE as a reference line."""
    from rtsched.plots import BJ_COLOR, new_figure

    fig = new_figure((6.5, 3.6))
    ax = fig.add_subplot()
    ax.plot([100 * f for f in fractions], running_mapes, "o-", color=BJ_COLOR, label="running prediction")
    if prerun_mape is not None:
        ax.axhline(prerun_mape, color="#7f7f7f", linestyle="--", linewidth=1.0,
                   label=f"pre-run prediction ({prerun_mape:.1f} %)")
    ax.set_xlabel("share of the job's runtime elapsed (%)")
    ax.set_ylabel("MAPE of the predicted runtime (%)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "runtime prediction error while jobs run")
    return fig


def plot_results(table, paper=None, reference: str = "SAF", title: str = ""):
    """Seed 001 Table 7 as bars: (a) our average slowdown per scheduler (kills per run written on
    the bar); (b) each scheduler's slowdown relative to ``reference`` (SAF), ours beside the paper's,
    since the synthetic workload's absolute slowdowns are lighter than the paper's.  ``table``: a
    frame indexed by scheduler label with ``slowdown`` and ``kills`` columns; ``paper``: {label:
    slowdown} (default ``PAPER_TABLE7``)."""
    from rtsched.plots import BJ_COLOR, new_figure

    paper = PAPER_TABLE7 if paper is None else paper
    labels = list(table.index)
    ours = table["slowdown"].to_numpy(dtype=float)
    fig = new_figure((12, 4.4))
    ax_a, ax_b = fig.subplots(1, 2)
    x = np.arange(len(labels))
    bars = ax_a.bar(x, ours, 0.7, color=BJ_COLOR)
    if "kills" in table.columns:
        for b, k in zip(bars, table["kills"]):
            ax_a.text(b.get_x() + b.get_width() / 2, b.get_height(), f"{int(k)} kills", ha="center", va="bottom",
                      fontsize=7)
    ax_a.set_ylabel("average slowdown")
    ax_a.set_title("(a) average slowdown, ours")
    ref_ours = float(table.loc[reference, "slowdown"]) if reference in table.index else float("nan")
    ref_paper = paper.get(reference, float("nan"))
    w = 0.38
    ax_b.bar(x - w / 2, ours / ref_ours, w, color=BJ_COLOR, label="ours (VASP-like synthetic)")
    ax_b.bar(x + w / 2, [paper.get(lab, float("nan")) / ref_paper for lab in labels], w, color="#7f7f7f",
             label="paper (USTC VASP logs)")
    ax_b.axhline(1.0, color="black", linewidth=0.8)
    ax_b.set_ylabel(f"average slowdown / {reference}'s")
    ax_b.set_title(f"(b) relative to {reference} (below 1: better than {reference})")
    ax_b.legend(fontsize=8, loc="upper left")
    for ax in (ax_a, ax_b):
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig


def plot_training(histories, title: str = ""):
    """Seed 001 Figs. 7 and 9 layout: the average slowdown and the kills per episode over training
    epochs, one line per model ({label: history}, the ``history`` of a model file or of ``train``);
    epochs where imitation is on are shaded."""
    from rtsched.plots import new_figure

    fig = new_figure((11, 3.8))
    ax_s, ax_k = fig.subplots(1, 2, sharex=True)
    for i, (label, hist) in enumerate(histories.items()):
        ep = [h.get("epoch", j + 1) for j, h in enumerate(hist)]
        ax_s.plot(ep, [h.get("mean_slowdown", np.nan) for h in hist], "-", color=f"C{i}", linewidth=1.2, label=label)
        ax_k.plot(ep, [h.get("mean_kills", np.nan) for h in hist], "-", color=f"C{i}", linewidth=1.2, label=label)
        imit = [e for e, h in zip(ep, hist) if h.get("imitation_weight")]
        if imit:
            ax_s.axvspan(min(imit) - 0.5, max(imit) + 0.5, color=f"C{i}", alpha=0.06)
    ax_s.set_ylabel("average slowdown per episode")
    ax_k.set_ylabel("kills per episode")
    for ax in (ax_s, ax_k):
        ax.set_xlabel("training epoch")
        ax.grid(alpha=0.3)
    ax_s.legend(fontsize=8)
    ax_s.set_title("(a) slowdown (shaded: imitation term on)")
    ax_k.set_title("(b) kills")
    if title:
        fig.suptitle(title)
    return fig


__all__ = ["PAPER_TABLE7", "Sequence", "evaluate_rlschert", "plot_prediction_error", "plot_results", "plot_training",
           "scheduler", "sequence_columns", "trace_sequences", "vasplike_sequences"]
