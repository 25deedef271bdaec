"""rtmix's ``"auto"`` window order (issue 23, sixth session): the backfill order in a pass where more
BJs wait than the window shows, the submit order otherwise.  One rule in ``RtMixPass``, so the
environment, the DAgger labels and the trained policy see the same window."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from rtsched.checkpoint import CheckpointModel  # noqa: E402
from rtsched.jobs import Job, Workload  # noqa: E402
from rtsched.machines import machine_from_spec  # noqa: E402
from rtsched.rl.rtmix.core import ORDERS, RtMixPass, RtMixSpec  # noqa: E402
from rtsched.sim.decisions import Start  # noqa: E402


def _pass_at_50(jobs: list[Job], **spec) -> RtMixPass:
    """The pass at 50 on Mira:2 (partitions 0 and 1 of 512 nodes, 2 of 1024), job 1 started on
    partition 0 at time 0."""
    from rtsched.sim.core import Simulator

    machine = machine_from_spec("mira:2")
    sim = Simulator(Workload(jobs, name="order", max_nodes=machine.total_nodes), machine,
                    checkpoint=CheckpointModel.parse("jit"))
    assert sim.advance()
    sim.apply([Start(1, 0)])
    assert sim.advance() and sim.view.now == 50
    return RtMixPass(sim.view, RtMixSpec(**spec))


def _jobs(n_waiting: int) -> list[Job]:
    """Job 1 (512 nodes) runs on one half; at 50, ``n_waiting`` BJs arrive: first a 1024-node head
    (long wait, highest wfp2 priority is not needed: it is the oldest), then 512-node BJs that
    would fit the free half.  Submit order: ids ascending (all submitted at 50, ties by id)."""
    jobs = [Job(1, 0, 1000, 1000, 512)]
    jobs.append(Job(2, 50, 5000, 5000, 1024))
    jobs += [Job(3 + i, 50, 100 * (i + 1), 100 * (i + 1), 512) for i in range(n_waiting - 1)]
    return jobs


def _ids(ps: RtMixPass) -> list[int]:
    return [js.info.id for js in ps.queue]


@pytest.mark.parametrize("n_waiting", [1, 2, 3])
def test_auto_is_the_submit_order_while_the_window_shows_every_waiting_bj(n_waiting):
    auto = _pass_at_50(_jobs(n_waiting), window=3, order="auto")
    submit = _pass_at_50(_jobs(n_waiting), window=3, order="submit")
    assert not auto.backfill_only and auto.backfill_alloc is None
    assert _ids(auto) == _ids(submit)
    assert np.array_equal(auto.mask(), submit.mask())


@pytest.mark.parametrize("n_waiting", [4, 6])
def test_auto_is_the_backfill_order_when_more_bjs_wait_than_the_window_shows(n_waiting):
    auto = _pass_at_50(_jobs(n_waiting), window=3, order="auto")
    backfill = _pass_at_50(_jobs(n_waiting), window=3, order="backfill")
    submit = _pass_at_50(_jobs(n_waiting), window=3, order="submit")
    assert auto.backfill_only and auto.backfill_alloc == backfill.backfill_alloc
    assert _ids(auto) == _ids(backfill)
    assert np.array_equal(auto.mask(), backfill.mask())
    assert _ids(auto) != _ids(submit) or not np.array_equal(auto.mask(), submit.mask())


def test_auto_n_moves_the_bound():
    # 3 BJs wait: "auto" (the window, 3) keeps the submit order, "auto:2" switches, "auto:0" is backfill
    jobs = _jobs(3)
    backfill = _pass_at_50(jobs, window=3, order="backfill")
    assert not _pass_at_50(jobs, window=3, order="auto").backfill_only
    for order in ("auto:2", "auto:0"):
        ps = _pass_at_50(jobs, window=3, order=order)
        assert ps.backfill_only and np.array_equal(ps.mask(), backfill.mask())
    assert not _pass_at_50(jobs, window=3, order="auto:3").backfill_only
    assert RtMixSpec(order="auto:5").backfill_above == 5 and RtMixSpec(order="auto").backfill_above == 8
    assert RtMixSpec(order="backfill").backfill_above == 0 and RtMixSpec().backfill_above == float("inf")


def test_load_counts_the_running_and_the_waiting_jobs():
    # job 1 runs; with window 3, "load" switches once more than 3 jobs are in the system, even
    # where fewer BJs wait than the window shows ("auto" stays in the submit order there)
    for n_waiting, expect in ((2, False), (3, True)):
        jobs = _jobs(n_waiting)
        ps = _pass_at_50(jobs, window=3, order="load")
        assert ps.backfill_only is expect
        ref = _pass_at_50(jobs, window=3, order="backfill" if expect else "submit")
        assert _ids(ps) == _ids(ref) and np.array_equal(ps.mask(), ref.mask())
    assert not _pass_at_50(_jobs(3), window=3, order="auto").backfill_only
    assert not _pass_at_50(_jobs(3), window=3, order="load:4").backfill_only
    assert _pass_at_50(_jobs(3), window=3, order="load:3").backfill_only
    assert RtMixSpec(order="load").counts_load and not RtMixSpec(order="auto:3").counts_load


def test_auto_is_a_known_order_and_others_are_refused():
    assert "auto" in ORDERS
    for bad in ("queue", "auto:", "auto:-1", "auto:x", "backfill:2", "load:", "load:y"):
        with pytest.raises(ValueError, match="order"):
            RtMixSpec(order=bad)


def test_the_curriculum_runs_and_writes_the_auto_order(tmp_path):
    # --curriculum-order auto: the data's environments and the written model carry the order
    from rtsched.rl.modelfiles import read_model_file
    from rtsched.rl.rtmix.dagger import run_dagger
    from rtsched.rl.rtmix.train import run_curriculum

    run_dagger(str(tmp_path / "dagger"), teacher="wcjs", rounds=1, episodes=1, bc_epochs=1, eligibility="any")
    init = str(tmp_path / "dagger" / "round-0.pt")
    res = run_curriculum(str(tmp_path / "cur"), init, rounds=0, weeks=1, small_episodes=2, epochs=1,
                         progress=None, days=0.5, order="auto")
    out = read_model_file(res["model"])
    assert out["env"]["order"] == "auto" and out["history"][-1]["order"] == "auto"
