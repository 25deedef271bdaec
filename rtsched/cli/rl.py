"""``rtsched rl train``, ``evaluate`` and ``export`` (the RL agents, ``rtsched.rl``).

    rtsched rl train --agent rlscheduler --trace lublin_256.swf --goal bsld --backfill rlscheduler \\
        --epochs 100 --out runs/l1-bf [--seed 0] [--resume] [--workers 2] [--backend local|ray]
    rtsched rl evaluate --trace lublin_256.swf --policies fcfs,sjf,f1,wfp3,unicep,runs/l1-bf \\
        --starts 1981,2756,4299,8850,3316,2714,5228,7762,4022,7085 --backfill none,rlscheduler [--json]

``train`` writes ``OUT/checkpoint.pt`` (model, optimisers, sampling-generator state, configuration)
after every epoch; ``--epochs`` is the *total*, so after an interruption the same command with
``--resume`` runs the missing epochs and ends with the weights an uninterrupted run would have.
``evaluate`` follows seed 003's test protocol (10 sequences of 1,024 jobs, greedy actions) in the
compatibility mode; ``--json`` prints what ran (``trace``, ``machine``, ``seq_len``, ``starts``, ...)
and ``"results": [{"policy", "backfill", "start", "avg_bsld", "avg_wait"}, ...]``.  ``export``
writes a trained model's policy alone (about 20 KiB; loads like any model, cannot resume training).
"""
from __future__ import annotations

import json
import os
import sys

from rtsched.cli.common import (UsageError, changed_options, check_output, float_in, int_in, name_list, nonneg_float,
                                nonneg_int, positive_float, positive_int)
from rtsched.errors import InputError, RtschedError

# Kept here so that building the parser imports neither torch nor the RL package; the command
# checks them against rtsched.rl (tests/test_layers.py checks the lists agree).
AGENTS = ("rlscheduler", "inspector", "splitwindow", "rlschert", "rtmix")
GOALS = ("bsld", "wait", "turnaround", "slowdown", "utilization", "fairness")
BACKFILLS = ("none", "rlscheduler", "easy")
ROLLOUT_BACKENDS = ("local", "ray")
ROLLOUT_MODES = ("lockstep", "trajectories")
DEFAULT_EPOCHS = 100  # rl train --epochs
# PPO defaults per agent, as --help states them (the library's: PPOConfig for rlscheduler and inspector,
# the agents' recipe.PPO_DEFAULTS (rtsched.rl.<agent>.recipe; rtmix: rtsched.rl.rtmix.train.FINE_TUNE); copied here so that
# building the parser imports no PyTorch; tests/test_rl_cli.py checks they agree).
PPO_HELP_DEFAULTS = {"trajs_per_epoch": {"": 100, "splitwindow": 1, "rlschert": 16, "rtmix": 64},
                     "n_envs": {"": 8, "splitwindow": 1, "rlschert": 16, "rtmix": 8},
                     "train_pi_iters": {"": 80, "splitwindow": 10, "rlschert": 5, "rtmix": 20},
                     "train_v_iters": {"": 80, "splitwindow": 10, "rlschert": 5, "rtmix": 40}}


def _ppo_default(name: str) -> str:
    """``default 100; splitwindow 1, rlschert 16, rtmix 64`` for a PPO option's help."""
    d = PPO_HELP_DEFAULTS[name]
    return f"default {d['']}; " + ", ".join(f"{agent} {v}" for agent, v in d.items() if agent)
# ``rl evaluate``: how the sequences are drawn when --starts does not give them (refused with --starts)
EVALUATE_DRAW_DEFAULTS = {"n_sequences": 10, "seed": 1}



