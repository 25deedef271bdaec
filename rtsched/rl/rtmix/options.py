"""``rtsched rl train --agent rtmix``'s options (data only: ``rtsched.rl.options``).  The command itself
(DAgger with an online expert — the default recipe —, or solving expert plans with the optimum and
cloning them, then PPO; or the curriculum) is ``rtsched.cli.rl``'s: the cloning recipe needs
``rtsched.experiments``, above this package."""
from __future__ import annotations

import os

from rtsched.rl.options import TrainOption

DEFAULTS = {"experts": 120, "expert_cache": os.path.join("runs", "rtmix-plans"), "solve_time_limit": 60.0,
            "jobs": 1, "bc_epochs": 30, "machine": "mira:16", "checkpoint": "jit", "theta": 1.2,
            "penalty": 10.0, "reward_baseline": "wcjs"}
# The curriculum (docs/rl.md "Curriculum"): from the shipped model (or --init-from) to Mira-like weeks.
CURRICULUM_DEFAULTS = {"curriculum_weeks": 8, "curriculum_machines": "mira", "small_episodes": 3000,
                       "small_repeat": 2, "curriculum_order": "backfill"}

_RTMIX = (
    TrainOption(("--experts",), "rtmix clone: expert instances, generator seeds 100000.. solved to optimality (CP-SAT; "
                f"default {DEFAULTS['experts']})", kind="int"),
    TrainOption(("--expert-cache",), "rtmix clone: folder of solved plans (one JSON per seed; reused; default "
                f"{DEFAULTS['expert_cache']})"),
    TrainOption(("--solve-time-limit",), f"rtmix clone: seconds per expert solve (default {DEFAULTS['solve_time_limit']:g})",
                kind="float>0"),
    TrainOption(("-j", "--jobs"), f"rtmix clone: expert instances solved in parallel (default {DEFAULTS['jobs']})",
                kind="int"),
    TrainOption(("--machine",), f"rtmix: mira:BLOCKS or a partition XML (default {DEFAULTS['machine']})"),
    TrainOption(("--checkpoint",), f"rtmix: checkpoint model no, sys[:S], app-PCT, jit (default "
                f"{DEFAULTS['checkpoint']})"),
    TrainOption(("--theta",), f"rtmix: the RTJ mean-slowdown bound θ of the reward (default {DEFAULTS['theta']:g})",
                kind="float>0"),
    TrainOption(("--penalty",), "rtmix: reward penalty per unit of mean RTJ slowdown above θ (default "
                f"{DEFAULTS['penalty']:g})", kind="float>=0"),
    TrainOption(("--reward-baseline",), "rtmix: PPO rewards are the gain over this policy on the same episode "
                f"(default {DEFAULTS['reward_baseline']}; 'none': the absolute reward)"),
)
RECIPES = ("dagger", "clone", "rollout")
# What the rollout recipe fits (``rollout.improve_by_rollouts``' ``actor``): the base model's own network, a new
# ``context`` actor, or a context actor that starts as the base model's kernel (``nets.context_from_kernel``).
ROLLOUT_ACTORS = ("same", "context", "context-from-base")
CONTEXT_HIDDEN = (128, 64, 32)  # the context network's default hidden sizes (thirteenth session's probe)
# The rollout recipe (rtsched.rl.rtmix.rollout.improve_by_rollouts, docs/rl.md "Rollout labels").
ROLLOUT_DEFAULTS = {"rollout_episodes": 2000, "rollout_seed": 210_000, "violation_cost": 3.0, "rollout_penalty": 10.0,
                    "rollout_futures": 0, "rollout_workers": 1, "rollout_repeat": 2,
                    "rollout_bc_epochs": 10}
# DAgger (rtsched.rl.rtmix.dagger, docs/rl.md "DAgger"): the default recipe.
DAGGER_DEFAULTS = {"dagger_rounds": 8, "dagger_episodes": 96, "beta0": 1.0, "beta_decay": 0.5, "bj_candidates": 2,
                   "eligibility": "wcjs", "wake": False, "shield": "none",
                   "conserve": None, "shield_theta": 1.2, "horizon_features": False, "defer_weight": None}
