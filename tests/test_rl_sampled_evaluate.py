"""Sampled-action evaluation (``evaluate(..., greedy=False, sample_seed=S, repeats=R)``, ``rtsched rl evaluate
--sample --sample-seed S --repeats R``): the authors' test script (``compare-pick-jobs.py``) samples each
action from the masked softmax, so the paper's RLScheduler figures are sampled-policy figures.

Checked here: a seeded draw is reproducible, run r of a sequence is the single run with seed S + r (the
policy built by hand gives the same score), sampling differs from the greedy argmax for a model whose
softmax is not one-hot, masked slots are never drawn, and the options are refused without ``--sample``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rtsched.cli import main  # noqa: E402
from rtsched.errors import OptionError  # noqa: E402
from rtsched.rl.evaluate import evaluate  # noqa: E402
from rtsched.rl.trace import read_rl_trace  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")  # 2,000 Lublin-256 jobs
MODEL = str(REPO / "rtsched" / "rl" / "pretrained" / "table5" / "rl-lublin-1-none.pt")
STARTS = [100, 900]
SEQ_LEN = 128


@pytest.fixture(scope="module")
def trace():
    return read_rl_trace(SAMPLE)


def _bsld(rows):
    return [r["avg_bsld"] for r in rows]


def test_a_seeded_draw_is_reproducible_and_run_r_draws_with_seed_plus_r(trace):
    from rtsched.rl.rlscheduler.policy import RLSchedulerPolicy
    from rtsched.rl.sequences import run_sequence

    two = evaluate([MODEL], trace, starts=STARTS, seq_len=SEQ_LEN, greedy=False, sample_seed=3, repeats=2,
                   goals=("bsld",))
    assert two == evaluate([MODEL], trace, starts=STARTS, seq_len=SEQ_LEN, greedy=False, sample_seed=3, repeats=2,
                           goals=("bsld",))
    assert [(r["start"], r["repeat"], r["sample_seed"]) for r in two] == [(100, 0, 3), (100, 1, 4), (900, 0, 3),
                                                                          (900, 1, 4)]
    for seed, rows in ((3, two[0::2]), (4, two[1::2])):
        one = evaluate([MODEL], trace, starts=STARTS, seq_len=SEQ_LEN, greedy=False, sample_seed=seed,
                       goals=("bsld",))
        assert _bsld(one) == _bsld(rows)
    # The same run by hand: the policy with that generator seed on the sequence (evaluate adds nothing).
    pol = RLSchedulerPolicy(MODEL, greedy=False, seed=4, norms=trace.norms(), extras=trace.extras(900, SEQ_LEN))
    assert two[3]["avg_bsld"] == pytest.approx(run_sequence(trace, 900, SEQ_LEN, pol)["bsld"], rel=1e-12)
    with pytest.raises(OptionError, match="--repeats"):
        evaluate([MODEL], trace, starts=STARTS, seq_len=SEQ_LEN, greedy=False, repeats=0)


def test_sampling_differs_from_greedy_and_between_seeds(trace):
    greedy = evaluate(["f1", MODEL], trace, starts=STARTS, seq_len=SEQ_LEN, goals=("bsld",))
    sampled = evaluate(["f1", MODEL], trace, starts=STARTS, seq_len=SEQ_LEN, greedy=False, goals=("bsld",))
    other = evaluate([MODEL], trace, starts=STARTS, seq_len=SEQ_LEN, greedy=False, sample_seed=1, goals=("bsld",))
    assert _bsld(sampled[:2]) == _bsld(greedy[:2])  # a heuristic draws nothing: one run, no repeat fields
    assert all("repeat" not in r for r in sampled[:2] + greedy)
    assert _bsld(sampled[2:]) != _bsld(greedy[2:])
    assert _bsld(sampled[2:]) != _bsld(other)


def test_masked_slots_are_never_sampled(trace, monkeypatch):
    """The masked softmax gives a masked slot probability 0 (its logit is MASKED_LOGIT): on random
    logits no draw lands there and the frequencies follow the softmax of the visible slots; inside
    the policy every sampled slot is one of the visible jobs."""
    import rtsched.rl.rlscheduler.policy as picking
    from rtsched.rl.inference import MASKED_LOGIT
    from rtsched.rl.policies import choose_action

    rng = np.random.default_rng(0)
    gen = torch.Generator().manual_seed(0)
    logits = rng.normal(0, 1, 8).astype(np.float32)
    mask = np.array([1, 0, 1, 1, 0, 0, 1, 0], dtype=bool)
    logits[~mask] = MASKED_LOGIT
    draws = np.bincount([choose_action(logits, False, gen) for _ in range(4000)], minlength=8)
    assert draws[~mask].sum() == 0
    p = np.exp(logits[mask] - logits[mask].max())
    np.testing.assert_allclose(draws[mask] / 4000, p / p.sum(), atol=0.03)

    seen = []

    def spy(lg, greedy, g):
        a = choose_action(lg, greedy, g)
        seen.append((a, int((lg > MASKED_LOGIT / 2).sum())))
        return a

    monkeypatch.setattr(picking, "choose_action", spy)
    evaluate([MODEL], trace, starts=STARTS[:1], seq_len=SEQ_LEN, greedy=False, goals=("bsld",))
    assert len(seen) >= SEQ_LEN - 1 and all(a < visible for a, visible in seen)
    assert any(visible > 1 and a > 0 for a, visible in seen)  # not just the head: the draw had a choice


def test_cli_records_the_draw_and_refuses_sampling_options_without_sample(capsys):
    args = ["rl", "evaluate", "--trace", SAMPLE, "--policies", f"sjf,{MODEL}", "--starts", "100",
            "--seq-len", "64"]
    assert main([*args, "--sample", "--sample-seed", "7", "--repeats", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["greedy"], doc["sample_seed"], doc["repeats"]) == (False, 7, 2)
    assert [(r["policy"], r.get("repeat"), r.get("sample_seed")) for r in doc["results"]] == [
        ("sjf", None, None), (MODEL, 0, 7), (MODEL, 1, 8)]
    assert main([*args, "--json"]) == 0
    assert "sample_seed" not in json.loads(capsys.readouterr().out)  # greedy output unchanged
    assert main([*args, "--sample", "--repeats", "2"]) == 0
    assert "sampled actions (seed 0, 2 runs a sequence)" in " ".join(capsys.readouterr().out.split())
    for extra in (["--repeats", "2"], ["--sample-seed", "3"]):
        assert main([*args, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and extra[0] in err and "only with --sample" in err
    with pytest.raises(SystemExit) as stop:  # argparse's own check of the range
        main([*args, "--sample", "--repeats", "0"])
    assert stop.value.code == 2 and "--repeats" in capsys.readouterr().err
    assert main(["rl", "evaluate", "--trace", "vasplike", "--policies", "sjf", "--sample", "--sample-seed", "1"]) == 2
    assert "--sample-seed" in capsys.readouterr().err
