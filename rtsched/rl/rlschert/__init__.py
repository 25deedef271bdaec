"""RLSchert (seed 001): select and kill jobs on a VASP-like workload with running-time predictions.

``core`` (the scheduling logic shared by the environment and the policy), ``predict`` (the
running-time predictor), ``env`` (``RLSchertEnv``, ``rtsched/RLSchert-v0``), ``policy``
(``RLSchertPolicy``), ``recipe`` (how it is trained), ``options`` (its ``rtsched rl train``
options), ``results`` (its tables and figures), ``evaluate`` (``rtsched rl evaluate --trace vasplike``).  Kept empty so that naming the agent loads nothing
(``rtsched.rl.agents``).
"""
