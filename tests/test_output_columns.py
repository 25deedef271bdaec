"""The output side of a run on columns (issue 25): outcome columns and their views, the one-pass
validator against a job-by-job reference on random valid and broken schedules, and the metrics
from columns against hand-worked values and against the table path."""
from __future__ import annotations

import pickle
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from heuristics import batch_policy
from rtsched.checkpoint import DEFAULT_IO, CheckpointModel
from rtsched.errors import ScheduleError
from rtsched.jobs import Job, Workload
from rtsched.machines import AlignedMira, FlatCluster
from rtsched.metrics import job_columns, job_table, summarize, summary_dict, utilization
from rtsched.schedule import RUN, Schedule, Segment
from rtsched.sim.core import Simulator
from rtsched.sim.decisions import Kill, Preempt, WakeAt
from rtsched.sim.state import RUNNING
from rtsched.sim.result import OUTCOME_FIELDS, Outcomes
from rtsched.validate import _check_job, _check_partitions, validate_schedule
from test_sim_properties import ChaosPolicy as PreemptingChaos


# ----------------------------------------------------------------------------- outcome columns
def test_outcome_views_read_and_write_the_columns():
    jobs = [Job(5, 0, 10, 10, 2), Job(9, 3, 20, 30, 1)]
    outs = Outcomes(jobs, [2, 4])
    assert len(outs) == 2 and outs[1].job is jobs[1] and outs[-1].job is jobs[1]
    assert [(o.first_start, o.end, o.allocated_nodes, o.t_lost) for o in outs] == [(-1, -1, 2, 0), (-1, -1, 4, 0)]
    assert not outs.has_any("t_lost") and not outs._sparse  # rarely-set fields take no room until set
    outs[0].end = 12
    outs[1].t_lost += 7
    outs[1].n_kills = 1
    outs[0].t_ckpt = 0  # a 0 builds no column
    assert outs.end.tolist() == [12, -1] and outs.column("t_lost").tolist() == [0, 7]
    assert sorted(outs._sparse) == ["n_kills", "t_lost"] and outs.has_any("t_lost")
    assert outs.column("jit_delay").tolist() == [0, 0] and outs[0].finished and not outs[1].finished
    assert outs[1] == outs[1] and outs[0] != outs[1] and outs[0:2] == [outs[0], outs[1]]
    assert "t_lost=7" in repr(outs[1]) and outs[1].values() == (jobs[1], -1, -1, 4, 0, 1, 0, 0, 7, 0)
    with pytest.raises(IndexError):
        outs[2]
    with pytest.raises(AttributeError):
        outs.get("t_nothing", 0)
    with pytest.raises(KeyError):
        outs.column("t_nothing")
    ids = outs.job_column("id")
    assert ids.tolist() == [5, 9] and outs.job_column("id") is ids and not ids.flags.writeable
    assert outs.job_column("is_rt").tolist() == [False, False]
    with pytest.raises(ValueError):
        Outcomes(jobs, [1])


def test_a_run_fills_the_columns_and_the_result_pickles():
    wl = Workload([Job(1, 0, 100, 100, 4), Job(2, 10, 50, 60, 2), Job(3, 20, 700, 800, 2)])
    sim = Simulator(wl, FlatCluster(4))
    res = sim.run(batch_policy("fcfs", "none"))
    assert res.outcomes.first_start.tolist() == [0, 100, 100] and res.outcomes.end.tolist() == [100, 150, 800]
    assert res.end_time == 800 and set(OUTCOME_FIELDS) >= {"first_start", "end", "t_lost"}
    back = pickle.loads(pickle.dumps(res))
    assert [o.values()[1:] for o in back.outcomes] == [o.values()[1:] for o in res.outcomes]
    assert back.schedule == res.schedule


# --------------------------------------------------------------------- the validator vs a reference
class ChaosPolicy(PreemptingChaos):
    """``test_sim_properties``' chaos policy (FCFS+EASY with random preemptions, seeded) that also
    kills a random running job now and then and preempts only checkpointable jobs: runs with every
    kind of segment and accounting."""

    def decide(self, view):
        running = sorted((js for js in view.running.values() if js.status == RUNNING), key=lambda js: js.info.id)
        if running and self.rng.random() < self.rate:
            victim = self.rng.choice(running)
            if self.rng.random() < 0.3:
                return [Kill(victim.info.id), WakeAt(view.now + 1)]
            if victim.info.kind == "batch" and victim.info.checkpointable:
                return [Preempt(victim.info.id, self.model), WakeAt(view.now + 1)]
        return self.inner.decide(view)


