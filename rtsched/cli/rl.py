"""``rtsched rl train``, ``evaluate`` and ``export`` (the RL agents, ``rtsched.rl``).

    rtsched rl train --agent rlscheduler --trace lublin_256.swf --goal bsld --backfill rlscheduler \\
        --epochs 100 --out runs/l1-bf [--seed 0] [--resume] [--workers 2] [--backend local|ray]
    rtsched rl evaluate --trace lublin_256.swf --policies fcfs,sjf,f1,wfp3,unicep,runs/l1-bf \\
        --starts 1981,2756,4299,8850,3316,2714,5228,7762,4022,7085 --backfill none,rlscheduler [--json]

``train`` writes ``OUT/checkpoint.pt`` (model, optimisers, sampling-generator state, configuration)
after every epoch; ``--epochs`` is the *total*, so after an interruption the same command with
``--resume`` runs the missing epochs and ends with the weights an uninterrupted run would have.
``evaluate`` follows seed 003's test protocol (10 sequences of 1,024 jobs, greedy actions) in the
compatibility mode; ``--sample`` samples the models' actions as the authors' test script does
(``--sample-seed S``, ``--repeats R``: run r of a sequence draws with seed S + r); ``--json`` prints
what ran (``trace``, ``machine``, ``seq_len``, ``starts``, ...) and ``"results": [{"policy",
"backfill", "start", "avg_bsld", "avg_wait"}, ...]``.  ``export``
writes a trained model's policy alone (about 20 KiB; loads like any model, cannot resume training).
"""
from __future__ import annotations

import importlib
import json
import os
import sys

from rtsched.cli.common import (UsageError, changed_options, check_output, float_in, given_options, int_in, name_list,
                                nonneg_float, nonneg_int, positive_float, positive_int, unit_float)
from rtsched.errors import RtschedError
from rtsched.files import require_file
from rtsched.rl.agents import AGENTS as AGENT_PACKAGES
from rtsched.rl.options import TrainOption, int_list, start_range
from rtsched.rl.rtmix.options import (CONTEXT_HIDDEN, CURRICULUM_DEFAULTS, DAGGER_DEFAULTS, DAGGER_TEACHER,
                                      ROLLOUT_DEFAULTS)
from rtsched.rl.rtmix.options import DEFAULTS as RTMIX_DEFAULTS

AGENTS = tuple(AGENT_PACKAGES)  # the agents table (rtsched.rl.agents): each agent's options live with it
# Kept here so that building the parser imports neither torch nor the RL package's heavy modules; the
# command checks them against rtsched.rl (tests/test_layers.py checks the lists agree).
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
SAMPLING_DEFAULTS = {"sample_seed": 0, "repeats": 1}  # rl evaluate --sample's draw (policy seed 0: as before)



# ---------------------------------------------------------------------------------------- parsing helpers
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
    require_file(path, "--trace")


def _score(agent: str, goal: str, ret: float) -> float:
    """The human-facing score of a trajectory return: the goal's value (the pick environment returns
    −value, +utilization), or the return itself for an agent whose options name a ``SCORE_LABEL``
    (the inspector's relative gain over its base policy, the split-window, RLSchert and rtmix rewards)."""
    if agent_options(agent).SCORE_LABEL is not None or goal == "utilization":
        return ret
    return -ret


def _score_label(agent: str, goal: str) -> str:
    return agent_options(agent).SCORE_LABEL or f"avg {goal}"


# ---------------------------------------------------------------------------------------- train: options
def agent_options(agent: str):
    """The agent's options module (``rtsched.rl.AGENT.options``: argparse-free data, no NumPy)."""
    return importlib.import_module(f"{AGENT_PACKAGES[agent]}.options")


# Options of ``rl train`` every agent takes; the others are each agent's ``USES`` or its own ``OPTIONS``.
EVERY_AGENT = ("agent", "epochs", "out", "seed", "resume", "trajs_per_epoch", "n_envs", "train_pi_iters",
               "train_v_iters", "torch_threads", "no_progress", "json")

