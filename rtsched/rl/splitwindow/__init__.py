"""Deep Back-Filling's split window (seed 004): the agent places jobs of a head/tail window or moves on.

``observation`` (the window, its features and reward), ``env`` (``SplitWindowEnv``,
``rtsched/SplitWindow-v0``), ``policy`` (``SplitWindowPolicy``), ``recipe`` (how it is trained),
``options`` (its ``rtsched rl train`` options).  Kept empty so that naming the agent loads nothing
(``rtsched.rl.agents``).
"""