def reference_validate(schedule, workload, machine, io=DEFAULT_IO, *, forbid_rt_preemption=True,
                       max_preemptions=None, outcomes=None) -> None:
    """The validator's rules the plain way: every job's segments (sorted by start, end; produced
    order on ties) walked by the rules of one job, the jobs in the order of their first segment,
    then the capacity by an event sweep over Python tuples (ends first at equal times, then by
    nodes and job id)."""
    segs = list(schedule.segments)
    jobs = {j.id: j for j in workload.jobs}
    present = {s.job_id for s in segs}
    missing = [j.id for j in workload.jobs if j.id not in present]
    if missing:
        raise ScheduleError(f"{len(missing)} jobs never ran, e.g. {missing[:5]}")
    unknown = list(dict.fromkeys(s.job_id for s in segs if s.job_id not in jobs))
    if unknown:
        raise ScheduleError(f"segments of unknown jobs {unknown[:5]}")
    acct = None
    if outcomes is not None:
        acct = {o.job.id: (o.t_lost, o.n_preemptions, o.n_kills) for o in outcomes}
    by_job: dict[int, list] = {}
    for i, s in enumerate(segs):
        by_job.setdefault(s.job_id, []).append((s.start, s.end, i, s))
    for jid in sorted(by_job, key=lambda j: by_job[j][0][2]):
        job_segs = [s for *_, s in sorted(by_job[jid], key=lambda x: x[:3])]
        _check_job(jid, job_segs, jobs[jid], machine, io, forbid_rt_preemption, max_preemptions,
                   None if acct is None else acct.get(jid, (0, 0, 0)))
    if machine.partitioned:
        _check_partitions(schedule, machine)
        return
    events = sorted([(s.start, 1, s.nodes, s.job_id) for s in segs] + [(s.end, 0, -s.nodes, s.job_id) for s in segs])
    used = 0
    for t, _, delta, who in events:
        used += delta
        if used > machine.total_nodes:
            raise ScheduleError(f"t={t}: {used} nodes in use on a {machine.total_nodes}-node cluster "
                                f"(job {who} starting)")


def _message(check) -> str | None:
    try:
        check()
    except ScheduleError as exc:
        return str(exc)
    return None


@st.composite
def sparse_workloads(draw, max_nodes: int, sizes: list[int] | None = None, max_jobs: int = 12):
    """Jobs with distinct ids that are consecutive, increasing with gaps, or in no order."""
    n = draw(st.integers(1, max_jobs))
    layout = draw(st.sampled_from(["consecutive", "gaps", "shuffled"]))
    if layout == "consecutive":
        ids = list(range(7, 7 + n))
    else:
        ids = sorted(draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True)))
        if layout == "shuffled":
            random.Random(draw(st.integers(0, 99))).shuffle(ids)
    jobs, t = [], 0
    for jid in ids:
        t += draw(st.integers(0, 300))
        runtime = draw(st.integers(1, 2000))
        nodes = draw(st.sampled_from(sizes)) - draw(st.integers(0, 60)) if sizes else draw(st.integers(1, max_nodes))
        jobs.append(Job(jid, t, runtime, runtime + draw(st.integers(0, 500)), max(nodes, 1),
                        kind=draw(st.sampled_from(["batch", "batch", "rt"])),
                        checkpointable=draw(st.sampled_from([True, True, False]))))
    return Workload(jobs)


MUTATIONS = st.lists(st.tuples(st.sampled_from(["field", "shift", "drop", "dup", "job", "outcome", "swap"]),
                               st.integers(0, 10**6), st.integers(0, 7), st.integers(-3, 3)), max_size=3)


