"""Real-time job marking (seed 002 §7.1.3): random, runtime < 90 min, APS injection."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rtsched.errors import InputError
from rtsched.jobs import Job, Workload
from rtsched.machines.sizes import MIRA_PARTITION_NODES
from rtsched.rtmarking import RtMarking, aps_model, mark_realtime, read_aps_sample, sample_aps_model

from conftest import shared_data


def _trace(n: int = 20, runtimes=None) -> Workload:
    runtimes = runtimes or [600 * (i + 1) for i in range(n)]  # 10 min, 20 min, ... (s)
    jobs = [Job(id=i + 1, submit=100 * i, runtime=r, walltime=2 * r, nodes=512 * (1 + i % 4))
            for i, r in enumerate(runtimes)]
    return Workload(jobs, name="toy", max_nodes=49152)


def _rt_ids(wl: Workload) -> set[int]:
    return {j.id for j in wl if j.kind == "rt"}


def test_random_marks_exactly_r_percent_and_nothing_else_changes():
    wl = _trace(20)
    marked = mark_realtime(wl, RtMarking(percent=15, seed=3))
    assert len(_rt_ids(marked)) == 3  # 15 % of 20
    before = {j.id: j for j in wl}
    for j in marked:
        assert j.with_kind("batch") == before[j.id]


def test_same_seed_same_marking_other_seed_differs():
    wl = _trace(200)
    a = mark_realtime(wl, RtMarking(percent=10, seed=1))
    b = mark_realtime(wl, RtMarking(percent=10, seed=1))
    c = mark_realtime(wl, RtMarking(percent=10, seed=2))
    assert _rt_ids(a) == _rt_ids(b)
    assert _rt_ids(a) != _rt_ids(c)


def test_marking_twice_is_idempotent():
    wl = _trace(50)
    once = mark_realtime(wl, RtMarking(percent=20, seed=4))
    twice = mark_realtime(once, RtMarking(percent=20, seed=4))
    assert _rt_ids(once) == _rt_ids(twice)


def test_short_mode_only_marks_jobs_under_90_minutes():
    # runtimes 10..200 min: jobs 1..8 (10..80 min) are under 90 min; job 9 is exactly 90 min (not eligible)
    wl = _trace(20)
    marked = mark_realtime(wl, RtMarking(percent=25, mode="short", seed=0))
    rt = _rt_ids(marked)
    assert len(rt) == 5
    assert rt <= set(range(1, 9))


def test_short_mode_records_the_shortfall():
    wl = _trace(20)  # 8 eligible jobs, 50 % asks for 10
    marked = mark_realtime(wl, RtMarking(percent=50, mode="short", seed=0))
    assert _rt_ids(marked) == set(range(1, 9))
    assert marked.header["rt_marking_shortfall"] == "2"


def test_aps_injects_rtjs_shaped_like_aps_jobs(tmp_path):
    sample = tmp_path / "aps.txt"
    sample.write_text("# runtimes (s)\n100\n250\n\n700\n")
    wl = _trace(90)
    marked = mark_realtime(wl, RtMarking(percent=10, mode="aps", seed=5, aps_path=str(sample)))
    assert len(marked) == 100  # 10 injected: RTJs are 10 % of the result
    injected = [j for j in marked if j.kind == "rt"]
    assert len(injected) == 10
    assert {j.id for j in injected} == set(range(91, 101))  # fresh ids after the trace's last
    first, last = 0, 100 * 89
    for j in injected:
        assert j.runtime in (100, 250, 700)
        assert j.runtime <= j.walltime <= math.ceil(2 * j.runtime)
        assert j.nodes in MIRA_PARTITION_NODES
        assert first <= j.submit <= last
    assert all(j.kind == "batch" for j in marked if j.id <= 90)


def test_aps_share_of_batch_counts_against_the_trace():
    wl = _trace(90)
    marked = mark_realtime(wl, RtMarking(percent=10, mode="aps", seed=5, aps_path="model", aps_share_of="batch"))
    assert len(_rt_ids(marked)) == 9


def test_aps_node_sizes_follow_the_exponential_rounded_up():
    # P(Exp(2048) <= 512) = 1 - exp(-1/4): the share of 512-node RTJs.  With 20,000 draws the
    # standard error is 0.003, so 0.015 is a five-sigma band.
    wl = _trace(20_000 // 4, [600] * (20_000 // 4))
    marked = mark_realtime(wl, RtMarking(percent=80, mode="aps", seed=0, aps_path="model"))
    nodes = np.array([j.nodes for j in marked if j.kind == "rt"])
    assert len(nodes) == 20_000
    assert abs((nodes == 512).mean() - (1 - math.exp(-0.25))) < 0.015
    assert abs((nodes == 1024).mean() - (math.exp(-0.25) - math.exp(-0.5))) < 0.015


def test_aps_model_matches_the_fitted_mean():
    model = aps_model()
    draws = sample_aps_model(model, np.random.default_rng(0), 50_000)
    assert draws.min() >= model["min_s"] and draws.max() <= model["max_s"]
    assert abs(draws.mean() - model["fit"]["model_mean_s"]) / model["fit"]["model_mean_s"] < 0.03


def test_aps_default_uses_the_shared_sample():
    path = shared_data("aps", "aps_runtimes_seconds.txt")
    sample = set(read_aps_sample(str(path)).tolist())
    assert len(read_aps_sample(str(path))) == 996
    marked = mark_realtime(_trace(100), RtMarking(percent=20, mode="aps", seed=1))
    assert marked.header["rt_marking_aps_source"].startswith("sample:")
    assert all(j.runtime in sample for j in marked if j.kind == "rt")


def test_noncheckpointable_share_is_independent_of_the_rt_choice():
    wl = _trace(100)
    plain = mark_realtime(wl, RtMarking(percent=10, seed=7))
    flagged = mark_realtime(wl, RtMarking(percent=10, seed=7, noncheckpointable_percent=30))
    assert _rt_ids(plain) == _rt_ids(flagged)
    frozen = [j for j in flagged if not j.checkpointable]
    assert len(frozen) == 27  # 30 % of the 90 BJs
    assert all(j.kind == "batch" for j in frozen)


def test_bad_sample_names_file_line_and_field(tmp_path):
    bad = tmp_path / "aps.txt"
    bad.write_text("100\n\nabc\n")
    with pytest.raises(InputError) as err:
        mark_realtime(_trace(10), RtMarking(percent=10, mode="aps", aps_path=str(bad)))
    assert err.value.line == 3 and err.value.field == "runtime" and str(bad) in str(err.value)


@pytest.mark.parametrize("kwargs", [dict(percent=-1), dict(percent=101), dict(percent=5, mode="bogus"),
                                    dict(percent=100, mode="aps"), dict(percent=5, aps_walltime_factor=(0.5, 2.0))])
def test_invalid_marking_options_are_rejected(kwargs):
    with pytest.raises(ValueError):
        RtMarking(**kwargs)
