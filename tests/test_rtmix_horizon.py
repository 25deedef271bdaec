"""rtmix's horizon features (``RtMixSpec.horizon_features``): golden values worked out by hand, and the
observations of the agents before the option unchanged."""
from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from rtsched.jobs import Job  # noqa: E402
from rtsched.rl.rtmix.core import HORIZON_FEATURES, TIME_SCALE, RtMixPass, RtMixSpec  # noqa: E402

SPEC = RtMixSpec(window=8, candidates=4, bj_candidates=2, horizon_features=True)
H = {name: SPEC.horizon_first + i for i, name in enumerate(HORIZON_FEATURES)}


def _pass_at_50(jobs: list[Job], spec: RtMixSpec) -> RtMixPass:
    """Mira:2 (partitions 0 and 1 of 512 nodes, 2 of 1024): job 1 starts on partition 0 at time 0; the pass
    at 50, when the others have arrived (the pass of ``tests/test_rtmix_order_auto.py``)."""
    from test_rtmix_order_auto import _pass_at_50 as pass_at_50

    return pass_at_50(jobs, **{f.name: getattr(spec, f.name) for f in fields(spec)})


def _jobs(rt_b: bool = False) -> list[Job]:
    """A: 512 nodes, walltime 2000 s, checkpointable, runs from 0 on partition 0.  B: 1024 nodes, walltime
    500 s, submitted at 50 (blocked by A).  C: 512 nodes, walltime 3000 s, submitted at 50 (fits on 1)."""
    return [Job(1, 0, 1500, 2000, 512), Job(2, 50, 400, 500, 1024, kind="rt" if rt_b else "batch"),
            Job(3, 50, 2500, 3000, 512)]


def test_horizon_features_of_a_blocked_bj_and_a_job_that_would_pass_its_shadow():
    ps = _pass_at_50(_jobs(), SPEC)
    rows = ps.observe().reshape(SPEC.n_actions, SPEC.n_features)
    vis = [js.info.id for js in ps.visible()]
    assert vis == [2, 3] and ps.bj_target().info.id == 2 and len(ps.bj_candidates()) == 1
    b, c, bj = 0, 1, SPEC.bj_first
    # B waits for partition 2, which A holds until its walltime-based end 2000: 1950 s from now
    assert rows[b, H["job_free_in"]] == pytest.approx(1950 / TIME_SCALE)
    assert rows[b, H["job_past_shadow"]] == 0.0
    # C fits; started now it ends at 50 + 3000 = 3050, 1050 s past B's shadow time 2000
    assert rows[c, H["job_past_shadow"]] == pytest.approx(1050 / TIME_SCALE)
    assert rows[c, H["job_free_in"]] == 0.0
    # the BJ-preemption slot frees partition 2 by preempting A: without it, 1950 s; B's slowdown if it
    # waits: (2000 − 50 + 500) / 500 = 4.9, feature (4.9 − 1) / 10
    assert rows[bj, H["cand_free_in"]] == pytest.approx(1950 / TIME_SCALE)
    assert rows[bj, H["bj_target_walltime"]] == pytest.approx(500 / TIME_SCALE)
    assert rows[bj, H["bj_target_sd_if_wait"]] == pytest.approx(0.39)
    assert rows[:, H["target_sd_if_wait"]].max() == 0.0  # no RTJ waits


def test_horizon_features_of_a_blocked_rtj():
    spec = RtMixSpec(window=8, candidates=4, bj_candidates=2, horizon_features=True, eligibility="any")
    ps = _pass_at_50(_jobs(rt_b=True), spec)
    rows = ps.observe().reshape(spec.n_actions, spec.n_features)
    assert ps.target().info.id == 2 and len(ps.candidates()) >= 1
    # the RTJ's slowdown if it waits for A's end: (2000 − 50 + 500) / 500 = 4.9, on every row
    assert np.allclose(rows[:, H["target_sd_if_wait"]], 0.39)
    assert rows[spec.window, H["cand_free_in"]] == pytest.approx(1950 / TIME_SCALE)


def test_the_agents_before_the_option_see_what_they_saw():
    old_spec = RtMixSpec(window=8, candidates=4, bj_candidates=2)
    new = _pass_at_50(_jobs(), SPEC).observe().reshape(SPEC.n_actions, SPEC.n_features)
    old = _pass_at_50(_jobs(), old_spec).observe().reshape(old_spec.n_actions, old_spec.n_features)
    assert old_spec.n_features == SPEC.horizon_first == SPEC.n_features - len(HORIZON_FEATURES)
    assert np.array_equal(new[:, :old_spec.n_features], old)
    assert "horizon_features" not in old_spec.optional_settings()
    assert SPEC.optional_settings()["horizon_features"] is True
