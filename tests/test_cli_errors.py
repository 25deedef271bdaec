"""Bad options and inputs: a one-line error naming the option (or file), the right exit status
(2 bad usage, 1 bad data), no traceback, nothing written, and no long work started first."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rtsched.cli import main

REPO = Path(__file__).resolve().parents[1]
SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


USAGE = [
    (["simulate", "--policy", "nosuch"], "--policy", "fcfs"),
    (["simulate", SAMPLE, "--policy", "fcfs", "--backfill", "nope"], "--backfill", "easy"),
    (["simulate", "--checkpoint", "zzz"], "--checkpoint", "jit"),
    (["simulate", "--machine", "flat"], "--machine", "flat:N"),
    (["simulate", "--machine", "mira:200"], "--machine", "1..96"),
    (["simulate", "--machine", "cray"], "--machine", "mira"),
    (["simulate", "--window", "2018-01-32/7"], "--window", "ISO"),
    (["simulate", "--window", "7"], "--window", "START/DAYS"),
    (["simulate", "--rt-percent", "150"], "--rt-percent", "[0, 100]"),
    (["simulate", "--rt-percent", "-1"], "--rt-percent", "[0, 100]"),
    (["simulate", "--first-n", "0"], "--first-n", ">= 1"),
    (["simulate", "--tau", "0"], "--tau", ">= 1"),
    (["simulate", "--seed", "-3"], "--seed", ">= 0"),
    (["simulate", "--scheme", "wcjs-maybe"], "--scheme", "wcjs-jit"),
    (["simulate", "--scheme", "wcjs-jit", "--policy", "fcfs"], "--policy and --scheme", ""),
    (["solve", "x.json", "--theta", "nan"], "--theta", "> 0"),
    (["solve", "x.json", "--theta", "0"], "--theta", "> 0"),
    (["solve", "x.json", "--time-limit", "0"], "--time-limit", "> 0"),
    (["compare", "--policies", "nosuch"], "--policies", "unknown policy"),
    (["compare", "--policies", ","], "--policies", "no name"),
    (["instances", "generate", "--count", "0", "--out", "x"], "--count", ">= 1"),
    (["instances", "generate", "--out", "x", "--prefix", "../../x"], "--prefix", "plain"),
    (["instances", "generate", "--out", "x", "--walltime-factor", "2", "1"], "--walltime-factor", "LO <= HI"),
    (["traces", "generate", "--jobs", "0", "--out", "x.swf", "--model", "lublin"], "--jobs", ">= 1"),
    (["traces", "generate", "--days", "-1", "--out", "x.swf"], "--days", "> 0"),
    (["experiment", "plot", "somewhere", "--dpi", "0"], "--dpi", ">= 1"),
    (["experiment", "plot", "somewhere", "--schemes", ","], "--schemes", "no name"),
    (["rl", "evaluate", "--trace", SAMPLE, "--policies", "nosuch", "--starts", "10", "--seq-len", "64"],
     "nosuch", "unknown policy"),
]


@pytest.mark.parametrize("argv,option,allowed", USAGE, ids=[" ".join(a[:4]) for a, _, _ in USAGE])
def test_bad_option_is_a_one_line_usage_error(capsys, tmp_path, monkeypatch, argv, option, allowed):
    monkeypatch.chdir(tmp_path)  # nothing may be written, and relative outputs land here
    try:
        rc, out, err = _run(capsys, argv)
    except SystemExit as exc:  # argparse's own errors
        rc, (out, err) = exc.code, capsys.readouterr()
    assert rc == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert option in lines[0] and allowed in lines[0], lines[0]
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_output_path_errors_name_the_users_path_before_any_work(capsys, tmp_path):
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x")
    for target, why in ((tmp_path / "missing" / "s.csv", "does not exist"), (a_file / "s.csv", "is a file"),
                        (tmp_path, "is a folder")):
        rc, _, err = _run(capsys, ["simulate", SAMPLE, "--policy", "fcfs", "--schedule-out", str(target)])
        assert rc == 2 and str(target) in err and why in err, err
    os.chmod(tmp_path / "missing" if (tmp_path / "missing").exists() else tmp_path, stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.geteuid() != 0:  # root writes anywhere: nothing to check then
            rc, _, err = _run(capsys, ["simulate", SAMPLE, "--policy", "fcfs", "--schedule-out",
                                       str(tmp_path / "s.csv")])
            assert rc == 2 and "not writable" in err
    finally:
        os.chmod(tmp_path, stat.S_IRWXU)


def test_overwritten_output_keeps_its_mode(capsys, tmp_path):
    sched = tmp_path / "s.csv"
    sched.write_text("old\n")
    os.chmod(sched, 0o644)
    rc, _, _ = _run(capsys, ["simulate", SAMPLE, "--policy", "fcfs", "--first-n", "50", "--schedule-out", str(sched),
                             "--json"])
    assert rc == 0 and stat.S_IMODE(os.stat(sched).st_mode) == 0o644
    fresh = tmp_path / "fresh.csv"
    old = os.umask(0o022)
    try:
        rc, _, _ = _run(capsys, ["simulate", SAMPLE, "--policy", "fcfs", "--first-n", "50", "--schedule-out",
                                 str(fresh), "--json"])
    finally:
        os.umask(old)
    assert rc == 0 and stat.S_IMODE(os.stat(fresh).st_mode) == 0o644  # 0666 minus the umask, not 0600
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_swf_without_machine_runs_on_its_header_size(capsys, tmp_path):
    rc, out, _ = _run(capsys, ["simulate", SAMPLE, "--policy", "fcfs", "--first-n", "100", "--json"])
    record = json.loads(out)
    assert rc == 0 and record["machine_spec"] == "flat:256" and record["machine_nodes"] == 256
    bare = tmp_path / "bare.swf"
    bare.write_text("1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    rc, _, err = _run(capsys, ["simulate", str(bare), "--policy", "fcfs"])
    assert rc == 2 and "--machine" in err and "MaxProcs" in err and str(bare) in err


def test_backfill_given_with_a_scheme_is_honoured_and_shown(capsys):
    base = ["simulate", "--first-n", "400", "--json"]
    ff = json.loads(_run(capsys, base + ["--scheme", "wcjs-jit"])[1])
    bf = json.loads(_run(capsys, base + ["--scheme", "wcjs-jit", "--backfill", "none"])[1])
    assert bf["policy_options"] == {"backfill": "none"} and ff["policy_options"] == {}
    assert bf["summary"]["batch"]["mean_wait"] != ff["summary"]["batch"]["mean_wait"]  # the option changed the run


def test_run_states_what_ran(capsys):
    rec = json.loads(_run(capsys, ["simulate", "--json"])[1])
    for key in ("trace", "trace_sha256", "machine", "policy", "scheme", "checkpoint", "rt_percent", "marking", "seed",
                "tau", "window_spec", "rtsched_version"):
        assert key in rec, key
    assert rec["scheme"] == "wcjs-jit" and rec["rt_percent"] == 10 and len(rec["trace_sha256"]) == 64


def test_version_and_a_closed_pipe():
    out = subprocess.run([sys.executable, "-m", "rtsched", "--version"], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0 and out.stdout.startswith("rtsched ")
    cmd = f"{sys.executable} -m rtsched simulate {SAMPLE} --policy fcfs --first-n 300 --json | head -n 2"
    proc = subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=REPO)
    assert proc.stderr == "", proc.stderr  # quiet: no BrokenPipeError report


def test_model_files_with_foreign_content_or_broken_weights(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    from rtsched.rl.ppo import ModelFileError, load_model

    text = tmp_path / "notes.pt"
    text.write_text("just some text\n")
    with pytest.raises(ModelFileError) as info:
        load_model(str(text))
    assert "not a readable model file" in str(info.value) and "weights_only" not in str(info.value)
    shipped = REPO / "rtsched" / "rl" / "pretrained" / "table5" / "rl-lublin-1-none.pt"
    st = torch.load(shipped, weights_only=True)
    first = next(iter(st["actor"]))
    st["actor"][first] = st["actor"][first].clone().fill_(float("nan"))
    broken = tmp_path / "nan.pt"
    torch.save(st, broken)
    with pytest.raises(ModelFileError, match="not finite"):
        load_model(str(broken))
    rc, _, err = _run(capsys, ["simulate", SAMPLE, "--policy", str(broken), "--first-n", "50"])
    assert rc == 1 and str(broken) in err and "not finite" in err


def test_rl_train_refuses_a_folder_another_run_holds(tmp_path):
    pytest.importorskip("torch")
    from rtsched.errors import OptionError
    from rtsched.files import FileLock
    from rtsched.rl.api import train
    from rtsched.rl.ppo import LOCK

    out = tmp_path / "run"
    with FileLock(out / LOCK):
        with pytest.raises(OptionError, match="another process"):
            train("rlscheduler", SAMPLE, epochs=1, out=str(out), trajs_per_epoch=2, seq_len=32, n_envs=1,
                  train_pi_iters=1, train_v_iters=1)