# ``rl train``'s options shared by several agents, declared once (each agent's own are in its options module).
SHARED_TRAIN_OPTIONS = (
    TrainOption(("--agent",), "rlscheduler (job picking), inspector (SchedInspector), splitwindow (Deep Back-Filling), "
                "rlschert (RLSchert), rtmix (RTJ/BJ mixes on Mira); default rlscheduler", default="rlscheduler",
                choices=AGENTS),
    TrainOption(("--trace",), "SWF trace (the papers' cleaning is applied; rlscheduler, inspector, splitwindow); "
                "rlschert: also 'vasplike' (synthetic, calibrated) or 'vasplike-stated'; rtmix: none "
                "(generated instances)"),
    TrainOption(("--goal",), "optimisation goal (default bsld: bounded slowdown, τ = 10 s)", default="bsld",
                choices=GOALS),
    TrainOption(("--backfill",), "backfilling during training (default none)", default="none", choices=BACKFILLS),
    TrainOption(("--epochs",), f"total epochs (default {DEFAULT_EPOCHS}; a resumed run counts the earlier ones; the "
                "rtmix curriculum has none: --bc-epochs; 0: only splitwindow's clone or DAgger, rtmix's DAgger)",
                kind="int", bounds=(0, 1_000_000)),
    TrainOption(("--out", "--model-dir"), "output folder for checkpoint.pt and progress.json (default "
                "runs/AGENT-TRACE-GOAL-BACKFILL)"),
    TrainOption(("--seed",), "seed of the training run (>= 0, default 0)", kind="int>=0", default=0),
    TrainOption(("--resume",), "continue the checkpoint in --out (same settings)", kind="flag", default=False),
    TrainOption(("--init-from",), "start a new run from this model's weights (e.g. stage 2 after filtering)"),
    TrainOption(("--seq-len",), "jobs per training sequence (rlscheduler 256, inspector 128)", kind="int>=1"),
    TrainOption(("--start-range",), "LO,HI first jobs of training sequences (indices, or fractions like 0,0.2)"),
    TrainOption(("--trajs-per-epoch",), f"trajectories per epoch ({_ppo_default('trajs_per_epoch')})", kind="int",
                bounds=(1, 100_000)),
    TrainOption(("--n-envs",), f"environments stepped together ({_ppo_default('n_envs')})", kind="int",
                bounds=(1, 1024)),
    TrainOption(("--train-pi-iters",), f"policy iterations per epoch ({_ppo_default('train_pi_iters')})", kind="int",
                bounds=(1, 100_000)),
    TrainOption(("--train-v-iters",), f"value iterations per epoch ({_ppo_default('train_v_iters')})", kind="int",
                bounds=(1, 100_000)),
    TrainOption(("--minibatch",), "splitwindow, rlschert: PPO minibatch size (default 128)", kind="int",
                bounds=(1, 1_000_000)),
    TrainOption(("--torch-threads",), "PyTorch intra-op threads of the PPO update (default 1; collection always "
                "uses 1)", kind="int", bounds=(1, 1024)),
    TrainOption(("--workers",), "rollout workers simulating the --n-envs environments in parallel (default 1: in "
                "this process); results do not depend on it", kind="int", bounds=(1, 1024)),
    TrainOption(("--backend",), "rollout workers: local subprocesses, or Ray actors (the ray extra)", default="local",
                choices=ROLLOUT_BACKENDS),
    TrainOption(("--address",), "--backend ray: the cluster to join (auto, HOST:PORT; default: a local Ray)"),
    TrainOption(("--rollout",), "lockstep (default: the trainer samples every step) or trajectories (each worker "
                "samples whole trajectories; scales better, other random stream)", choices=ROLLOUT_MODES),
    TrainOption(("--pi-lr",), "rlschert, inspector, splitwindow: the policy's Adam learning rate (rlschert default 1e-4, "
                "inspector 3e-4 as the authors' code, seed 000's text states 1e-3; splitwindow 3e-4)", kind="float>0"),
    TrainOption(("--bc-epochs",), "rtmix, splitwindow: behaviour-cloning passes over the expert data (DAgger: per "
                f"round; rtmix default {RTMIX_DEFAULTS['bc_epochs']}, splitwindow 3)", kind="int>=1"),
    TrainOption(("--dagger-rounds",), f"rtmix, splitwindow: DAgger rounds (rtmix default "
                f"{DAGGER_DEFAULTS['dagger_rounds']}; splitwindow: before PPO, default none); a larger number with "
                "--resume adds rounds", kind="int", bounds=(1, 10_000)),
    TrainOption(("--dagger-episodes",), "rtmix, splitwindow: DAgger episodes per round (rtmix: Table-3 instances, "
                "generator seeds 200000.., half with walltime = runtime, default "
                f"{DAGGER_DEFAULTS['dagger_episodes']}; splitwindow: training episodes, reset seeds 1000.., default 2)",
                kind="int", bounds=(1, 10_000)),
    TrainOption(("--beta0",), "rtmix, splitwindow: DAgger's probability of following the expert in the first "
                f"round (rtmix default {DAGGER_DEFAULTS['beta0']:g}, splitwindow 0); then times --beta-decay per round",
                kind="float[0,1]"),
    TrainOption(("--beta-decay",), "rtmix, splitwindow: DAgger's decay of that probability per round (default "
                f"{DAGGER_DEFAULTS['beta_decay']:g})", kind="float[0,1]"),
    TrainOption(("--imitation",), "rlschert, splitwindow: imitation weight α_t at the start (rlschert's paper 0.5; "
                "default 0: none)", kind="float[0,1]"),
    TrainOption(("--imitation-hold",), "rlschert, splitwindow: epochs at full α_t (rlschert default 50)", kind="int"),
    TrainOption(("--imitation-end",), "rlschert, splitwindow: epoch by which α_t decays to 0 (rlschert default 150)",
                kind="int"),
    TrainOption(("--teacher",), "imitation teacher's selects: rlschert: a heuristic (sjf, saf) or a no-kill RLSchert "
                "model file, the rule-based kill first (default sjf); splitwindow: sjf (the shortest window job that "
                "fits, default) or fcfs (the first that fits); rtmix dagger: the expert, a policy name (default "
                "replan); rtmix curriculum: the policy labelling the weeks (default wcjs)"),
    TrainOption(("--select-every",), "rlschert (vasplike), splitwindow, inspector: every N epochs score the greedy "
                "policy on validation sequences and keep the best as OUT/best.pt (OUT/selection.json; default 0: off)",
                kind="int"),
    TrainOption(("--validation-sequences",), "validation sequences for --select-every (rlschert vasplike: default 32; "
                "inspector: 256-job sequences from --start-range, default 10)", kind="int"),
    TrainOption(("--clone-epochs",), "rlschert, splitwindow: passes of the imitation pre-training (default 30 and 20)",
                kind="int"),
    TrainOption(("--until",), "rlschert, splitwindow, inspector: stop cleanly after the epoch during which this UTC "
                "time HH:MM passes (or a file OUT/STOP appears); each step's CPU and wall seconds go to "
                "OUT/budget.json"),
    TrainOption(("--no-progress",), "no progress bar", kind="flag", default=False),
    TrainOption(("--json",), "print a JSON summary (with the per-epoch history)", kind="flag", default=False),
)


