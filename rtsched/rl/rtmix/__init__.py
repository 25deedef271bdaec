"""rtmix: real-time/batch mixes on a partitioned Mira machine, cloned from optimal plans, then PPO.

``core`` (the decisions shared by the environment and the policy), ``env`` (``RtMixEnv``,
``rtsched/RtMix-v0``), ``policy`` (``RtMixPolicy``), ``expert`` and ``teacher`` (expert and
teacher episodes for cloning), ``train`` (cloning, fine-tuning, the curriculum), ``recipe`` (its
entry for ``rtsched.rl.api.train``), ``options`` (its ``rtsched rl train`` options).  Kept empty so
that naming the agent loads nothing (``rtsched.rl.agents``).
"""