def _mutate(segs: list[Segment], outcomes, ids: list[int], mutations) -> list[Segment]:
    segs = list(segs)
    for op, where, column, delta in mutations:
        if op == "outcome":
            o = outcomes[where % len(outcomes)]
            name = ("t_lost", "n_preemptions", "n_kills")[column % 3]
            setattr(o, name, getattr(o, name) + (delta or 1))
            continue
        if not segs:
            continue
        i = where % len(segs)
        s = segs[i]
        if op == "field":
            if column == 3:  # the kind
                kinds = ["run", "ckpt", "restart"]
                s = s._replace(kind=kinds[(kinds.index(s.kind) + (delta or 1)) % 3])
            else:
                s = s._replace(**{s._fields[column]: s[column] + (delta or 1)})
            segs[i] = s
        elif op == "shift":
            segs[i] = s._replace(start=s.start + delta, end=s.end + delta)
        elif op == "drop":
            del segs[i]
        elif op == "dup":
            segs.insert(where % (len(segs) + 1), s)
        elif op == "job":
            segs[i] = s._replace(job_id=ids[column % len(ids)] if delta else 999_999_999)
        else:  # swap two segments' order in the list (the validator must not care, but the error order may)
            j = (where // 7) % len(segs)
            segs[i], segs[j] = segs[j], segs[i]
    return segs


def _compare(wl, machine, io, segs, outcomes, forbid, max_pre):
    sched = Schedule(segs, machine.name)
    options = dict(forbid_rt_preemption=forbid, max_preemptions=max_pre)
    expected = _message(lambda: reference_validate(sched, wl, machine, io, outcomes=outcomes, **options))
    assert _message(lambda: validate_schedule(sched, wl, machine, io, outcomes=outcomes, **options)) == expected
    if outcomes is not None:  # the same outcomes as plain objects (the generic path)
        plain = list(outcomes)
        assert _message(lambda: validate_schedule(sched, wl, machine, io, outcomes=plain, **options)) == expected
    sched.segments.add(1, 0, 1, 0, -1, 1, 0, 1)  # no view of the segment array outlives the check
    return expected


def _tried(message: str | None) -> None:
    """Record what an example tried (``--hypothesis-show-statistics``): valid, or which rule broke."""
    event("valid" if message is None else re.sub(r"-?\d+", "N", message.split(" (segment")[0]))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=sparse_workloads(16), seed=st.integers(0, 10**6), model=st.sampled_from(["no", "sys:900", "jit"]),
       mutations=MUTATIONS, forbid=st.booleans(), max_pre=st.sampled_from([None, 0, 1, 3]),
       with_outcomes=st.booleans())
def test_validator_matches_the_reference_on_flat_runs(wl, seed, model, mutations, forbid, max_pre, with_outcomes):
    _mutated_run_checked(wl, FlatCluster(16), seed, model, mutations, with_outcomes, forbid, max_pre)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=sparse_workloads(4096, [512, 1024, 2048], max_jobs=10), seed=st.integers(0, 10**6),
       model=st.sampled_from(["no", "app-10", "jit"]), mutations=MUTATIONS, with_outcomes=st.booleans())
def test_validator_matches_the_reference_on_partitioned_runs(wl, seed, model, mutations, with_outcomes):
    _mutated_run_checked(wl, AlignedMira(8), seed, model, mutations, with_outcomes, True, None)


def _mutated_run_checked(wl, machine, seed, model, mutations, with_outcomes, forbid, max_pre) -> None:
    """A chaos run's schedule, mutated, checked by both validators (``_compare``)."""
    ckpt = CheckpointModel.parse(model)
    sim = Simulator(wl, machine, checkpoint=ckpt)
    res = sim.run(ChaosPolicy(seed, 0.3, ckpt))
    segs = _mutate(list(res.schedule.segments), res.outcomes, [j.id for j in wl.jobs], mutations)
    _tried(_compare(wl, machine, sim.io, segs, res.outcomes if with_outcomes else None, forbid, max_pre))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30), st.integers(1, 6)), min_size=1, max_size=30),
       capacity=st.integers(1, 12), shuffle=st.integers(0, 99))
def test_capacity_check_matches_the_event_sweep(rows, capacity, shuffle):
    """One-run jobs only (every one good on its own): the flat capacity check alone decides."""
    jobs = [Job(i + 1, 0, d, d, nodes) for i, (_, d, nodes) in enumerate(rows)]
    segs = [Segment(i + 1, s, s + d, RUN, -1, nodes, 0, d) for i, (s, d, nodes) in enumerate(rows)]
    random.Random(shuffle).shuffle(segs)  # produced in no particular order (ends not sorted)
    machine = FlatCluster(max(capacity, max(n for *_, n in rows)))
    _tried(_compare(Workload(jobs), machine, DEFAULT_IO, segs, None, True, None))
    segs.sort(key=lambda s: s.end)  # produced in end order, as the core does
    _compare(Workload(jobs), machine, DEFAULT_IO, segs, None, True, None)


