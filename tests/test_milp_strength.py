"""The MILP back ends and strengthenings (issue 16): HiGHS, the disjunctive MILP, every cut on and
off against CP-SAT and brute force, the cuts' validity on real schedules, MIP starts that respect
the symmetry breaking, and --write-model files that HiGHS loads back to the same optimum."""
from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from dataclasses import fields, replace
from fractions import Fraction

import pytest

from milp.bruteforce import bruteforce
from milp.cpsat import best_greedy_plan, greedy_plan
from milp.disjunctive_milp import build_disjunctive_milp
from milp.instance import Instance, random_instance, table3_instance
from milp.linmodel import LinearModel, _new_highs, solve_highs
from milp.plan import evaluate, parts_of
from milp.sequence_milp import build_sequence_milp
from milp.solve import solve
from milp.strengthen import Strengthen, canonical_plan, identical_groups, job_sets, tree_fixed_job
from rtsched.cli import main as rtsched_main
from rtsched.jobs import Job

ONE_AT_A_TIME = [Strengthen.none()] + [replace(Strengthen.none(), **{f.name: True}) for f in fields(Strengthen)] + \
    [Strengthen()]


def _small():
    # 4 jobs on 4 and 8 blocks (as tests/test_milp.py's _small_instances) plus a tiny 2-block one
    return [random_instance(1, 2, 2, 4, sizes=(512, 1024, 2048), submit_window=1800, runtime_min=600,
                            runtime_max=3600, runtime_step=300, name="small1-4b"),
            random_instance(12, 2, 2, 8, sizes=(1024, 2048, 4096), submit_window=600, runtime_min=600,
                            runtime_max=3600, runtime_step=300, name="small12-8b")]


def _tiny():
    return [random_instance(seed, 2, 2, 4, sizes=(512, 1024, 2048), submit_window=300, runtime_min=60,
                            runtime_max=600, runtime_step=30, name=f"tiny{seed}") for seed in range(2)]


def _identical() -> Instance:
    # two identical BJs (same submit, runtime, size) and a full-machine RTJ on 4 blocks
    jobs = [Job(1, 0, 1200, 1200, 1024, "batch"), Job(2, 0, 1200, 1200, 1024, "batch"),
            Job(3, 300, 600, 600, 2048, "rt"), Job(4, 100, 900, 900, 512, "batch")]
    return Instance(4, jobs, name="identical")


# ------------------------------------------------------------------------- agreement
@pytest.mark.parametrize("inst", _tiny(), ids=lambda i: i.name)
def test_every_milp_variant_agrees_with_bruteforce_without_preemption(inst):
    ref = bruteforce(inst.blocks, inst.jobs, theta=1.2, preempt=False)
    for method in ("milp", "milp-highs", "milp-disjunctive"):
        res = solve(inst, method, preempt=False)
        assert res.status == "optimal" and res.solver == "highs", method
        assert res.theta_used_exact == ref.theta_used, method
        assert Fraction(res.evaluation.bj_sum) == ref.bj_sum, method


@pytest.mark.parametrize("inst", [_small()[0], pytest.param(_small()[1], marks=pytest.mark.slow)],
                         ids=lambda i: i.name)
@pytest.mark.parametrize("formulation", [pytest.param("milp-highs", marks=pytest.mark.slow), "milp-disjunctive"])
def test_each_strengthening_alone_keeps_the_optimum(inst, formulation):
    """Every cut switched on alone (and all, and none) gives CP-SAT's optimum: none cuts it off."""
    ref = solve(inst, "cpsat")
    assert ref.status == "optimal"
    for opt in ONE_AT_A_TIME:
        res = solve(inst, formulation, strengthen=opt)
        assert res.status == "optimal", (formulation, opt.label())
        assert res.theta_used == pytest.approx(ref.theta_used, abs=1e-9)
        assert res.bj_sd_mean == pytest.approx(ref.bj_sd_mean, abs=1e-6), (formulation, opt.label())


@pytest.mark.parametrize("backend", ["cbc", "ortools"])
def test_disjunctive_milp_on_the_other_back_ends(backend):
    inst = _small()[0]
    ref = solve(inst, "cpsat")
    res = solve(inst, "milp-disjunctive", milp_backend=backend)
    assert res.status == "optimal" and res.solver.startswith(backend[:3])
    assert res.bj_sd_mean == pytest.approx(ref.bj_sd_mean, abs=1e-6)


