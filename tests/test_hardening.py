"""Issue 26: values that were silently accepted, misleading messages, tracebacks from the Python
API, and what `rtsched simulate` says about its run.  Each bad value gets a clear error that names
the option or parameter and the value, or a warning; nothing is written first."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from rtsched.cli import main

REPO = Path(__file__).resolve().parents[1]
SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")
INSTANCE = REPO / "traces" / "instances" / "table3-00.json"


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


# ------------------------------------------------------------------------ silently accepted
def test_a_partition_file_with_a_duplicate_name_is_refused(tmp_path, capsys):
    xml = tmp_path / "p.xml"
    xml.write_text('<PartitionList><Partition name="A"><NodeCard id="c1"/></Partition>'
                   '<Partition name="B"><NodeCard id="c2"/></Partition>'
                   '<Partition name="A"><NodeCard id="c3"/></Partition></PartitionList>')
    rc, _, err = _run(capsys, ["simulate", SAMPLE, "--policy", "fcfs", "--machine", str(xml), "--first-n", "5"])
    assert rc != 0 and str(xml) in err and "partition A is defined twice" in err and "Traceback" not in err


def test_a_flat_machine_above_the_bound_is_refused_and_the_bound_itself_accepted():
    from rtsched.limits import MAX_FLAT_NODES
    from rtsched.machines import FlatCluster, check_machine_spec

    assert check_machine_spec(f"flat:{MAX_FLAT_NODES}") == ("flat", MAX_FLAT_NODES)
    for spec in (f"flat:{MAX_FLAT_NODES + 1}", "flat:100000000000"):
        with pytest.raises(ValueError, match="MAX_FLAT_NODES") as info:
            check_machine_spec(spec)
        assert spec in str(info.value)
    with pytest.raises(ValueError, match="MAX_FLAT_NODES"):
        FlatCluster(10**11)
    assert FlatCluster(MAX_FLAT_NODES).total_nodes == MAX_FLAT_NODES


def test_a_flat_machine_of_10_to_the_11_nodes_on_the_command_line(capsys):
    rc, _, err = _run(capsys, ["simulate", SAMPLE, "--policy", "fcfs", "--machine", "flat:100000000000"])
    assert rc == 2 and "--machine" in err and "100000000000" in err and "at most 100,000,000" in err


def test_one_file_given_to_two_outputs_is_refused_before_the_run(tmp_path, capsys):
    same = tmp_path / "x.csv"
    rc, _, err = _run(capsys, ["simulate", SAMPLE, "--policy", "fcfs", "--schedule-out", str(same),
                               "--evalys-out", str(tmp_path / "." / "x.csv")])
    assert rc == 2 and "--evalys-out" in err and "also given to --schedule-out" in err and not same.exists()
    rc, _, err = _run(capsys, ["solve", str(INSTANCE), "--method", "milp", "--schedule-out", str(tmp_path / "m.lp"),
                               "--write-model", str(tmp_path / "m.lp")])
    assert rc == 2 and "--schedule-out" in err and ".csv or .parquet" in err  # refused by its name first
    rc, _, err = _run(capsys, ["solve", str(INSTANCE), "--method", "milp", "--schedule-out", str(tmp_path / "m.csv"),
                               "--write-model", str(tmp_path / "m.csv")])
    assert rc == 2 and "--write-model" in err and "also given to --schedule-out" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, option, endings", [
    (["traces", "convert", SAMPLE, "{}/out.csv"], "output", ".swf or .swf.gz or .json"),
    (["traces", "generate", "--model", "lublin", "--jobs", "10", "--out", "{}/out.csv"], "--out", ".swf or .swf.gz"),
    (["simulate", SAMPLE, "--policy", "fcfs", "--schedule-out", "{}/s.swf"], "--schedule-out", ".csv or .parquet"),
    (["simulate", SAMPLE, "--policy", "fcfs", "--evalys-out", "{}/e.parquet"], "--evalys-out", ".csv"),
])
def test_an_output_name_the_writer_does_not_write_is_refused(tmp_path, capsys, argv, option, endings):
    argv = [a.format(tmp_path) for a in argv]
    rc, _, err = _run(capsys, argv)
    assert rc == 2 and option in err and endings in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_the_writers_own_endings_are_accepted(tmp_path, capsys):
    for name in ("a.swf", "a.SWF", "a.swf.gz", "a.json"):
        assert main(["traces", "convert", SAMPLE, str(tmp_path / name)]) == 0, name
    assert main(["traces", "generate", "--model", "lublin", "--jobs", "10", "--out", str(tmp_path / "g.swf")]) == 0


@pytest.mark.parametrize("argv, option", [
    (["instances", "generate", "--sizes", "", "--out", "d"], "--sizes"),
    (["instances", "generate", "--sizes", ",", "--out", "d"], "--sizes"),
    (["compare", str(INSTANCE), "--policies", ""], "--policies"),
    (["rl", "evaluate", "--trace", SAMPLE, "--starts", "", "--policies", "fcfs"], "--starts"),
    (["rl", "train", "--agent", "splitwindow", "--trace", SAMPLE, "--hidden", "", "--out", "d"], "--hidden"),
])
def test_an_empty_list_option_is_refused_not_taken_as_the_default(tmp_path, monkeypatch, capsys, argv, option):
    monkeypatch.chdir(tmp_path)
    rc, _, err = _run(capsys, argv)
    assert rc == 2 and option in err and ("no number given" in err or "no name given" in err), err
    assert not (tmp_path / "d").exists()


def test_an_instance_walltime_below_its_runtime_is_refused(tmp_path):
    from milp.instance import load_instance
    from rtsched.errors import InputError

    data = json.loads(INSTANCE.read_text())
    job = data["jobs"][1]
    job["walltime"] = job["runtime"] - 1
    bad = tmp_path / "i.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_instance(bad)
    message = str(info.value)
    assert str(bad) in message and "walltime" in message and f"below the runtime {job['runtime']} s" in message
    job["walltime"] = job["runtime"]  # equal is a job that ends exactly at its limit: fine
    bad.write_text(json.dumps(data))
    assert load_instance(bad).jobs[1].walltime == job["runtime"]


def test_an_swf_runtime_above_its_walltime_is_clipped_and_counted_not_refused(tmp_path):
    from rtsched.io import read_workload

    swf = tmp_path / "t.swf"
    swf.write_text("; MaxProcs: 4\n1 0 0 500 2 -1 -1 2 300 -1 1 1 1 -1 1 -1 -1 -1\n")  # killed job logged past its request
    wl = read_workload(str(swf))
    assert wl.jobs[0].runtime == 300 and wl.header.cleaning["clipped_runtime"] == 1


# ------------------------------------------------------------------------ the Python API
@pytest.fixture(scope="module")
def api():
    import rtsched

    return rtsched


@pytest.mark.parametrize("kwargs, parameter, says", [
    ({"first_n": 0}, "first_n", ">= 1"),
    ({"first_n": True}, "first_n", ">= 1"),
    ({"backfill": True}, "backfill", "rlscheduler"),
    ({"backfill": False}, "backfill", "none"),
    ({"rt_percent": "10"}, "rt_percent", "must be a number"),
    ({"rt_percent": 150}, "rt_percent", "[0, 100]"),
    ({"policy": None}, "policy", "fcfs"),
    ({"policy": 3}, "policy", "wfp2"),
    ({"scheme": 3}, "scheme", "wcjs-jit"),
    ({"seed": -1}, "seed", "non-negative"),
])
def test_api_errors_name_the_parameter_and_what_it_takes(api, kwargs, parameter, says):
    from rtsched.errors import OptionError

    with pytest.raises(OptionError) as info:
        api.simulate(SAMPLE, **kwargs)
    message = str(info.value)
    assert message.startswith(f"{parameter}:") and says in message, message
    assert repr(next(iter(kwargs.values()))) in message


def _backfill_grid(tmp_path, policy: str, body: str) -> Path:
    path = tmp_path / "g.toml"
    path.write_text(f'''name = "g"
[trace]
name = "w"
path = "{SAMPLE}"
first_n = 30
[grid]
policy = ["{policy}"]
seeds = 1
{body}
''')
    return path


@pytest.mark.parametrize("body, where, write", [
    ("backfill = [true]", "[grid].backfill = true", '"rlscheduler" (RLScheduler\'s strict backfilling, what true ran)'),
    ("backfill = false", "[grid].backfill = false", '"none" (no backfilling)'),
    ("fcfs = [{backfill = true}]", "[grid].fcfs.backfill = true", '"rlscheduler"'),
    ("[policy_options.fcfs]\nbackfill = true", "[policy_options.fcfs].backfill = true", '"rlscheduler"'),
])
def test_a_grid_backfill_given_as_true_or_false_is_refused_naming_the_key(tmp_path, capsys, body, where, write):
    """As the API's ``backfill=True`` (issue 26): true ran RLScheduler's backfilling without a word."""
    out = tmp_path / "r"
    rc, _, err = _run(capsys, ["experiment", "run", str(_backfill_grid(tmp_path, "fcfs", body)), "--out", str(out),
                               "--no-progress", "-j", "1"])
    assert rc == 1 and f"{where}: a backfilling is named, not switched on; write {write}" in err, err
    assert err.count("\n") == 1 and not out.exists()
    # the name it asks for is taken
    from rtsched.experiments import load_grid

    named = body.replace("true", '"rlscheduler"').replace("false", '"none"')
    runs = load_grid(_backfill_grid(tmp_path, "fcfs", named)).expand()
    assert len(runs) == 1 and "backfill" in json.dumps(runs[0].config)


def test_a_model_file_that_stores_backfill_as_a_boolean_still_loads(tmp_path):
    """Older model files stored ``backfill: true`` for RLScheduler's backfilling: they load as that."""
    import torch

    from rtsched.rl.rlscheduler.policy import RLSchedulerPolicy

    shipped = REPO / "rtsched" / "rl" / "pretrained" / "table5" / "rl-lublin-1-rlscheduler.pt"
    data = torch.load(shipped, map_location="cpu", weights_only=False)
    assert data["env"]["backfill"] == "rlscheduler"
    data["env"]["backfill"] = True
    old = tmp_path / "old.pt"
    torch.save(data, old)
    assert RLSchedulerPolicy(str(old)).backfill == "rlscheduler"
    data["env"]["backfill"] = False
    torch.save(data, old)
    assert RLSchedulerPolicy(str(old)).backfill == "none"