def test_broken_schedules_found_by_the_reference_are_found():
    """Broken schedules of each kind, by hand, with the message of the job-by-job check."""
    wl = Workload([Job(1, 0, 10, 10, 2), Job(2, 5, 10, 10, 2, kind="rt")])
    wl3 = Workload(wl.jobs + [Job(3, 0, 1, 1, 2)])
    m = FlatCluster(4)
    good = [Segment(1, 0, 10, RUN, -1, 2, 0, 10), Segment(2, 5, 15, RUN, -1, 2, 0, 10)]
    assert _compare(wl, m, DEFAULT_IO, good, None, True, None) is None
    cases = [
        (wl, [good[0], Segment(2, 4, 14, RUN, -1, 2, 0, 10)],
         "job 2: starts at 4, before its submit time 5 (segment run [4, 14))"),
        (wl, [good[0], Segment(2, 5, 9, RUN, -1, 2, 0, 4), Segment(2, 20, 30, RUN, -1, 2, 0, 10)],
         "job 2: was preempted 1 times but is real-time"),
        (wl3, good + [Segment(3, 5, 6, RUN, -1, 2, 0, 1)], "t=5: 6 nodes in use on a 4-node cluster (job 3 starting)"),
        (wl, good[:1], "1 jobs never ran, e.g. [2]"),
    ]
    for workload, segs, message in cases:
        assert _compare(workload, m, DEFAULT_IO, segs, None, True, None) == message


def test_a_failed_check_leaves_the_schedule_growable():
    wl = Workload([Job(1, 0, 10, 10, 2)])
    sched = Schedule([Segment(1, 0, 9, RUN, -1, 2, 0, 9)])
    with pytest.raises(ScheduleError, match="ends at progress 9 s") as info:
        validate_schedule(sched, wl, FlatCluster(2))
    assert info.value.__context__ is None
    sched.segments.add(1, 9, 10, 0, -1, 2, 9, 10)  # no view of the segment array is held by the error
    assert len(sched.segments) == 2


# ------------------------------------------------------------------------------ metrics from columns
def _hand_run():
    """FCFS without backfilling on 4 nodes: job 1 (4 nodes, 100 s) runs [0, 100); job 2 (2 nodes,
    50 s, submitted at 10) and RT job 3 (2 nodes, 700 s, submitted at 20) both start at 100."""
    wl = Workload([Job(1, 0, 100, 100, 4), Job(2, 10, 50, 60, 2), Job(3, 20, 700, 800, 2, kind="rt")])
    return Simulator(wl, FlatCluster(4)).run(batch_policy("fcfs", "none"))


def test_summary_from_columns_golden_by_hand():
    res = _hand_run()
    s = summary_dict(res)
    a, rt, batch = s["summary"]["all"], s["summary"]["rt"], s["summary"]["batch"]
    # waits 0, 90, 80; turnarounds 100, 140, 780
    assert (a["n"], rt["n"], batch["n"]) == (3, 1, 2)
    assert a["mean_wait"] == pytest.approx(170 / 3) and a["median_wait"] == 80.0
    # linear interpolation on sorted waits [0, 80, 90]: index 2q
    assert (a["p5_wait"], a["p25_wait"], a["p75_wait"], a["p95_wait"]) == (8.0, 40.0, 85.0, 89.0)
    assert (batch["mean_wait"], batch["p5_wait"], batch["p95_wait"]) == (45.0, 4.5, 85.5)
    assert rt["mean_turnaround"] == 780.0 and rt["p25_first_wait"] == 80.0
    # SD 1, 140/50, 780/700; bsld τ=600: (wait + max(r, 600)) / max(r, 600) = 1, 690/600, 780/700
    assert batch["mean_sd"] == pytest.approx((1 + 2.8) / 2)
    assert batch["mean_bsld_seed002"] == pytest.approx((1 + 690 / 600) / 2) == batch["mean_bsld"]
    assert rt["mean_bsld_seed002"] == pytest.approx(780 / 700) and rt["mean_bsld_rl"] == pytest.approx(780 / 700)
    # every job narrow (<= 4096 nodes) and short (<= 7200 s)
    assert s["categories"]["narrow-short"]["all"] == a
    assert s["categories"]["wide-long"]["all"]["n"] == 0 and s["categories"]["wide-long"]["all"]["mean_wait"] is None
    # busy 100*4 + 50*2 + 700*2 node-s over [0, 800) on 4 nodes
    assert s["utilization"] == 1900 / 3200 and s["window"] == [0, 800]
    assert (s["jobs_in_window"], s["unfinished"], s["window_selects_jobs"]) == (3, 0, False)
    w = summary_dict(res, window=(5, 30))  # jobs 2 and 3
    assert w["jobs_in_window"] == 2 and w["summary"]["all"]["mean_wait"] == 85.0
    assert w["utilization"] == 1.0 and w["window"] == [5, 30]  # job 1 holds the 4 nodes all through [5, 30)


