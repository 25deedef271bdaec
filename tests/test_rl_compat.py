"""RLScheduler compatibility mode: Table V of seed 003, hand-worked committed-head toys, trace cleaning."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import run_validated, shared_data
from heuristics import batch_policy
from heuristics.committed import CommittedHeadPolicy
from heuristics.priorities import PRIORITIES, get_priority
from rtsched.errors import InputError
from rtsched.jobs import Job, Workload
from rtsched.machines import AlignedMira, FlatCluster
from rtsched.rl.sequences import run_sequence
from rtsched.rl.trace import read_rl_trace
from rtsched.sim.core import Simulator

# Seed 003, §7: the paper's ten evaluation sequences on Lublin-1 (0-based first jobs, 1024 jobs each).
TABLE_V_STARTS = [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085]
# Table V, Lublin-1 row: average bounded slowdown (τ = 10 s), mean over the ten sequences.
TABLE_V = {
    ("fcfs", "none"): "7273.8", ("wfp3-authors", "none"): "19754", ("unicep-authors", "none"): "22275",
    ("sjf", "none"): "277.35", ("f1", "none"): "258.37",
    ("fcfs", "rlscheduler"): "235.82", ("wfp3-authors", "rlscheduler"): "133.87",
    ("unicep-authors", "rlscheduler"): "307.23", ("sjf", "rlscheduler"): "73.31", ("f1", "rlscheduler"): "75.07",
}


@pytest.fixture(scope="module")
def lublin1():
    return read_rl_trace(str(shared_data("traces", "swf", "lublin_256.swf")))


def _tolerance(printed: str) -> float:
    """Relative 1e-3 of the value, or half a unit of the table's last printed digit if larger."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return max(1e-3 * float(printed), 0.5 * 10.0 ** -decimals)


@pytest.mark.parametrize("priority,backfill", sorted(TABLE_V))
def test_table_v_heuristics_lublin1(lublin1, priority, backfill):
    vals = [run_sequence(lublin1, s, 1024, priority, backfill=backfill)["bsld"] for s in TABLE_V_STARTS]
    printed = TABLE_V[(priority, backfill)]
    assert np.mean(vals) == pytest.approx(float(printed), abs=_tolerance(printed))


def test_lublin1_cleaning(lublin1):
    assert len(lublin1) == 10000
    assert lublin1.max_nodes == 256 and lublin1.max_procs == 256
    assert np.array_equal(lublin1.walltime, lublin1.runtime)  # requested time −1 → runtime everywhere
    assert lublin1.max_runtime == 124707  # the jobs' largest runtime (the header says MaxRuntime 162754)


def _wl(rows):
    return Workload([Job(i, s, r, w, n) for i, s, r, w, n in rows])


def _starts(res):
    return {o.job.id: o.first_start for o in res.outcomes}


def _compat(rows, priority, backfill, machine=None):
    machine = machine or FlatCluster(10)
    return _starts(run_validated(_wl(rows), machine, CommittedHeadPolicy(priority, backfill),
                                 event_order="rlscheduler"))


def test_committed_head_is_not_re_chosen():
    # (id, submit, runtime, walltime, nodes) on 10 processors.  t=0: job1 [0,10).  t=1: job2 is the only
    # waiting job -> committed; it needs 6, 4 free.  t=2: job3 (shorter) arrives but the head stays job2.
    # t=10: job2 [10,30); job3 is the next head, 4 free -> waits.  t=30: job3 [30,31).
    rows = [(1, 0, 10, 10, 6), (2, 1, 20, 20, 6), (3, 2, 1, 1, 6)]
    assert _compat(rows, "sjf", "none") == {1: 0, 2: 10, 3: 30}
    # Textbook SJF re-sorts at t=10 and starts job3 first.
    assert _starts(run_validated(_wl(rows), FlatCluster(10), batch_policy("sjf", "none"))) == {1: 0, 2: 11, 3: 10}


BF = [(1, 0, 10, 10, 6), (2, 0, 5, 5, 8), (3, 1, 9, 9, 4), (4, 1, 8, 8, 4)]


def test_rlscheduler_backfilling_strict_rule():
    # t=0: job1 [0,10); job2 (8) blocks, shadow = 10.  t=1: job3 ends at 1+9 = 10, not < 10 -> stays;
    # job4 ends at 9 < 10 and 4 are free -> [1,9).  t=10: job2 [10,15); job3 head, 2 free, shadow 15.
    # t=15: job3 [15,24).
    assert _compat(BF, "fcfs", "rlscheduler") == {1: 0, 2: 10, 3: 15, 4: 1}


