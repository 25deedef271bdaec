"""Checkpoint overheads and preemption mechanics (seed 002 eqs. 1-20, 34), tested directly on the core."""
from __future__ import annotations

import pytest

from conftest import run_validated
from rtsched.checkpoint import DEFAULT_IO, CheckpointKind, CheckpointModel, IOModel
from rtsched.jobs import Job, Workload
from rtsched.machines import AlignedMira, FlatCluster
from rtsched.metrics import job_columns
from rtsched.sim.decisions import Preempt, Start
from rtsched.sim.script import ScriptPolicy


def test_write_time_512_nodes():
    # bandwidth = min(512/128 * 4, 216) = 16 GB/s; data = 16 GB * 512 = 8192 GB -> 512 s.
    assert DEFAULT_IO.write_seconds(512) == 512
    assert DEFAULT_IO.read_seconds(512) == 512


def test_write_time_8192_nodes_hits_the_pfs_cap():
    # bandwidth = min(8192/128 * 4 = 256, 216) = 216 GB/s; 16 * 8192 / 216 = 606.8 -> 607 s.
    assert DEFAULT_IO.write_seconds(8192) == 607
    # Full machine: 16 * 49152 / 216 = 3640.9 -> 3641 s.
    assert DEFAULT_IO.write_seconds(49152) == 3641


def test_app_ckpt_example_of_seed002_section_714():
    # 10 % of a 120-min walltime = 720 s; a 5-min (300 s) write -> floor(720/300) = 2 checkpoints,
    # spread evenly: every 7200 / 3 = 2400 s = 40 min.  A 5-min write on 512 nodes needs
    # 300 s * 16 GB/s / 512 nodes = 9.375 GB per node.
    io = IOModel(data_per_node_gb=9.375)
    assert io.write_seconds(512) == 300
    model = CheckpointModel(CheckpointKind.APP, app_fraction=0.10, io=io)
    assert model.app_checkpoints(7200, 512) == (2, 2400)
    assert model.checkpoint_points(runtime=7200, walltime=7200, nodes=512) == [2400, 4800]
    # A job that ends before the second checkpoint point takes only one.
    assert model.checkpoint_points(runtime=3000, walltime=7200, nodes=512) == [2400]


def test_parse_checkpoint_models():
    assert CheckpointModel.parse("APP-CKPT-5%").app_fraction == pytest.approx(0.05)
    assert CheckpointModel.parse("sys:1800").sys_interval == 1800
    assert CheckpointModel.parse("jit").kind is CheckpointKind.JIT
    assert CheckpointModel.parse("no").kind is CheckpointKind.NO
    with pytest.raises(ValueError):
        CheckpointModel.parse("sometimes")


def one_job(runtime: int, walltime: int | None = None, nodes: int = 512) -> Workload:
    return Workload([Job(1, 0, runtime, walltime or runtime, nodes)])


def outcome(result, job_id=1):
    return result.outcome_by_id()[job_id]


def test_no_ckpt_preemption_loses_all_work():
    # Run [0,5000), preempted at 5000 with NO-CKPT: 5000 s lost, restart from 0 at 5000 -> ends 15000.
    plan = {0: [Start(1)], 5000: [Preempt(1), Start(1)]}
    r = run_validated(one_job(10000), FlatCluster(1024), ScriptPolicy(plan),
                      checkpoint=CheckpointModel(CheckpointKind.NO))
    o = outcome(r)
    assert (o.end, o.t_lost, o.t_ckpt, o.t_restart, o.n_preemptions) == (15000, 5000, 0, 0, 1)
    assert job_columns(r)["lost_node_seconds"].tolist() == [5000 * 512]  # the metrics module's figure


def test_sys_ckpt_periodic_writes_and_lost_work():
    # SYS every 3600 s of work, write = read = 512 s (512 nodes):
    #   run [0,3600) ckpt [3600,4112) (saves 3600) run [4112,7712) ckpt [7712,8224) (saves 7200)
    #   run from 7200 at 8224; preempted at 9000 -> progress 7976, lost 776.
    #   restart at 9000: read [9000,9512), run 2800 s -> ends 12312 (next point 10800 > runtime).
    plan = {0: [Start(1)], 9000: [Preempt(1), Start(1)]}
    r = run_validated(one_job(10000), FlatCluster(1024), ScriptPolicy(plan),
                      checkpoint=CheckpointModel(CheckpointKind.SYS, sys_interval=3600))
    o = outcome(r)
    assert (o.end, o.t_ckpt, o.t_restart, o.t_lost) == (12312, 1024, 512, 776)
    kinds = [(s.kind, s.start, s.end) for s in r.schedule]
    assert kinds[:5] == [("run", 0, 3600), ("ckpt", 3600, 4112), ("run", 4112, 7712), ("ckpt", 7712, 8224),
                         ("run", 8224, 9000)]
    assert kinds[5:] == [("restart", 9000, 9512), ("run", 9512, 12312)]


def test_sys_ckpt_without_preemption_costs_only_writes():
    # 10000 s job: checkpoints at 3600 and 7200 -> 2 writes of 512 s -> ends at 11024.
    r = run_validated(one_job(10000), FlatCluster(1024), ScriptPolicy({0: [Start(1)]}),
                      checkpoint=CheckpointModel(CheckpointKind.SYS))
    assert outcome(r).end == 10000 + 2 * 512