def test_job_columns_golden_by_hand():
    cols = job_columns(_hand_run())
    assert cols["wait"].tolist() == [0, 90, 80] and cols["turnaround"].tolist() == [100, 140, 780]
    assert cols["kind"].tolist() == ["batch", "batch", "rt"] and cols["category"].tolist() == ["narrow-short"] * 3
    assert cols["sd"].tolist() == [1.0, 2.8, 780 / 700] and cols["id"].tolist() == [1, 2, 3]
    assert list(cols.columns) == list(job_table(_hand_run()).columns)
    cols["wait"][0] = 5  # a fresh table: the run's own columns are untouched
    assert job_columns(_hand_run())["wait"][0] == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=sparse_workloads(16, max_jobs=20), seed=st.integers(0, 10**6), model=st.sampled_from(["no", "jit"]),
       window=st.one_of(st.none(), st.tuples(st.integers(0, 2000), st.integers(0, 3000))),
       bsld=st.sampled_from(["seed002", "rl"]))
def test_summary_from_columns_equals_the_table_path(wl, seed, model, window, bsld):
    """The summary from the run's columns, from ``job_columns`` and from the pandas table agree to
    the last digit (they group the same rows in the same order)."""
    if window is not None and window[1] < window[0]:
        window = (window[1], window[0])
    ckpt = CheckpointModel.parse(model)
    res = Simulator(wl, FlatCluster(16), checkpoint=ckpt).run(ChaosPolicy(seed, 0.2, ckpt))
    fast = summary_dict(res, window, bsld=bsld)
    assert fast == summary_dict(res, window, bsld=bsld, table=job_columns(res, window))
    assert fast == summary_dict(res, window, bsld=bsld, table=job_table(res, window))
    frame = job_table(res, window)
    by = summarize(job_columns(res, window), by=("category", "kind"))
    assert by.equals(summarize(frame, by=("category", "kind")))
    # the per-job definitions, in plain Python
    kept = [o for o in res.outcomes if window is None or window[0] <= o.job.submit < window[1]]
    waits = [o.end - o.job.submit - o.job.runtime for o in kept]
    assert fast["summary"]["all"]["n"] == len(kept) == fast["jobs_in_window"]
    if kept:
        assert fast["summary"]["all"]["mean_wait"] == pytest.approx(sum(waits) / len(waits))
        assert fast["summary"]["all"]["median_wait"] == float(np.median(waits))
    assert utilization(res, window)["busy_node_seconds"] >= 0


def test_summary_of_a_table_with_an_unknown_kind_lists_it_where_present():
    res = _hand_run()
    frame = job_table(res)
    frame.loc[0, "kind"] = "x"
    rows = summarize(frame, by=("category", "kind"))  # every level of the whole column in every category
    assert list(rows.index) == ["all"] + [f"{c}/{k}" for c in ("narrow-short", "narrow-long", "wide-short",
                                                                 "wide-long") for k in ("rt", "batch", "x")]
    assert rows.loc["narrow-short/x", "n"] == 1 and rows.loc["narrow-long/x", "n"] == 0
    s = summary_dict(res, table=frame)  # each category lists the levels of its own rows
    assert list(s["categories"]["narrow-short"]) == ["all", "rt", "batch", "x"]
    assert list(s["categories"]["wide-long"]) == ["all", "rt", "batch"]
    assert s["summary"]["x"]["n"] == 1 and s["summary"]["batch"]["mean_wait"] == 90.0


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=300))
def test_figures_of_a_scratch_copy_equal_those_of_the_values(values):
    """The percentiles may reorder a scratch copy; the mean is the one of the values in their order."""
    from rtsched.metrics import _stats

    v = np.array(values)
    assert _stats(v.copy(), scratch=True) == _stats(v) == {
        "mean": float(v.mean()), **dict(zip(("median", "p5", "p25", "p75", "p95"),
                                            map(float, np.percentile(v, [50, 5, 25, 75, 95]))))}
