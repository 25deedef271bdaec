"""The runtime prior of the Mira fit and the ``wsept`` queue orders built on it."""
from __future__ import annotations

import math

import numpy as np
import pytest

from heuristics.priorities import PRIORITIES
from rtsched.generators.miralike import RatioGroup, load_params, runtime_prior
from rtsched.sim.state import JobInfo, JobState


def test_mean_inverse_bounded_by_hand():
    """Ratio quantiles 0, 0.2, 1 at probabilities 0, 0.5, 1; walltime 2,400 s, τ = 600 s.  The first half
    of the mass runs 0–480 s (< τ): 0.5/600.  The second half runs 480–2,400 s linearly; its first
    (600 − 480)/1,920 = 1/16 lies below τ: 0.5/16/600; the rest, du = 0.46875 from 600 to 2,400 s:
    du·ln(2400/600)/1,800.  Total 1.246431e-3 /s."""
    group = RatioGroup(0, 10**9, np.array([0.0, 0.2, 1.0]))
    probs = np.array([0.0, 0.5, 1.0])
    hand = 0.5 / 600 + 0.5 / 16 / 600 + 0.46875 * math.log(4.0) / 1800
    assert hand == pytest.approx(1.246431e-3, rel=1e-6)
    assert group.mean_inverse_bounded(probs, 2400, 600) == pytest.approx(hand, rel=1e-12)
    # Everything below τ: exactly 1/τ; a walltime of 600 s is never above it either.
    assert group.mean_inverse_bounded(probs, 600, 600) == pytest.approx(1 / 600, rel=1e-12)
    # A constant ratio 1 (runtime = walltime = 3,600 s): 1/3,600.
    flat = RatioGroup(0, 10**9, np.array([1.0, 1.0, 1.0]))
    assert flat.mean_inverse_bounded(probs, 3600, 600) == pytest.approx(1 / 3600, rel=1e-12)
    with pytest.raises(ValueError, match="positive"):
        group.mean_inverse_bounded(probs, 2400, 0)


@pytest.mark.parametrize("walltime,nodes", [(600, 512), (3600, 512), (43200, 512), (43200, 32768), (86400, 1024),
                                            (1800, 300)])
def test_runtime_prior_agrees_with_a_fine_midpoint_rule(walltime, nodes):
    """The exact segment integral against 200,000 midpoint draws of the same quantile function (an independent
    numerical method), and E[p] against the group's mean ratio times the walltime."""
    p = load_params()
    group = p.ratio_groups[p.ratio_group_of(walltime, nodes)]
    u = (np.arange(200_000) + 0.5) / 200_000
    runtimes = np.interp(u, p.ratio_probs, group.ratio_quantiles) * walltime
    rate, mean_runtime = runtime_prior(walltime, nodes, 600.0)
    assert rate == pytest.approx(float(np.mean(1.0 / np.maximum(runtimes, 600.0))), rel=1e-4)
    assert mean_runtime == pytest.approx(float(np.mean(runtimes)), rel=1e-4)
    # between "runs to its walltime" and "ends at once"
    assert (1 - 1e-12) / max(walltime, 600) <= rate <= (1 + 1e-12) / 600


def _states(*requests: tuple[int, int]) -> list[JobState]:
    return [JobState(i, JobInfo(i + 1, 0, walltime, nodes, "batch", -1, -1, "", True))
            for i, (walltime, nodes) in enumerate(requests)]


def test_wsept_orders_by_expected_slowdown_rate_per_expected_runtime():
    """On 512 nodes a 10-minute request ends below τ whatever it runs (rate 1/600, E[p] ≈ 287 s) and goes
    first; a 12-hour one last.  Between a 12-hour request on 512 and on 32,768 nodes the wide one is
    expected to end sooner on Mira (its runtime/walltime ratios are lower), so both orders put it first,
    which SJF (walltime, then submit) cannot tell apart."""
    states = _states((43200, 512), (600, 512), (3600, 512), (43200, 32768))
    for name in ("wsept", "wsept-sqrt"):
        prio = PRIORITIES[name]
        assert prio.static
        order = [js.info.id for js in prio.order(list(states), 0, 49152)]
        assert order == [2, 3, 4, 1], name
    sjf = [js.info.id for js in PRIORITIES["sjf"].order(list(_states((43200, 512), (600, 512), (3600, 512),
                                                                        (43200, 32768))), 0, 49152)]
    assert sjf == [2, 3, 1, 4]
