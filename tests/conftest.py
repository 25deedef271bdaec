"""Shared test helpers: where the shared real data lives, and a validated simulation."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """Path to a file under ../shared/data, skipping the test with a clear message when absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path} (the tests that read ../shared/data skip without it)")
    return path


def write_swf(path: Path, n: int = 30, seed: int = 1, procs: int = 64) -> Path:
    """A small random SWF trace for a flat machine of ``procs`` processors (header MaxProcs): jobs of
    30-2400 s (all short) on 1 to ``procs`` processors (all narrow), for experiment-grid tests."""
    import random

    rng = random.Random(seed)
    lines = [f"; MaxProcs: {procs}", "; UnixStartTime: 1516492800"]
    t = 0
    for i in range(1, n + 1):
        t += rng.randint(0, 300)
        run = rng.randint(30, 2400)
        size = rng.choice([1, 4, 16, 32, procs])
        lines.append(f"{i} {t} -1 {run} {size} -1 -1 {size} {run + rng.randint(0, 900)} -1 1 1 1 -1 1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def run_validated(workload, machine, policy, **options):
    """Simulate and run the independent validator on the schedule (every simulation in tests does)."""
    from rtsched.sim.core import Simulator
    from rtsched.validate import validate_schedule

    sim = Simulator(workload, machine, **options)
    result = sim.run(policy)
    validate_schedule(result.schedule, workload, machine, sim.io, outcomes=result.outcomes)
    return result


def assert_plan_replays(res) -> None:
    """An exact solve's schedule (``milp.solve.SolveResult``) replays segment for segment in the core
    simulator, the validator accepts it, and the reported means equal the exact rational evaluation."""
    from milp.plan import evaluate
    from rtsched.replay import replay_and_compare
    from rtsched.validate import validate_schedule

    inst = res.instance
    result = replay_and_compare(res.schedule, inst.workload(), inst.machine(), inst.io)
    validate_schedule(result.schedule, inst.workload(), inst.machine(), inst.io, max_preemptions=1)
    ev = evaluate(inst, res.placements)
    if ev.bj_mean is not None:
        assert res.bj_sd_mean == pytest.approx(float(ev.bj_mean), abs=1e-12)
    if ev.rt_mean is not None:
        assert res.rtj_sd_mean == pytest.approx(float(ev.rt_mean), abs=1e-12)


class FailsInASubprocess:
    """A picklable RL environment factory that builds a small picking environment in the process
    that made it and raises in any other (a rollout worker), for tests of worker failures.  Kept
    here, not in a test module, so that a worker unpickling it imports only this light module."""

    def __init__(self) -> None:
        import os

        self.pid = os.getpid()

    def __call__(self):
        import os

        if os.getpid() != self.pid:
            raise RuntimeError("boom in a rollout worker")
        from rtsched.rl.agents import EnvFactory
        from rtsched.rl.trace import load_trace

        trace = load_trace(str(REPO / "traces" / "lublin_256_sample.swf"))
        return EnvFactory("rlscheduler", trace, options={"seq_len": 32, "window": 8})()


def _reads_shared_data(func) -> bool:
    import inspect

    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        return False
    return "shared_data(" in source or "SHARED_DATA" in source


def pytest_collection_modifyitems(config, items):
    """Mark every test that reads ../shared/data — itself or through a fixture — ``needs_data``
    (``pytest -m "not needs_data"`` runs the rest; without the data those tests skip anyway)."""
    for item in items:
        funcs = [getattr(item, "function", None)]
        info = getattr(item, "_fixtureinfo", None)
        if info is not None:
            for defs in info.name2fixturedefs.values():
                funcs.extend(d.func for d in defs)
        if any(f is not None and _reads_shared_data(f) for f in funcs):
            item.add_marker(pytest.mark.needs_data)
