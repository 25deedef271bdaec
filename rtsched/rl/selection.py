"""Model selection on validation sequences: "trained to a score" means the model *chosen* on
validation sequences, then scored once on the test sequences.

Test scores of consecutive PPO epochs swing widely (RLScheduler with backfilling on Lublin-1: 59.9,
75.2, 67.7, 58.1 at epochs 22–25), so stopping at the first epoch whose *test* score passes a target
selects on the test set.  Here instead:

* ``validation_starts``: sequences drawn (seeded) from the allowed part of the trace whose job windows
  overlap none of the test windows (e.g. seed 003's ten Table-V sequences);
* ``SnapshotSelector``: a ``train(progress=...)`` callback that, after every epoch, exports the epoch's
  policy (``export_model``: about 20 KiB) to ``OUT/snapshots/epoch-NNNN.pt``, scores it on the
  validation sequences (``rtsched.rl.evaluate``: validated pipeline runs) and keeps the best; the
  scores are written to ``OUT/selection.json`` after every epoch;
* ``train_selected``: trains, selects, then evaluates the selected snapshot once on the test sequences;
* ``BestOnValidation``: the lighter step of long runs (RLSchert, the split window): every ``every``
  epochs the checkpoint's policy is exported, scored by the agent's own validation (greedy, as it is
  evaluated and shipped) and kept as ``OUT/best.pt`` only when it beats every earlier one, so a run
  folder holds one policy file however long the run.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from rtsched.files import atomic_write_text
from rtsched.rl.evaluate import evaluate
from rtsched.rl.sequences import start_bounds
from rtsched.rl.trace import load_trace

SNAPSHOTS = "snapshots"
SELECTION = "selection.json"
BEST = "best.pt"  # BestOnValidation: the policy of the best validated epoch (``export_model``'s policy-only file)
_SCORING = "scoring.pt"  # BestOnValidation: the epoch being scored (removed once scored)


def windows_overlap(a: int, la: int, b: int, lb: int) -> bool:
    """Whether job windows [a, a + la) and [b, b + lb) share a job."""
    return a < b + lb and b < a + la


def validation_starts(n_jobs: int, seq_len: int, n: int, avoid: Iterable[tuple[int, int]], *, seed: int = 0,
                      start_range=None) -> list[int]:
    """``n`` distinct first jobs of ``seq_len``-job windows, drawn uniformly (``seed``) among the starts
    allowed by ``start_range`` (``rtsched.rl.sequences.start_bounds``; default the whole trace) whose
    windows overlap none of the ``avoid`` windows (``(start, length)`` pairs, e.g. the test sequences).
    Raises ValueError when fewer than ``n`` such starts exist."""
    lo, hi = start_bounds(n_jobs, seq_len, (0, n_jobs) if start_range is None else start_range)
    avoid = [(int(s), int(length)) for s, length in avoid]
    cands = np.array([s for s in range(lo, hi + 1) if not any(windows_overlap(s, seq_len, a, la) for a, la in avoid)],
                     dtype=np.int64)
    if len(cands) < n:
        raise ValueError(f"only {len(cands)} {seq_len}-job windows avoid the {len(avoid)} test windows; "
                         f"{n} validation sequences asked for (use shorter ones)")
    pick = np.random.default_rng(seed).choice(cands, size=n, replace=False)
    return sorted(int(s) for s in pick)


@dataclass
class SnapshotSelector:
    """``train(progress=selector)``: export, validate and remember every epoch's model (module docstring)."""

    trace: object
    out: str
    starts: Sequence[int]
    seq_len: int
    backfill: str = "none"
    goal: str = "bsld"
    scores: list[dict] = field(default_factory=list)
    eval_s: float = 0.0

    def __post_init__(self) -> None:
        self.trace = load_trace(self.trace)
        self.starts = [int(s) for s in self.starts]
        path = os.path.join(self.out, SELECTION)
        if os.path.exists(path):  # a resumed run keeps the earlier epochs' scores
            with open(path) as fh:
                self.scores = [r for r in json.load(fh).get("epochs", [])]

    def snapshot(self, epoch: int) -> str:
        return os.path.join(self.out, SNAPSHOTS, f"epoch-{epoch:04d}.pt")

    def __call__(self, epoch: int, epochs: int, stats: dict) -> None:
        from rtsched.rl.modelfiles import CHECKPOINT, export_model

        t = time.perf_counter()
        snap = self.snapshot(epoch)
        export_model(os.path.join(self.out, CHECKPOINT), snap)
        rows = evaluate([snap], self.trace, starts=self.starts, seq_len=self.seq_len, backfill=self.backfill,
                        goals=(self.goal,))
        key = f"avg_{self.goal}" if self.goal in ("bsld", "wait") else self.goal
        value = float(np.mean([r[key] for r in rows]))
        self.scores = [r for r in self.scores if r["epoch"] != epoch]
        self.scores.append({"epoch": epoch, "validation": value, "train_return": stats.get("mean_return"),
                            "snapshot": os.path.relpath(snap, self.out)})
        self.eval_s += time.perf_counter() - t
        self._write()

    @property
    def best(self) -> dict | None:
        """The epoch with the lowest validation score (the earliest among equals); None before any."""
        return best_row(self.scores)

    def _write(self) -> None:
        doc = {"goal": self.goal, "backfill": self.backfill, "seq_len": self.seq_len, "starts": self.starts,
               "best": self.best, "epochs": sorted(self.scores, key=lambda r: r["epoch"])}
        atomic_write_text(os.path.join(self.out, SELECTION), json.dumps(doc, indent=1) + "\n")


