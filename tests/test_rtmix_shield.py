"""rtmix's safety shield on RTJs and its work-conserving rule (issue 23, fifth session): both are part
of the action mask (``RtMixSpec.shield``, ``RtMixSpec.conserve``), so the environment, the DAgger
labels and the trained policy see the same rule.  Golden masks worked by hand on Mira:2."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from rtsched.checkpoint import CheckpointModel  # noqa: E402
from rtsched.jobs import Job, Workload  # noqa: E402
from rtsched.machines import machine_from_spec  # noqa: E402
from rtsched.rl.rtmix.core import RtMixPass, RtMixSpec  # noqa: E402
from rtsched.rl.rtmix.env import RtMixEnv  # noqa: E402
from rtsched.sim.decisions import Preempt, Start  # noqa: E402

CAND0 = 8  # the first RTJ candidate slot (window 8)
WAIT = 8 + 4  # no BJ-preemption slots


def _first_pass(jobs: list[Job], **spec) -> RtMixPass:
    """The pass at time 0 on Mira:2 (partitions 0 and 1 of 512 nodes, 2 of 1024) with ``jobs`` (all
    submitted at 0, nothing running)."""
    from rtsched.sim.core import Simulator

    machine = machine_from_spec("mira:2")
    sim = Simulator(Workload(jobs, name="shield", max_nodes=machine.total_nodes), machine,
                    checkpoint=CheckpointModel.parse("jit"))
    assert sim.advance() and sim.view.now == 0
    return RtMixPass(sim.view, RtMixSpec(**spec))


def _pass_after_a_start(jobs: list[Job], first: Start, **spec) -> RtMixPass:
    """The pass at 50 on Mira:2 with ``jobs`` after ``first`` was applied at time 0."""
    from rtsched.sim.core import Simulator

    machine = machine_from_spec("mira:2")
    sim = Simulator(Workload(jobs, name="shield", max_nodes=machine.total_nodes), machine,
                    checkpoint=CheckpointModel.parse("jit"))
    assert sim.advance()
    sim.apply([first])
    assert sim.advance() and sim.view.now == 50
    return RtMixPass(sim.view, RtMixSpec(**spec))


def _pass_at_50(**spec) -> RtMixPass:
    """A (BJ, 1024 nodes, checkpointable) runs from 0 on the whole machine; B (RTJ, 512 nodes)
    arrives at 50 and finds nothing free; C (BJ, 512 nodes) waits too."""
    jobs = [Job(1, 0, 1000, 2000, 1024), Job(2, 50, 300, 300, 512, kind="rt"), Job(3, 50, 400, 800, 512)]
    return _pass_after_a_start(jobs, Start(1, 2), **spec)


def _rt_and_bj() -> list[Job]:
    # slot 0: the RTJ (RTJs first), slot 1: the 1024-node BJ; both fit on the empty machine
    return [Job(1, 0, 1000, 2000, 1024), Job(2, 0, 300, 300, 512, kind="rt")]


def test_start_shield_leaves_only_the_rtj_start_when_it_fits():
    free = _first_pass(_rt_and_bj())
    assert np.flatnonzero(free.mask()).tolist() == [0, 1]  # no job runs: waiting is not legal either
    ps = _first_pass(_rt_and_bj(), shield="start")
    assert np.flatnonzero(ps.mask()).tolist() == [0]
    ps.apply(0)  # the RTJ takes a 512-node half: the BJ (1024) no longer fits, waiting is now legal
    assert ps.decisions == [Start(2, 0)] and np.flatnonzero(ps.mask()).tolist() == [WAIT]
    with pytest.raises(ValueError, match="shield"):
        RtMixSpec(shield="always")


def test_preempt_shield_leaves_only_the_rtjs_candidates_when_it_is_blocked():
    # without the shield: the two 512-node halves (each preempts A), and waiting; C cannot start
    assert np.flatnonzero(_pass_at_50(eligibility="any").mask()).tolist() == [CAND0, CAND0 + 1, WAIT]
    # "start" does not apply (the RTJ does not fit): the same mask
    assert np.flatnonzero(_pass_at_50(eligibility="any", shield="start").mask()).tolist() == [CAND0, CAND0 + 1, WAIT]
    ps = _pass_at_50(eligibility="any", shield="preempt")
    assert np.flatnonzero(ps.mask()).tolist() == [CAND0, CAND0 + 1]
    ps.apply(CAND0 + 1)
    assert ps.decisions == [Preempt(1), Start(2, 1)]
    # WCJS's rule offers no candidate (A is larger than B): nothing to force, only waiting is legal
    assert not _pass_at_50(shield="preempt").has_choice()


def test_risk_shield_forces_the_candidates_only_when_waiting_would_break_its_bound():
    # A (walltime 2000 s, from 0) holds the whole machine: the earliest a 512-node half frees is
    # 2000, so B (submit 50, walltime 300) waiting for it has estimated slowdown (2000 - 50 + 300) / 300 = 7.5
    forced = _pass_at_50(eligibility="any", shield="risk", shield_theta=7.4)
    assert np.flatnonzero(forced.mask()).tolist() == [CAND0, CAND0 + 1]
    free = _pass_at_50(eligibility="any", shield="risk", shield_theta=7.6)
    assert np.flatnonzero(free.mask()).tolist() == [CAND0, CAND0 + 1, WAIT]
    assert _pass_at_50(eligibility="any", shield="risk").spec.shield_theta == 1.2  # the default bound


def test_conserve_forbids_waiting_beside_a_legal_bj_start_on_an_empty_enough_machine():
    # the BJ 3 (512 nodes) fits beside the running 512-node BJ 4
    jobs = [Job(4, 0, 1000, 2000, 512), Job(3, 50, 400, 800, 512)]

    def pass_at_50(**spec) -> RtMixPass:
        return _pass_after_a_start(jobs, Start(4, 0), **spec)

    assert np.flatnonzero(pass_at_50().mask()).tolist() == [0, WAIT]
    # half the nodes are free: with conserve 0.5 (or 0) waiting is illegal, with 0.75 it stays legal
    assert np.flatnonzero(pass_at_50(conserve=0.5).mask()).tolist() == [0]
    assert np.flatnonzero(pass_at_50(conserve=0.0).mask()).tolist() == [0]
    assert np.flatnonzero(pass_at_50(conserve=0.75).mask()).tolist() == [0, WAIT]
    with pytest.raises(ValueError, match="conserve"):
        RtMixSpec(conserve=1.5)


def test_shielded_dagger_labels_stay_legal_and_the_model_file_keeps_the_rules(tmp_path):
    """replan as the expert on a shielded, work-conserving environment: every label and every good
    set lies inside the (shielded) mask; the environment's settings carry both rules, and a policy
    built from them applies them (its schedules pass the validator)."""
    from heuristics.registry import make_policy
    from rtsched.rl.rtmix.dagger import episode_jobs
    from rtsched.rl.rtmix.teacher import policy_teacher_episode

    env = RtMixEnv("mira:16", "jit", bj_candidates=2, eligibility="any", shield="risk", conserve=0.0, shield_theta=1.4)
    cfg = env.config()
    assert cfg["shield"] == "risk" and cfg["conserve"] == 0.0 and cfg["shield_theta"] == 1.4
    assert "shield" not in RtMixEnv("mira:16").config() and "conserve" not in RtMixEnv("mira:16").config()
    for i, seed in enumerate((200004, 200005)):
        ep = policy_teacher_episode(env, episode_jobs(seed, i, env), make_policy("replan:theta=1.6"),
                                    every_pass=True)
        assert ep.actions
        for a, m, g in zip(ep.actions, ep.masks, ep.goods):
            assert m[a] and g[a] and not (g & ~m).any()


def test_cli_passes_the_shield_and_conserve_to_dagger(tmp_path, monkeypatch, capsys):
    from rtsched.cli import main
    from rtsched.rl.rtmix import dagger

    seen = {}

    def fake_run_dagger(out, **kw):  # the CLI's call, not a training run
        seen.update(kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(dagger, "run_dagger", fake_run_dagger)
    assert main(["rl", "train", "--agent", "rtmix", "--shield", "risk", "--shield-theta", "1.45", "--conserve", "0.5",
                 "--defer-weight", "7.5", "--out", str(tmp_path / "d"), "--no-progress"]) != 0
    assert seen["shield"] == "risk" and seen["conserve"] == 0.5 and seen["shield_theta"] == 1.45
    assert seen["defer_weight"] == 7.5
    seen.clear()
    assert main(["rl", "train", "--agent", "rtmix", "--out", str(tmp_path / "e"), "--no-progress"]) != 0
    assert seen["shield"] == "none" and seen["conserve"] is None and seen["shield_theta"] == 1.2  # off by default
    assert seen["defer_weight"] is None
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["rl", "train", "--agent", "rtmix", "--shield", "always", "--out", str(tmp_path / "g")])
    assert exc.value.code == 2 and "--shield" in capsys.readouterr().err
