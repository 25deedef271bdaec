"""Model selection for RLSchert on the VASP-like workload (issue 24 §3): every ``every`` epochs the
run's checkpoint is exported and scored *greedily* (argmax, as it is evaluated and shipped) on
validation sequences drawn from the training distribution; the best one is kept as ``best.pt``
in the run folder.  A model whose greedy policy collapses (a killing spree) scores badly and is never
chosen, however well it samples.

Validation sequences: generator seeds ``VALIDATION_SEED0 + 0 .. n − 1`` (500,000 on): outside the
held-out seeds (1,000,000–1,000,999, the test set) and outside a fixed training set of
``train_sequences`` ≤ 500,000 sequences (seeds 0 .. n − 1); a run drawing fresh sequences from
[0, 2³¹ − 1) meets one of them with probability about n / 2³¹ per draw.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from rtsched.files import atomic_write_text
from rtsched.generators.vasplike import UNITS, param_set, trace_param_set

VALIDATION_SEED0 = 500_000
SELECTION = "selection.json"
BEST = "best.pt"
SNAPSHOT = "snapshot.pt"  # the epoch being scored (overwritten each time)


@dataclass
class VaspLikeSelector:
    """``train(progress=selector)``: score the greedy policy on validation sequences every ``every``
    epochs, keep the best (lowest job-weighted mean slowdown, the earliest among equals) as ``best.pt``."""

    out: str
    trace: str = "vasplike"
    n_sequences: int = 32
    every: int = 1
    first_seed: int = VALIDATION_SEED0
    units: int = UNITS
    overrides: dict = field(default_factory=dict)  # the training's job_rate / simu_len, when not the set's
    scores: list[dict] = field(default_factory=list)
    eval_s: float = 0.0

    def __post_init__(self) -> None:
        from rtsched.rl.rlschert.results import vasplike_sequences

        params = trace_param_set(self.trace)
        if params is None:
            raise ValueError(f"validation on {self.trace!r}: not a name of the VASP-like workload")
        if self.n_sequences < 1 or self.every < 1:
            raise ValueError("validation sequences and the scoring interval must be at least 1")
        self.sequences = vasplike_sequences(self.n_sequences, self.first_seed,
                                            **{**asdict(param_set(params)), **self.overrides})
        path = os.path.join(self.out, SELECTION)
        if os.path.exists(path):  # a resumed run keeps the earlier epochs' scores
            with open(path) as fh:
                self.scores = list(json.load(fh).get("epochs", []))

    def score(self, model_path: str) -> dict:
        """Greedy job-weighted mean slowdown and kills of ``model_path`` on the validation sequences."""
        from rtsched.rl.rlschert.results import sequence_columns

        sd, kills = [], 0
        for seq in self.sequences:
            cols = sequence_columns(f"model:{model_path}", seq, self.units)
            sd.extend(cols["sd"].tolist())
            kills += int(cols["n_kills"].sum())
        return {"validation": float(np.mean(sd)), "kills": kills}

    def __call__(self, epoch: int, epochs: int, stats: dict) -> None:
        from rtsched.rl.modelfiles import CHECKPOINT, export_model

        if epoch % self.every and epoch != epochs:
            return
        t = time.perf_counter()
        snap = os.path.join(self.out, SNAPSHOT)
        export_model(os.path.join(self.out, CHECKPOINT), snap)
        row = {"epoch": epoch, **self.score(snap), "train_return": stats.get("mean_return")}
        best = self.best
        self.scores = [r for r in self.scores if r["epoch"] != epoch] + [row]
        if best is None or row["validation"] < best["validation"]:
            shutil.copyfile(snap, os.path.join(self.out, BEST + ".tmp"))
            os.replace(os.path.join(self.out, BEST + ".tmp"), os.path.join(self.out, BEST))
        os.remove(snap)
        self.eval_s += time.perf_counter() - t
        doc = {"trace": self.trace, "first_seed": self.first_seed, "sequences": self.n_sequences,
               "units": self.units, "overrides": self.overrides,
               "greedy": True, "best": self.best, "epochs": sorted(self.scores, key=lambda r: r["epoch"])}
        atomic_write_text(os.path.join(self.out, SELECTION), json.dumps(doc, indent=1) + "\n")

    @property
    def best(self) -> dict | None:
        """The scored epoch with the lowest validation slowdown (the earliest among equals)."""
        if not self.scores:
            return None
        return min(self.scores, key=lambda r: (r["validation"], r["epoch"]))


__all__ = ["BEST", "SELECTION", "VALIDATION_SEED0", "VaspLikeSelector"]
