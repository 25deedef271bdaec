"""``rtsched rl train --agent inspector``'s options (data only: ``rtsched.rl.options``)."""
from __future__ import annotations

from rtsched.errors import OptionError
from rtsched.rl.options import TrainOption

# The inspector environment's terminal rewards (``env.relative_reward``); declared here, where the command
# line reads them without importing NumPy or Gymnasium.
REWARDS = ("percentage", "authors", "native", "winloss")

GROUP = "inspector (seed 000)"
OPTIONS = (
    TrainOption(("--base",), "inspector: the inspected priority (sjf, f1, fcfs, wfp3, ...)", default="sjf"),
    TrainOption(("--reward",), "inspector: terminal reward against the base policy: percentage (seed 000's text, "
                "default), authors (its code: divided by max(base, inspected, 1)), native, winloss",
                choices=REWARDS),
)
USES = ("trace", "goal", "backfill", "seq_len", "start_range", "init_from", "workers", "backend", "address",
        "rollout", "select_every", "validation_sequences", "until", "pi_lr")
WHY_NOT = {"actor": "its networks are MLPs over the inspected pick's features",
           "critic": "its networks are MLPs over the inspected pick's features"}
SCORE_LABEL = "gain over base"  # the relative gain over the base policy is the return


def train_options(args) -> dict:
    from heuristics.priorities import get_priority

    try:
        get_priority(args.base)
    except ValueError as exc:
        raise OptionError(f"--base: {exc}") from None
    opts = {k: getattr(args, k) for k in ("seq_len", "select_every", "validation_sequences", "reward", "pi_lr")
            if getattr(args, k) is not None}
    if opts.get("select_every", 0) < 0:
        raise OptionError(f"--select-every: must be at least 0, got {opts['select_every']}")
    if "validation_sequences" in opts and not opts.get("select_every"):
        raise OptionError("--validation-sequences: an option of --select-every (give it too)")
    if opts.get("validation_sequences", 1) < 1:
        raise OptionError(f"--validation-sequences: must be at least 1, got {opts['validation_sequences']}")
    opts["base"] = args.base
    return opts
