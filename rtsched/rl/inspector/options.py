"""``rtsched rl train --agent inspector``'s options (data only: ``rtsched.rl.options``)."""
from __future__ import annotations

from rtsched.errors import OptionError
from rtsched.rl.options import TrainOption

GROUP = "inspector (seed 000)"
OPTIONS = (
    TrainOption(("--base",), "inspector: the inspected priority (sjf, f1, fcfs, wfp3, ...)", default="sjf"),
)
USES = ("trace", "goal", "backfill", "seq_len", "start_range", "init_from", "workers", "backend", "address",
        "rollout")
WHY_NOT = {"actor": "its networks are MLPs over the inspected pick's features",
           "critic": "its networks are MLPs over the inspected pick's features"}
SCORE_LABEL = "gain over base"  # the relative gain over the base policy is the return


def train_options(args) -> dict:
    from heuristics.priorities import get_priority

    try:
        get_priority(args.base)
    except ValueError as exc:
        raise OptionError(f"--base: {exc}") from None
    opts = {k: getattr(args, k) for k in ("seq_len",) if getattr(args, k) is not None}
    opts["base"] = args.base
    return opts