def _argparse_type(opt: TrainOption):
    """The command line's checked type for a ``TrainOption`` (its messages name the allowed range)."""
    if opt.bounds is not None:
        return int_in(*opt.bounds) if opt.kind == "int" else float_in(*opt.bounds)
    return {"text": None, "int": int, "float": float, "int>=0": nonneg_int, "int>=1": positive_int,
            "float>0": positive_float, "float>=0": nonneg_float, "float[0,1]": unit_float}[opt.kind]


def _add_option(group, opt: TrainOption) -> None:
    if opt.kind == "flag":
        # default None for a flag whose table fills it (DAGGER_DEFAULTS): "given" checks see it unset
        group.add_argument(*opt.flags, action="store_true", default=opt.default, help=opt.help)
        return
    group.add_argument(*opt.flags, dest=opt.dest, type=_argparse_type(opt), default=opt.default, choices=opt.choices,
                       help=opt.help)


def _train_option_table() -> dict[str, TrainOption]:
    """Every ``rl train`` option by argparse name: the shared ones, then each agent's own."""
    table = {o.dest: o for o in SHARED_TRAIN_OPTIONS}
    for agent in AGENTS:
        table.update({o.dest: o for o in agent_options(agent).OPTIONS})
    return table


def _refuse_other_agents_options(args) -> None:
    """An option the agent does not take is refused, naming it (never silently ignored)."""
    mine = agent_options(args.agent)
    allowed = {*EVERY_AGENT, *mine.USES, *(o.dest for o in mine.OPTIONS)}
    for dest, opt in _train_option_table().items():
        if dest in allowed or getattr(args, dest) == opt.default:
            continue
        owners = [a for a in AGENTS if dest in {o.dest for o in agent_options(a).OPTIONS}]
        if owners:
            raise UsageError(f"{opt.flag} applies to the {owners[0]} agent only, not to {args.agent}")
        users = [a for a in AGENTS if dest in agent_options(a).USES]
        why = getattr(mine, "WHY_NOT", {}).get(dest)
        raise UsageError(f"{opt.flag} does not apply to the {args.agent} agent ({why or 'options of ' + ', '.join(users)})")


# ---------------------------------------------------------------------------------------- train: the command
def cmd_train(args) -> int:
    _refuse_other_agents_options(args)
    return TRAIN_COMMANDS.get(args.agent, cmd_train_ppo)(args)


def _train_folder(args, default_name: str) -> tuple[str, str]:
    """(output folder, its checkpoint), checked: a checkpoint is continued only with --resume, and
    --resume needs one."""
    from rtsched.rl.modelfiles import CHECKPOINT

    out = args.out or os.path.join("runs", default_name)
    check_output(out, "--out", folder=True)
    ckpt = os.path.join(out, CHECKPOINT)
    if os.path.exists(ckpt) and not args.resume:
        raise UsageError(f"{ckpt}: a checkpoint exists; pass --resume to continue it or choose another --out")
    if args.resume and not os.path.exists(ckpt):
        raise UsageError(f"--resume: no checkpoint to continue in {out} ({ckpt} not found); drop --resume to start "
                         "a new run")
    return out, ckpt


