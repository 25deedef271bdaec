"""`rtsched simulate`: the embedded default, --json keys, --schedule-out, and clear errors on bad input."""
from __future__ import annotations

import json
from pathlib import Path

from rtsched.cli import main
from rtsched.schedule import Schedule

REPO = Path(__file__).resolve().parents[1]
LUBLIN_SAMPLE = REPO / "traces" / "lublin_256_sample.swf"


def _json_run(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_embedded_default_marks_ten_percent_and_runs_wcjs_jit(capsys):
    out = _json_run(capsys, ["simulate", "--json"])
    assert out["trace"] == "traces/mira_like_week.swf"
    assert out["policy"].startswith("wcjs") and out["checkpoint"] == "JIT-CKPT"
    n_all, n_rt = out["summary"]["all"]["n"], out["summary"]["rt"]["n"]
    assert n_all == out["jobs"] and n_rt == round(0.10 * n_all)
    for group in ("all", "rt", "batch"):
        for key in ("n", "mean_sd", "mean_bsld", "mean_wait", "mean_turnaround", "p95_sd"):
            assert key in out["summary"][group]
    assert 0 < out["productive_utilization"] <= out["utilization"] <= 1
    assert out["bsld_tau"] == 600


def test_flat_trace_with_schedule_out(capsys, tmp_path):
    sched = tmp_path / "s.csv"
    out = _json_run(capsys, ["simulate", str(LUBLIN_SAMPLE), "--machine", "flat:256", "--policy", "fcfs",
                             "--backfill", "easy", "--first-n", "300", "--tau", "10", "--bsld-form", "rl",
                             "--json", "--schedule-out", str(sched)])
    assert out["summary"]["all"]["n"] == 300 and out["summary"]["rt"]["n"] == 0
    assert out["bsld_tau"] == 10 and out["bsld_form"] == "rl"
    back = Schedule.read(str(sched))
    assert len(sched.read_text().splitlines()) == len(back) + 1  # a header line, then one line per segment
    frame = back.to_frame()
    assert frame["job_id"].nunique() == 300 and (frame["kind"] == "run").all()
    # every job ran its whole runtime in one segment: progress 0 -> end - start
    assert ((frame["progress_from"] == 0) & (frame["progress_to"] == frame["end"] - frame["start"])).all()


def test_malformed_trace_names_file_line_and_field(capsys, tmp_path):
    bad = tmp_path / "bad.swf"
    bad.write_text("; MaxProcs: 16\n1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                   "2 10 -1 abc 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert main(["simulate", str(bad), "--machine", "flat:16"]) == 1
    err = capsys.readouterr().err
    assert str(bad) in err and "line 3" in err


def test_job_bigger_than_the_machine_is_a_clear_error(capsys, tmp_path):
    big = tmp_path / "big.swf"
    big.write_text("1 0 -1 100 64 -1 -1 64 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert main(["simulate", str(big), "--machine", "flat:16"]) == 1
    err = capsys.readouterr().err
    assert str(big) in err and "job 1 requests 64 nodes" in err and "'nodes'" in err


def test_tau_defaults_follow_the_bsld_form(capsys):
    base = ["simulate", str(LUBLIN_SAMPLE), "--machine", "flat:256", "--policy", "fcfs", "--first-n", "200", "--json"]
    rl = _json_run(capsys, base + ["--bsld-form", "rl"])
    assert (rl["bsld_tau"], rl["tau_rl"], rl["tau_seed002"]) == (10, 10, 600)
    seed002 = _json_run(capsys, base + ["--tau", "300"])
    assert (seed002["bsld_tau"], seed002["tau_seed002"], seed002["tau_rl"]) == (300, 300, 10)
    # Both forms are always reported; mean_bsld is the chosen one.
    assert rl["summary"]["all"]["mean_bsld"] == rl["summary"]["all"]["mean_bsld_rl"]
    assert seed002["summary"]["all"]["mean_bsld"] == seed002["summary"]["all"]["mean_bsld_seed002"]


def _subcommand_parsers():
    """(``rtsched COMMAND [SUBCOMMAND]``, parser) of every leaf command of the command line."""
    import argparse

    from rtsched.cli import build_parser

    todo = [("rtsched", build_parser())]
    while todo:
        name, parser = todo.pop()
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield name, parser
        for action in subs:
            todo += [(f"{name} {cmd}", p) for cmd, p in action.choices.items()]


def test_every_option_of_every_command_has_help_text():
    leaves = dict(_subcommand_parsers())
    assert {"rtsched simulate", "rtsched traces stats", "rtsched experiment status", "rtsched rl train",
            "rtsched instances generate", "rtsched compare"} <= set(leaves)
    missing = [f"{name} {a.option_strings[-1] if a.option_strings else a.dest}"
               for name, parser in leaves.items() for a in parser._actions
               if a.help is None and a.dest != "help"]
    assert missing == []
    for name, parser in leaves.items():
        text = parser.format_help()
        assert "%%" not in text, name  # a literal "%%": a description formatted as if it were a help string


def test_rtmix_option_help_states_the_defaults_the_command_uses():
    from rtsched.cli import rl as rl_cli

    text = " ".join(dict(_subcommand_parsers())["rtsched rl train"].format_help().split())
    for key, value in {**rl_cli.RTMIX_DEFAULTS, **rl_cli.CURRICULUM_DEFAULTS}.items():
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        assert f"default {shown}" in text, (key, shown)


def test_the_cli_gives_numpy_one_blas_thread_unless_the_user_chose(monkeypatch):
    import os

    import pytest

    from rtsched.cli import main as cli_main

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with pytest.raises(SystemExit):
        cli_main(["--version"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    with pytest.raises(SystemExit):
        cli_main(["--version"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
