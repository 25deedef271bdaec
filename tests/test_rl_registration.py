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


@pytest.mark.parametrize("env_id", sorted(registration.ENVIRONMENTS))
def test_make_with_no_arguments_runs_on_a_shipped_workload(env_id):
    """``gymnasium.make(id)`` alone works for every id (the trace-driven ones default to the shipped
    Lublin-256 sample, RLSchert to its VASP-like workload, rtmix to its generated instances)."""
    import numpy as np

    env = gymnasium.make(env_id)
    obs, _info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    u = env.unwrapped
    if hasattr(u, "trace") and env_id != "rtsched/RLSchert-v0":
        assert u.trace.name.startswith("lublin_256_sample") and len(u.trace) == 2000
    mask = u.action_masks()
    action = int(np.flatnonzero(mask)[0])
    obs, reward, term, trunc, _ = env.step(action)
    assert env.observation_space.contains(obs) and np.isfinite(reward)
    env.close()


def test_default_trace_matches_the_shipped_file_or_its_generator():
    from rtsched.generators import shipped_trace
    from rtsched.rl.trace import DEFAULT_TRACE, default_rl_trace, load_trace

    tr = default_rl_trace()
    assert (REPO / "traces" / DEFAULT_TRACE).exists() and len(tr) == len(load_trace(SAMPLE))
    generated = load_trace(shipped_trace(DEFAULT_TRACE))
    assert len(generated) == len(tr) and generated.max_nodes == tr.max_nodes


@pytest.mark.parametrize("first", ["rtsched.rl", "gymnasium"])
def test_importing_rtsched_rl_registers_the_ids(first):
    """The plugin habit: ``import rtsched.rl`` is enough, before or after Gymnasium, and it does not
    itself load Gymnasium (nor PyTorch)."""
    import subprocess
    import sys

    code = (f"import sys, importlib\nimportlib.import_module({first!r})\n"
            "heavy = sorted({'gymnasium', 'torch'} & set(sys.modules))\n"
            "import rtsched.rl, gymnasium\n"
            "ids = sorted(i for i in gymnasium.registry if i.startswith('rtsched/'))\n"
            "print(heavy, ids)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    heavy, ids = out.strip().split("] [")
    assert ids.rstrip("]").replace("'", "").split(", ") == sorted(registration.ENVIRONMENTS)
    if first == "rtsched.rl":
        assert heavy == "["  # nothing heavy loaded by importing rtsched.rl
