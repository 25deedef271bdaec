"""SchedInspector (seed 000): a network accepts or rejects a base priority's pick.

``env`` (``InspectorEnv``, ``rtsched/Inspector-v0``), ``policy`` (``InspectedPolicy``), ``recipe``
(how it is trained), ``options`` (its ``rtsched rl train`` options).  Kept empty so that naming the
agent loads nothing (``rtsched.rl.agents``).
"""