def _frame(**columns):
    import pandas as pd

    base = {"id": [1, 2], "submit": [0, 5], "runtime": [100, 200], "walltime": [300, 300], "nodes": [1, 2]}
    base.update(columns)
    return pd.DataFrame(base)


def test_a_fractional_runtime_rounds_alike_from_a_dataframe_and_an_swf_file(tmp_path, api):
    from rtsched.api import workload_from_frame
    from rtsched.io import read_workload

    swf = tmp_path / "t.swf"
    swf.write_text("; MaxProcs: 4\n1 0.6 0 10.7 1 -1 -1 1 300 -1 1 1 1 -1 1 -1 -1 -1\n"
                   "2 5.2 0 20.5 2 -1 -1 2 300.4 -1 1 1 1 -1 1 -1 -1 -1\n")
    from_swf = [(j.submit, j.runtime, j.walltime) for j in read_workload(str(swf)).jobs]
    from_frame = [(j.submit, j.runtime, j.walltime)
                  for j in workload_from_frame(_frame(submit=[0.6, 5.2], runtime=[10.7, 20.5],
                                                      walltime=[300, 300.4])).jobs]
    assert from_frame == from_swf == [(0, 11, 300), (5, 21, 300)]  # submit down, durations to the nearest s


@pytest.mark.parametrize("column, value, says", [
    ("submit", float("nan"), "nan is not a finite number"),
    ("runtime", "ten", "'ten' is not a finite number"),
    ("nodes", 1.5, "1.5 is not a whole number"),
    ("id", None, "is not a whole number"),
])
def test_a_bad_dataframe_value_names_the_column_and_row(api, column, value, says):
    from rtsched.errors import InputError

    frame = _frame()
    frame[column] = frame[column].astype(object)
    frame.loc[1, column] = value
    with pytest.raises(InputError) as info:
        api.simulate(frame, policy="fcfs")
    message = str(info.value)
    assert f"field '{column}'" in message and "row 1" in message and says in message, message
    assert "cannot convert" not in message


