"""The one-call API, resource ranges, figures for any run, and the evalys / Batsim exports."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rtsched
from rtsched.cli import main
from rtsched.jobs import Job, Workload
from rtsched.machines import AlignedMira, FlatCluster
from rtsched.resources import bit_runs, ranges_text, segment_ranges
from rtsched.schedule import Schedule, Segment

REPO = Path(__file__).resolve().parents[1]
SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")


def test_simulate_api_equals_the_command_line(capsys):
    run = rtsched.simulate(SAMPLE, policy="fcfs", backfill="easy", first_n=300)
    assert main(["simulate", SAMPLE, "--policy", "fcfs", "--backfill", "easy", "--first-n", "300", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert run.summary == cli["summary"] and run.to_json()["trace_sha256"] == cli["trace_sha256"]
    assert len(run.jobs) == 300 and list(run.jobs["id"])[:3] == [1, 2, 3]
    assert len(run.schedule) == 300  # one run segment per job, no preemption


def test_simulate_takes_a_workload_or_a_dataframe():
    jobs = [Job(1, 0, 100, 200, 2), Job(2, 10, 50, 60, 4), Job(3, 20, 30, 40, 4)]
    by_workload = rtsched.simulate(Workload(jobs), machine="flat:4", policy="fcfs", backfill="none")
    frame = Workload(jobs).to_frame()[["id", "submit", "runtime", "walltime", "nodes"]]
    by_frame = rtsched.simulate(frame, machine="flat:4", policy="fcfs", backfill="none")
    starts = {o.job.id: o.first_start for o in by_frame.record.outcomes}
    assert starts == {o.job.id: o.first_start for o in by_workload.record.outcomes} == {1: 0, 2: 100, 3: 150}
    with pytest.raises(ValueError, match="walltime"):
        rtsched.simulate(frame.drop(columns="walltime"), machine="flat:4")


def test_bit_runs_and_interval_text():
    assert bit_runs(0b1110011) == [(0, 2), (4, 7)] and bit_runs(0) == []
    assert ranges_text([(0, 4), (8, 9)]) == "0-3 8"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 30), st.integers(1, 8)), min_size=1, max_size=25))
def test_flat_processor_ranges_never_overlap_and_have_the_right_size(jobs):
    # A valid flat schedule built by the simulator; the assigned processor ids of segments that
    # overlap in time are disjoint, each segment gets exactly its node count, all ids < capacity.
    wl = Workload([Job(i + 1, s, r, r, n) for i, (s, r, n) in enumerate(jobs)])
    run = rtsched.simulate(wl, machine="flat:8", policy="fcfs", backfill="easy")
    segs = run.schedule.segments
    rmap = segment_ranges(run.schedule, FlatCluster(8))
    for seg, ranges in zip(segs, rmap.ranges):
        assert sum(hi - lo for lo, hi in ranges) == seg.nodes
        assert all(0 <= lo < hi <= 8 for lo, hi in ranges)
    for i, a in enumerate(segs):
        ids_a = {p for lo, hi in rmap.ranges[i] for p in range(lo, hi)}
        for j in range(i + 1, len(segs)):
            b = segs[j]
            if a.start < b.end and b.start < a.end:
                assert not ids_a & {p for lo, hi in rmap.ranges[j] for p in range(lo, hi)}


def test_partition_ranges_are_the_partition_blocks():
    m = AlignedMira(4)
    p = next(q for q in m.partitions if q.nodes == 1024 and q.first_block == 2)
    sched = Schedule([Segment(1, 0, 10, "run", p.index, 1024, 0, 10)])
    rmap = segment_ranges(sched, m)
    assert rmap.ranges == [[(2, 4)]] and rmap.units == 4 and rmap.unit_nodes == 512


def test_figures_for_any_run_keep_the_users_backend(tmp_path):
    import matplotlib

    before = matplotlib.get_backend()
    run = rtsched.simulate(scheme="wcjs-jit", rt_percent=10)
    for name, fig in (("gantt", run.plot_gantt(time_unit="d")), ("util", run.plot_utilization()),
                      ("sd", run.plot_slowdowns())):
        path = tmp_path / f"{name}.png"
        fig.savefig(path, dpi=50)
        assert path.stat().st_size > 5000
    assert matplotlib.get_backend() == before
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []  # nothing registered with pyplot


def test_learning_curve_from_a_history():
    from rtsched.plots import learning_curve

    hist = [{"epoch": e, "mean_return": -100.0 / e, "min_return": -200.0 / e, "max_return": -50.0 / e}
            for e in range(1, 6)]
    fig = learning_curve(hist, title="toy")
    line = fig.axes[0].get_lines()[0]
    assert list(line.get_xdata()) == [1, 2, 3, 4, 5] and line.get_ydata()[0] == -100.0
    assert fig.axes[0].collections  # the min-max band
    # Several runs: one panel each (seed 003 Fig. 10), titled by run, each with its own y range.
    far = [{"epoch": e, "mean_return": -2000.0 / e} for e in range(1, 4)]
    fig = learning_curve({"a": hist, "b": far})
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["a (5 epochs)", "b (3 epochs)"]
    assert len(axes[1].get_lines()[0].get_xdata()) == 3
    assert axes[0].get_ylim()[0] > -250 and axes[1].get_ylim()[0] < -1900
    assert axes[0].collections and not axes[1].collections  # band only where min/max were recorded


def test_evalys_jobs_csv_and_batsim_workload(tmp_path, capsys):
    out = tmp_path / "jobs.csv"
    assert main(["simulate", SAMPLE, "--policy", "fcfs", "--first-n", "60", "--evalys-out", str(out), "--json"]) == 0
    capsys.readouterr()
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 60 and rows[0]["final_state"] == "COMPLETED_SUCCESSFULLY"
    r = rows[0]
    assert int(r["finish_time"]) - int(r["starting_time"]) == int(r["execution_time"])
    assert int(r["starting_time"]) - int(r["submission_time"]) == int(r["waiting_time"])
    n = sum(int(b) - int(a) + 1 if "-" in part else 1
            for part in r["allocated_resources"].split() for a, b in [(part.split("-") + [part])[:2]])
    assert n == int(r["requested_number_of_resources"])
    bats = tmp_path / "w.json"
    assert main(["traces", "convert", SAMPLE, str(bats)]) == 0
    data = json.loads(bats.read_text())
    assert data["nb_res"] == 256 and len(data["jobs"]) == 2000
    job = data["jobs"][0]
    assert data["profiles"][job["profile"]]["type"] == "delay" and job["res"] >= 1


def test_study_boxplots_use_a_log_scale_only_where_slowdowns_span_decades():
    import pandas as pd

    from rtsched.plots import study_boxplots

    rows = [{"kind": kind, "rt_percent": 10, "scheme": "baseline", "bsld": v, "turnaround": 3600.0}
            for kind, vals in (("rt", [1.0, 1.5, 2.0, 3.0]), ("batch", [1.0, 10.0, 100.0, 200.0])) for v in vals * 5]
    fig = study_boxplots(pd.DataFrame(rows), schemes=["baseline"])
    (rt_sd, bj_sd), (rt_ta, bj_ta) = fig.axes[0:2], fig.axes[2:4]
    assert (rt_sd.get_yscale(), bj_sd.get_yscale(), bj_ta.get_yscale()) == ("linear", "log", "linear")
    fig = study_boxplots(pd.DataFrame(rows), schemes=["baseline"], log_slowdown=False)
    assert fig.axes[1].get_yscale() == "linear"


@pytest.mark.parametrize("plot", ["plot_gantt", "plot_utilization"])
@pytest.mark.parametrize("unit", ["weeks", None, 3])
def test_an_unknown_time_unit_names_the_parameter_and_the_units(plot, unit):
    import matplotlib.pyplot as plt

    import rtsched
    from rtsched.errors import OptionError

    run = rtsched.simulate(SAMPLE, policy="fcfs", first_n=20)
    figures = plt.get_fignums()
    with pytest.raises(OptionError) as info:
        getattr(run, plot)(time_unit=unit)
    assert str(info.value) == f"time_unit: unknown unit {unit!r}; choose from s, min, h, d"
    assert plt.get_fignums() == figures  # refused before a figure was made
    assert getattr(run, plot)(time_unit="d") is not None


def test_window_sweep_draws_each_configurations_teacher_beside_the_agent():
    from rtsched.plots import window_sweep

    rows = [{"head": 4, "tail": 0, "avg_wait": 7200.0, "avg_queue": 3.0, "teacher_wait": 3600.0},
            {"head": 2, "tail": 2, "avg_wait": 3600.0, "avg_queue": 2.0, "teacher_wait": 1800.0}]
    fig = window_sweep(rows, references={"EASY": (5400.0, 2.5)})
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert list(lines["agent: average wait (h, left)"].get_ydata()) == [2.0, 1.0]  # hours, by tail 0, 2
    assert list(lines["its SJF window teacher: average wait (h, left)"].get_ydata()) == [1.0, 0.5]
    plain = window_sweep([{k: v for k, v in r.items() if k != "teacher_wait"} for r in rows])
    assert not any("teacher" in ln.get_label() for ln in plain.axes[0].get_lines())
