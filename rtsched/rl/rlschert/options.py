"""``rtsched rl train --agent rlschert``'s options (data only: ``rtsched.rl.options``)."""
from __future__ import annotations

from rtsched.errors import OptionError
from rtsched.rl.options import TrainOption

GROUP = "rlschert (seed 001)"
OPTIONS = (
    TrainOption(("--mode",), "event-driven on the core (default), or the paper's 5-min slotted canvas (vasplike only)",
                default="event", choices=("event", "slotted")),
    TrainOption(("--no-kill",), "no kill actions (RLSchert without kill)", kind="flag", default=False),
    TrainOption(("--static",), "no running predictions: the DeepRM-like baseline (pre-run lengths only)", kind="flag",
                default=False),
    TrainOption(("--units",), "vasplike: resource units of the cluster (default 20)", kind="int"),
    TrainOption(("--job-rate",), "vasplike: arrival probability per slot (default 0.7)", kind="float", bounds=(0, 1)),
    TrainOption(("--simu-len",), "vasplike: arrival slots per sequence (default 200)", kind="int"),
    TrainOption(("--train-sequences",), "vasplike: a fixed set of this many training sequences", kind="int"),
    TrainOption(("--kill-teacher",), "the imitation teacher's kills: the paper's rule (default) or the remaining-time "
                "kill (docs/rl.md)", default="rule", choices=("rule", "remaining")),
    TrainOption(("--clone-sequences",), "vasplike: imitation pre-training on the teacher's decisions on training "
                "sequences 0..N-1 before PPO (default 0: none)", kind="int"),
)
USES = ("trace", "seq_len", "start_range", "minibatch", "teacher", "imitation", "imitation_hold", "imitation_end",
        "init_from", "workers", "backend", "address", "rollout", "select_every", "clone_epochs", "until",
        "validation_sequences", "pi_lr")
_EQ9 = "seed 001's reward is Eq. 9; the agent selects, kills and waits itself"
WHY_NOT = {"goal": _EQ9, "backfill": _EQ9, "actor": "its networks are 64-64 MLPs (the paper's)",
           "critic": "its networks are 64-64 MLPs (the paper's)"}
SCORE_LABEL = "return (Eq. 9)"


def names_a_workload(trace) -> bool:
    """Whether ``--trace`` names the synthetic VASP-like workload (``vasplike``, ``vasplike-stated``)
    instead of a file."""
    from rtsched.generators.vasplike import trace_param_set

    return trace_param_set(trace) is not None


def train_options(args) -> dict:
    """Environment and PPO options, checked."""
    if args.mode == "slotted" and not names_a_workload(args.trace):
        raise OptionError("--mode slotted runs the VASP-like workload: use --trace vasplike (or --mode event)")
    opts: dict = {"mode": args.mode, "kill": not args.no_kill, "dynamic": not args.static}
    if args.kill_teacher != "rule":
        opts["kill_teacher"] = args.kill_teacher
    for flag in ("select_every", "clone_sequences"):
        if getattr(args, flag) and not names_a_workload(args.trace):
            raise OptionError(f"--{flag.replace('_', '-')} runs on the VASP-like workload: use --trace vasplike")
    for name, low in (("units", 1), ("job_rate", None), ("simu_len", 1), ("train_sequences", 1),
                      ("imitation_hold", 0), ("imitation_end", 0), ("minibatch", 1),
                      ("select_every", 0), ("validation_sequences", 1), ("clone_sequences", 0),
                      ("clone_epochs", 1)):
        v = getattr(args, name)
        if v is None:
            continue
        if low is not None and v < low:
            raise OptionError(f"--{name.replace('_', '-')}: must be at least {low}, got {v}")
        opts[name] = v
    for name in ("imitation", "teacher", "pi_lr", "seq_len"):
        if getattr(args, name) is not None:
            opts[name] = getattr(args, name)
    return opts


def setting(args) -> str:
    """The run's setting in ``rl train``'s closing line."""
    return f"{args.mode} mode, {'no kill' if args.no_kill else 'kill'}"
