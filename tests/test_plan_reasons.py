"""milp.plan.preemption_reasons on hand-built plans: whom a split serves, and whether it needed the future."""
from milp.instance import Instance
from milp.plan import Placement, preemption_reasons
from milp.report import replay_plan
from rtsched.jobs import BATCH, RT, Job


def two_block_instance(beneficiary_kind: str, beneficiary_submit: int) -> Instance:
    # A: a 2-block BJ from t=0 for 1,000 s; B: a 1-block job that arrives later.
    jobs = [Job(1, 0, 1000, 1000, 1024, kind=BATCH),
            Job(2, beneficiary_submit, 100, 100, 512, kind=beneficiary_kind)]
    return Instance(2, jobs, name="reasons")


def plan_for(inst: Instance) -> list[Placement]:
    """A splits after 200 s of work; B takes block 0 when A's checkpoint is written (or when B
    arrives, if later); A restarts when B ends."""
    a, b = inst.job(1), inst.job(2)
    o = inst.overhead(a)
    b_start = max(200 + o, b.submit)
    return [Placement(1, 2, 0, split=200, restart=b_start + b.runtime), Placement(2, 0, b_start)]


def test_a_write_begun_before_the_rtj_arrives_is_anticipatory():
    inst = two_block_instance(RT, 300)
    plan = plan_for(inst)
    replay_plan(inst, plan)  # the plan is one the simulator accepts
    (r,) = preemption_reasons(inst, plan)
    assert (r.job_id, r.write_start, r.beneficiaries, r.for_rtj, r.anticipatory) == (1, 200, (2,), True, True)
    assert r.restart == plan[0].restart


def test_a_write_begun_after_a_bj_arrived_serves_bjs_only_and_needs_no_future():
    inst = two_block_instance(BATCH, 150)
    plan = plan_for(inst)
    replay_plan(inst, plan)
    (r,) = preemption_reasons(inst, plan)
    assert (r.beneficiaries, r.for_rtj, r.anticipatory) == ((2,), False, False)


def test_unsplit_plans_have_no_reasons():
    inst = two_block_instance(RT, 300)
    plan = [Placement(1, 2, 0), Placement(2, 0, 1000)]
    assert preemption_reasons(inst, plan) == []


def test_compare_rows_of_the_optimum_count_the_uncopyable_preemptions():
    from milp.compare import OPTIMUM, RTJ_TIEBREAK, compare
    from milp.instance import table3_instance
    from milp.solve import solve

    inst = table3_instance(5_000_008, name="eval-5000008")  # its optimum preempts (bench_rtmix's set)
    (opt,) = [r for r in compare([inst], ["baseline"], method="milp-disjunctive") if r.policy == OPTIMUM]
    row = opt.to_json()
    reasons = preemption_reasons(inst, solve(inst, method="milp-disjunctive", rtj_tiebreak=RTJ_TIEBREAK).placements)
    assert row["preemptions"] == len(reasons) >= 1
    assert row["preemptions_anticipatory"] == sum(r.anticipatory for r in reasons)
    assert row["preemptions_for_bjs_only"] == sum(not r.for_rtj for r in reasons)


def test_preempting_for_a_waiting_bj_is_an_online_move_not_one_that_needs_the_future():
    # B (a BJ) is already waiting when A's write begins: an online scheduler can make this move.
    inst = two_block_instance(BATCH, 150)
    (r,) = preemption_reasons(inst, plan_for(inst))
    assert not r.for_rtj and not r.needs_future
    # The same move for a BJ that arrives only after the write began needs the future.
    late = two_block_instance(BATCH, 300)
    (r_late,) = preemption_reasons(late, plan_for(late))
    assert r_late.needs_future and not r_late.for_rtj
