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


def run_validated(workload, machine, policy, **options):
    """Simulate and run the independent validator on the schedule (every simulation in tests does)."""
    from rtsched.sim.core import Simulator
    from rtsched.validate import validate_schedule

    sim = Simulator(workload, machine, **options)
    result = sim.run(policy)
    validate_schedule(result.schedule, workload, machine, sim.io)
    return result