# ---------------------------------------------------------------------------------------- parsing helpers
def _int_list(text: str, option: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{option}: expected comma-separated integers, got {text!r}") from None


def _name_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _backfill_list(text: str) -> list[str]:
    from heuristics.backfill import normalize_backfill

    out = []
    for b in _name_list(text):
        try:
            out.append(normalize_backfill(b, BACKFILLS, option="--backfill"))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if not out:
        raise UsageError("--backfill: no backfilling rule given")
    return out


def _pair(text: str | None, option: str, cast=float):
    if text is None:
        return None
    parts = text.split(",")
    if len(parts) != 2:
        raise UsageError(f"{option}: expected LO,HI, got {text!r}")
    try:
        return tuple(cast(p) for p in parts)
    except ValueError:
        raise UsageError(f"{option}: expected two numbers LO,HI, got {text!r}") from None


def _start_range(text: str | None):
    """``LO,HI`` as job indices (integers) or trace fractions (numbers with a point)."""
    if text is None:
        return None
    lo, hi = _pair(text, "--start-range", str)
    conv = (lambda v: float(v)) if ("." in lo or "." in hi) else (lambda v: int(v))
    try:
        return (conv(lo), conv(hi))
    except ValueError:
        raise UsageError(f"--start-range: expected LO,HI, got {text!r}") from None


def _is_vasplike(trace) -> bool:
    """Whether ``--trace`` names the synthetic VASP-like workload (``vasplike``, ``vasplike-stated``)."""
    from rtsched.generators.vasplike import trace_param_set

    return trace_param_set(trace) is not None


def _check_trace(path: str, agent: str | None = None) -> None:
    if _is_vasplike(path):
        who = f"the {agent} agent" if agent else "this command"
        raise UsageError(f"--trace {path}: the synthetic VASP-like workload is RLSchert's (rl train --agent "
                         f"rlschert, rl evaluate of RLSchert models and the sjf, saf, fcfs heuristics); "
                         f"{who} needs an SWF trace")
    if not os.path.exists(path):
        raise InputError("--trace: file not found", path=path)


def _score_label(agent: str, goal: str) -> str:
    if agent == "inspector":
        return "gain over base"
    if agent == "splitwindow":
        return "episode return (Eq. 2)"
    if agent == "rlschert":
        return "return (Eq. 9)"
    return f"avg {goal}"


def _score(agent: str, goal: str, ret: float) -> float:
    """The human-facing score of a trajectory return: the goal's value (the pick environment returns
    −value, +utilization), the inspector's relative gain over its base policy, or the return of the
    split-window, RLSchert and rtmix rewards."""
    if agent in ("inspector", "splitwindow", "rlschert", "rtmix") or goal == "utilization":
        return ret
    return -ret


# ---------------------------------------------------------------------------------------- train
def _rlschert_options(args) -> dict:
    """``rtsched rl train --agent rlschert``'s options (environment and PPO), checked."""
    opts: dict = {"mode": args.mode, "kill": not args.no_kill, "dynamic": not args.static}
    if args.mode == "slotted" and not _is_vasplike(args.trace):
        raise UsageError("--mode slotted runs the VASP-like workload: use --trace vasplike (or --mode event)")
    for name, low in (("units", 1), ("job_rate", None), ("simu_len", 1), ("train_sequences", 1),
                      ("imitation_hold", 0), ("imitation_end", 0), ("minibatch", 1)):
        v = getattr(args, name)
        if v is None:
            continue
        if low is not None and v < low:
            raise UsageError(f"--{name.replace('_', '-')}: must be at least {low}, got {v}")
        opts[name] = v
    if args.imitation is not None:
        opts["imitation"] = args.imitation
    if args.teacher is not None:
        opts["teacher"] = args.teacher
    if args.pi_lr is not None:
        opts["pi_lr"] = args.pi_lr
    return opts


def cmd_train(args) -> int:
    from rtsched.rl.modelfiles import CHECKPOINT

    if args.agent == "rtmix":
        return cmd_train_rtmix(args)
    from rtsched.rl.api import train

    if args.epochs is None:
        args.epochs = DEFAULT_EPOCHS

    _refuse_rtmix_options(args)
    if not args.trace:
        raise UsageError(f"--trace is required for the {args.agent} agent")
    if args.agent == "rlschert" and args.mode == "slotted" and not _is_vasplike(args.trace):
        raise UsageError("--mode slotted runs the VASP-like workload: use --trace vasplike (or --mode event)")
    if args.agent != "rlschert" and (args.no_kill or args.static or args.mode != "event"):
        raise UsageError("--mode, --no-kill and --static: options of the rlschert agent only")
    if args.agent != "rlschert" or not _is_vasplike(args.trace):
        _check_trace(args.trace, args.agent)
    if args.epochs < 1:
        raise UsageError(f"--epochs: must be at least 1, got {args.epochs}")
    out = args.out or os.path.join("runs", f"{args.agent}-{os.path.splitext(os.path.basename(args.trace))[0]}-"
                                           f"{args.goal}-{args.backfill}")
    check_output(out, "--out", folder=True)
    ckpt = os.path.join(out, CHECKPOINT)
    if os.path.exists(ckpt) and not args.resume:
        raise UsageError(f"{ckpt}: a checkpoint exists; pass --resume to continue it or choose another --out")
    if args.resume and args.init_from:
        raise UsageError("--resume and --init-from exclude each other (--init-from starts a new run)")
    options: dict = {"seed": args.seed, "backend": args.backend}
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: must be at least 1, got {args.workers}")
    if args.address and args.backend != "ray":
        raise UsageError("--address applies to --backend ray only")
    for name in ("seq_len", "trajs_per_epoch", "n_envs", "train_pi_iters", "train_v_iters", "torch_threads",
                 "actor", "critic", "workers", "rollout"):
        v = getattr(args, name)
        if v is not None:
            options[name] = v
    start_range = _start_range(args.start_range)
    if start_range is not None:
        options["start_range"] = start_range
    split_only = {"--head": args.head, "--tail": args.tail, "--placements": args.placements,
                  "--horizon": args.horizon, "--hidden": args.hidden}
    if args.agent != "splitwindow":
        given = [k for k, v in split_only.items() if v is not None]
        if given:
            raise UsageError(f"{given[0]} applies to the splitwindow agent only")
    rlschert_only = [o for o, v in (("--mode", args.mode != "event"), ("--no-kill", args.no_kill),
                                    ("--static", args.static), ("--imitation", args.imitation is not None),
                                    ("--teacher", args.teacher is not None), ("--units", args.units is not None),
                                    ("--job-rate", args.job_rate is not None),
                                    ("--train-sequences", args.train_sequences is not None),
                                    ("--imitation-hold", args.imitation_hold is not None),
                                    ("--imitation-end", args.imitation_end is not None),
                                    ("--simu-len", args.simu_len is not None),
                                    ("--pi-lr", args.pi_lr is not None)) if v]
    if args.agent != "rlschert" and rlschert_only:
        raise UsageError(f"{', '.join(rlschert_only)}: options of the rlschert agent only")
    if args.minibatch is not None and args.agent not in ("splitwindow", "rlschert"):
        raise UsageError("--minibatch applies to the splitwindow and rlschert agents only")
    if args.agent == "splitwindow":
        if args.sjf_filter or args.seq_len is not None or args.base != "sjf" or args.actor or args.critic:
            raise UsageError("--sjf-filter, --seq-len, --base, --actor and --critic do not apply to the splitwindow "
                             "agent (its episodes end after --placements starts; its networks are --hidden MLPs)")
        if args.goal != "bsld" or args.backfill != "none":
            raise UsageError("--goal and --backfill do not apply to the splitwindow agent (seed 004's reward is "
                             "Eq. 2: utilization, queue length and waiting time; the agent back-fills itself)")
        for name in ("head", "tail", "placements", "horizon", "minibatch"):
            v = getattr(args, name)
            if v is not None:
                options[name] = v
        if args.hidden is not None:
            options["hidden"] = tuple(_int_list(args.hidden, "--hidden"))
            if not options["hidden"] or min(options["hidden"]) < 1:
                raise UsageError(f"--hidden: expected positive layer sizes, got {args.hidden!r}")
    elif args.agent == "rlschert":
        if args.sjf_filter or args.base != "sjf":
            raise UsageError("--sjf-filter and --base do not apply to the rlschert agent")
        if args.goal != "bsld" or args.backfill != "none":
            raise UsageError("--goal and --backfill do not apply to the rlschert agent (seed 001's reward is Eq. 9; "
                             "the agent selects, kills and waits itself)")
        for name in ("actor", "critic"):
            options.pop(name, None)
        options.update(_rlschert_options(args))
        if args.seq_len is not None:
            options["seq_len"] = args.seq_len
    elif args.agent == "inspector":
        if args.sjf_filter:
            raise UsageError("--sjf-filter applies to the rlscheduler agent only")
        from heuristics.priorities import get_priority

        try:
            get_priority(args.base)
        except ValueError as exc:
            raise UsageError(f"--base: {exc}") from None
        options["base"] = args.base
    else:
        if args.base != "sjf":
            raise UsageError("--base applies to the inspector agent only")
        if args.sjf_filter:
            options["sjf_filter"] = "auto" if args.sjf_filter == "auto" else _pair(args.sjf_filter, "--sjf-filter")

    label = _score_label(args.agent, args.goal)
    done_epochs = 0
    if args.resume and os.path.exists(ckpt):
        from rtsched.rl.modelfiles import read_model_file

        done_epochs = int(read_model_file(ckpt).get("epoch", 0))
    bar = _TrainProgress(args.agent, args.goal, label, args.epochs, done_epochs,
                         enabled=not (args.no_progress or args.json))

    def on_epoch(epoch: int, epochs: int, stats: dict) -> None:
        bar.epoch_done(epoch, epochs, stats)

    try:
        with bar:
            res = train(args.agent, args.trace, goal=args.goal, backfill=args.backfill, epochs=args.epochs, out=out,
                        progress=on_epoch, resume=args.resume, init_from=args.init_from, ray_address=args.address,
                        on_trajectory=bar.trajectory_done, **options)
    except ValueError as exc:
        if isinstance(exc, RtschedError):
            raise
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        print(f"rtsched rl train: interrupted; the last finished epoch is in {ckpt} "
              f"(run the same command with --resume to continue)", file=sys.stderr)
        raise
    history = res["history"]
    last = history[-1] if history else {}
    if args.agent == "rlschert" and last.get("mean_slowdown") is not None:
        label = "mean slowdown"
    summary = {"agent": args.agent, "trace": args.trace, "goal": args.goal, "backfill": args.backfill,
               "out": out, "checkpoint": ckpt, "epochs": len(history), "epochs_run": res["epochs_run"],
               "score_label": label,
               "last_score": (last["mean_slowdown"] if label == "mean slowdown" else
                              _score(args.agent, args.goal, last["mean_return"])) if last else None,
               "history": history}
    if args.json:
        print(json.dumps(summary, indent=1, allow_nan=False))
    else:
        score = "–" if summary["last_score"] is None else f"{summary['last_score']:.4g}"
        setting = (f"window {args.head or 10}-{args.tail if args.tail is not None else 10}" if args.agent == "splitwindow"
                   else f"{args.mode} mode, {'no kill' if args.no_kill else 'kill'}" if args.agent == "rlschert"
                   else f"goal {args.goal}, backfill {args.backfill}")
        print(f"{args.agent} on {os.path.basename(args.trace)} ({setting}): "
              f"{summary['epochs']} epochs ({res['epochs_run']} run now), last epoch {label} {score}; model {ckpt}")
    return 0


RTMIX_DEFAULTS = {"experts": 120, "expert_cache": os.path.join("runs", "rtmix-plans"), "solve_time_limit": 60.0,
                  "jobs": 1, "bc_epochs": 30, "machine": "mira:16", "checkpoint": "jit", "theta": 1.2,
                  "penalty": 10.0, "reward_baseline": "wcjs"}


# The curriculum (docs/rl.md "Curriculum"): from the shipped model (or --init-from) to Mira-like weeks.
CURRICULUM_DEFAULTS = {"curriculum_weeks": 8, "curriculum_machines": "mira", "small_episodes": 3000, "small_repeat": 2}


def _refuse_rtmix_options(args) -> None:
    """The rtmix-only options given to another agent are refused, not ignored."""
    given = [f"--{k.replace('_', '-')}" for k in (*RTMIX_DEFAULTS, *CURRICULUM_DEFAULTS, "curriculum_rounds")
             if getattr(args, k) is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: options of the rtmix agent only")


def cmd_train_rtmix(args) -> int:
    """``rtsched rl train --agent rtmix``: solve expert plans (cached), clone, fine-tune with PPO;
    with ``--curriculum-rounds``: the curriculum to Mira-like weeks instead."""
    if args.curriculum_rounds is not None:
        return cmd_train_rtmix_curriculum(args)
    if args.epochs is None:
        args.epochs = DEFAULT_EPOCHS
    given = [f"--{k.replace('_', '-')}" for k in CURRICULUM_DEFAULTS if getattr(args, k) is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: options of the curriculum (give --curriculum-rounds)")
    for name, value in RTMIX_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    from rtsched.checkpoint import CheckpointModel
    from rtsched.experiments.rtmix import expert_dataset, solve_plans
    from rtsched.machines import check_machine_spec
    from rtsched.rl.rtmix.env import EXPERT_SEEDS, RtMixEnv
    from rtsched.rl.modelfiles import CHECKPOINT, read_model_file
    from rtsched.rl.rtmix.train import train_rtmix

    if args.trace:
        raise UsageError("--trace does not apply to the rtmix agent (it trains on generated instances)")
    for name in ("epochs", "experts", "bc_epochs", "jobs"):
        if getattr(args, name) < (0 if name == "epochs" else 1):
            raise UsageError(f"--{name.replace('_', '-')}: must be at least {0 if name == 'epochs' else 1}")
    baseline = None if args.reward_baseline.strip().lower() == "none" else args.reward_baseline
    try:
        check_machine_spec(args.machine)
        CheckpointModel.parse(args.checkpoint)
        if baseline is not None:
            from heuristics.registry import make_policy

            make_policy(baseline)
    except ValueError as exc:
        raise UsageError(f"{exc}") from None
    out = args.out or os.path.join("runs", "rtmix")
    ckpt = os.path.join(out, CHECKPOINT)
    if os.path.exists(ckpt) and not args.resume:
        raise UsageError(f"{ckpt}: a checkpoint exists; pass --resume to continue it or choose another --out")
    quiet = args.no_progress or args.json
    data = None
    info: dict = {}
    if not (args.resume and os.path.exists(ckpt)):
        seeds = range(EXPERT_SEEDS.start, EXPERT_SEEDS.start + args.experts)

        def solved(i, n, rec):
            if not quiet:
                print(f"expert plans {i}/{n}: seed {rec['seed']} {rec['status']} ({rec['seconds']:.1f} s)",
                      file=sys.stderr)

        plans = solve_plans(seeds, cache=args.expert_cache, jobs=args.jobs, progress=solved,
                            time_limit=args.solve_time_limit)
        env = RtMixEnv(args.machine, args.checkpoint)
        data = expert_dataset(plans, env)
        info = {"expert_classes": data["classes"], "expert_decisions": data["decisions"],
                "expert_decisions_on_plan": data["decisions_on_plan"]}
        if not quiet:
            print(f"expert data: {data['decisions']} decisions ({data['decisions_on_plan']} before a divergence); "
                  f"plans: {data['classes']}", file=sys.stderr)
    done_epochs = 0
    if args.resume and os.path.exists(ckpt):
        done_epochs = max(0, len(read_model_file(ckpt).get("history", [])) - 1)
    bar = _TrainProgress("rtmix", "reward", "reward", args.epochs, done_epochs, enabled=not quiet)

    def bc_done(e, n, row):
        if not quiet:
            print(f"cloning {e}/{n}: loss {row['loss']:.4f}, accuracy {row['accuracy']:.3f}", file=sys.stderr)

    options = {}
    for name in ("trajs_per_epoch", "n_envs", "train_pi_iters", "train_v_iters"):
        v = getattr(args, name)
        if v is not None:
            options[name] = v
    try:
        with bar:
            res = train_rtmix(data, out, bc_epochs=args.bc_epochs, epochs=args.epochs, seed=args.seed,
                              progress=bar.epoch_done, bc_progress=bc_done, on_trajectory=bar.trajectory_done,
                              resume=args.resume, torch_threads=args.torch_threads, machine=args.machine,
                              checkpoint=args.checkpoint, baseline=baseline, theta=args.theta,
                              penalty=args.penalty, **options)
    except KeyboardInterrupt:
        print(f"rtsched rl train: interrupted; the last finished epoch is in {ckpt} "
              f"(run the same command with --resume to continue)", file=sys.stderr)
        raise
    history = res["history"]
    summary = {"agent": "rtmix", "out": out, "checkpoint": ckpt, "machine": args.machine,
               "checkpoint_model": args.checkpoint, "bc": history[0], "epochs": len(history) - 1, **info,
               "last_reward": history[-1].get("mean_return") if len(history) > 1 else None, "history": history}
    if args.json:
        print(json.dumps(summary, indent=1, allow_nan=False))
    else:
        last = summary["last_reward"]
        print(f"rtmix on {args.machine} ({args.checkpoint}): cloned (accuracy {history[0]['accuracy']:.3f}), "
              f"{summary['epochs']} PPO epochs, last mean reward {'–' if last is None else f'{last:.4g}'}; model {ckpt}")
    return 0


def cmd_train_rtmix_curriculum(args) -> int:
    """``rtsched rl train --agent rtmix --curriculum-rounds R``: rounds of imitation from Table-3
    instances to generated Mira-like weeks (``rtsched.rl.rtmix.train.run_curriculum``)."""
    for name, value in CURRICULUM_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.teacher is None:  # --teacher is shared with rlschert's imitation
        args.teacher = "wcjs"
    from heuristics.registry import make_policy
    from rtsched.machines import check_machine_spec
    from rtsched.rl.rtmix.policy import PRETRAINED_RTMIX
    from rtsched.rl.modelfiles import read_model_file
    from rtsched.rl.rtmix.train import run_curriculum

    refused = [f"--{k.replace('_', '-')}" for k in ("epochs", "experts", "expert_cache", "solve_time_limit", "jobs",
                                                    "machine", "theta", "penalty", "reward_baseline")
               if getattr(args, k) is not None]
    if args.trace:
        refused.append("--trace")
    if args.resume:
        refused.append("--resume (the same command resumes a curriculum)")
    if refused:
        raise UsageError(f"{', '.join(refused)}: not options of the curriculum")
    for name in ("curriculum_rounds", "curriculum_weeks", "small_episodes", "small_repeat"):
        if getattr(args, name) < (0 if name in ("curriculum_rounds", "small_episodes") else 1):
            raise UsageError(f"--{name.replace('_', '-')}: must be at least "
                             f"{0 if name in ('curriculum_rounds', 'small_episodes') else 1}")
    machines = name_list(args.curriculum_machines, "--curriculum-machines")
    try:
        for m in machines:
            check_machine_spec(m)
        make_policy(args.teacher)
    except ValueError as exc:
        raise UsageError(f"{exc}") from None
    init = args.init_from or PRETRAINED_RTMIX
    st = read_model_file(init)
    if st["agent"] != "rtmix":
        raise UsageError(f"--init-from: {init} is a {st['agent']} model, not an rtmix one")
    checkpoint = args.checkpoint or "jit"
    out = args.out or os.path.join("runs", "rtmix-curriculum")
    quiet = args.no_progress or args.json

    def say(text: str) -> None:
        if not quiet:
            print(f"rtmix curriculum: {text}", file=sys.stderr, flush=True)

    res = run_curriculum(out, init, rounds=args.curriculum_rounds, weeks=args.curriculum_weeks, machines=machines,
                         small_episodes=args.small_episodes, small_repeat=args.small_repeat,
                         epochs=args.bc_epochs or 20, seed=args.seed, teacher=args.teacher, checkpoint=checkpoint,
                         torch_threads=args.torch_threads or 1, progress=say)
    if args.json:
        print(json.dumps(res, indent=1, allow_nan=False))
    else:
        print(f"rtmix curriculum: {len(res['rounds'])} rounds on {', '.join(machines)}; model {res['model']} "
              f"(rtsched rl export or copy it; docs/rl.md)")
    return 0


class _TrainProgress:
    """Rich progress bars: epochs done, and the current epoch's trajectories with its running score
    (the mean over the trajectories finished so far in this epoch)."""

    def __init__(self, agent: str, goal: str, label: str, epochs: int, done_epochs: int, enabled: bool) -> None:
        self.agent, self.goal, self.label = agent, goal, label
        self.epochs, self.done_epochs = epochs, done_epochs
        self.enabled = enabled
        self.progress = None
        self.returns: list[float] = []

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("{task.description:<13}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TextColumn("{task.fields[score]}"))
            self.epoch_task = self.progress.add_task("epochs", total=self.epochs, completed=self.done_epochs,
                                                     score="")
            self.traj_task = self.progress.add_task(f"epoch {self.done_epochs + 1}", total=None, score="")
            self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()

    def trajectory_done(self, done: int, total: int, ret: float, info: dict) -> None:
        self.returns.append(ret)
        if self.progress is not None:
            run = _score(self.agent, self.goal, sum(self.returns) / len(self.returns))
            self.progress.update(self.traj_task, completed=done, total=total,
                                 score=f"running {self.label} {run:.4g}")

    def epoch_done(self, epoch: int, epochs: int, stats: dict) -> None:
        self.returns = []
        score = _score(self.agent, self.goal, stats["mean_return"])
        extra = f" · rejections {stats['rejection_ratio']:.1%}" if "rejection_ratio" in stats else ""
        if self.progress is not None:
            self.progress.update(self.epoch_task, completed=epoch, score=f"last epoch {self.label} {score:.4g}{extra}")
            if epoch < epochs:
                self.progress.reset(self.traj_task, description=f"epoch {epoch + 1}", total=None, score="")
            self.progress.console.print(f"epoch {epoch}/{epochs}: {self.label} {score:.4g}{extra} "
                                      f"({stats['collect_s']:.1f} s collecting, {stats['update_s']:.1f} s updating)")


# ---------------------------------------------------------------------------------------- evaluate
def cmd_evaluate(args) -> int:
    from rtsched.rl.evaluate import evaluate, machine_spec
    from rtsched.rl.trace import load_trace

    policies = _name_list(args.policies)
    if not policies:
        raise UsageError("--policies: no policy given")
    if _is_vasplike(args.trace):
        return _evaluate_vasplike(args, policies)
    _check_trace(args.trace)
    starts = _int_list(args.starts, "--starts") if args.starts else None
    if starts is not None:
        given = changed_options(args, dict.fromkeys(EVALUATE_DRAW_DEFAULTS))  # given at all
        if given:
            raise UsageError(f"{', '.join(given)}: the sequences are drawn only without --starts")
    n_sequences = args.n_sequences or EVALUATE_DRAW_DEFAULTS["n_sequences"]
    seed = EVALUATE_DRAW_DEFAULTS["seed"] if args.seed is None else args.seed
    if args.machine is not None:
        from rtsched.machines import check_machine_spec

        try:
            check_machine_spec(args.machine)
        except ValueError as exc:
            raise UsageError(f"--machine: {exc}") from None
    backfills = _backfill_list(args.backfill)
    trace = load_trace(args.trace)  # once, for every backfilling rule
    rows: list[dict] = []
    for backfill in backfills:
        try:
            got = evaluate(policies, trace, starts=starts, n_sequences=n_sequences, seq_len=args.seq_len,
                           backfill=backfill, seed=seed, machine=args.machine, greedy=not args.sample,
                           norms=args.norms)
        except ValueError as exc:
            if isinstance(exc, RtschedError):
                raise
            raise UsageError(str(exc)) from None
        rows.extend({k: r[k] for k in ("policy", "backfill", "start", "avg_bsld", "avg_wait")} for r in got)
    what = {"trace": args.trace, "machine": machine_spec(trace, args.machine),
            "seq_len": args.seq_len, "starts": list(dict.fromkeys(r["start"] for r in rows)),
            "starts_drawn_with_seed": None if starts is not None else seed, "greedy": not args.sample,
            "norms": args.norms}
    if args.json:
        print(json.dumps({**what, "results": rows}, indent=1, allow_nan=False))
        return 0
    _print_evaluation(rows, args, what)
    return 0


def _evaluate_vasplike(args, policies: list[str]) -> int:
    """``rl evaluate --trace vasplike|vasplike-stated``: the workload's held-out sequences (its own
    draw: the options that choose a trace's sequences, machine or backfilling do not apply)."""
    from rtsched.generators.vasplike import HELD_OUT_SEEDS, UNITS, VASPLIKE_TRACES
    from rtsched.rl.rlschert.evaluate import DEFAULT_SEQUENCES, evaluate_vasplike

    given = changed_options(args, {"starts": None, "seed": None, "machine": None, "seq_len": 1024,
                                   "norms": "trace"})
    if _backfill_list(args.backfill) != ["none"]:
        given.append("--backfill")
    if given:
        raise UsageError(f"{', '.join(given)}: not an option of --trace {args.trace} (the VASP-like workload's "
                         f"held-out sequences: --n-sequences, --policies, --sample)")
    n = args.n_sequences or DEFAULT_SEQUENCES
    rows = evaluate_vasplike(policies, args.trace, n, greedy=not args.sample)
    what = {"trace": args.trace, "parameter_set": VASPLIKE_TRACES[args.trace], "machine": f"flat:{UNITS}",
            "seq_len": None, "starts": list(range(HELD_OUT_SEEDS.start, HELD_OUT_SEEDS.start + n)),
            "starts_drawn_with_seed": None,
            "greedy": not args.sample, "norms": None}
    if args.json:
        print(json.dumps({**what, "results": rows}, indent=1, allow_nan=False))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{args.trace} ({what['parameter_set']} VASP-like workload) · {UNITS} units · {n} held-out "
                        f"sequences (generator seeds {HELD_OUT_SEEDS.start}–{HELD_OUT_SEEDS.start + n - 1}) · "
                        f"{'greedy' if what['greedy'] else 'sampled'} actions · means over all jobs (slowdown: "
                        f"seed 001 Eq. 13)")
    for col in ("policy", "avg slowdown", "avg bsld", "avg wait (s)", "kills"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for pol in dict.fromkeys(r["policy"] for r in rows):
        rs = [r for r in rows if r["policy"] == pol]
        jobs = sum(r["jobs"] for r in rs)

        def mean(key: str) -> float:
            return sum(r[key] * r["jobs"] for r in rs) / jobs

        table.add_row(pol, f"{mean('avg_slowdown'):,.3f}", f"{mean('avg_bsld'):,.3f}", f"{mean('avg_wait'):,.0f}",
                      str(sum(r["kills"] for r in rs)))
    Console().print(table)
    return 0


def _print_evaluation(rows: list[dict], args, what: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    n_seq = len(what["starts"])
    drawn = "" if what["starts_drawn_with_seed"] is None else f" drawn with seed {what['starts_drawn_with_seed']}"
    table = Table(title=f"{os.path.basename(args.trace)} · machine {what['machine']} · {n_seq} sequences{drawn} × "
                        f"{args.seq_len} jobs · {'greedy' if what['greedy'] else 'sampled'} actions · mean of "
                        f"per-sequence averages (bsld τ = 10 s)")
    for col in ("policy", "backfill", "avg bsld", "avg wait (s)"):
        table.add_column(col, justify="left" if col in ("policy", "backfill") else "right")
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["policy"], r["backfill"]), []).append(r)
    for (pol, bf), rs in groups.items():
        table.add_row(pol, bf, f"{sum(r['avg_bsld'] for r in rs) / len(rs):,.2f}",
                      f"{sum(r['avg_wait'] for r in rs) / len(rs):,.0f}")
    Console().print(table)


# ---------------------------------------------------------------------------------------- parser
def register(subparsers) -> None:
    """Add ``rl train``, ``rl evaluate`` and ``rl export`` to the ``rtsched`` argparse sub-commands."""
    rl = subparsers.add_parser("rl", help="train and evaluate the RL schedulers (RLScheduler, SchedInspector, "
                                          "Deep Back-Filling's split window)")
    rsub = rl.add_subparsers(dest="rl_command", required=True)

    tr = rsub.add_parser("train", help="train an agent with PPO (checkpoint every epoch; --resume continues)")
    tr.add_argument("--agent", choices=AGENTS, default="rlscheduler",
                    help="rlscheduler (job picking), inspector (SchedInspector), splitwindow (Deep Back-Filling), "
                         "rlschert (RLSchert), rtmix (RTJ/BJ mixes on Mira); default rlscheduler")
    tr.add_argument("--trace", help="SWF trace (the papers' cleaning is applied; rlscheduler, inspector, splitwindow); "
                                    "rlschert: also 'vasplike' (synthetic, calibrated) or 'vasplike-stated'; rtmix: none "
                                    "(generated instances)")
    tr.add_argument("--goal", choices=GOALS, default="bsld",
                    help="optimisation goal (default bsld: bounded slowdown, τ = 10 s)")
    tr.add_argument("--backfill", choices=BACKFILLS, default="none", help="backfilling during training (default none)")
    tr.add_argument("--epochs", type=int_in(1, 1_000_000),
                    help=f"total epochs (default {DEFAULT_EPOCHS}; a resumed run counts the earlier ones; the rtmix "
                         "curriculum has none: --bc-epochs)")
    tr.add_argument("--out", "--model-dir", dest="out",
                    help="output folder for checkpoint.pt and progress.json (default runs/AGENT-TRACE-GOAL-BACKFILL)")
    tr.add_argument("--seed", type=nonneg_int, default=0, help="seed of the training run (>= 0, default 0)")
    tr.add_argument("--resume", action="store_true", help="continue the checkpoint in --out (same settings)")
    tr.add_argument("--init-from", help="start a new run from this model's weights (e.g. stage 2 after filtering)")
    tr.add_argument("--base", default="sjf", help="inspector: the inspected priority (sjf, f1, fcfs, wfp3, ...)")
    tr.add_argument("--seq-len", type=positive_int, help="jobs per training sequence (rlscheduler 256, inspector 128)")
    tr.add_argument("--start-range", help="LO,HI first jobs of training sequences (indices, or fractions like 0,0.2)")
    tr.add_argument("--sjf-filter", help="rlscheduler: trajectory filtering: 'auto' (median, 2·mean of SJF) or LO,HI")
    tr.add_argument("--trajs-per-epoch", type=int_in(1, 100_000),
                    help=f"trajectories per epoch ({_ppo_default('trajs_per_epoch')})")
    tr.add_argument("--n-envs", type=int_in(1, 1024), help=f"environments stepped together ({_ppo_default('n_envs')})")
    tr.add_argument("--train-pi-iters", type=int_in(1, 100_000),
                    help=f"policy iterations per epoch ({_ppo_default('train_pi_iters')})")
    tr.add_argument("--train-v-iters", type=int_in(1, 100_000),
                    help=f"value iterations per epoch ({_ppo_default('train_v_iters')})")
    tr.add_argument("--actor", choices=["kernel", "mlp_v1", "mlp_v2", "mlp_v3"],
                    help="rlscheduler policy network (default kernel, PPOConfig.actor)")
    tr.add_argument("--critic", choices=["mlp", "kernel"],
                    help="rlscheduler value network (default mlp, the paper's; kernel: the authors' code)")
    tr.add_argument("--head", type=int_in(1, 4096), help="splitwindow: head slots M_h (default 10)")
    tr.add_argument("--tail", type=int_in(0, 4096), help="splitwindow: tail slots M_t (default 10)")
    tr.add_argument("--placements", type=int_in(1, 10_000_000),
                    help="splitwindow: starts per episode (default 1000, the paper's)")
    tr.add_argument("--horizon", type=int_in(1, 100_000_000),
                    help="splitwindow: trace jobs per episode (default 1.5 × placements)")
    tr.add_argument("--hidden", help="splitwindow: hidden layer sizes, comma-separated (default 1024,512,256)")
    tr.add_argument("--minibatch", type=int_in(1, 1_000_000),
                    help="splitwindow, rlschert: PPO minibatch size (default 128)")
    tr.add_argument("--torch-threads", type=int_in(1, 1024),
                    help="PyTorch intra-op threads of the PPO update (default 1; collection always uses 1)")
    tr.add_argument("--workers", type=int_in(1, 1024),
                    help="rollout workers simulating the --n-envs environments in parallel (default 1: in this "
                         "process); results do not depend on it")
    tr.add_argument("--backend", choices=ROLLOUT_BACKENDS, default="local",
                    help="rollout workers: local subprocesses, or Ray actors (the ray extra)")
    tr.add_argument("--address", help="--backend ray: the cluster to join (auto, HOST:PORT; default: a local Ray)")
    tr.add_argument("--rollout", choices=ROLLOUT_MODES,
                    help="lockstep (default: the trainer samples every step) or trajectories (each worker samples "
                         "whole trajectories; scales better, other random stream)")
    g = tr.add_argument_group("rlschert (seed 001)")
    g.add_argument("--mode", choices=["event", "slotted"], default="event",
                   help="event-driven on the core (default), or the paper's 5-min slotted canvas (vasplike only)")
    g.add_argument("--no-kill", action="store_true", help="no kill actions (RLSchert without kill)")
    g.add_argument("--static", action="store_true",
                   help="no running predictions: the DeepRM-like baseline (pre-run lengths only)")
    g.add_argument("--imitation", type=nonneg_float,
                   help="imitation weight α_t at the start (paper 0.5; default 0: none)")
    g.add_argument("--imitation-hold", type=int, help="epochs at full α_t (default 50)")
    g.add_argument("--imitation-end", type=int, help="epoch by which α_t decays to 0 (default 150)")
    g.add_argument("--teacher", help="imitation teacher's selects: a heuristic (sjf, saf) or a no-kill RLSchert "
                                     "model file; the rule-based kill comes first (default sjf); rtmix curriculum: "
                                     "the policy labelling the weeks (default wcjs)")
    g.add_argument("--units", type=int, help="vasplike: resource units of the cluster (default 20)")
    g.add_argument("--job-rate", type=float_in(0, 1), help="vasplike: arrival probability per slot (default 0.7)")
    g.add_argument("--simu-len", type=int, help="vasplike: arrival slots per sequence (default 200)")
    g.add_argument("--train-sequences", type=int, help="vasplike: a fixed set of this many training sequences")
    g.add_argument("--pi-lr", type=positive_float, help="rlschert: policy learning rate (default 1e-4)")
    rt = tr.add_argument_group("rtmix (RTJ/BJ mixes on Mira, taught by the optimum; docs/rl.md)")
    rt.add_argument("--experts", type=int, default=None,
                    help=f"rtmix: expert instances, generator seeds 100000.. solved to optimality (CP-SAT; default "
                         f"{RTMIX_DEFAULTS['experts']})")
    rt.add_argument("--expert-cache", default=None,
                    help="rtmix: folder of solved plans (one JSON per seed; reused; default "
                         f"{RTMIX_DEFAULTS['expert_cache']})")
    rt.add_argument("--solve-time-limit", type=positive_float, default=None,
                    help=f"rtmix: seconds per expert solve (default {RTMIX_DEFAULTS['solve_time_limit']:g})")
    rt.add_argument("-j", "--jobs", type=int, default=None,
                    help=f"rtmix: expert instances solved in parallel (default {RTMIX_DEFAULTS['jobs']})")
    rt.add_argument("--bc-epochs", type=positive_int, default=None,
                    help="rtmix: behaviour-cloning passes over the expert data (default "
                         f"{RTMIX_DEFAULTS['bc_epochs']})")
    rt.add_argument("--machine", default=None,
                    help=f"rtmix: mira:BLOCKS or a partition XML (default {RTMIX_DEFAULTS['machine']})")
    rt.add_argument("--checkpoint", default=None,
                    help=f"rtmix: checkpoint model no, sys[:S], app-PCT, jit (default {RTMIX_DEFAULTS['checkpoint']})")
    rt.add_argument("--theta", type=positive_float, default=None,
                    help=f"rtmix: the RTJ mean-slowdown bound θ of the reward (default {RTMIX_DEFAULTS['theta']:g})")
    rt.add_argument("--penalty", type=nonneg_float, default=None,
                    help="rtmix: reward penalty per unit of mean RTJ slowdown above θ (default "
                         f"{RTMIX_DEFAULTS['penalty']:g})")
    rt.add_argument("--reward-baseline", default=None,
                    help=f"rtmix: PPO rewards are the gain over this policy on the same episode (default "
                         f"{RTMIX_DEFAULTS['reward_baseline']}; "
                         "'none': the absolute reward)")
    cu = tr.add_argument_group("rtmix curriculum (Table-3 instances to Mira-like weeks; docs/rl.md)")
    cu.add_argument("--curriculum-rounds", type=int, default=None,
                    help="rtmix: run the curriculum instead of cloning + PPO: round 0 follows the teacher, rounds "
                         "1..R follow the previous round's model (DAgger); from --init-from (default: the shipped "
                         "rtmix); the same command resumes")
    cu.add_argument("--curriculum-weeks", type=int, default=None,
                    help="rtmix curriculum: generated Mira-like weeks (10 %% RTJs) per machine and round (default "
                         f"{CURRICULUM_DEFAULTS['curriculum_weeks']})")
    cu.add_argument("--curriculum-machines", default=None,
                    help="rtmix curriculum: comma-separated machines of the weeks: mira, mira:BLOCKS or a partition "
                         f"XML (default {CURRICULUM_DEFAULTS['curriculum_machines']})")
    cu.add_argument("--small-episodes", type=int, default=None,
                    help=f"rtmix curriculum: Table-3 instances labelled by the initial model (default "
                         f"{CURRICULUM_DEFAULTS['small_episodes']})")
    cu.add_argument("--small-repeat", type=int, default=None,
                    help=f"rtmix curriculum: weight of those instances in cloning, as repeats (default "
                         f"{CURRICULUM_DEFAULTS['small_repeat']})")
    tr.add_argument("--no-progress", action="store_true", help="no progress bar")
    tr.add_argument("--json", action="store_true", help="print a JSON summary (with the per-epoch history)")
    tr.set_defaults(func=cmd_train)

    ev = rsub.add_parser("evaluate", help="the papers' test protocol: policies × sequences, greedy, compat mode")
    ev.add_argument("--trace", required=True,
                    help="SWF trace, or vasplike (the calibrated VASP-like workload's held-out sequences; "
                         "vasplike-stated: the paper's stated figures)")
    ev.add_argument("--policies", default="fcfs,sjf,f1,wfp3,unicep",
                    help="comma-separated heuristics (fcfs, sjf, f1, wfp3, unicep, wfp3-authors, unicep-authors, "
                         "...) and model files/folders (default fcfs,sjf,f1,wfp3,unicep)")
    ev.add_argument("--starts", help="comma-separated first jobs (0-based) of the sequences, e.g. 1981,2756,...")
    ev.add_argument("--n-sequences", type=int_in(1, 100_000),
                    help=f"sequences drawn with --seed when --starts is absent (default "
                         f"{EVALUATE_DRAW_DEFAULTS['n_sequences']}; --trace vasplike: held-out sequences, default 16)")
    ev.add_argument("--seq-len", type=positive_int, default=1024, help="jobs per sequence (default 1024)")
    ev.add_argument("--backfill", default="none",
                    help="backfilling rule(s), comma-separated: none, rlscheduler, easy (e.g. none,rlscheduler; "
                         "default none)")
    ev.add_argument("--seed", type=nonneg_int,
                    help=f"seed of the drawn sequence starts (default {EVALUATE_DRAW_DEFAULTS['seed']})")
    ev.add_argument("--machine", help="machine spec (default: a flat cluster of the trace's MaxNodes)")
    ev.add_argument("--norms", choices=["trace", "model"], default="trace",
                    help="normalise model features by the evaluated trace (authors; default) or the training trace")
    ev.add_argument("--sample", action="store_true", help="sample actions instead of greedy argmax")
    ev.add_argument("--json", action="store_true",
                    help='print {"trace", "machine", "seq_len", "starts", ..., "results": [{"policy", "backfill", '
                         '"start", "avg_bsld", "avg_wait"}, ...]} (vasplike rows also "avg_slowdown", "jobs", '
                         '"kills"; their "start" is the sequence\'s generator seed)')
    ev.set_defaults(func=cmd_evaluate)

    ex = rsub.add_parser("export", help="write a trained model's policy (no optimiser or critic) to a small file")
    ex.add_argument("model", help="checkpoint file or run folder")
    ex.add_argument("out", help="the model file to write (e.g. model.pt)")
    ex.add_argument("--json", action="store_true", help='print {"path", "bytes", "agent", "epoch"}')
    ex.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    from rtsched.rl.modelfiles import export_model

    if os.path.isdir(args.out):
        raise UsageError(f"out: {args.out} is a folder; give the model file's name (e.g. model.pt)")
    check_output(os.path.dirname(args.out) or ".", f"out {args.out}", folder=True)  # its folder is created
    info = export_model(args.model, args.out)
    if args.json:
        print(json.dumps(info))
    else:
        print(f"{info['agent']} model, epoch {info['epoch']}: {info['path']} ({info['bytes'] / 1024:.1f} KiB)")
    return 0