def best_row(scores: Iterable[dict]) -> dict | None:
    """The scored epoch with the lowest ``validation`` (the earliest among equals); None before any."""
    scores = list(scores)
    if not scores:
        return None
    return min(scores, key=lambda r: (r["validation"], r["epoch"]))


@dataclass
class BestOnValidation:
    """``train(progress=step)``: every ``every`` epochs (and at the run's last epoch) export the
    checkpoint's policy, score it with ``score(model_path)`` (a dict with ``"validation"``, lower is
    better, and any other figures to record) and keep it as ``OUT/best.pt`` when it beats every
    earlier epoch (``best_row``).  ``OUT/selection.json`` (rewritten after each scoring) holds
    ``meta`` (what the validation is), ``best`` and every scored epoch (with its ``train_return``
    and ``eval_s``, the seconds its scoring took); a resumed run keeps the earlier epochs' rows."""

    out: str
    score: Callable[[str], dict]
    every: int = 1
    meta: dict = field(default_factory=dict)
    scores: list[dict] = field(default_factory=list)
    eval_s: float = 0.0

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"the scoring interval must be at least 1 epoch, got {self.every}")
        path = os.path.join(self.out, SELECTION)
        if os.path.exists(path):  # a resumed run keeps the earlier epochs' scores
            with open(path) as fh:
                self.scores = list(json.load(fh).get("epochs", []))

    def __call__(self, epoch: int, epochs: int, stats: dict) -> None:
        if epoch % self.every and epoch != epochs:
            return
        self.score_now(epoch, stats.get("mean_return"))

    def attach(self, trainer) -> None:
        """Score after every epoch of ``trainer`` (a ``PPOTrainer``), before its own progress callback."""
        report = trainer.progress

        def progress(epoch, epochs, stats):
            self(epoch, epochs, stats)
            if report is not None:
                report(epoch, epochs, stats)

        trainer.progress = progress

    def score_now(self, epoch: int, train_return: float | None = None, stage: str | None = None) -> dict:
        """Score the checkpoint now as epoch ``epoch`` (e.g. epoch 0: a cloned start) and record it;
        ``stage`` names a step before PPO's epochs that keeps the same epoch (``"dagger-3"``: DAgger's
        round 3, still epoch 0), a row of its own."""
        from rtsched.rl.modelfiles import CHECKPOINT, export_model

        t = time.perf_counter()
        snap = os.path.join(self.out, _SCORING)
        export_model(os.path.join(self.out, CHECKPOINT), snap)
        row = {"epoch": epoch, **({"stage": stage} if stage else {}), **self.score(snap), "train_return": train_return}
        before = self.best
        self.scores = [r for r in self.scores if (r["epoch"], r.get("stage")) != (epoch, stage)] + [row]
        if before is None or row["validation"] < before["validation"]:
            os.replace(snap, os.path.join(self.out, BEST))  # same folder: atomic
        else:
            os.remove(snap)
        row["eval_s"] = round(time.perf_counter() - t, 1)
        self.eval_s += row["eval_s"]
        doc = {**self.meta, "best": self.best, "epochs": sorted(self.scores, key=lambda r: r["epoch"])}
        atomic_write_text(os.path.join(self.out, SELECTION), json.dumps(doc, indent=1) + "\n")
        return row

    @property
    def best(self) -> dict | None:
        """The scored epoch with the lowest validation score (the earliest among equals)."""
        return best_row(self.scores)


