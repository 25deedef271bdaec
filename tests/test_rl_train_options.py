"""``rtsched rl train``'s per-agent option sets (each agent's ``options.py``, through the agents table):
an option the chosen agent does not take is refused naming it, never ignored; bad values and a
--resume with nothing to resume are one-line usage errors (exit 2) that name the option."""
from __future__ import annotations

import os

import pytest

from rtsched.cli import main
from rtsched.cli import rl as rl_cli
from rtsched.rl.agents import AGENTS

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "traces", "lublin_256_sample.swf")


def _run(capsys, argv):
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own refusal of a value
        rc = exc.code
    err = capsys.readouterr().err
    return rc, err


def _one_line(err: str) -> bool:
    return len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _other_value(opt) -> list[str]:
    """The option on the command line with a value other than its default (valid for its type)."""
    if opt.kind == "flag":
        return [opt.flag]
    if opt.choices:
        return [opt.flag, next(c for c in opt.choices if c != opt.default)]
    if opt.bounds:
        return [opt.flag, str(opt.bounds[1])]
    return [opt.flag, {"text": "x", "float[0,1]": "0.5"}.get(opt.kind, "1")]


def test_the_option_tables_agree_with_the_agents_table():
    table = rl_cli._train_option_table()
    assert tuple(rl_cli.AGENTS) == tuple(AGENTS)
    owned = [o.dest for a in AGENTS for o in rl_cli.agent_options(a).OPTIONS]
    assert len(owned) == len(set(owned)), "an option is owned by two agents"
    shared = {o.dest for o in rl_cli.SHARED_TRAIN_OPTIONS}
    assert not shared & set(owned)
    for agent in AGENTS:
        uses = set(rl_cli.agent_options(agent).USES)
        assert uses <= shared - set(rl_cli.EVERY_AGENT), (agent, uses - shared)
    # every option is taken by some agent
    for dest in table:
        assert dest in rl_cli.EVERY_AGENT or any(
            dest in rl_cli.agent_options(a).USES or dest in {o.dest for o in rl_cli.agent_options(a).OPTIONS}
            for a in AGENTS), dest


CASES = [(agent, dest) for agent in AGENTS for dest in rl_cli._train_option_table()
         if dest not in rl_cli.EVERY_AGENT and dest not in rl_cli.agent_options(agent).USES
         and dest not in {o.dest for o in rl_cli.agent_options(agent).OPTIONS}]


@pytest.mark.parametrize("agent,dest", CASES, ids=[f"{a}-{d}" for a, d in CASES])
def test_an_option_the_agent_does_not_take_is_refused_naming_it(capsys, tmp_path, agent, dest):
    opt = rl_cli._train_option_table()[dest]
    out = tmp_path / "run"
    rc, err = _run(capsys, ["rl", "train", "--agent", agent, "--out", str(out), *_other_value(opt)])
    assert rc == 2, err
    assert opt.flag in err and agent in err and _one_line(err), err
    assert not out.exists()  # refused before anything is written


def test_goal_for_an_agent_that_ignores_it(capsys, tmp_path):
    rc, err = _run(capsys, ["rl", "train", "--agent", "rtmix", "--goal", "wait", "--out", str(tmp_path / "r")])
    assert rc == 2 and _one_line(err)
    assert "--goal does not apply to the rtmix agent" in err
    rc, err = _run(capsys, ["rl", "train", "--agent", "splitwindow", "--trace", SAMPLE, "--goal", "wait",
                            "--out", str(tmp_path / "s")])
    assert rc == 2 and "--goal does not apply to the splitwindow agent" in err and "Eq. 2" in err
    # the inspector's networks ignore --actor: refused (it was stored in the checkpoint and never used)
    rc, err = _run(capsys, ["rl", "train", "--agent", "inspector", "--trace", SAMPLE, "--actor", "mlp_v1",
                            "--out", str(tmp_path / "i")])
    assert rc == 2 and "--actor applies to the rlscheduler agent only" in err


@pytest.mark.parametrize("value", ["2", "-0.1", "1.0001", "inf"])
def test_imitation_weight_outside_zero_one_is_refused(capsys, tmp_path, value):
    rc, err = _run(capsys, ["rl", "train", "--agent", "rlschert", "--trace", "vasplike", "--imitation", value,
                            "--out", str(tmp_path / "r")])
    assert rc == 2 and "--imitation" in err and "[0, 1]" in err and repr(value) in err and _one_line(err)


@pytest.mark.parametrize("value", ["0", "1", "0.5"])
def test_imitation_weights_in_zero_one_parse(value):
    args = rl_cli_parser().parse_args(["rl", "train", "--agent", "rlschert", "--imitation", value])
    assert args.imitation == float(value)


def rl_cli_parser():
    from rtsched.cli import build_parser

    return build_parser()


@pytest.mark.parametrize("agent,extra", [("rlscheduler", ["--trace", SAMPLE]), ("rtmix", [])])
def test_resume_without_a_checkpoint_is_an_error(capsys, tmp_path, agent, extra):
    out = tmp_path / "empty"
    rc, err = _run(capsys, ["rl", "train", "--agent", agent, *extra, "--out", str(out), "--resume"])
    assert rc == 2 and _one_line(err), err
    assert "--resume" in err and "no checkpoint" in err and str(out) in err
    assert not out.exists()  # not a silent fresh start


@pytest.mark.parametrize("machine", ["flat:256", "flat:16"])
def test_rtmix_on_a_flat_machine_is_a_one_line_error(capsys, tmp_path, machine):
    rc, err = _run(capsys, ["rl", "train", "--agent", "rtmix", "--machine", machine, "--out", str(tmp_path / "r")])
    assert rc == 2 and _one_line(err), err
    assert "--machine" in err and "partitioned" in err and machine.split(":")[1] in err


def test_rtmix_environment_refuses_a_flat_machine_naming_it():
    pytest.importorskip("gymnasium")
    from rtsched.errors import OptionError
    from rtsched.rl.rtmix.env import RtMixEnv

    with pytest.raises(OptionError, match="partitioned"):
        RtMixEnv("flat:256")