@pytest.mark.slow
def test_disjunctive_milp_agrees_with_cpsat_on_table3_instances():
    # the Table-3 setting (5 BJ + 2 RTJ, 16 blocks): the disjunctive MILP proves in about a second
    for seed in (1, 11):
        inst = table3_instance(seed)
        ref = solve(inst, "cpsat", time_limit=60)
        res = solve(inst, "milp-disjunctive", time_limit=60)
        assert res.status == "optimal" and ref.status in ("optimal", "feasible")
        assert res.theta_used == pytest.approx(ref.theta_used, abs=1e-9)
        if ref.status == "optimal":
            assert res.bj_sd_mean == pytest.approx(ref.bj_sd_mean, abs=1e-6)
        else:  # CP-SAT (2 workers, not deterministic) may stop unproven on a loaded machine
            assert res.bj_sd_mean <= ref.bj_sd_mean + 1e-9 and ref.best_bound <= res.bj_sd_mean + 1e-9
        assert res.nodes is not None and res.root_bound is not None
        assert res.root_bound <= res.bj_sd_mean + 1e-9


def test_identical_jobs_and_the_tree_fix_keep_the_optimum_with_preemption():
    inst = _identical()
    assert identical_groups(inst, {1, 2, 4}) == [[1, 2]]
    ref = solve(inst, "cpsat")
    for method in ("milp-highs", "milp-disjunctive"):
        for opt in (Strengthen.none(), Strengthen()):
            res = solve(inst, method, strengthen=opt)
            assert res.status == "optimal"
            assert res.bj_sd_mean == pytest.approx(ref.bj_sd_mean, abs=1e-6), (method, opt.label())


# -------------------------------------------------------------------- cuts are valid
def _rows_hold(model: LinearModel, values: dict[int, float], prefix: str) -> int:
    """Check every row named ``prefix``... at ``values`` (only rows over et variables): count."""
    n = 0
    for c in model.cons:
        if c.name.startswith(prefix):
            lhs = sum(a * values[k] for k, a in c.coefs.items())
            assert c.lb - 1e-6 <= lhs <= c.ub + 1e-6, (c.name, lhs, c.lb, c.ub)
            n += 1
    return n


@pytest.mark.slow
def test_energy_and_clique_cuts_hold_on_every_greedy_and_optimal_schedule():
    """The cuts are valid inequalities: every real schedule satisfies them (greedy plans in many
    orders, and CP-SAT's best schedule in 3 s, with its splits)."""
    import itertools

    checked = 0
    for seed in range(4):
        inst = table3_instance(seed, n_bj=4, n_rt=2, blocks=8, sizes=(512, 1024, 2048, 4096))
        d = build_disjunctive_milp(inst)
        plans = [greedy_plan(inst, list(order)) for order in itertools.islice(
            itertools.permutations([j.id for j in inst.jobs]), 0, 720, 37)]
        plans.append(solve(inst, "cpsat", time_limit=3).placements)  # optimal or not: a real schedule
        for plan in plans:
            vals = {v.index: 0.0 for v in d.model.vars}
            for pl in plan:
                vals[d.et[pl.job_id].index] = parts_of(inst, pl)[-1].end
            checked += _rows_hold(d.model, vals, "energy[") + _rows_hold(d.model, vals, "clique[")
    assert checked > 100


def test_full_machine_jobs_get_the_single_machine_cut():
    # three 16-block jobs on 16 blocks pairwise conflict: one clique row over all three (and pairs)
    jobs = [Job(i, 0, 600 * i, 600 * i, 8192, "batch") for i in (1, 2, 3)]
    inst = Instance(16, jobs, name="cliq")
    d = build_disjunctive_milp(inst)
    names = [c.name for c in d.model.cons if c.name.startswith("clique[")]
    assert "clique[1,2,3]" in names
    # Σ p_j C_j >= P²/2 + Σ p²/2 = (3600² + 600² + 1200² + 1800²)/2 with releases 0: SPT is optimal,
    # C = 600, 1800, 3600 -> Σ (C_j/p_j) = 1 + 1.5 + 2 = 4.5 (SD sum); the LP root bound reaches it.
    res = solve(inst, "milp-disjunctive")
    assert res.status == "optimal" and res.bj_sd_mean == pytest.approx(4.5 / 3)
    assert res.root_bound == pytest.approx(4.5 / 3, abs=1e-6)


def test_job_sets_all_subsets_then_release_suffixes():
    jobs = [Job(i, 10 * (5 - i), 60, 60, 512, "batch") for i in range(1, 5)]
    assert sum(1 for _ in job_sets(jobs)) == 15
    many = [Job(i, i, 60, 60, 512, "batch") for i in range(1, 13)]
    suffixes = list(job_sets(many))
    assert len(suffixes) == 12 and [j.id for j in suffixes[-1]] == [12]


