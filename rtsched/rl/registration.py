"""Gymnasium ids of rtsched's environments: one table, registered on ``import rtsched.rl``'s
first use of Gymnasium.

Gymnasium 1.x has no plugin entry point, so an id is known once this module has run.  Two ways
that both work::

    import rtsched.rl.registration        # registers every id below
    env = gymnasium.make("rtsched/JobPicking-v0", trace="lublin_256.swf")

    env = gymnasium.make("rtsched.rl.registration:rtsched/JobPicking-v0", trace="lublin_256.swf")

(the second form is Gymnasium's own "module:id" syntax: it imports the module first).  Every
environment takes its constructor's keyword arguments through ``gymnasium.make``.
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