def test_easy_backfilling_on_committed_head():
    # EASY: shadow 10 and 2 extra nodes.  t=1: job3 ends at 10 <= 10 -> [1,10); job4: 0 free.
    # t=10: job1 and job3 end (one at a time); job2 [10,15); job4 head, 2 free -> t=15.
    assert _compat(BF, "fcfs", "easy") == {1: 0, 2: 10, 3: 1, 4: 15}


def test_shadow_time_is_computed_once():
    # job1 overruns its walltime (run 20, walltime 10): job2's shadow stays 10 as computed when it blocked.
    # t=12: job3 (4 nodes, 5 s) fits in the 4 free processors but 12 + 5 >= 10 -> not backfilled.
    rows = [(1, 0, 20, 10, 6), (2, 0, 5, 5, 8), (3, 12, 5, 5, 4)]
    assert _compat(rows, "fcfs", "rlscheduler") == {1: 0, 2: 20, 3: 25}


def test_arrival_before_completion_at_equal_time():
    # job2 arrives at 10 when job1 ends at 10: the arrival is taken first (queue [job2], head job2 blocked
    # until job1's completion is processed at the same time), so job2 still starts at 10.
    rows = [(1, 0, 10, 10, 10), (2, 10, 5, 5, 10)]
    assert _compat(rows, "fcfs", "none") == {1: 0, 2: 10}


def test_compat_on_mira_partitions():
    # 4-block Mira toy: job1 on one block [0,100); job2 needs all four blocks -> committed, waits;
    # job3 (1024 nodes, walltime 40) ends before the shadow 100 -> backfilled at 0; job4 (512, 200 s)
    # would end after the shadow -> waits; t=100: job2 [100,150); t=150: job4.
    rows = [(1, 0, 100, 100, 512), (2, 0, 50, 50, 2048), (3, 0, 30, 40, 1024), (4, 10, 200, 200, 512)]
    assert _compat(rows, "fcfs", "rlscheduler", AlignedMira(4)) == {1: 0, 2: 100, 3: 0, 4: 150}
    assert _compat(rows, "fcfs", "none", AlignedMira(4)) == {1: 0, 2: 100, 3: 150, 4: 150}


def test_priority_keys_and_authors_defect():
    class Info:
        def __init__(self, submit, walltime, nodes, id=1):
            self.submit, self.walltime, self.nodes, self.id = submit, walltime, nodes, id

    class JS:
        def __init__(self, *a):
            self.info = Info(*a)

    def key(name, js, now=0, total=0):
        return get_priority(name).key(js, now, total)

    js = JS(1000, 50, 4)
    assert key("f1", js) == pytest.approx(math.log10(50) * 4 + 870 * math.log10(1000))
    assert key("f1", JS(0, 0, 2)) == pytest.approx(2 * math.log10(0.1) + 870 * math.log10(0.1))
    now = 1600
    assert key("wfp3", js, now) == pytest.approx(-((600 / 50) ** 3) * 4)
    assert key("wfp3-authors", js, now) == pytest.approx(((1001 / 50) ** 3) * 4)
    assert key("unicep", js, now) == pytest.approx(-600 / (2 * 50))
    assert key("unicep-authors", js, now) == pytest.approx(1001 / (2 * 50))
    # Cobalt's wfp2 (highest utility first): q^2 / r^3 * n / N with q = 600, r = 50, n = 4, N = 16.
    assert key("wfp2", js, now, 16) == pytest.approx(-(600 ** 2) / 50 ** 3 * 4 / 16)
    assert not get_priority("wfp3").static and get_priority("wfp3-authors").static
    assert {"fcfs", "sjf", "f1", "wfp3", "unicep", "lcfs", "saf", "srf", "wfp2", "unicef"} <= set(PRIORITIES)
    # The textbook order breaks ties by submit time, then id; the key itself is the paper's.
    assert get_priority("sjf").textbook_key(js, 0, 0) == ((50, 1000), 1000, 1)
    with pytest.raises(ValueError, match="unknown priority"):
        get_priority("nope")