DAGGER_TEACHER = "replan"
_DAGGER = (
    TrainOption(("--recipe",), "rtmix: dagger (default: roll out the agent mixed with an online expert, --teacher, "
                "label every state with the expert's action, aggregate and fit; then --epochs PPO epochs, default 0) "
                "or clone (clone optimal plans of expert instances, then PPO: --experts ...) or rollout (one step of "
                "policy improvement of --init-from: --rollout-curriculum ...)", choices=RECIPES),
    TrainOption(("--bj-candidates",), "rtmix dagger: action slots preempting running checkpointable BJs for a "
                f"waiting BJ (default {DAGGER_DEFAULTS['bj_candidates']}; 0: none)", kind="int", bounds=(0, 64)),
    TrainOption(("--eligibility",), "rtmix dagger: the partitions the RTJ candidate slots may free: wcjs (default: "
                "WCJS's criteria) or any (any of the RTJ's size touching no RTJ or non-checkpointable job, as replan)",
                choices=("wcjs", "any")),
    TrainOption(("--wake",), "rtmix dagger: a scheduling point when a running BJ becomes splittable (ceil(W/10) s of "
                "work) while a job waits, where replan preempts between events (default off)", kind="flag"),
    TrainOption(("--shield",), "rtmix dagger: the safety shield in the action mask: none (default), start (an RTJ "
                "with a free partition is always started first) or preempt (that, and an RTJ with preemption "
                "candidates always gets one) or risk (start, and preempt only when waiting for the earliest walltime-based "
                "completion would give the RTJ an estimated slowdown above 1.2)", choices=("none", "start", "preempt", "risk")),
    TrainOption(("--shield-theta",), "rtmix dagger: --shield risk's bound on the RTJ's estimated slowdown "
                "(default 1.2)", kind="float>0"),
    TrainOption(("--defer-weight",), "rtmix dagger: defer an RTJ's preemption while every candidate has a victim whose "
                "end is worth waiting for: the slowdown the preemption would add to the victims ending first >= W x "
                "what waiting adds to the RTJ's (RtMixSpec.defer_weight, docs/rl.md; default off; the shipped model's 7.5)",
                kind="float>=0"),
    TrainOption(("--conserve",), "rtmix dagger: work-conserving rule in the action mask: waiting is illegal while a BJ "
                "start is legal and at least this share of the nodes is free (0..1; default: off)", kind="float[0,1]"),
    TrainOption(("--horizon-features",), "rtmix dagger: six more features per observation row saying when the machine "
                "frees up without a preemption (walltime-based; RtMixSpec.horizon_features, docs/rl.md; default off); "
                "a curriculum keeps its init model's", kind="flag"),
)
_ROLLOUT = (
    TrainOption(("--rollout-curriculum",), "rtmix rollout: a curriculum folder whose data-0.npz .. data-R.npz hold the "
                "Mira-like week states the model keeps (distilled to its own choices; required)"),
    TrainOption(("--rollout-weeks-rounds",), "rtmix rollout: R, the last curriculum round whose week states are used "
                "(required)", kind="int>=0"),
    TrainOption(("--rollout-episodes",), "rtmix rollout: Table-3 instances labelled by rollouts (default "
                f"{ROLLOUT_DEFAULTS['rollout_episodes']})", kind="int>=1"),
    TrainOption(("--rollout-seed",), "rtmix rollout: the first generator seed of those instances (default "
                f"{ROLLOUT_DEFAULTS['rollout_seed']}; within 210000..259999)", kind="int"),
    TrainOption(("--violation-cost",), "rtmix rollout: taken off the value of an episode whose RTJ mean ends above "
                f"theta (default {ROLLOUT_DEFAULTS['violation_cost']:g})", kind="float>=0"),
    TrainOption(("--rollout-penalty",), "rtmix rollout: the rollout value's weight of the RTJ mean's excess over theta "
                f"(value = -BJ mean - PENALTY * (RTJ mean - theta)+ - violation cost; default "
                f"{ROLLOUT_DEFAULTS['rollout_penalty']:g}, the environment's)", kind="float>=0"),
    TrainOption(("--rollout-futures",), "rtmix rollout: K > 0 values each action by its mean over K futures drawn from "
                "the generator given the observed past (non-anticipative labels; about K times slower); 0 (default) "
                "by the instance's own future (clairvoyant labels)", kind="int>=0"),
    TrainOption(("--rollout-repeat",), "rtmix rollout: how many times the Table-3 labels are repeated beside the "
                f"week states in the fit (default {ROLLOUT_DEFAULTS['rollout_repeat']})", kind="int>=1"),
    TrainOption(("--rollout-labels",), "rtmix rollout: fit the labels of an earlier run's model-rollout.npz instead of "
                "rolling out again (the rollout options are then that run's); FILE,FILE,...: their labels together"),
    TrainOption(("--rollout-actor",), "rtmix rollout: the network fitted: same (default: --init-from's own), context "
                "(a new kernel that scores each action beside the first blocked BJ's and RTJ's rows) or "
                "context-from-base (that network started as --init-from's kernel exactly)",
                choices=ROLLOUT_ACTORS),
    TrainOption(("--rollout-hidden",), "rtmix rollout: hidden layer sizes of the context network, comma-separated "
                f"(default {','.join(map(str, CONTEXT_HIDDEN))})"),
    TrainOption(("--rollout-workers",), "rtmix rollout: processes sharing the rollout episodes (the same labels for "
                "any count; default 1)", kind="int>=1"),
)
_CURRICULUM = (
    TrainOption(("--curriculum-rounds",), "rtmix: run the curriculum instead of cloning + PPO: round 0 follows the "
                "teacher, rounds 1..R follow the previous round's model (DAgger); from --init-from (default: the "
                "shipped rtmix); the same command resumes", kind="int"),
    TrainOption(("--curriculum-weeks",), "rtmix curriculum: generated Mira-like weeks (10 %% RTJs) per machine and "
                f"round (default {CURRICULUM_DEFAULTS['curriculum_weeks']})", kind="int"),
    TrainOption(("--curriculum-machines",), "rtmix curriculum: comma-separated machines of the weeks: mira, "
                f"mira:BLOCKS or a partition XML (default {CURRICULUM_DEFAULTS['curriculum_machines']})"),
    TrainOption(("--small-episodes",), "rtmix curriculum: Table-3 instances labelled by the initial model (default "
                f"{CURRICULUM_DEFAULTS['small_episodes']})", kind="int"),
    TrainOption(("--curriculum-order",), "rtmix curriculum: the window order of its environments and models "
                "(default backfill): backfill or auto (backfill only in a pass where more BJs wait than the window shows; "
                "a Table-3 instance stays in the submit order) or auto:N (more than N BJs) or load[:N] (more jobs running "
                "or waiting than the window, or N) or submit"),
    TrainOption(("--curriculum-priority",), "rtmix curriculum: the batch order of the WCJS teacher (its priority) "
                "and of the backfill window of the environments and written models (default: the init model's, wfp2 "
                "for models before the option), one of heuristics.priorities (e.g. sjf)"),
    TrainOption(("--curriculum-backfill",), "rtmix curriculum: the backfilling of the WCJS teacher's batch pass and "
                "of the environments' and written models' backfill window (default: the init model's, ff for models "
                "before the option): none, easy, ff, bf, sjf or rlscheduler (heuristics.backfill)"),
    TrainOption(("--curriculum-rt-wake",), "rtmix curriculum: environments and written models ask for a scheduling "
                "point when a waiting RTJ crosses WCJS's threshold, as WCJS does (RtMixSpec.rt_wake; default: the init "
                "model's, off for models before the option)", kind="flag"),
    TrainOption(("--curriculum-refit-window",), "rtmix curriculum: environments and written models order the backfill "
                "window by the batch pass planned again after an RT start in the pass (RtMixSpec.refit_window; default: "
                "the init model's, off for models before the option)", kind="flag"),
    TrainOption(("--curriculum-low-rt-batch",), "rtmix curriculum: environments and written models put the RTJs below "
                "WCJS's threshold into the backfill window's batch pass, started where it places them, as WCJS's "
                "low-priority queue (RtMixSpec.low_rt_batch; default: the init model's, off for models before the option)",
                kind="flag"),
    TrainOption(("--small-repeat",), "rtmix curriculum: weight of those instances in cloning, as repeats (default "
                f"{CURRICULUM_DEFAULTS['small_repeat']})", kind="int"),
)
GROUPS = (("rtmix (RTJ/BJ mixes on Mira, taught by an expert; docs/rl.md)", _RTMIX),
          ("rtmix DAgger (the default recipe; docs/rl.md)", _DAGGER),
          ("rtmix rollout (--recipe rollout: policy improvement by rollouts; docs/rl.md)", _ROLLOUT),
          ("rtmix curriculum (Table-3 instances to Mira-like weeks; docs/rl.md)", _CURRICULUM))
OPTIONS = _RTMIX + _DAGGER + _ROLLOUT + _CURRICULUM
# --dagger-rounds, --dagger-episodes, --beta0, --beta-decay and --bc-epochs are rl train's shared options
# (rtsched.cli.rl, with the split window's DAgger); their rtmix defaults are DAGGER_DEFAULTS and DEFAULTS.
USES = ("teacher", "init_from", "dagger_rounds", "dagger_episodes", "beta0", "beta_decay", "bc_epochs")
_GENERATED = "it trains on generated Mira instances with its own reward and network"
WHY_NOT = {name: _GENERATED for name in ("trace", "goal", "backfill", "seq_len", "start_range", "minibatch")}
WHY_NOT.update({name: "its PPO fine-tuning runs in this process" for name in ("workers", "backend", "address",
                                                                              "rollout")})
SCORE_LABEL = "reward"
