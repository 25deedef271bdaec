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

from dataclasses import asdict, dataclass, field

import numpy as np

from rtsched.generators.vasplike import UNITS, param_set, trace_param_set
from rtsched.rl.selection import BEST, SELECTION, BestOnValidation

VALIDATION_SEED0 = 500_000


@dataclass
class VaspLikeSelector:
    """``train(progress=selector)``: score the greedy policy on validation sequences every ``every``
    epochs, keep the best (lowest job-weighted mean slowdown, the earliest among equals) as ``best.pt``
    (the shared step: ``rtsched.rl.selection.BestOnValidation``)."""

    out: str
    trace: str = "vasplike"
    n_sequences: int = 32
    every: int = 1
    first_seed: int = VALIDATION_SEED0
    units: int = UNITS
    overrides: dict = field(default_factory=dict)  # the training's job_rate / simu_len, when not the set's

    def __post_init__(self) -> None:
        from rtsched.rl.rlschert.results import vasplike_sequences

        params = trace_param_set(self.trace)
        if params is None:
            raise ValueError(f"validation on {self.trace!r}: not a name of the VASP-like workload")
        if self.n_sequences < 1 or self.every < 1:
            raise ValueError("validation sequences and the scoring interval must be at least 1")
        self.sequences = vasplike_sequences(self.n_sequences, self.first_seed,
                                            **{**asdict(param_set(params)), **self.overrides})
        meta = {"trace": self.trace, "first_seed": self.first_seed, "sequences": self.n_sequences,
                "units": self.units, "overrides": self.overrides, "greedy": True}
        self.step = BestOnValidation(self.out, self.score, self.every, meta)

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
        self.step(epoch, epochs, stats)

    @property
    def scores(self) -> list[dict]:
        return self.step.scores

    @property
    def best(self) -> dict | None:
        """The scored epoch with the lowest validation slowdown (the earliest among equals)."""
        return self.step.best


__all__ = ["BEST", "SELECTION", "VALIDATION_SEED0", "VaspLikeSelector"]
