"""Gymnasium ids of rtsched's environments: one table, registered by ``import rtsched.rl``.

Gymnasium 1.x has no plugin entry point; ``import rtsched.rl`` registers the ids at once when
Gymnasium is loaded, otherwise as soon as it is (``rtsched.rl.__init__``).  Three ways that work::

    import rtsched.rl                     # or rtsched.rl.registration
    env = gymnasium.make("rtsched/JobPicking-v0")                       # the shipped Lublin-256 sample
    env = gymnasium.make("rtsched/JobPicking-v0", trace="lublin_256.swf")

    env = gymnasium.make("rtsched.rl.registration:rtsched/JobPicking-v0", trace="lublin_256.swf")

(the last is Gymnasium's own "module:id" syntax: it imports the module first).  Every environment
takes its constructor's keyword arguments through ``gymnasium.make``, and none needs one: the
trace-driven environments run on ``traces/lublin_256_sample.swf`` when no ``trace`` is given
(``rtsched.rl.trace.default_rl_trace``), RLSchert on its VASP-like workload, rtmix on generated
instances.
"""
from __future__ import annotations

import gymnasium

# Gymnasium id -> "module:Class".  New environments add one line here (and nowhere else).
ENVIRONMENTS: dict[str, str] = {
    "rtsched/JobPicking-v0": "rtsched.rl.rlscheduler.env:JobPickingEnv",
    "rtsched/Inspector-v0": "rtsched.rl.inspector.env:InspectorEnv",
    "rtsched/SplitWindow-v0": "rtsched.rl.splitwindow.env:SplitWindowEnv",
    "rtsched/RLSchert-v0": "rtsched.rl.rlschert.env:RLSchertEnv",
    "rtsched/RtMix-v0": "rtsched.rl.rtmix.env:RtMixEnv",
}


def register_all() -> list[str]:
    """Register every id of ``ENVIRONMENTS`` that Gymnasium does not know yet; returns the ids."""
    for env_id, entry_point in ENVIRONMENTS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)
    return list(ENVIRONMENTS)


register_all()
