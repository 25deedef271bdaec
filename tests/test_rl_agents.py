"""The agents table: every agent is one folder with the same parts, reached by name only."""
from __future__ import annotations

import importlib

import pytest

from rtsched.rl.agents import AGENTS, PARTS, EnvFactory, agent_part

pytest.importorskip("torch")
pytest.importorskip("gymnasium")


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_every_agent_has_its_four_parts(agent):
    assert AGENTS[agent] == f"rtsched.rl.{agent}"
    for part in PARTS:
        assert agent_part(agent, part).__name__ == f"rtsched.rl.{agent}.{part}"
    assert callable(agent_part(agent, "policy").from_model)
    recipe = agent_part(agent, "recipe")
    assert callable(recipe.make_env) and isinstance(recipe.PPO_DEFAULTS, dict)
    assert hasattr(recipe, "train") or (callable(recipe.describe) and isinstance(recipe.ENV_OPTIONS, tuple))
    options = agent_part(agent, "options")
    assert isinstance(options.USES, tuple) and all(o.flag.startswith("--") for o in options.OPTIONS)


def test_an_agents_package_loads_nothing():
    """Naming an agent (its package) imports none of its parts: the table stays cheap to consult."""
    import subprocess
    import sys

    code = ("import sys, importlib\n"
            "for a in ('rlscheduler', 'inspector', 'splitwindow', 'rlschert', 'rtmix'):\n"
            "    importlib.import_module('rtsched.rl.' + a)\n"
            "print(sorted(m for m in sys.modules if m.startswith('rtsched.rl.') and m.count('.') > 2))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_agents_and_parts_are_refused_naming_them():
    with pytest.raises(ValueError, match="unknown agent 'nosuch'; use rlscheduler, inspector"):
        agent_part("nosuch", "env")
    with pytest.raises(ValueError, match="unknown agent part 'nets'"):
        agent_part("rlscheduler", "nets")


def test_env_factory_builds_each_agents_environment_and_pickles():
    import pickle

    from rtsched.rl.trace import default_rl_trace

    tr = default_rl_trace()
    for agent, trace, options in (("rlscheduler", tr, {"seq_len": 16, "window": 8}),
                                  ("inspector", tr, {"seq_len": 16}),
                                  ("splitwindow", tr, {"placements": 10}),
                                  ("rlschert", "vasplike", {"simu_len": 10}),
                                  ("rtmix", None, {})):
        factory = pickle.loads(pickle.dumps(EnvFactory(agent, trace, options=options)))
        env = factory()
        assert type(env).__module__ == f"rtsched.rl.{agent}.env"
        n_features, window = env.network_shape
        assert n_features >= 1 and window >= 1
        env.reset(seed=0)


def test_the_trainer_builds_networks_from_the_environments_shape():
    """The trainer knows no agent: the networks' shape is ``env.network_shape`` (checked against what the
    model file records)."""
    from rtsched.rl.trainer import PPOConfig, PPOTrainer

    factory = EnvFactory("rlscheduler", importlib.import_module("rtsched.rl.trace").default_rl_trace(),
                         options={"seq_len": 16, "window": 8})
    env = factory()
    trainer = PPOTrainer("rlscheduler", factory, PPOConfig(trajs_per_epoch=1, n_envs=1), {}, env.norms,
                         first_env=env)
    assert (trainer.n_features, trainer.window) == env.network_shape == (env.obsb.n_features, 8)
    trainer.close()