def test_heuristics_priority_runs_in_compat_mode():
    rows = [(1, 0, 10, 10, 6), (2, 1, 20, 20, 6), (3, 2, 1, 1, 6)]
    res = Simulator(_wl(rows), FlatCluster(10), event_order="rlscheduler").run(CommittedHeadPolicy("wfp2", "easy"))
    assert all(o.first_start >= 0 for o in res.outcomes)


def test_read_rl_trace_rules(tmp_path):
    p = tmp_path / "t.swf"
    p.write_text("; MaxNodes: 8\n; MaxProcs: 16\n"
                 "1 0 -1 100 4 -1 -1 6 -1 -1 1 3 1 2 0 -1 -1 -1\n"  # procs max(4, 6) = 6, request -1 -> 100
                 "2 5 -1 0 2 -1 -1 2 50 -1 1 3 1 2 0 -1 -1 -1\n"  # runtime 0 -> dropped
                 "3 9 -1 30 3 -1 -1 -1 60 512 1 4 2 7 0 -1 -1 -1\n")
    tr = read_rl_trace(str(p))
    assert [j.id for j in tr.jobs] == [1, 3]
    assert tr.jobs[0].walltime == 100 and tr.jobs[1].walltime == 60
    assert list(tr.procs) == [6, 3] and [j.nodes for j in tr.jobs] == [3, 2]  # 2 processors per node
    assert list(tr.memory) == [-1, 512] and list(tr.executable) == [2, 7]
    bad = tmp_path / "bad.swf"
    bad.write_text("1 0 -1 100 4\n")
    with pytest.raises(InputError, match=r"bad\.swf, line 1"):
        read_rl_trace(str(bad))


def test_run_sequence_reports_both_metrics(lublin1):
    r = run_sequence(lublin1, 1981, 64, "sjf", backfill="rlscheduler", goals=("bsld", "wait", "utilization"))
    assert r["bsld"] >= 1.0 and r["wait"] >= 0.0 and 0.0 < r["utilization"] <= 1.0


def test_trace_simulator_reuses_job_infos_with_the_same_schedule(lublin1):
    # RLTrace.simulator hands the core prepared JobInfo records: the schedule must equal that of a
    # simulator that builds its own, and a mismatched list must be refused.
    machine = FlatCluster(lublin1.max_nodes)
    fast = lublin1.simulator(2756, 300, machine).run(CommittedHeadPolicy("sjf", "rlscheduler"))
    plain = Simulator(lublin1.window(2756, 300), machine, event_order="rlscheduler",
                      record_schedule=False).run(CommittedHeadPolicy("sjf", "rlscheduler"))
    assert [o.first_start for o in fast.outcomes] == [o.first_start for o in plain.outcomes]
    infos = lublin1.cache["job_infos"]
    assert infos[2756].id == lublin1.jobs[2756].id and infos[2756].walltime == lublin1.jobs[2756].walltime
    with pytest.raises(ValueError, match="job_infos"):
        Simulator(lublin1.window(2756, 300), machine, job_infos=infos[2757:3057])


@pytest.mark.parametrize("priority", ["sjf", "fcfs", "f1", "smallest"])
@pytest.mark.parametrize("backfill", ["none", "rlscheduler", "easy"])
def test_incremental_key_order_equals_full_stable_sorts(priority, backfill):
    # The policy keeps its queue sorted between picks (insort of new jobs); the authors re-sort the
    # whole queue stably at every pick.  Many equal keys (few distinct walltimes, sizes and submit
    # times) make any difference in tie order show in the start times.
    class FullSort(CommittedHeadPolicy):
        def _pick_tracked(self, q, view):
            return self.pick(q, view)

    rng = np.random.default_rng(7)
    for _ in range(5):
        n = 300
        submit = np.sort(rng.integers(0, 4000, n) // 100 * 100)
        jobs = [Job(i + 1, int(submit[i]), int(rng.choice([50, 100, 400])), int(rng.choice([60, 120, 400])),
                    int(rng.choice([1, 2, 4, 8]))) for i in range(n)]
        jobs = [Job(j.id, j.submit, min(j.runtime, j.walltime), j.walltime, j.nodes) for j in jobs]
        wl = Workload(jobs)
        starts = []
        for cls in (CommittedHeadPolicy, FullSort):
            res = Simulator(wl, FlatCluster(8), event_order="rlscheduler", record_schedule=False).run(
                cls(priority, backfill))
            starts.append([o.first_start for o in res.outcomes])
        assert starts[0] == starts[1]
