"""RLScheduler (seed 003): a kernel network picks the head job among the FCFS-first window.

``env`` (``JobPickingEnv``, ``rtsched/JobPicking-v0``), ``policy`` (``RLSchedulerPolicy``),
``recipe`` (how it is trained), ``options`` (its ``rtsched rl train`` options).  Kept empty so that
naming the agent loads nothing (``rtsched.rl.agents``).
"""