def test_app_ckpt_interval_from_walltime():
    # APP 10 %, walltime 12000, write 512: floor(1200/512) = 2 checkpoints every 12000 // 3 = 4000 s.
    # runtime 10000 -> writes at progress 4000 and 8000: ends at 10000 + 1024 = 11024.
    # Preempt at 6000 (progress 6000 - 512 = 5488, last checkpoint 4000): lost 1488.
    model = CheckpointModel(CheckpointKind.APP, app_fraction=0.10)
    plan = {0: [Start(1)], 6000: [Preempt(1)], 7000: [Start(1)]}
    r = run_validated(one_job(10000, 12000), FlatCluster(1024), ScriptPolicy(plan), checkpoint=model)
    o = outcome(r)
    # restart: read [7000,7512), run from 4000 to 8000 [7512,11512), write [11512,12024), run 2000 -> 14024.
    assert (o.t_lost, o.t_restart, o.t_ckpt, o.end) == (1488, 512, 1024, 14024)


def test_jit_preemption_delays_the_rt_job_by_the_write():
    # 4-block toy.  BJ (2048 nodes, p6) runs from 0; at 1000 an RT job takes p6 with JIT:
    #   BJ writes [1000,1512) (512 s) saving 1000 s of work, no work lost;
    #   RT starts at 1512 (JIT delay 512), runs 300 -> 1812; BJ restarts at 1812 with a 512 s read
    #   and runs its remaining 4000 s -> 6324.
    m = AlignedMira(4)
    wl = Workload([Job(1, 0, 5000, 6000, 2048), Job(2, 1000, 300, 600, 2048, kind="rt")])
    plan = {0: [Start(1, 6)], 1000: [Preempt(1, CheckpointModel(CheckpointKind.JIT)), Start(2, 6)],
            1812: [Start(1, 6)]}
    r = run_validated(wl, m, ScriptPolicy(plan))
    bj, rt = outcome(r, 1), outcome(r, 2)
    assert (rt.first_start, rt.end, rt.jit_delay) == (1512, 1812, 512)
    assert (bj.t_ckpt, bj.t_restart, bj.t_lost, bj.end, bj.n_preemptions) == (512, 512, 0, 6324, 1)


def test_jit_rt_job_waits_for_the_slowest_write():
    # Two BJs on p0 (512 nodes, write 512 s) and p5 (1024 nodes, write 512 s) but the p5 job uses a
    # slower I/O model?  Same model: both 512 s; make the p0 job start later so its write ends later:
    # both preempted at 2000 -> writes end at 2512; RT on p6 starts at 2512.
    m = AlignedMira(4)
    wl = Workload([Job(1, 0, 9000, 9000, 512), Job(2, 0, 9000, 9000, 1024), Job(3, 2000, 100, 100, 2048, kind="rt")])
    jit = CheckpointModel(CheckpointKind.JIT)
    plan = {0: [Start(1, 0), Start(2, 5)], 2000: [Preempt(1, jit), Preempt(2, jit), Start(3, 6)],
            2612: [Start(1, 0), Start(2, 5)]}
    r = run_validated(wl, m, ScriptPolicy(plan))
    assert outcome(r, 3).first_start == 2512
    assert outcome(r, 3).jit_delay == 512


def test_cannot_start_on_a_busy_partition_or_preempt_non_checkpointable():
    from rtsched.errors import DecisionError

    m = AlignedMira(4)
    wl = Workload([Job(1, 0, 100, 100, 2048, checkpointable=False), Job(2, 10, 10, 10, 512, kind="rt")])
    with pytest.raises(DecisionError, match="busy"):
        run_validated(wl, m, ScriptPolicy({0: [Start(1, 6)], 10: [Start(2, 0)]}))
    with pytest.raises(DecisionError, match="cannot be checkpointed"):
        run_validated(wl, m, ScriptPolicy({0: [Start(1, 6)], 10: [Preempt(1)]}))


def test_system_core_hours_lost():
    # Two preemptions under NO-CKPT on a 1024-node flat cluster with a 512-node job:
    # lost 1000 + 2000 s -> 3000 * 512 node-seconds.
    plan = {0: [Start(1)], 1000: [Preempt(1), Start(1)], 3000: [Preempt(1), Start(1)]}
    r = run_validated(one_job(4000), FlatCluster(1024), ScriptPolicy(plan))
    o = outcome(r)
    assert o.n_preemptions == 2 and o.t_lost == 3000 and o.end == 7000
    assert int(job_columns(r)["lost_node_seconds"].sum()) == 3000 * 512


def test_a_stale_event_is_no_scheduling_point():
    """A preempted job's completion event stays in the heap, stale; the time it falls at (when the job would
    have ended: its runtime, which an online policy must not learn) is no scheduling point.
    Job 1 (5000 s) runs from 0, is preempted (NO) at 1000 for job 2 (100 s, submitted at 10), waits, and is
    restarted at 6000 by a wake-up: passes at 0 (arrival), 10 (arrival), 1000 (wake), 1100 (job 2 ends, job 1
    waits) and 6000 (wake) — not at 5000, where job 1's first stint would have ended."""
    plan = {0: [Start(1)], 1000: [Preempt(1), Start(2)], 6000: [Start(1)]}
    script = ScriptPolicy(plan)
    passes = []

    class Recorder:
        name = "recorder"

        def decide(self, view):
            passes.append(view.now)
            return script.decide(view)

    wl = Workload([Job(1, 0, 5000, 5000, 1024), Job(2, 10, 100, 100, 1024)])
    r = run_validated(wl, FlatCluster(1024), Recorder(), checkpoint=CheckpointModel(CheckpointKind.NO))
    assert passes == [0, 10, 1000, 1100, 6000]
    assert outcome(r).end == 11000
