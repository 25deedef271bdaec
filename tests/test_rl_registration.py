"""Every rtsched environment is reachable through ``gymnasium.make`` by its id."""
from __future__ import annotations

import pytest

gymnasium = pytest.importorskip("gymnasium", reason="the rl extra (gymnasium) is not installed")
pytest.importorskip("torch", reason="the rl extra (torch) is not installed")

from rtsched.rl import registration  # noqa: E402

from conftest import REPO  # noqa: E402

SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")


def test_every_id_is_registered_with_its_class():
    for env_id, entry_point in registration.ENVIRONMENTS.items():
        spec = gymnasium.spec(env_id)
        assert spec.entry_point == entry_point


def test_job_picking_env_through_gymnasium_make_steps_like_the_class():
    env = gymnasium.make("rtsched/JobPicking-v0", trace=SAMPLE, seq_len=32, window=16)
    obs, info = env.reset(seed=3)
    mask = info.get("action_mask") if isinstance(info, dict) else None
    assert obs is not None
    if mask is not None:
        assert mask.any()
    env.close()


def test_module_colon_id_form_imports_the_registration():
    env = gymnasium.make("rtsched.rl.registration:rtsched/JobPicking-v0", trace=SAMPLE, seq_len=16, window=8)
    env.reset(seed=0)
    env.close()
