"""``rtsched rl train --agent rlscheduler``'s options (data only: ``rtsched.rl.options``)."""
from __future__ import annotations

from rtsched.rl.options import TrainOption, pair

GROUP = "rlscheduler (seed 003)"
OPTIONS = (
    TrainOption(("--sjf-filter",), "rlscheduler: trajectory filtering: 'auto' (median, 2·mean of SJF) or LO,HI"),
    TrainOption(("--actor",), "rlscheduler policy network (default kernel, PPOConfig.actor)",
                choices=("kernel", "mlp_v1", "mlp_v2", "mlp_v3")),
    TrainOption(("--critic",), "rlscheduler value network (default mlp, the paper's; kernel: the authors' code)",
                choices=("mlp", "kernel")),
)
USES = ("trace", "goal", "backfill", "seq_len", "start_range", "init_from", "workers", "backend", "address",
        "rollout")
SCORE_LABEL = None  # "avg GOAL": the pick environment returns −value (+utilization)


def train_options(args) -> dict:
    opts = {k: getattr(args, k) for k in ("seq_len", "actor", "critic") if getattr(args, k) is not None}
    if args.sjf_filter:
        opts["sjf_filter"] = "auto" if args.sjf_filter == "auto" else pair(args.sjf_filter, "--sjf-filter")
    return opts