def train_selected(trace, out: str, epochs: int, *, test_starts: Sequence[int], test_len: int = 1024,
                   val_starts: Sequence[int] | None = None, val_len: int = 512, n_val: int = 10, val_seed: int = 2,
                   goal: str = "bsld", backfill: str = "none", cap_s: float | None = None,
                   filter_epochs: int = 0, sjf_filter="auto", init_from: str | None = None, **options) -> dict:
    """Train RLScheduler (``rtsched.rl.api.train``; ``options`` as there, e.g. ``seed``, ``n_envs``), keep
    every epoch's snapshot, choose the one with the best validation score and evaluate it once on the
    test sequences.  Validation sequences: ``val_starts`` or ``n_val`` × ``val_len`` jobs drawn with
    ``val_seed`` away from the test windows.  ``cap_s``: stop after the first epoch that ends past this
    many seconds of wall time (the selection uses the epochs done).  Resumable (same ``out``).

    ``filter_epochs`` > 0: trajectory filtering (seed 003 §IV-C) — stage 1 trains that many epochs in
    ``OUT/stage1`` on windows whose SJF score lies in ``sjf_filter`` ("auto": R = (median, 2·mean)),
    stage 2 continues from stage 1's last model on all windows up to ``epochs`` epochs in ``OUT``; the
    selection runs over the snapshots of both stages (stage-1 epochs are reported as ``stage`` 1).
    ``init_from``: the first stage starts from that model's weights (``rtsched.rl.api.train``), e.g. a
    finished run continued with other settings in a new folder.

    Returns ``{"selected_epoch", "selected_stage", "validation", "test", "epochs", "val_starts", "train_s",
    "eval_s", "scores"}`` (``test``: mean over the test sequences of the goal's per-sequence value)."""
    from rtsched.rl.api import train

    tr = load_trace(trace)
    test_starts = [int(s) for s in test_starts]
    if val_starts is None:
        val_starts = validation_starts(len(tr), val_len, n_val, [(s, test_len) for s in test_starts], seed=val_seed)
    for s in val_starts:
        for t in test_starts:
            if windows_overlap(s, val_len, t, test_len):
                raise ValueError(f"validation sequence {s} (+{val_len}) overlaps test sequence {t} (+{test_len})")
    if not 0 <= filter_epochs < epochs:
        raise ValueError(f"filter_epochs={filter_epochs} must lie in [0, epochs={epochs})")
    stages = ([(os.path.join(out, "stage1"), filter_epochs, {"sjf_filter": sjf_filter}, init_from)]
              if filter_epochs else [])
    stages.append((out, epochs - filter_epochs, {},
                   os.path.join(out, "stage1", "checkpoint.pt") if filter_epochs else init_from))
    selectors = [SnapshotSelector(tr, folder, val_starts, val_len, backfill, goal) for folder, *_ in stages]
    t0 = time.perf_counter()

    class _Cap(Exception):
        pass

    capped = False
    for sel, (folder, n_epochs, extra, start_from) in zip(selectors, stages):
        def progress(epoch, total, stats, sel=sel):
            sel(epoch, total, stats)
            if cap_s is not None and time.perf_counter() - t0 > cap_s:
                raise _Cap

        try:
            train("rlscheduler", tr, goal=goal, backfill=backfill, epochs=n_epochs, out=folder, progress=progress,
                  init_from=start_from, **options, **extra)
        except _Cap:
            capped = True
        if capped:
            break
    wall = time.perf_counter() - t0
    candidates = [dict(r, stage=i + 1 if filter_epochs else 1,
                       snapshot=os.path.relpath(os.path.join(sel.out, r["snapshot"]), out))
                  for i, sel in enumerate(selectors) for r in sel.scores]
    if not candidates:
        raise RuntimeError(f"{out}: no epoch finished; nothing to select")
    best = min(candidates, key=lambda r: (r["validation"], r["stage"], r["epoch"]))
    rows = evaluate([os.path.join(out, best["snapshot"])], tr, starts=test_starts, seq_len=test_len, backfill=backfill,
                    goals=(goal,))
    key = f"avg_{goal}" if goal in ("bsld", "wait") else goal
    test = float(np.mean([r[key] for r in rows]))
    eval_s = sum(s.eval_s for s in selectors)
    result = {"selected_epoch": best["epoch"], "selected_stage": best["stage"], "validation": best["validation"],
              "test": test, "epochs": len(candidates), "val_starts": list(val_starts), "val_len": val_len,
              "train_s": round(wall - eval_s, 1), "eval_s": round(eval_s, 1), "scores": candidates}
    path = os.path.join(out, SELECTION)
    doc = json.loads(open(path).read()) if os.path.exists(path) else {"epochs": []}
    doc["test"] = {"starts": test_starts, "seq_len": test_len, "value": test, "epoch": best["epoch"],
                   "stage": best["stage"], "snapshot": best["snapshot"]}  # the choice over every stage
    atomic_write_text(os.path.join(out, SELECTION), json.dumps(doc, indent=1) + "\n")
    return result


__all__ = ["BEST", "BestOnValidation", "SnapshotSelector", "best_row", "train_selected", "validation_starts",
           "windows_overlap"]
