"""The WCJS teacher replayed through the rtmix actions against WCJS as a policy (``rtsched.rl.rtmix.replay``,
issue 23): with the three pass settings (``rt_wake``, ``refit_window``, ``low_rt_batch``) and no shield the
replay is WCJS itself, schedule for schedule, on generated half-day Mira-like weeks (Mira:16, SJF batch
order, first-fit or SJF backfilling); without them it is not."""
from __future__ import annotations

import pytest

pytest.importorskip("gymnasium")

from rtsched.rl.rtmix.env import RtMixEnv  # noqa: E402
from rtsched.rl.rtmix.replay import first_difference, replay_gap, teacher_options  # noqa: E402
from rtsched.rl.rtmix.train import miralike_jobs  # noqa: E402

SEEDS = range(9100, 9105)  # validation-week seeds (CURRICULUM_VALIDATION_SEEDS), half a day each
PASS = {"rt_wake": True, "refit_window": True, "low_rt_batch": True}


def _gaps(backfill: str, **settings) -> list:
    out = []
    for seed in SEEDS:
        env = RtMixEnv("mira:16", "jit", order="backfill", validate=True, batch_priority="sjf",
                       batch_backfill=backfill, **settings)
        out.append(replay_gap(env, miralike_jobs(seed, 0.5, 10.0, env.machine.total_nodes)))
    return out


@pytest.mark.parametrize("backfill", ["ff", "sjf"])
def test_with_the_pass_settings_the_replayed_teacher_is_the_teacher(backfill):
    for gap in _gaps(backfill, **PASS):
        assert gap.first_difference is None
        assert gap.means("replayed") == gap.means("policy")
        assert gap.replayed["summary"]["all"]["n"] == gap.policy["summary"]["all"]["n"] > 0


def test_without_them_the_replay_drifts_and_each_of_rt_wake_and_low_rt_batch_is_needed():
    assert any(g.first_difference is not None for g in _gaps("ff"))
    assert any(g.first_difference is not None for g in _gaps("ff", rt_wake=True, refit_window=True))
    assert any(g.first_difference is not None for g in _gaps("ff", refit_window=True, low_rt_batch=True))


def test_the_teacher_runs_with_the_environments_batch_settings_and_a_schedule_equals_itself():
    env = RtMixEnv("mira:16", "jit", order="backfill", batch_priority="sjf", batch_backfill="sjf")
    assert teacher_options(env) == {"priority": "sjf", "backfill": "sjf"}
    env = RtMixEnv("mira:16", "jit", order="backfill")
    replay_gap(env, miralike_jobs(SEEDS[0], 0.5, 10.0, env.machine.total_nodes))
    assert first_difference(env.result(), env.result()) is None


def test_the_bench_prints_the_gap_and_refuses_a_bad_setting_in_one_line(tmp_path):
    import json
    import subprocess
    import sys

    from conftest import REPO

    script = str(REPO / "bench" / "bench_rtmix_replay.py")
    out = tmp_path / "gap.json"
    proc = subprocess.run([sys.executable, script, "--miralike", "9100-9101", "--days", "0.5", "--machine", "mira:16",
                           "--set", "batch_priority=sjf", "--set", "rt_wake=true", "--set", "refit_window=true",
                           "--set", "low_rt_batch=true", "--json", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "the same schedule on 2 of 2 weeks" in proc.stdout
    rows = json.loads(out.read_text())["rows"]
    assert [r["seed"] for r in rows] == [9100, 9101] and all(r["first_difference"] is None for r in rows)
    for bad, message in ((["--set", "shield=maybe"], "unknown rtmix shield 'maybe'"),
                         (["--set", "rt_wake=yes"], "rt_wake is true or false"),
                         (["--set", "nope=1"], "give KEY=VALUE with KEY one of"),
                         (["--miralike", "x-y"], "--miralike 'x-y'")):
        proc = subprocess.run([sys.executable, script, "--machine", "mira:16", *bad], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
        assert proc.stderr.startswith("bench_rtmix_replay: error: ")


def test_seed_lists_take_ranges_and_single_seeds(monkeypatch):
    from conftest import REPO

    monkeypatch.syspath_prepend(str(REPO / "bench"))
    from benchcli import seed_list

    assert seed_list("9001-9003,9010") == [9001, 9002, 9003, 9010]
    assert seed_list("5") == [5]