def test_a_dataframe_runtime_above_its_walltime_is_clipped_with_a_warning(api):
    from rtsched.api import workload_from_frame

    with pytest.warns(UserWarning, match=r"1 job\(s\) have a runtime above their walltime \(first: job 2, "
                                          r"runtime 400 s > walltime 300 s\)"):
        wl = workload_from_frame(_frame(runtime=[100, 400]))
    assert [j.runtime for j in wl.jobs] == [100, 300]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        workload_from_frame(_frame())  # nothing to say: no warning


# ------------------------------------------------------------------------ messages
def test_a_missing_results_folder_is_said_to_be_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for command in ("report", "plot"):
        rc, _, err = _run(capsys, ["experiment", command, "gone"])
        assert rc == 1 and "gone: no such folder" in err and "not a results folder" not in err, err
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------ the simulate header
def test_the_header_says_the_utility_and_backfilling_used_and_the_rng_seed(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    rc, out, _ = _run(capsys, ["simulate", "--first-n", "200", "--seed", "3"])
    header = " ".join(out.split("┏")[0].split())  # the title, unwrapped
    assert rc == 0 and "scheme wcjs-jit (wfp2 utility, first-fit backfilling)" in header, header
    assert "RNG seed 3" in header and "seed 002" not in out and "the seed-002 paper's form" in out
    rc, out, _ = _run(capsys, ["simulate", SAMPLE, "--policy", "sjf", "--backfill", "easy", "--first-n", "50"])
    out = " ".join(out.split())
    assert rc == 0 and "(sjf utility, EASY backfilling)" in out and "backfill easy" not in out
    rc, out, _ = _run(capsys, ["simulate", "--first-n", "100", "--scheme", "highpq", "--backfill", "none"])
    assert rc == 0 and "scheme highpq (wfp2 utility, no backfilling)" in " ".join(out.split())


def test_describe_policy_reads_the_built_policy():
    from heuristics.registry import describe_policy, make_policy, scheme

    assert describe_policy(scheme("wcjs-jit")[0]) == "wfp2 utility, first-fit backfilling"
    assert describe_policy(make_policy("fcfs", backfill="rlscheduler")) == "fcfs utility, RLScheduler's strict backfilling"
    assert describe_policy(object()) == ""


def test_an_ending_in_capitals_is_written_in_its_format(tmp_path, capsys):
    assert main(["traces", "convert", SAMPLE, str(tmp_path / "T.SWF.GZ")]) == 0
    assert (tmp_path / "T.SWF.GZ").read_bytes()[:2] == b"\x1f\x8b"  # gzip, as ".swf.gz" promises
    assert main(["simulate", SAMPLE, "--policy", "fcfs", "--first-n", "20", "--json",
                 "--schedule-out", str(tmp_path / "S.PARQUET")]) == 0
    assert (tmp_path / "S.PARQUET").read_bytes()[:4] == b"PAR1"
    capsys.readouterr()


def test_the_flat_machine_bound_is_the_readers_size_bound():
    from rtsched.io.cleaning import MAX_SIZE
    from rtsched.limits import MAX_FLAT_NODES

    assert MAX_FLAT_NODES == MAX_SIZE  # a header the readers accept always makes a machine


def test_the_solve_table_shows_the_first_rows_and_says_how_many_more(tmp_path, capsys, monkeypatch):
    """A 3,000-job plan's table took longer to print than the solve's time limit (issue 26): the
    table shows the earliest TABLE_ROWS jobs and says where the others are."""
    from milp.instance import random_instance, save_instance
    from rtsched.cli import offline

    path = tmp_path / "four.json"
    save_instance(random_instance(0, 3, 1, 4, sizes=(512, 1024), name="four"), path)
    monkeypatch.setattr(offline, "TABLE_ROWS", 3)
    rc, out, err = _run(capsys, ["solve", str(path), "--method", "cpsat"])
    assert rc == 0, err
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert len(rows) == 3 and "… and 1 more jobs (--json or --schedule-out FILE give every job)" in out
    rc, out, _ = _run(capsys, ["solve", str(path), "--method", "cpsat", "--json"])
    assert rc == 0 and len(json.loads(out)["sd"]) == 4


def test_a_policy_whose_name_says_backfill_is_reported_as_the_policy(capsys):
    """`--policy fcfs:backfill=true` (not an option syntax of --policy) was reported as a --backfill
    error because the policy's name contains the word; a real backfilling error still names --backfill."""
    rc, _, err = _run(capsys, ["simulate", SAMPLE, "--first-n", "20", "--policy", "fcfs:backfill=true"])
    assert rc == 2 and err.startswith("rtsched simulate: error: --policy: policy 'fcfs:backfill=true'"), err
    rc, _, err = _run(capsys, ["simulate", SAMPLE, "--first-n", "20", "--policy", "fcfs", "--backfill", "nosuch"])
    assert rc == 2 and err.startswith("rtsched simulate: error: --backfill: unknown backfill 'nosuch'"), err
