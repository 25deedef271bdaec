"""``rtsched rl train --agent splitwindow``'s options (data only: ``rtsched.rl.options``)."""
from __future__ import annotations

from rtsched.errors import OptionError
from rtsched.rl.options import TrainOption, int_list

GROUP = "splitwindow (seed 004)"
OPTIONS = (
    TrainOption(("--head",), "splitwindow: head slots M_h (default 10)", kind="int", bounds=(1, 4096)),
    TrainOption(("--tail",), "splitwindow: tail slots M_t (default 10)", kind="int", bounds=(0, 4096)),
    TrainOption(("--placements",), "splitwindow: starts per episode (default 1000, the paper's)", kind="int",
                bounds=(1, 10_000_000)),
    TrainOption(("--horizon",), "splitwindow: trace jobs per episode (default 1.5 × placements)", kind="int",
                bounds=(1, 100_000_000)),
    TrainOption(("--hidden",), "splitwindow: hidden layer sizes, comma-separated (default 1024,512,256)"),
    TrainOption(("--validation-segments",), "splitwindow: validation segments for --select-every, drawn from "
                "--start-range (default 4)", kind="int", bounds=(1, 10_000)),
    TrainOption(("--validation-jobs",), "splitwindow: jobs per validation segment (default 1000)", kind="int",
                bounds=(1, 100_000_000)),
    TrainOption(("--clone-episodes",), "splitwindow: imitation pre-stage on the --teacher's decisions in this many "
                "training episodes before PPO (default 0: none)", kind="int", bounds=(0, 1_000_000)),
    TrainOption(("--clone-lr",), "splitwindow: learning rate of the imitation pre-stage and of DAgger's fits "
                "(default 1e-3)", kind="float>0"),
    TrainOption(("--clone-from",), "splitwindow: a new run's actor taken from this model file (an earlier run's "
                "clone, e.g. its best.pt) instead of cloning; the critic starts afresh"),
    TrainOption(("--critic-warmup",), "splitwindow: the run's first N epochs train only the value network "
                "(default 0)", kind="int", bounds=(0, 1_000_000)),
    TrainOption(("--mask-invalid",), "splitwindow: mask empty slots and jobs that do not fit the free cores "
                "(Fwd always allowed), in training and in the trained policy; a deviation from the paper, which "
                "lets an invalid pick end the cycle (docs/rl.md)", kind="flag"),
    TrainOption(("--time-scale",), "splitwindow: the observation's time features (core σ, job r) as x / r_max "
                "(linear, the paper's, default) or log(1 + x) / log(1 + r_max) (log: short jobs told apart; a "
                "deviation, docs/rl.md)", choices=("linear", "log")),
    TrainOption(("--bc-permute",), "splitwindow: each DAgger fit also sees K copies of the aggregate with every "
                "state's occupied slots shuffled (data augmentation: the teacher's pick does not depend on the slot; "
                "default 0)", kind="int", bounds=(0, 64)),
    TrainOption(("--anchor-kl",), "splitwindow: weight β of KL(π_start ‖ π) in the policy loss, π_start the "
                "actor PPO started from (the clone; default 0: none)", kind="float>=0"),
)
USES = ("trace", "start_range", "minibatch", "pi_lr", "imitation", "imitation_hold", "imitation_end", "teacher", "init_from",
        "workers", "backend", "address", "rollout", "select_every", "clone_epochs", "until", "dagger_rounds",
        "dagger_episodes", "bc_epochs", "beta0", "beta_decay")
_EQ2 = "seed 004's reward is Eq. 2: utilization, queue length and waiting time; the agent back-fills itself"
_EPISODES = "its episodes end after --placements starts; its networks are --hidden MLPs"
WHY_NOT = {"goal": _EQ2, "backfill": _EQ2, "seq_len": _EPISODES, "sjf_filter": _EPISODES, "actor": _EPISODES,
           "critic": _EPISODES}
SCORE_LABEL = "episode return (Eq. 2)"


def train_options(args) -> dict:
    opts = {k: getattr(args, k) for k in ("head", "tail", "placements", "horizon", "minibatch", "imitation",
                                          "imitation_hold", "imitation_end", "teacher", "select_every",
                                          "validation_segments", "validation_jobs", "clone_episodes", "clone_epochs",
                                          "clone_lr", "clone_from", "pi_lr", "critic_warmup", "anchor_kl", "mask_invalid",
                                          "time_scale", "bc_permute",
                                          "dagger_rounds", "dagger_episodes", "bc_epochs", "beta0", "beta_decay")
            if getattr(args, k) is not None}
    for name in ("select_every", "clone_epochs"):
        if opts.get(name, 0) < 0 or (name == "clone_epochs" and opts.get(name) == 0):
            raise OptionError(f"--{name.replace('_', '-')}: must be at least {0 if name == 'select_every' else 1}, "
                              f"got {opts[name]}")
    for name in ("validation_segments", "validation_jobs"):
        if name in opts and not opts.get("select_every"):
            raise OptionError(f"--{name.replace('_', '-')}: an option of --select-every (give it too)")
    if "clone_epochs" in opts and not opts.get("clone_episodes"):
        raise OptionError("--clone-epochs: an option of --clone-episodes (give it too)")
    if "clone_lr" in opts and not (opts.get("clone_episodes") or opts.get("dagger_rounds")):
        raise OptionError("--clone-lr: an option of --clone-episodes or --dagger-rounds (give one too)")
    for name in ("dagger_episodes", "bc_epochs", "beta0", "beta_decay", "bc_permute"):
        if name in opts and not opts.get("dagger_rounds"):
            raise OptionError(f"--{name.replace('_', '-')}: an option of --dagger-rounds (give it too)")
    if opts.get("clone_from") and opts.get("clone_episodes"):
        raise OptionError("--clone-from: the actor comes from a file or from --clone-episodes, not both")
    for name in ("imitation_hold", "imitation_end"):
        if opts.get(name, 0) < 0:
            raise OptionError(f"--{name.replace('_', '-')}: must be at least 0, got {opts[name]}")
    if opts.get("imitation") and not (opts.get("imitation_hold") or opts.get("imitation_end")):
        raise OptionError("--imitation: give --imitation-hold and/or --imitation-end too (the epochs it lasts; "
                          "the split window has no default schedule)")
    if args.hidden is not None:
        opts["hidden"] = tuple(int_list(args.hidden, "--hidden"))
        if not opts["hidden"] or min(opts["hidden"]) < 1:
            raise OptionError(f"--hidden: expected positive layer sizes, got {args.hidden!r}")
    return opts


def setting(args) -> str:
    """The run's setting in ``rl train``'s closing line."""
    return f"window {args.head or 10}-{args.tail if args.tail is not None else 10}"