def _ppo_train_options(args) -> dict:
    """The options every PPO-trained agent shares, then the agent's own (its ``train_options``)."""
    if args.address and args.backend != "ray":
        raise UsageError("--address applies to --backend ray only")
    options: dict = {"seed": args.seed, "backend": args.backend}
    for name in ("trajs_per_epoch", "n_envs", "train_pi_iters", "train_v_iters", "torch_threads", "workers",
                 "rollout"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    start = start_range(args.start_range)
    if start is not None:
        options["start_range"] = start
    options.update(agent_options(args.agent).train_options(args))
    if getattr(args, "until", None) is not None:
        from rtsched.rl.budget import deadline_at

        options["until"] = deadline_at(args.until)
    if options.get("until") is not None or options.get("select_every"):
        options["budget"] = True  # a long run's step: its seconds go to OUT/budget.json
    return options


def cmd_train_ppo(args) -> int:
    """``rtsched rl train`` for an agent trained on a trace with PPO (``rtsched.rl.api.train``)."""
    if args.epochs is None:
        args.epochs = DEFAULT_EPOCHS
    if not args.trace:
        raise UsageError(f"--trace is required for the {args.agent} agent")
    options = _ppo_train_options(args)  # usage errors first, then the files
    if args.epochs == 0 and not any(options.get(k) for k in ("clone_episodes", "clone_from", "dagger_rounds")):
        raise UsageError("--epochs: must be at least 1 (0 only with a pre-stage before PPO: --clone-episodes, "
                         "--clone-from or --dagger-rounds)")
    names_a_workload = getattr(agent_options(args.agent), "names_a_workload", None)
    if not (names_a_workload and names_a_workload(args.trace)):
        _check_trace(args.trace, args.agent)
    out, ckpt = _train_folder(args, f"{args.agent}-{os.path.splitext(os.path.basename(args.trace))[0]}-"
                                    f"{args.goal}-{args.backfill}")
    if args.resume and args.init_from:
        raise UsageError("--resume and --init-from exclude each other (--init-from starts a new run)")
    done_epochs = 0
    if args.resume:
        from rtsched.rl.modelfiles import read_model_file

        done_epochs = int(read_model_file(ckpt).get("epoch", 0))
    res = _run_ppo_training(args, out, ckpt, options, done_epochs)
    _print_train_summary(args, out, ckpt, res)
    return 0


def _run_ppo_training(args, out: str, ckpt: str, options: dict, done_epochs: int) -> dict:
    from rtsched.rl.api import train

    bar = _TrainProgress(args.agent, args.goal, _score_label(args.agent, args.goal), args.epochs, done_epochs,
                         enabled=not (args.no_progress or args.json))
    try:
        with bar:
            return train(args.agent, args.trace, goal=args.goal, backfill=args.backfill, epochs=args.epochs, out=out,
                         progress=bar.epoch_done, resume=args.resume, init_from=args.init_from,
                         ray_address=args.address, on_trajectory=bar.trajectory_done, **options)
    except ValueError as exc:
        if isinstance(exc, RtschedError):
            raise
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        _say_interrupted(ckpt)
        raise


def _say_interrupted(ckpt: str) -> None:
    print(f"rtsched rl train: interrupted; the last finished epoch is in {ckpt} "
          f"(run the same command with --resume to continue)", file=sys.stderr)


def _print_train_summary(args, out: str, ckpt: str, res: dict) -> None:
    label = _score_label(args.agent, args.goal)
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
    if res.get("stopped"):
        summary["stopped"] = True  # a step of a long run ended at --until or OUT/STOP
    if args.json:
        print(json.dumps(summary, indent=1, allow_nan=False))
        return
    score = "–" if summary["last_score"] is None else f"{summary['last_score']:.4g}"
    setting = getattr(agent_options(args.agent), "setting", None)
    setting = setting(args) if setting else f"goal {args.goal}, backfill {args.backfill}"
    print(f"{args.agent} on {os.path.basename(args.trace)} ({setting}): "
          f"{summary['epochs']} epochs ({res['epochs_run']} run now), last epoch {label} {score}; model {ckpt}"
          + ("; stopped cleanly (--until or STOP): run the same command with --resume to continue"
             if res.get("stopped") else ""))


# ---------------------------------------------------------------------------------------- train: rtmix
def cmd_train_rtmix(args) -> int:
    """``rtsched rl train --agent rtmix``: solve expert plans (cached), clone, fine-tune with PPO;
    with ``--curriculum-rounds``: the curriculum to Mira-like weeks instead; with ``--recipe rollout``: one step of
    policy improvement by rollouts."""
    if args.recipe == "rollout":
        return cmd_train_rtmix_rollout(args)
    rollout_given = given_options(args, ("rollout_curriculum", "rollout_weeks_rounds", "rollout_labels",
                                         "rollout_actor", "rollout_hidden", *ROLLOUT_DEFAULTS))
    if rollout_given:
        raise UsageError(f"{', '.join(rollout_given)}: options of --recipe rollout")
    if args.curriculum_rounds is not None:
        return cmd_train_rtmix_curriculum(args)
    given = given_options(args, (*CURRICULUM_DEFAULTS, *_curriculum_batch_options(), *_curriculum_pass_options()))
    if given:
        raise UsageError(f"{', '.join(given)}: options of the curriculum (give --curriculum-rounds)")
    if (args.recipe or "dagger") == "dagger":
        return cmd_train_rtmix_dagger(args)
    if args.epochs is None:
        args.epochs = DEFAULT_EPOCHS
    given = given_options(args, DAGGER_DEFAULTS)
    given += [flag for flag, v in (("--teacher", args.teacher), ("--init-from", args.init_from)) if v is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: not options of --recipe clone (DAgger's, or the curriculum's)")
    for name, value in RTMIX_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    baseline = _check_rtmix_options(args)
    out, ckpt = _train_folder(args, "rtmix")
    quiet = args.no_progress or args.json
    data, info = (None, {}) if args.resume else _rtmix_expert_data(args, quiet)
    done_epochs = 0
    if args.resume:
        from rtsched.rl.modelfiles import read_model_file

        done_epochs = max(0, len(read_model_file(ckpt).get("history", [])) - 1)
    res = _run_rtmix_training(args, out, ckpt, data, baseline, done_epochs, quiet)
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


def _refuse(args, dests, *, mode: str, resume: str) -> None:
    """One line naming every option among ``dests`` that was given, a TRACE and ``--resume`` (with why, ``resume``):
    options ``mode`` does not use are refused, not ignored."""
    refused = given_options(args, dests)
    if args.trace:
        refused.append("--trace")
    if args.resume:
        refused.append(f"--resume ({resume})")
    if refused:
        raise UsageError(f"{', '.join(refused)}: not options of {mode}")


def cmd_train_rtmix_rollout(args) -> int:
    """``rtsched rl train --agent rtmix --recipe rollout``: ``improve_by_rollouts`` of ``--init-from`` (default the
    shipped model) into ``OUT/model.pt``."""
    from rtsched.rl.modelfiles import read_model_file
    from rtsched.rl.rtmix.policy import PRETRAINED_RTMIX
    from rtsched.rl.rtmix.rollout import ROLLOUT_SEEDS, improve_by_rollouts

    _refuse(args, ("epochs", "experts", "expert_cache", "solve_time_limit", "jobs", "machine", "theta", "penalty",
                   "reward_baseline", "teacher", *DAGGER_DEFAULTS, *CURRICULUM_DEFAULTS, "curriculum_rounds",
                   *_curriculum_batch_options(), *_curriculum_pass_options()),
            mode="--recipe rollout", resume="a rollout step is one call; run it again into a new --out")
    if args.rollout_curriculum is None or args.rollout_weeks_rounds is None:
        raise UsageError("--recipe rollout needs --rollout-curriculum DIR and --rollout-weeks-rounds R")
    labels_from = None
    if args.rollout_labels is not None:
        labels_from = args.rollout_labels.split(",")
        missing = [p for p in labels_from if not os.path.isfile(p)]
        if missing:
            raise UsageError(f"--rollout-labels: no file {missing[0]}")
        redone = given_options(args, ("rollout_episodes", "rollout_seed", "violation_cost", "rollout_penalty",
                                      "rollout_futures", "rollout_workers"))
        if redone:
            raise UsageError(f"{', '.join(redone)}: options of the rollouts, which --rollout-labels reuses")
    hidden = None
    if args.rollout_hidden is not None:
        if (args.rollout_actor or "same") == "same":  # a context network's sizes
            raise UsageError("--rollout-hidden: the sizes of --rollout-actor context or context-from-base")
        hidden = tuple(int_list(args.rollout_hidden, "--rollout-hidden"))
        if not hidden or min(hidden) < 1:
            raise UsageError(f"--rollout-hidden: expected positive layer sizes, got {args.rollout_hidden!r}")
    for name, value in ROLLOUT_DEFAULTS.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    epochs = args.bc_epochs if args.bc_epochs is not None else ROLLOUT_DEFAULTS["rollout_bc_epochs"]
    if epochs < 1:
        raise UsageError("--bc-epochs: must be at least 1")
    seeds = range(args.rollout_seed, args.rollout_seed + args.rollout_episodes)
    if seeds.start < ROLLOUT_SEEDS.start or seeds.stop > ROLLOUT_SEEDS.stop:
        raise UsageError(f"--rollout-seed, --rollout-episodes: the seeds {seeds.start}..{seeds.stop - 1} leave the "
                         f"rollout range {ROLLOUT_SEEDS.start}..{ROLLOUT_SEEDS.stop - 1}")
    base = args.init_from or PRETRAINED_RTMIX
    if not os.path.isfile(base):
        raise UsageError(f"--init-from: no model file {base}")
    if read_model_file(base).get("agent") != "rtmix":
        raise UsageError(f"--init-from: {base} is not an rtmix model")
    if not os.path.isdir(args.rollout_curriculum):
        raise UsageError(f"--rollout-curriculum: no folder {args.rollout_curriculum}")
    out = args.out or os.path.join("runs", "rtmix-rollout")
    check_output(out, "--out", folder=True)
    model = os.path.join(out, "model.pt")
    if os.path.exists(model):
        raise UsageError(f"{model}: exists; choose another --out")
    quiet = args.no_progress or args.json

    def say(text: str) -> None:
        if not quiet:
            print(f"rtmix rollout: {text}", file=sys.stderr, flush=True)

    network = {"context": "a new context kernel", "context-from-base": "a context kernel grown from the base model's"
               }.get(args.rollout_actor)
    network = f"{network} {','.join(map(str, hidden or CONTEXT_HIDDEN))}" if network else "the base model's own"
    if labels_from is not None:
        say(f"base {base}, week states {args.rollout_curriculum} data-0..{args.rollout_weeks_rounds}, the labels of "
            f"{', '.join(labels_from)} x{args.rollout_repeat}, {epochs} fitting passes, network: {network}")
    else:
        say(f"base {base}, week states {args.rollout_curriculum} data-0..{args.rollout_weeks_rounds}, Table-3 seeds "
            f"{seeds.start}..{seeds.stop - 1}, violation cost {args.violation_cost:g}, penalty "
            f"{args.rollout_penalty:g}, {args.rollout_futures or 'its own'} future(s) per action, labels "
            f"x{args.rollout_repeat}, {epochs} fitting passes, network: {network}")
    try:
        res = improve_by_rollouts(base, model, curriculum=args.rollout_curriculum,
                                  weeks_rounds=args.rollout_weeks_rounds, seeds=seeds,
                                  violation_cost=args.violation_cost, penalty=args.rollout_penalty,
                                  futures=args.rollout_futures, workers=args.rollout_workers, epochs=epochs,
                                  small_repeat=args.rollout_repeat, labels_from=labels_from, seed=args.seed,
                                  actor=args.rollout_actor or "same", hidden=hidden,
                                  progress=say)
    except ValueError as exc:
        raise UsageError(f"{exc}") from None
    summary = {"agent": "rtmix", "recipe": "rollout", "base": base, "out": out, "model": model,
               "rollout": res["rollout"], "fit": res["fit"]}
    if args.json:
        print(json.dumps(summary, indent=1, allow_nan=False))
    else:
        r = res["rollout"]
        changed = f" ({r['changed']} changed)" if "changed" in r else ""
        print(f"rtmix rollout from {base}: {r['decisions']} Table-3 states labelled{changed}, "
              f"fitted with the week states (accuracy {res['fit']['accuracy']:.3f}); model {model}")
    return 0


def _check_rtmix_options(args) -> str | None:
    """Check rtmix's options before any long work; returns the reward baseline (None: absolute reward)."""
    from rtsched.checkpoint import CheckpointModel
    from rtsched.machines import check_machine_spec, machine_from_spec

    for name in ("epochs", "experts", "bc_epochs", "jobs"):
        if getattr(args, name) < (0 if name == "epochs" else 1):
            raise UsageError(f"--{name.replace('_', '-')}: must be at least {0 if name == 'epochs' else 1}")
    baseline = None if args.reward_baseline.strip().lower() == "none" else args.reward_baseline
    try:
        check_machine_spec(args.machine)
        machine = machine_from_spec(args.machine)
        CheckpointModel.parse(args.checkpoint)
        if baseline is not None:
            from heuristics.registry import make_policy

            make_policy(baseline)
    except ValueError as exc:
        raise UsageError(f"{exc}") from None
    if not machine.partitioned:
        raise UsageError(f"--machine: the rtmix agent needs a partitioned machine (mira, mira:BLOCKS or a partition "
                         f".xml), not {machine.describe()}")
    return baseline


def _rtmix_expert_data(args, quiet: bool) -> tuple[dict, dict]:
    """The expert plans solved (or read from the cache) and replayed into cloning data; (data, summary info)."""
    from rtsched.experiments.rtmix import expert_dataset, solve_plans
    from rtsched.rl.rtmix.env import EXPERT_SEEDS, RtMixEnv

    def solved(i, n, rec):
        if not quiet:
            print(f"expert plans {i}/{n}: seed {rec['seed']} {rec['status']} ({rec['seconds']:.1f} s)",
                  file=sys.stderr)

    seeds = range(EXPERT_SEEDS.start, EXPERT_SEEDS.start + args.experts)
    plans = solve_plans(seeds, cache=args.expert_cache, jobs=args.jobs, progress=solved,
                        time_limit=args.solve_time_limit)
    data = expert_dataset(plans, RtMixEnv(args.machine, args.checkpoint))
    if not quiet:
        print(f"expert data: {data['decisions']} decisions ({data['decisions_on_plan']} before a divergence); "
              f"plans: {data['classes']}", file=sys.stderr)
    return data, {"expert_classes": data["classes"], "expert_decisions": data["decisions"],
                  "expert_decisions_on_plan": data["decisions_on_plan"]}


def cmd_train_rtmix_dagger(args) -> int:
    """``rtsched rl train --agent rtmix [--recipe dagger]``: DAgger rounds with an online expert
    (``rtsched.rl.rtmix.dagger``; the expert by policy name, ``replan`` by default, through the policy
    registry), then ``--epochs`` PPO epochs (default 0) from the same folder."""
    from heuristics.registry import make_policy
    from rtsched.rl.rtmix.dagger import DAGGER_ENV, run_dagger

    clone = given_options(args, ("experts", "expert_cache", "solve_time_limit", "jobs"))
    if clone:
        raise UsageError(f"{', '.join(clone)}: options of --recipe clone (the default recipe is dagger)")
    for table in (RTMIX_DEFAULTS, DAGGER_DEFAULTS):
        for name, value in table.items():
            if getattr(args, name) is None:
                setattr(args, name, value)
    if args.teacher is None:
        args.teacher = DAGGER_TEACHER
    if args.epochs is None:
        args.epochs = 0
    baseline = _check_rtmix_options(args)
    try:
        make_policy(args.teacher)
    except ValueError as exc:
        raise UsageError(f"--teacher: {exc}") from None
    if args.init_from is not None and not os.path.isfile(args.init_from):
        raise UsageError(f"--init-from: no model file {args.init_from}")
    out, ckpt = _train_folder(args, "rtmix")
    quiet = args.no_progress or args.json

    def say(text: str) -> None:
        if not quiet:
            print(f"rtmix dagger: {text}", file=sys.stderr, flush=True)

    env = {"machine": args.machine, "checkpoint": args.checkpoint, "baseline": baseline, "theta": args.theta,
           "penalty": args.penalty, "order": DAGGER_ENV["order"], "bj_candidates": args.bj_candidates,
           "eligibility": args.eligibility, "wake": args.wake, "shield": args.shield,
           "conserve": args.conserve, "shield_theta": args.shield_theta, "horizon_features": args.horizon_features,
           "defer_weight": args.defer_weight}
    ppo = {name: getattr(args, name) for name in ("trajs_per_epoch", "n_envs", "train_pi_iters", "train_v_iters")
           if getattr(args, name) is not None}
    try:
        res = run_dagger(out, teacher=args.teacher, rounds=args.dagger_rounds, episodes=args.dagger_episodes,
                         beta0=args.beta0, decay=args.beta_decay, bc_epochs=args.bc_epochs, seed=args.seed,
                         init_from=args.init_from, torch_threads=args.torch_threads or 1, progress=say, **env, **ppo)
    except KeyboardInterrupt:
        _say_interrupted(ckpt)
        raise
    except ValueError as exc:
        raise UsageError(f"{exc}") from None
    history = res["history"]
    if args.epochs > 0:
        done = max(0, len(history) - 1)
        from rtsched.rl.rtmix.core import OPTIONAL_SETTINGS

        # the fine-tuning's environment: DAgger's action space and mask rules (its order and optional settings)
        history = _run_rtmix_training(args, out, ckpt, None, baseline, done, quiet, resume=True,
                                      env={k: v for k, v in env.items()
                                           if k == "order" or k in OPTIONAL_SETTINGS})["history"]
    rounds = history[0]["rounds"]
    summary = {"agent": "rtmix", "recipe": "dagger", "out": out, "checkpoint": ckpt, "teacher": args.teacher,
               "machine": args.machine, "checkpoint_model": args.checkpoint, "rounds": rounds,
               "train_seeds": history[0]["train_seeds"], "epochs": len(history) - 1,
               "last_reward": history[-1].get("mean_return") if len(history) > 1 else None}
    if args.json:
        print(json.dumps(summary, indent=1, allow_nan=False))
    else:
        print(f"rtmix on {args.machine} ({args.checkpoint}): {len(rounds)} DAgger rounds taught by {args.teacher} "
              f"({rounds[-1]['samples']} labelled states, accuracy {rounds[-1]['accuracy']:.3f}), "
              f"{summary['epochs']} PPO epochs; model {ckpt}")
    return 0


def _run_rtmix_training(args, out, ckpt, data, baseline, done_epochs: int, quiet: bool, *, resume: bool | None = None,
                        env: dict | None = None) -> dict:
    from rtsched.rl.rtmix.train import train_rtmix

    bar = _TrainProgress("rtmix", "reward", "reward", args.epochs, done_epochs, enabled=not quiet)

    def bc_done(e, n, row):
        if not quiet:
            print(f"cloning {e}/{n}: loss {row['loss']:.4f}, accuracy {row['accuracy']:.3f}", file=sys.stderr)

    options = {name: getattr(args, name) for name in ("trajs_per_epoch", "n_envs", "train_pi_iters", "train_v_iters")
               if getattr(args, name) is not None}
    try:
        with bar:
            return train_rtmix(data, out, bc_epochs=args.bc_epochs, epochs=args.epochs, seed=args.seed,
                               progress=bar.epoch_done, bc_progress=bc_done, on_trajectory=bar.trajectory_done,
                               resume=args.resume if resume is None else resume, torch_threads=args.torch_threads,
                               machine=args.machine, checkpoint=args.checkpoint, baseline=baseline, theta=args.theta,
                               penalty=args.penalty, **(env or {}), **options)
    except KeyboardInterrupt:
        _say_interrupted(ckpt)
        raise


# ``rl train`` commands other than PPO on a trace, by agent.
TRAIN_COMMANDS = {"rtmix": cmd_train_rtmix}


def _curriculum_batch_options() -> list[str]:
    """The curriculum's batch-pass options (``--curriculum-priority``, ``--curriculum-backfill``), one per
    ``rtsched.rl.rtmix.core.BATCH_SETTINGS`` entry, named after the WCJS option they set."""
    from rtsched.rl.rtmix.core import BATCH_SETTINGS  # not at start-up: the core pulls in the heuristics

    return [f"curriculum_{option}" for option in BATCH_SETTINGS.values()]


def _curriculum_pass_options() -> dict[str, str]:
    """The curriculum's flags that make the pass follow WCJS's (``--curriculum-rt-wake``,
    ``--curriculum-refit-window``): argparse name → the ``RtMixSpec`` setting (``core.PASS_SETTINGS``)."""
    from rtsched.rl.rtmix.core import PASS_SETTINGS

    return {f"curriculum_{setting}": setting for setting in PASS_SETTINGS}


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

    _refuse(args, ("epochs", "experts", "expert_cache", "solve_time_limit", "jobs", "machine", "theta", "penalty",
                   "reward_baseline", "recipe", *DAGGER_DEFAULTS),
            mode="the curriculum", resume="the same command resumes a curriculum")
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
    from rtsched.rl.rtmix.core import BATCH_SETTINGS, RtMixSpec
    try:
        RtMixSpec(order=args.curriculum_order)
    except ValueError as exc:
        raise UsageError(f"--curriculum-order: {exc}") from None
    settings = {}
    for (setting, option), name in zip(BATCH_SETTINGS.items(), _curriculum_batch_options()):
        flag, value = f"--{name.replace('_', '-')}", getattr(args, name)
        if value is None:
            continue
        value = value.strip().lower()  # the names of heuristics.priorities / heuristics.backfill
        try:
            RtMixSpec(**{setting: value})
            make_policy(args.teacher, **{option: value})
        except (ValueError, TypeError) as exc:
            raise UsageError(f"{flag}: {exc}") from None
        settings[setting] = value
    settings.update({setting: True for name, setting in _curriculum_pass_options().items() if getattr(args, name)})
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
                         order=args.curriculum_order, spec_settings=settings,
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
    sampling = changed_options(args, SAMPLING_DEFAULTS)
    if sampling and not args.sample:
        raise UsageError(f"{', '.join(sampling)}: only with --sample (greedy actions draw nothing)")
    if _is_vasplike(args.trace):
        return _evaluate_vasplike(args, policies)
    _check_trace(args.trace)
    starts = int_list(args.starts, "--starts") if args.starts is not None else None
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
                           norms=args.norms, sample_seed=args.sample_seed, repeats=args.repeats)
        except ValueError as exc:
            if isinstance(exc, RtschedError):
                raise
            raise UsageError(str(exc)) from None
        rows.extend({k: r[k] for k in ("policy", "backfill", "start", "repeat", "sample_seed", "avg_bsld", "avg_wait")
                     if k in r} for r in got)
    what = {"trace": args.trace, "machine": machine_spec(trace, args.machine),
            "seq_len": args.seq_len, "starts": list(dict.fromkeys(r["start"] for r in rows)),
            "starts_drawn_with_seed": None if starts is not None else seed, "greedy": not args.sample,
            "norms": args.norms}
    if args.sample:  # the draw of the sampled actions (greedy output stays as it was)
        what.update(sample_seed=args.sample_seed, repeats=args.repeats)
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
                                   "norms": "trace", **SAMPLING_DEFAULTS})
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
    actions = "greedy actions" if what["greedy"] else (
        f"sampled actions (seed {what['sample_seed']}, {what['repeats']} run{'s' if what['repeats'] > 1 else ''} "
        f"a sequence)")
    table = Table(title=f"{os.path.basename(args.trace)} · machine {what['machine']} · {n_seq} sequences{drawn} × "
                        f"{args.seq_len} jobs · {actions} · mean of per-sequence averages (bsld τ = 10 s)")
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
    for opt in SHARED_TRAIN_OPTIONS:
        _add_option(tr, opt)
    for agent in AGENTS:  # each agent's own options, in its group (rtsched.rl.AGENT.options)
        mod = agent_options(agent)
        groups = mod.GROUPS if hasattr(mod, "GROUPS") else ((mod.GROUP, mod.OPTIONS),)
        for title, options in groups:
            group = tr.add_argument_group(title)
            for opt in options:
                _add_option(group, opt)
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
    ev.add_argument("--sample", action="store_true",
                    help="trained models sample their actions from the masked softmax (the authors' test script) "
                         "instead of the greedy argmax")
    ev.add_argument("--sample-seed", type=nonneg_int, default=SAMPLING_DEFAULTS["sample_seed"],
                    help="--sample: seed of the first run's draws; run r of a sequence draws with seed + r (default 0)")
    ev.add_argument("--repeats", type=int_in(1, 10_000), default=SAMPLING_DEFAULTS["repeats"],
                    help="--sample: sampled runs of each model on each sequence (default 1); one row per run")
    ev.add_argument("--json", action="store_true",
                    help='print {"trace", "machine", "seq_len", "starts", ..., "results": [{"policy", "backfill", '
                         '"start", "avg_bsld", "avg_wait"}, ...]} (--sample: also "sample_seed", "repeats", and '
                         '"repeat", "sample_seed" in the models\' rows; vasplike rows also "avg_slowdown", "jobs", '
                         '"kills"; their "start" is the sequence\'s generator seed)')
    ev.set_defaults(func=cmd_evaluate)

    ex = rsub.add_parser("export", help="write a trained model's policy (no optimiser or critic) to a small file")
    ex.add_argument("model", help="checkpoint file or run folder")
    ex.add_argument("out", help="the model file to write (e.g. model.pt)")
    ex.add_argument("--json", action="store_true", help='print {"path", "bytes", "agent", "epoch"}')
    ex.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="rtmix: change a setting that only narrows the action mask (shield, shield_theta, "
                         "conserve, defer_weight; 'none' clears conserve or defer_weight); repeatable; the file "
                         "lists the changes")
    ex.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    from rtsched.rl.modelfiles import export_model

    if os.path.isdir(args.out):
        raise UsageError(f"out: {args.out} is a folder; give the model file's name (e.g. model.pt)")
    check_output(os.path.dirname(args.out) or ".", f"out {args.out}", folder=True)  # its folder is created
    settings = None
    if args.set:
        from rtsched.rl.modelfiles import read_model_file
        from rtsched.rl.rtmix.core import changed_settings

        st = read_model_file(args.model)
        if st["agent"] != "rtmix":
            raise UsageError(f"--set: {args.model} is a {st['agent']} model; only rtmix models have settings that "
                             "may change after training")
        try:
            settings = changed_settings(st["env"], args.set)
        except ValueError as exc:
            raise UsageError(f"--set {exc}") from None
    info = export_model(args.model, args.out, settings)
    if args.json:
        print(json.dumps(info))
    else:
        print(f"{info['agent']} model, epoch {info['epoch']}: {info['path']} ({info['bytes'] / 1024:.1f} KiB)")
    return 0