# ------------------------------------------------------------------- symmetry and starts
def test_canonical_plan_keeps_slowdowns_and_satisfies_the_symmetry_breaking():
    for inst in [_identical(), table3_instance(2), table3_instance(5)]:
        split = {j.id for j in inst.jobs if inst.preemptible(j)}
        for plan in (best_greedy_plan(inst), greedy_plan(inst, [j.id for j in reversed(inst.jobs)])):
            can = canonical_plan(inst, plan, split)
            a, b = evaluate(inst, plan), evaluate(inst, can)
            assert sorted(a.sd.values()) == sorted(b.sd.values())
            fixed = tree_fixed_job(inst)
            if fixed is not None:
                assert next(pl.partition for pl in can if pl.job_id == fixed[0]) == fixed[1]
            for model in (build_disjunctive_milp(inst), build_sequence_milp(inst, options=Strengthen())):
                vals = model.mip_start(can)
                assert vals is not None
                _feasible(model.model, vals)


def _feasible(model: LinearModel, vals: dict[int, float]) -> None:
    for v in model.vars:
        assert v.lb - 1e-6 <= vals[v.index] <= v.ub + 1e-6, v.name
    for c in model.cons:
        lhs = sum(a * vals[k] for k, a in c.coefs.items())
        assert c.lb - 1e-6 <= lhs <= c.ub + 1e-6, c.name


def test_mip_start_is_taken_by_highs():
    inst = table3_instance(1)
    d = build_disjunctive_milp(inst)
    plan = canonical_plan(inst, best_greedy_plan(inst), {j.id for j in inst.jobs if inst.preemptible(j)})
    res = solve_highs(d.model, "bj", time_limit=0.5, start=d.mip_start(plan))
    assert res.values is not None and res.objective <= float(evaluate(inst, plan).bj_sum) + 1e-6


# ------------------------------------------------------------------------ options, CLI
def test_strengthen_parse():
    assert Strengthen.parse("all") == Strengthen() and Strengthen.parse("none") == Strengthen.none()
    assert Strengthen.parse("energy,clique") == replace(Strengthen.none(), energy=True, clique=True)
    assert Strengthen.parse("-energy") == Strengthen.parse("no-energy") == replace(Strengthen(), energy=False)
    assert Strengthen.parse("no-energy,no-start") == replace(Strengthen(), energy=False, start=False)
    assert Strengthen.parse("energy,clique").label() == "energy+clique"
    for bad in ("bogus", "energy,-clique", "no-bogus"):
        with pytest.raises(ValueError):
            Strengthen.parse(bad)


def _cli(*argv) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        try:
            rc = rtsched_main(list(argv))
        except SystemExit as exc:
            rc = exc.code
    return rc, out.getvalue()


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_write_model_loads_back_in_highs_with_the_same_optimum(tmp_path, suffix):
    from milp.instance import save_instance

    inst = _small()[0]
    path = tmp_path / "i.json"
    save_instance(inst, path)
    model = tmp_path / f"model{suffix}"
    rc, out = _cli("solve", str(path), "--method", "milp", "--json", "--write-model", str(model))
    assert rc == 0
    data = json.loads(out)  # nothing but JSON on stdout (HiGHS's banner is kept off it)
    assert data["status"] == "optimal" and data["solver"] == "highs"
    assert data["nodes"] is not None and data["root_bound"] <= data["bj_sd_mean"] + 1e-9
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["i.json", model.name])  # no temp file left
    h = _new_highs()
    h.readModel(str(model))
    h.run()
    assert h.getInfo().objective_function_value / len(inst.batch_jobs) == pytest.approx(data["bj_sd_mean"], abs=1e-6)


def test_write_model_and_strengthen_usage_errors(tmp_path):
    from milp.instance import save_instance

    path = tmp_path / "i.json"
    save_instance(_small()[0], path)
    for argv, needle in (((str(path), "--method", "cpsat", "--write-model", str(tmp_path / "m.mps")), "milp"),
                         ((str(path), "--method", "milp", "--write-model", str(tmp_path / "m.txt")), ".mps or .lp"),
                         ((str(path), "--method", "milp", "--strengthen", "bogus"), "--strengthen")):
        err = io.StringIO()
        from contextlib import redirect_stderr

        with redirect_stderr(err):
            rc, _ = _cli("solve", *argv)
        assert rc == 2 and needle in err.getvalue()


def test_capped_bj_stage_relaxation_keeps_the_restricted_optimum():
    """With a binding cap (Table 2, T = 5) the uncapped disjunctive MILP's bound and plan close the
    capped BJ stage; the restricted optimum is the one found without it."""
    from milp.instance import table2_instance

    inst = table2_instance(3, 2, 4, 0)
    off = solve(inst, "milp-highs", sequences=5, strengthen="no-relaxation")
    on = solve(inst, "milp-highs", sequences=5)
    assert on.restricted and off.status == on.status == "optimal"
    assert on.theta_used == pytest.approx(off.theta_used, abs=1e-9)
    assert on.bj_sd_mean == pytest.approx(off.bj_sd_mean, abs=1e-6)
    # the uncapped optimum is a lower bound on the capped one
    assert solve(inst, "milp-disjunctive").bj_sd_mean <= on.bj_sd_mean + 1e-9
