"""rtmix's deferral of RTJ preemptions (``RtMixSpec.defer_weight``, issue 23, fourteenth session): while waiting
for a victim to end is worth more than preempting it now, the RTJ's candidates are not legal and the shield does
not force them.  Golden masks and a whole run worked by hand on Mira:2 (partitions 0 and 1 of 512 nodes, 2 of
1024) under JIT checkpointing: a 512-node job writes (and reads) its checkpoint in 16 GB × 512 / (512 / 128 ×
4 GB/s) = 512 s."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rtsched.checkpoint import CheckpointModel
from rtsched.jobs import Job, Workload
from rtsched.machines import machine_from_spec
from rtsched.rl.rtmix.core import RtMixPass, RtMixSpec
from rtsched.sim.core import Simulator
from rtsched.sim.decisions import Start
from rtsched.validate import validate_schedule

CAND0 = 8  # the first RTJ candidate slot (window 8)
WAIT = 8 + 4  # no BJ-preemption slots

# A (BJ, 512 nodes, 2000 s) and S (BJ, 512 nodes, 300 s) run from 0 on the two halves; R (RTJ, 1024 nodes,
# 3000 s) arrives at 100 and can only run on the whole machine, by preempting both.
JOBS = [Job(1, 0, 2000, 2000, 512), Job(2, 0, 300, 300, 512), Job(3, 100, 3000, 3000, 1024, kind="rt")]
# At 100: preempting now starts R after the 512 s hand-over: estimated slowdown (612 - 100 + 3000) / 3000.
# Waiting for S (ends at 300), then preempting A: R starts at 812, slowdown (812 - 100 + 3000) / 3000, 200 / 3000
# more.  S's preemption would cost it (3000 + 512 + 512) / 300 = 13.41 of slowdown (it waits out R, the write and
# the read).  The ratio 13.41 / (200 / 3000) = 201.2 is the weight up to which waiting for S is preferred (waiting
# for A too, until 2000, has the ratio (13.41 + 4024 / 2000) / (1388 / 3000) = 33.3: never the larger).
DEFER_BOUND = (4024 / 300) / (200 / 3000)


def _machine():
    return machine_from_spec("mira:2")


def _sim(jobs: list[Job] = JOBS) -> Simulator:
    machine = _machine()
    return Simulator(Workload(jobs, name="defer", max_nodes=machine.total_nodes), machine,
                     checkpoint=CheckpointModel.parse("jit"))


def _pass_at_100(jobs: list[Job] = JOBS, **spec) -> RtMixPass:
    """The pass at 100 (the RTJ's arrival) after jobs 1 and 2 started at 0 on the two halves."""
    sim = _sim(jobs)
    assert sim.advance() and sim.view.now == 0
    sim.apply([Start(1, 0), Start(2, 1)])
    assert sim.advance() and sim.view.now == 100
    return RtMixPass(sim.view, RtMixSpec(eligibility="any", **spec))


def _legal_at_100(jobs: list[Job], **spec) -> list[int]:
    return np.flatnonzero(_pass_at_100(jobs, **spec).mask()).tolist()


def test_deferral_follows_the_hand_worked_bound():
    assert DEFER_BOUND == pytest.approx(201.2, abs=0.01)
    legal = lambda ps: np.flatnonzero(ps.mask()).tolist()  # noqa: E731
    assert legal(_pass_at_100()) == [CAND0, WAIT]  # without the rule: preempt both, or wait
    assert legal(_pass_at_100(defer_weight=201.0)) == [WAIT]
    assert legal(_pass_at_100(defer_weight=201.5)) == [CAND0, WAIT]
    # where the shield forces the candidate (waiting for A's end would give R 1.63 > 1.0), a deferral lifts it
    assert legal(_pass_at_100(shield="risk", shield_theta=1.0)) == [CAND0]
    assert legal(_pass_at_100(shield="risk", shield_theta=1.0, defer_weight=201.5)) == [CAND0]
    assert legal(_pass_at_100(shield="risk", shield_theta=1.0, defer_weight=201.0)) == [WAIT]
    # the rule needs a target: R's candidates are what is deferred, the ones the pass offers stay the same
    ps = _pass_at_100(defer_weight=201.0)
    assert ps.target().info.id == 3 and [p for p, _vs, _c in ps.candidates()] == [2]


def test_the_rtj_waits_only_when_every_candidate_is_deferrable():
    # R2 (RTJ, 512 nodes, 3000 s) at 100 has two candidates, a half each.  S's half: S ends at 300, before R2 could
    # start after preempting it (100 + 512): deferrable for any weight.  A's half: waiting until 2000 adds
    # (2000 - 612) / 3000 to R2's slowdown and spares A (3000 + 512 + 512) / 2000: deferrable up to
    # (4024 / 2000) / (1388 / 3000) = 4.35.
    jobs = [Job(1, 0, 2000, 2000, 512), Job(2, 0, 300, 300, 512), Job(3, 100, 3000, 3000, 512, kind="rt")]

    def legal(**spec) -> list[int]:
        return _legal_at_100(jobs, **spec)

    assert legal() == [CAND0, CAND0 + 1, WAIT]
    assert legal(defer_weight=4.4) == [CAND0, CAND0 + 1, WAIT]  # A's half is not deferrable: both stay legal
    assert legal(defer_weight=4.3) == [WAIT]
    assert legal(shield="preempt", defer_weight=4.4) == [CAND0, CAND0 + 1]


def test_no_deferral_reaches_past_the_wait_and_slowdown_bounds():
    from rtsched.rl.rtmix.core import DEFER_MAX_SLOWDOWN, DEFER_MAX_WAIT

    assert (DEFER_MAX_SLOWDOWN, DEFER_MAX_WAIT) == (2.0, 7200)
    def legal(short: int, rt_wall: int = 20000, **spec) -> list[int]:
        # A (512 nodes, 30,000 s) and S (512, `short` s) from 0; R (RTJ, 1024 nodes, rt_wall s) at 100
        return _legal_at_100([Job(1, 0, 30000, 30000, 512), Job(2, 0, short, short, 512),
                              Job(3, 100, rt_wall, rt_wall, 1024, kind="rt")], **spec)

    # S ends at 6,500: R would start at 7,012 after A's write, 6,912 s after its submission (<= 7,200), estimated
    # slowdown (7,012 - 100 + 20,000) / 20,000 = 1.35 (<= 2); S's gain (20,000 + 512 + 512) / 6,500 = 3.23 over
    # 1.35 - 1.03 = 0.32 of R's slowdown: deferred for a weight up to 10.1
    assert legal(6500, defer_weight=7.5) == [WAIT]
    # S ends at 7,000: R's start 7,512 is 7,412 s after its submission: past the bound, never deferred
    assert legal(7000, defer_weight=0.0) == [CAND0, WAIT]
    # a 6,000 s RTJ: waiting for S (6,500) would give it (7,012 - 100 + 6,000) / 6,000 = 2.15 > 2: never deferred
    assert legal(6500, rt_wall=6000, defer_weight=0.0) == [CAND0, WAIT]


class _FirstLegal:
    """Every pass: the first legal start or preemption, until only waiting is legal."""

    preemptive = True

    def __init__(self, spec: RtMixSpec) -> None:
        self.spec = spec

    def decide(self, view):
        ps = RtMixPass(view, self.spec)
        while ps.has_choice():
            legal = [a for a in np.flatnonzero(ps.mask()) if a != self.spec.wait_action]
            if not legal:
                break
            ps.apply(int(legal[0]))
        return ps.final_decisions()


def _run(**spec):
    sim = _sim()  # at 0 the policy starts A and S on the two halves (all that is legal), as above
    result = sim.run(_FirstLegal(RtMixSpec(eligibility="any", **spec)))
    validate_schedule(result.schedule, sim.workload, _machine(), outcomes=result.outcomes)
    return {o.job.id: o for o in result.outcomes}


def test_a_deferred_preemption_spares_the_short_job_and_happens_at_its_end():
    now = _run()
    # preempting at 100: both BJs write for 512 s, R runs 612..3612; S resumes after R (read 512 s)
    assert now[3].first_start == 612 and now[2].n_preemptions == 1
    assert now[2].end == 3612 + 512 + 200  # the read, then the 200 s S had left of its 300
    deferred = _run(defer_weight=201.0)
    # at 300 S ends; waiting for A then has the ratio (4024 / 2000) / (1188 / 3000) = 5.1 < 201: A is preempted
    assert deferred[2].n_preemptions == 0 and deferred[2].end == 300
    assert deferred[1].n_preemptions == 1 and deferred[3].first_start == 300 + 512
    assert deferred[3].end == 812 + 3000
    # S's slowdown 1 instead of 4324 / 300 = 14.4; R's (3812 - 100) / 3000 = 1.237 instead of 1.171


def test_defer_weight_is_a_stored_setting_and_is_checked():
    spec = RtMixSpec.from_settings({"window": 8, "candidates": 4, "order": "submit", "defer_weight": 7.5})
    assert spec.defer_weight == 7.5 and spec.optional_settings() == {"defer_weight": 7.5}
    assert RtMixSpec.from_settings({"window": 8, "candidates": 4, "order": "submit"}).defer_weight is None
    with pytest.raises(ValueError, match="defer_weight"):
        RtMixSpec(defer_weight=-1.0)


def test_export_set_changes_only_mask_settings_and_lists_the_changes(tmp_path, capsys):
    torch = pytest.importorskip("torch")

    from rtsched.cli import main
    from rtsched.rl.modelfiles import load_model
    from rtsched.rl.rtmix.policy import PRETRAINED_RTMIX, RtMixPolicy

    out = tmp_path / "defer.pt"
    assert main(["rl", "export", PRETRAINED_RTMIX, str(out), "--set", "defer_weight=5",
                 "--set", "shield_theta=1.3"]) == 0
    capsys.readouterr()
    shipped, changed = load_model(PRETRAINED_RTMIX), load_model(str(out))
    assert changed.env == {**shipped.env, "defer_weight": 5.0, "shield_theta": 1.3}
    assert RtMixPolicy(changed).spec.defer_weight == 5.0
    earlier = torch.load(PRETRAINED_RTMIX, weights_only=True).get("settings_changed", [])
    stored = torch.load(out, weights_only=True)
    assert stored["settings_changed"] == earlier + [
        {"name": "defer_weight", "from": shipped.env.get("defer_weight"), "to": 5.0},
        {"name": "shield_theta", "from": shipped.env["shield_theta"], "to": 1.3}]
    assert torch.equal(stored["actor"][next(iter(stored["actor"]))],
                       torch.load(PRETRAINED_RTMIX, weights_only=True)["actor"][next(iter(stored["actor"]))])
    # exported again: the list grows, 'none' clears the rule
    again = tmp_path / "again.pt"
    assert main(["rl", "export", str(out), str(again), "--set", "defer_weight=none"]) == 0
    capsys.readouterr()
    assert torch.load(again, weights_only=True)["settings_changed"][-1] == {"name": "defer_weight", "from": 5.0,
                                                                            "to": None}
    assert RtMixPolicy(str(again)).spec.defer_weight is None
    bad = tmp_path / "bad.pt"
    for pairs, words in ((["window=3"], "shield, shield_theta, conserve, defer_weight"),
                         (["defer_weight"], "NAME=VALUE"),
                         (["defer_weight=x"], "takes a float"),
                         (["defer_weight=-2"], "must be a finite number >= 0"),
                         (["defer_weight=inf"], "must be a finite number >= 0"),
                         (["shield_theta=0"], "shield_theta must be a finite number > 0"),
                         (["shield=always"], "unknown rtmix shield")):
        argv = ["rl", "export", PRETRAINED_RTMIX, str(bad)]
        for pair in pairs:
            argv += ["--set", pair]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--set" in err and words in err, err
        assert not bad.exists()
    table5 = str(Path(PRETRAINED_RTMIX).parents[1] / "table5" / "rl-lublin-1-none.pt")
    assert main(["rl", "export", table5, str(bad), "--set", "shield=risk"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "only rtmix models" in err and not bad.exists()
