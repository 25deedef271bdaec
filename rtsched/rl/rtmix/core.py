"""The ``rtmix`` agent's decisions, shared by its environment and its trained policy.

One scheduling pass of the core (a ``SimView``) becomes a sequence of agent choices, each among
``window + candidates + 1`` masked actions (docs/rl.md, "RtMix"):

* ``0 .. window-1`` — start the i-th visible waiting job on the partition the machine's rule picks
  (best fit, ``MachineState.find``); legal iff one of its size is free in this pass's plan.  The
  visible jobs are the first ``window`` of the queue in the spec's ``order``: RTJs first by submit
  time (ties by id), then the BJs — ``"submit"``: by submit time; ``"backfill"``: the BJ at the
  head of Cobalt's wfp2 order (``heuristics.priorities``, the order WCJS serves; another batch order
  with ``RtMixSpec.batch_priority``, and "wfp2" below means that order), then the BJs that
  the wfp2 + first-fit batch pass (``heuristics.batch.schedule_batch``, WCJS's low-priority pass,
  on the view that pass sees: ``heuristics.realtime.batch_pass_view``) would start now, in the
  order it starts them (wfp2 for first-fit; shortest first behind the head with
  ``batch_backfill="sjf"``), then the rest in wfp2 order, so that on a long queue (a Mira week) the
  jobs a backfilling scheduler would start are visible, in the order it starts them (with
  ``refit_window`` the window is ordered so again after a re-plan inside the pass); ``"auto"``:
  ``"backfill"`` in a pass where more BJs wait than
  the window shows, else ``"submit"`` (every waiting BJ is visible then; a Table-3 instance, 5 BJs,
  is always in the submit order, a long Mira queue mostly in the backfill order); ``"auto:N"``: the
  same with N in place of the window (``"auto:0"`` is ``"backfill"``); ``"load"`` / ``"load:N"``:
  ``"backfill"`` in a pass where more jobs are running or waiting (RTJs and BJs) than the window
  (or N), else ``"submit"`` — on a machine holding few jobs no stream of later jobs can starve the
  wfp2 head, so every fitting BJ may start; on a busy machine the head keeps its reservation (a
  Table-3 instance has 7 jobs in all, so it is always in the submit order; a Mira week nearly
  always in the backfill order, even where few BJs wait).  Under ``"backfill"`` a BJ start is legal only for the BJs
  that pass would start (never one that delays the head's reservation: EASY's rule,
  ``heuristics.backfill``), on the partition it chose while that is free (else best fit); after an
  RTJ starts in the pass the batch pass is planned again around it, as WCJS's is.  RTJ starts,
  candidates and waiting are the same under both orders;
* ``window .. window+candidates-1`` — for the *target* RTJ (the first visible RTJ with no free
  partition), free candidate partition c by preempting the checkpointable BJs on it and start the
  RTJ there.  The candidates are exactly those WCJS may choose (``heuristics.realtime.wcjs_eligible``:
  never a partition conflicting with an RTJ or a non-checkpointable job, criteria 2 and 3 of
  Alg. 2), the ``candidates`` cheapest by WCJS's weighted cost (ties: lowest index);
* ``window + candidates .. window+candidates+bj_candidates-1`` (only with ``bj_candidates`` > 0:
  off by default, so that the agents trained before it keep their action space) — for the *BJ
  target* (the first visible BJ with no free partition), free candidate partition c by preempting
  the running checkpointable BJs on it and start the target there: the online form of the
  offline model's BJ split (issue 23).  Offered only where the checkpoint model keeps the work
  (JIT, SYS, APP; never NO, where a preempted job restarts from zero).  A candidate is a partition
  of the target's size conflicting with no job that must not be preempted (RTJs, non-checkpointable
  jobs, jobs started in this pass) and whose victims have never been preempted (the offline model
  splits a job at most once; it also rules out ping-pong between two BJs); the ``bj_candidates``
  cheapest by WCJS's weighted cost (ties: lowest index).  The overheads are the simulator's: under
  JIT each victim writes its checkpoint now and the target starts when the slowest write ends (the
  hand-over of RTJ preemptions); under SYS/APP the victims lose the work since their last checkpoint
  and the target starts now; a victim pays a read when it restarts (DESIGN.md);
* the last action (``window + candidates + bj_candidates``) — wait: end the pass (the core moves to
  its next event).  Legal iff some job holds resources or was started in this pass (otherwise
  nothing would ever happen).

With ``shield`` (``RtMixSpec.shield``, issue 23; "none" by default, the agents trained before it) a
safety rule is part of the action mask, so it acts identically in training and in evaluation:
``"start"`` — when a visible RTJ has a free partition, only RTJ starts are legal (no BJ start, no
preemption, no wait); ``"preempt"`` — that, and when the target RTJ has no free partition but
preemption candidates, only those candidates are legal (the agent still picks which partition);
``"risk"`` — ``"start"``, and the candidates are compulsory only when waiting for the earliest
walltime-based completion that frees a partition of the RTJ's size would give it an estimated
slowdown above ``shield_theta`` (default 1.2; otherwise the agent may still wait for that completion).
Measured cause (docs/benchmarks.md, issue 23 fifth session): the θ-1.6 DAgger model's θ violations
that ``replan`` does not have came from RTJs it left waiting beside a free partition (starting a BJ
first) or beside offered candidates.

With ``defer_weight`` (``RtMixSpec.defer_weight``, issue 23, fourteenth session; None by default, the agents
trained before it) the target RTJ's preemptions are deferred while waiting for a victim to end is worth it: a
candidate is deferrable if, for some walltime-based end e of its victims after now (earliest first),
Σ (W_rt + h + r_v) / W_v over its victims ending by e ≥ ``defer_weight`` × (sd_e − sd_now), where W are walltimes
(s), h the JIT hand-over of all its victims (their slowest write; 0 under SYS/APP), r_v v's restart read, and
sd_now / sd_e the RTJ's estimated slowdown if it starts after preempting now / at e (after the hand-over of the
victims still running then).  The left side is what the preemption adds to the slowdowns of the victims that
would have ended by e (each waits out the RTJ and the overheads), the right side what waiting adds to the RTJ's.
If every candidate is deferrable, none is legal and the shield does not force them: the RTJ waits, and the pass at
the next completion decides again; otherwise all stay legal.  No deferral reaches past an estimated slowdown of
``DEFER_MAX_SLOWDOWN`` or a wait of ``DEFER_MAX_WAIT`` s since the RTJ's submission.  Measured cause
(docs/benchmarks.md, issue 23 fourteenth session): the largest BJ losses against WCJS-JIT on Table-3 instances
were short BJs preempted for a whole-machine RTJ minutes before they would have ended (a 600 s BJ's slowdown 14
where waiting 400 s kept the RTJ within θ).  Masking only the deferrable candidates let the agent preempt a
costlier one; forcing "wait" where the shield applies idled a Mira-like week's machine (utilization 0.645 against
0.694); waiting when ANY candidate was deferrable made long RTJs on a Mira-like week wait hours (the criterion grows
with the square of the RTJ's walltime, and one of four candidates often has a victim near its end); and without
the bounds a whole-machine RTJ on the shipped Mira-like week waited 32 h (deferred while other RTJs took the
machine).

With ``conserve`` (``RtMixSpec.conserve``, a share of the machine's nodes; None by default) waiting
is illegal while a BJ start is legal and at least that share of the nodes is free in the pass's
plan (a work-conserving rule, also in the mask).  Measured cause: the DAgger models trained on
Table-3 instances alone wait beside legal BJ starts on a half-empty Mira (utilization 0.06 on a
Mira-like week), where their teacher ``replan`` waits in 6 % of such states.

With ``low_rt_batch`` (``RtMixSpec.low_rt_batch``, issue 23, ninth session; off by default) the backfill
window's batch pass is WCJS's low-priority pass: its order holds the RTJs at or below WCJS's threshold
(``heuristics.wcjs.is_high_priority`` at the pass's time) beside the BJs, as WCJS's batch queue does
(left out while a high-priority RTJ waits, WCJS's ``blocking="rt-only"``); such an RTJ that the pass
would start starts on the partition the pass chose (while free, else best fit) and is part of that
pass (no re-plan).  Which RTJ starts are legal is unchanged.  Measured cause (docs/benchmarks.md, issue
23 ninth session): the SJF-backfilling WCJS teacher replayed through the actions placed such an RTJ
best-fit where WCJS's backfill scan had put it elsewhere, and the BJ WCJS started beside it no longer fit.

``RtMixPass`` keeps the pass's plan (a copy of the occupancy, the ``Holders`` of preemptable BJs)
and the decisions taken so far; the environment applies them when the agent waits, the policy
returns them from ``decide``.  Neither ever reads an actual runtime.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

import numpy as np

from heuristics.backfill import BACKFILLS
from heuristics.batch import schedule_batch
from heuristics.priorities import get_priority
from heuristics.realtime import Holders, _bits, batch_pass_view, wcjs_eligible
from heuristics.wcjs import (WcjsConfig, estimated_slowdown, is_high_priority, next_rt_threshold_crossing,
                             preemption_cost, preemption_cost_terms, preemption_penalty, slowdown_after_preemption)
from rtsched.checkpoint import CheckpointKind, CheckpointModel
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Preempt, Start, WakeAt
from rtsched.sim.state import RUNNING, JobState

# The batch order WCJS serves by default (heuristics.realtime.RealTimePolicy) and the backfilling of its
# batch pass; ``RtMixSpec.batch_priority`` / ``batch_backfill`` may name another of ``heuristics.priorities``
# / ``heuristics.backfill.BACKFILLS`` (a WCJS teacher run with those settings).
BATCH_PRIORITY = "wfp2"
BATCH_BACKFILL = "ff"
# Those ``RtMixSpec`` fields and the WCJS option of the same meaning (``heuristics.realtime.RealTimePolicy``):
# a curriculum gives both to its environments and its teacher (``--curriculum-priority``, ``--curriculum-backfill``).
BATCH_SETTINGS = {"batch_priority": "priority", "batch_backfill": "backfill"}
# The ``RtMixSpec`` settings that make the pass follow WCJS's (``rt_wake``, ``refit_window``, ``low_rt_batch``); a
# curriculum may set them for its environments and models (``--curriculum-rt-wake``, ``--curriculum-refit-window``,
# ``--curriculum-low-rt-batch``).
PASS_SETTINGS = ("rt_wake", "refit_window", "low_rt_batch")

# Normalisation constants (documented in docs/rl.md).
TIME_SCALE = 14400.0  # s: walltimes, waits and checkpoint ages are divided by 4 h
IO_SCALE = 1000.0  # s: checkpoint write/read times
OBS_HIGH = 100.0  # every feature is clipped to [0, 100]
SD_CLIP = 10.0  # slowdown-like features are clipped to [0, 10] then divided by 10

FEATURES: tuple[str, ...] = (
    # slot type
    "is_job", "is_candidate", "is_wait",
    # job slots
    "job_rt", "job_nodes", "job_walltime", "job_wait", "job_sd_so_far", "job_saved", "job_fits",
    "job_ckpt_cost", "job_preempted",
    # candidate slots (the WCJS weighted-cost terms and what the preemption costs)
    "cand_victims", "cand_blocked_nodes", "cand_cost_nodes", "cand_near_completion", "cand_age_factor",
    "cand_sd_factor", "cand_cost", "cand_since_ckpt", "cand_ckpt_cost", "cand_sd_after", "cand_lost",
    # global (every slot)
    "free_nodes", "rt_waiting", "bj_waiting", "target_sd_so_far", "target_exists",
)
N_FEATURES = len(FEATURES)
# Features of the BJ-preemption slots, appended to every row only when the spec has such slots
# (``RtMixSpec.n_features``), so that the earlier agents' observations stay as they were.
BJ_FEATURES: tuple[str, ...] = ("cand_for_bj", "bj_target_sd_so_far")
# Features of when the machine frees up without a preemption (walltime-based, as ``_at_risk``), appended after
# ``BJ_FEATURES`` only with ``RtMixSpec.horizon_features`` (issue 23, eleventh session: on replan's DAgger labels the
# 64-32-16 kernel chose replan's RTJ preemptions on 40 % and its BJ preemptions on 23 % of held-out states, mostly
# waiting instead, and a 4× wider kernel did no better — so the rows were given how long waiting would take; with
# them the held-out accuracy stayed where it was, 0.884 against 0.886, docs/rl.md "Horizon features"; kept as an option):
# ``cand_free_in`` (candidate rows) the time until the candidate's partition frees without preempting (its
# victims' latest walltime-based end − now, / 4 h); ``target_sd_if_wait`` (every row) the target RTJ's estimated
# slowdown − 1 if it waits for the earliest walltime-based free partition of its size (clipped, / 10);
# ``bj_target_walltime`` and ``bj_target_sd_if_wait`` (BJ-preemption rows) the BJ target's requested time / 4 h and
# the same slowdown for it; ``job_free_in`` (rows of visible jobs that cannot start now) the wait for a partition of
# its size / 4 h; ``job_past_shadow`` (rows of jobs that can start now) how far past the first blocked visible job's
# earliest walltime-based start its own walltime-based end lies (EASY's shadow time, / 4 h; 0 without a blocked job).
HORIZON_FEATURES: tuple[str, ...] = ("cand_free_in", "target_sd_if_wait", "bj_target_walltime",
                                     "bj_target_sd_if_wait", "job_free_in", "job_past_shadow")
# Bounds of ``RtMixSpec.defer_weight``'s deferral (module docstring): an RTJ is never deferred to a start later than
# these allow — estimated slowdown (walltime as runtime) and wait since its submission, s.  Measured cause
# (docs/benchmarks.md, issue 23 fourteenth session): without them a whole-machine RTJ on the shipped Mira-like week
# (walltime 4 h, runtime 19 min) was deferred while other RTJs started and waited 32 h; with them its wait is bounded
# and the Table-3 validation BJ mean moved from 2.106 to 2.112.
DEFER_MAX_SLOWDOWN = 2.0
DEFER_MAX_WAIT = 7200
# The rules of the ``context`` actor (``rtsched.rl.nets``, arch "context"; issue 23, thirteenth session): every action
# row is scored beside the row of the first visible BJ whose start is not legal in this pass (the job a BJ preemption
# would serve) and that of the first such RTJ (``context_rules``).  Measured cause (docs/benchmarks.md, issue 23
# thirteenth session): most lookahead labels the kernel missed were BJ preemptions, whose candidate rows say what the
# victims lose but not what the waiting job gains.
CONTEXT_JOBS = ("bj", "rt")


def context_rules(window: int) -> list:
    """The ``context`` actor's rules for a spec with ``window`` visible jobs (``CONTEXT_JOBS``)."""
    return [[window, [[_F["is_job"], 1], [_F["job_rt"], int(kind == "rt")], [_F["job_fits"], 0]]]
            for kind in CONTEXT_JOBS]


ORDERS = ("submit", "backfill", "auto", "load")  # the visible window's BJ order (module docstring)
# Which partitions an RTJ's candidate slots may free (module docstring): WCJS's (Alg. 2's criteria)
# or any of its size that conflicts with no job that must not be preempted (``replan``'s rule).
ELIGIBILITIES = ("wcjs", "any")
# The safety shield on RTJs (``RtMixSpec.shield``; module docstring): "none" (the agents before it),
# "start" (an RTJ with a free partition is always started before anything else), "preempt" (that, and
# an RTJ with no free partition but a preemption candidate is always given one).
# "risk": "start", and the candidates are compulsory only when waiting for the earliest walltime-based
# completion that frees a partition of the RTJ's size would give it an estimated slowdown above
# ``RtMixSpec.shield_theta`` (default 1.2, the compare default θ).
SHIELDS = ("none", "start", "preempt", "risk")
_F = {name: i for i, name in enumerate(FEATURES)}


@dataclass(frozen=True)
class RtMixSpec:
    """Shape of the agent's action and observation: ``window`` visible jobs, ``candidates``
    preemption candidates, one wait action; ``checkpoint`` is the model the eligibility test and
    the features assume (None: the simulation's); ``wcjs`` the WCJS configuration whose
    eligibility rules and cost terms are used; ``bj_candidates`` the slots preempting BJs for a
    waiting BJ (0: none, the action space of the agents trained before them); ``eligibility`` the
    partitions an RTJ's candidate slots may free (``ELIGIBILITIES``); ``wake`` whether a pass that
    leaves a job waiting asks for a scheduling point when a running BJ becomes splittable
    (``split_wake``); ``batch_priority`` and ``batch_backfill`` the batch order and the backfilling of
    the backfill window's batch pass (WCJS's wfp2 and first-fit by default; issue 23, seventh session:
    WCJS with another batch pass is the curriculum's stronger teacher on Mira-like weeks);
    ``rt_wake`` and ``refit_window`` make the pass follow WCJS's (issue 23, eighth session: without
    them the WCJS teacher replayed through the actions drifts from WCJS as a policy) — a pass that
    leaves an RTJ waiting asks for a scheduling point when its estimated slowdown crosses WCJS's
    threshold (``rt_threshold_wake``), and after an in-pass re-plan of the batch pass the backfill
    window is ordered by the new plan; ``low_rt_batch`` (ninth session) puts the RTJs below WCJS's
    threshold into the backfill window's batch pass, as WCJS's low-priority queue (module docstring).
    ``horizon_features`` appends ``HORIZON_FEATURES`` to every observation row (eleventh session).
    ``defer_weight`` defers RTJ preemptions whose victims end soon (module docstring; fourteenth session).
    The defaults are the action space of the agents trained before the options."""

    window: int = 8
    candidates: int = 4
    wcjs: WcjsConfig = field(default_factory=WcjsConfig)
    order: str = "submit"
    bj_candidates: int = 0
    eligibility: str = "wcjs"
    wake: bool = False
    shield: str = "none"
    conserve: float | None = None
    shield_theta: float = 1.2
    batch_priority: str = BATCH_PRIORITY
    batch_backfill: str = BATCH_BACKFILL
    rt_wake: bool = False
    refit_window: bool = False
    low_rt_batch: bool = False
    horizon_features: bool = False
    defer_weight: float | None = None

    def __post_init__(self) -> None:
        get_priority(self.batch_priority)  # an unknown name fails here (ValueError naming the choices)
        if self.batch_backfill not in BACKFILLS:
            raise ValueError(f"unknown backfill {self.batch_backfill!r}; choose from {', '.join(BACKFILLS)}")
        if self.order not in ORDERS and _order_bound(self.order) is None:
            raise ValueError(f"unknown rtmix window order {self.order!r}; choose from {', '.join(ORDERS)}")
        if self.eligibility not in ELIGIBILITIES:
            raise ValueError(f"unknown rtmix eligibility {self.eligibility!r}; choose from {', '.join(ELIGIBILITIES)}")
        if self.conserve is not None and not 0.0 <= self.conserve <= 1.0:
            raise ValueError(f"rtmix conserve must be a share of the nodes in [0, 1], got {self.conserve}")
        if self.shield not in SHIELDS:
            raise ValueError(f"unknown rtmix shield {self.shield!r}; choose from {', '.join(SHIELDS)}")
        if self.bj_candidates < 0:
            raise ValueError(f"rtmix bj_candidates must be >= 0, got {self.bj_candidates}")
        if self.defer_weight is not None and not (math.isfinite(self.defer_weight) and self.defer_weight >= 0.0):
            raise ValueError(f"rtmix defer_weight must be a finite number >= 0, got {self.defer_weight}")
        if not (math.isfinite(self.shield_theta) and self.shield_theta > 0.0):
            raise ValueError(f"rtmix shield_theta must be a finite number > 0 (a slowdown bound), "
                             f"got {self.shield_theta}")

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], wcjs=None) -> "RtMixSpec":
        """The spec of stored settings (a model file's ``env``, an environment's options): each field read
        with its type (``SETTING_TYPES``); an absent or None one takes its default, the action space of
        the agents trained before the option (so every earlier model file loads as it was trained)."""
        values = {k: kind(settings[k]) for k, kind in SETTING_TYPES.items() if settings.get(k) is not None}
        return cls(wcjs=WcjsConfig.coerce(wcjs), **values)

    def optional_settings(self) -> dict[str, Any]:
        """The ``OPTIONAL_SETTINGS`` that differ from their defaults: what a model file records of them
        (``RtMixEnv.config``), so the files of the agents before an option stay as they were written."""
        defaults = _setting_defaults()
        return {k: getattr(self, k) for k in OPTIONAL_SETTINGS if getattr(self, k) != defaults[k]}

    @property
    def backfill_above(self) -> float:
        """The backfill order applies in a pass where more than this many BJs wait (``"auto"``) or
        jobs are running or waiting (``"load"``) (module docstring)."""
        if self.order == "backfill":
            return 0
        if self.order == "submit":
            return float("inf")
        return self.window if self.order in ("auto", "load") else _order_bound(self.order)

    @property
    def counts_load(self) -> bool:
        """Whether ``backfill_above`` bounds the jobs in the system (``"load"``) rather than the waiting BJs."""
        return self.order.partition(":")[0] == "load"

    @property
    def n_actions(self) -> int:
        return self.window + self.candidates + self.bj_candidates + 1

    @property
    def bj_first(self) -> int:
        """The first BJ-preemption slot."""
        return self.window + self.candidates

    @property
    def wait_action(self) -> int:
        return self.window + self.candidates + self.bj_candidates

    @property
    def n_features(self) -> int:
        """Features per action row: ``FEATURES``, then ``BJ_FEATURES`` when there are BJ-preemption slots, then
        ``HORIZON_FEATURES`` with ``horizon_features``."""
        return self.horizon_first + (len(HORIZON_FEATURES) if self.horizon_features else 0)

    @property
    def horizon_first(self) -> int:
        """The column of the first of ``HORIZON_FEATURES``."""
        return N_FEATURES + (len(BJ_FEATURES) if self.bj_candidates else 0)


# The stored settings of a spec (every field but ``wcjs``, which is the run's WCJS configuration) and the
# type each is read with; a model file always records the first three and the others (OPTIONAL_SETTINGS)
# only when they differ from their defaults (``RtMixSpec.optional_settings``).
SETTING_TYPES = {"window": int, "candidates": int, "order": str, "bj_candidates": int, "eligibility": str,
                 "wake": bool, "shield": str, "conserve": float, "shield_theta": float, "batch_priority": str,
                 "batch_backfill": str, "rt_wake": bool, "refit_window": bool, "low_rt_batch": bool,
                 "horizon_features": bool, "defer_weight": float}
OPTIONAL_SETTINGS = tuple(SETTING_TYPES)[3:]
# The settings that only narrow the action mask (the observation and the actions stay as the network learned them),
# so a trained model's may be changed afterwards: ``rtsched rl export --set NAME=VALUE`` (``changed_settings``).
MASK_SETTINGS = ("shield", "shield_theta", "conserve", "defer_weight")


def changed_settings(env: Mapping[str, Any], pairs: list[str]) -> dict[str, Any]:
    """The ``MASK_SETTINGS`` that ``pairs`` (``NAME=VALUE``; ``none`` clears an optional one) set, read with their
    types and checked by building the spec they give with ``env`` (a model file's settings); ValueError naming the
    pair otherwise."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, eq, text = pair.partition("=")
        name = name.strip()
        if not eq or name not in MASK_SETTINGS:
            raise ValueError(f"{pair!r}: give NAME=VALUE with NAME one of {', '.join(MASK_SETTINGS)} (the settings "
                             "that only narrow the action mask)")
        if text.strip().lower() == "none" and _setting_defaults()[name] is None:  # an optional rule, cleared
            out[name] = None
            continue
        try:
            out[name] = SETTING_TYPES[name](text.strip())
        except ValueError:
            raise ValueError(f"{pair!r}: {name} takes a {SETTING_TYPES[name].__name__}, got {text!r}") from None
    try:
        RtMixSpec.from_settings({**env, **out})
    except ValueError as exc:
        raise ValueError(f"{', '.join(pairs)}: {exc}") from None
    return out


def _setting_defaults() -> dict[str, Any]:
    return {f.name: f.default for f in fields(RtMixSpec) if f.name in SETTING_TYPES}


def _order_bound(order: str) -> int | None:
    """N of an ``"auto:N"`` or ``"load:N"`` order (N ≥ 0), else None."""
    head, _, n = order.partition(":")
    return int(n) if head in ("auto", "load") and n.isdigit() else None


def _backfill_window(order: list[JobState], would: dict[int, int]) -> list[JobState]:
    """The BJs of the backfill order: the head of the batch ``order``, then the jobs the batch pass
    starts (``would``), in the order it starts them (in-order starts, then its backfilling's scan: the
    batch order for first-fit, shortest first for SJF backfilling, so that a teacher running that pass
    starts them slot after slot), then the rest in batch order."""
    if not order:
        return []
    by_id = {js.info.id: js for js in order}
    fit = [by_id[j] for j in would if j != order[0].info.id and j in by_id]
    return order[:1] + fit + [js for js in order[1:] if js.info.id not in would]


def _batch_jobs(order: list[JobState]) -> list[JobState]:
    """The BJs of a batch order (without the low-priority RTJs ``RtMixSpec.low_rt_batch`` adds to it)."""
    return [js for js in order if js.info.kind != "rt"]


def _sd_so_far(js: JobState, now: int) -> float:
    """(now − submit) / walltime, clipped and scaled to [0, 1]."""
    return min(max((now - js.info.submit) / js.info.walltime, 0.0), SD_CLIP) / SD_CLIP


class RtMixPass:
    """One scheduling pass as a sequence of agent actions (module docstring)."""

    def __init__(self, view: SimView, spec: RtMixSpec, model: CheckpointModel | None = None) -> None:
        self.view = view
        self.spec = spec
        self.model = model or view.checkpoint
        self.now = view.now
        machine = view.machine
        self.machine = machine
        self.total = float(machine.total_nodes)
        self.plan = view.state.copy()
        rts = sorted((js for js in view.queue if js.info.kind == "rt"), key=lambda s: (s.info.submit, s.info.id))
        bjs = [js for js in view.queue if js.info.kind != "rt"]
        # "backfill" order: BJ id -> the partition the wfp2 + first-fit pass chose (its starts go
        # there); only those BJs may start
        self.backfill_alloc: dict[int, int] | None = None
        self.backfill_only = False
        self._rt_started: list = []  # this pass's RT starts and preemptions, as WCJS's batch pass sees them
        self._leaving: dict[int, int] = {}
        self._pass_ends: list[tuple[int, int]] = []  # (partition, walltime-based end) of this pass's starts
        # ids of the RTJs at or below WCJS's threshold, which the backfill order's batch pass plans
        # (``spec.low_rt_batch``); the split is the pass's, as WCJS's (``heuristics.realtime.WcjsPolicy.split``)
        self._low_rt: set[int] = set()
        if bjs and (len(view.running) + len(view.queue) if spec.counts_load else len(bjs)) > spec.backfill_above:
            low_rts = [js for js in rts if not is_high_priority(js, self.now, spec.wcjs)] if spec.low_rt_batch else []
            self._low_rt = {js.info.id for js in low_rts}
            order = get_priority(spec.batch_priority).order(bjs + low_rts, self.now, machine.total_nodes)
            self._batch_order = order  # the BJs and low-priority RTJs in the batch order
            would = self._batch_starts(order, rts)
            self.backfill_alloc = would
            self.backfill_only = True
            bjs = _backfill_window(_batch_jobs(order), would)
        if not self.backfill_only:
            bjs.sort(key=lambda s: (s.info.submit, s.info.id))
        self.queue: list[JobState] = rts + bjs
        self.holders = Holders(view, [])
        self.decisions: list[Decision] = []
        self.n_started = 0
        self._cache = None

    def _batch_starts(self, order: list[JobState], waiting_rts: list[JobState]) -> dict[int, int]:
        """Job id → partition of the starts of the wfp2 + first-fit batch pass over ``order`` on this
        pass's plan, seen as WCJS's low-priority pass sees it (``heuristics.realtime.batch_pass_view``).
        With ``spec.low_rt_batch`` the order holds the low-priority RTJs too, left out while a
        high-priority one of ``waiting_rts`` still waits (WCJS's ``blocking="rt-only"``)."""
        if self._low_rt and self.spec.wcjs.blocking == "rt-only" and any(
                js.info.id not in self._low_rt for js in waiting_rts):
            order = _batch_jobs(order)
        jit = self.model.kind is CheckpointKind.JIT
        pv = batch_pass_view(self.view, self._rt_started, self._leaving, jit)
        return {d.job_id: d.alloc for d in schedule_batch(pv, order, self.spec.batch_backfill, state=self.plan.copy())
                if isinstance(d, Start)}

    # ------------------------------------------------------------------------------ actions
    def visible(self) -> list[JobState]:
        return self.queue[:self.spec.window]

    def _state(self):
        """(visible jobs, target RTJ, candidates [(partition, victims, cost)], mask)."""
        if self._cache is not None:
            return self._cache
        spec = self.spec
        vis = self.visible()
        mask = np.zeros(spec.n_actions, dtype=bool)
        plan = self.plan
        target = None
        safe = self.backfill_alloc if self.backfill_only else None
        for i, js in enumerate(vis):
            if plan.find(js.info.nodes) is not None:
                mask[i] = safe is None or js.info.kind == "rt" or js.info.id in safe
            elif target is None and js.info.kind == "rt":
                target = js
        cands: list[tuple[int, list[JobState], float]] = []
        if target is not None and self.machine.partitioned:
            if spec.eligibility == "any":
                elig = self.machine.candidate_mask(target.info.nodes) & ~self.holders.hard
            else:
                elig = wcjs_eligible(self.view, target, self.holders, self.model, spec.wcjs)
            if elig:
                now = self.now
                cfg = spec.wcjs
                conflict = self.holders.conflict
                victims = self.holders.victims
                scored = []
                for p in _bits(elig):
                    vs = [v for q in _bits(conflict[p] & self.holders.busy) for v in victims[q]]
                    scored.append((sum(preemption_cost(v, now, cfg) for v in vs), p, vs))
                scored.sort(key=lambda t: (t[0], t[1]))
                cands = [(p, vs, c) for c, p, vs in scored[:spec.candidates]]
                for c in range(len(cands)):
                    mask[spec.window + c] = True
        self._bj = (None, [])
        if spec.bj_candidates and self.machine.partitioned and self.model.kind is not CheckpointKind.NO:
            self._bj = self._bj_state(vis, mask)
        mask[spec.wait_action] = bool(self.view.running) or self.n_started > 0
        if spec.conserve is not None and mask[spec.wait_action] and self.plan.free_nodes >= spec.conserve * self.total \
                and any(mask[i] for i, js in enumerate(vis) if js.info.kind != "rt"):
            mask[spec.wait_action] = False  # work-conserving: a BJ start is legal on a machine this empty
        # defer_weight: while waiting for a victim is worth it on every candidate, the RTJ waits (module docstring)
        defer = spec.defer_weight is not None and target is not None and bool(cands) and all(
            self._deferred(target, vs) for _p, vs, _c in cands)
        if defer:
            mask[spec.window:spec.window + len(cands)] = False
        if spec.shield != "none":
            self._shield(vis, target, [] if defer else cands, mask)
        self._cache = (vis, target, cands, mask)
        return self._cache

    def _shield(self, vis: list[JobState], target: JobState | None, cands: list, mask: np.ndarray) -> None:
        """Restrict ``mask`` to the RTJ actions the shield makes compulsory (module docstring): the
        starts of RTJs with a free partition; else, under ``"preempt"``, the target RTJ's candidates
        (``cands``: none while the RTJ's preemption is deferred)."""
        spec = self.spec
        rt_starts = [i for i, js in enumerate(vis) if js.info.kind == "rt" and mask[i]]
        if rt_starts:
            mask[:] = False
            mask[rt_starts] = True
        elif target is not None and cands and (spec.shield == "preempt"
                                               or (spec.shield == "risk" and self._at_risk(target))):
            mask[:] = False
            mask[spec.window:spec.window + len(cands)] = True

    def _deferred(self, target: JobState, victims: list[JobState]) -> bool:
        """Whether waiting for one of ``victims`` to end is worth more than preempting them for RTJ ``target``
        now (``spec.defer_weight``, module docstring): for some walltime-based victim end e within the bounds
        (``DEFER_MAX_SLOWDOWN``, ``DEFER_MAX_WAIT``), Σ (W_rt + h + r_v) / W_v over the victims ending by e ≥
        ``defer_weight`` × the RTJ's estimated-slowdown increase from waiting until e."""
        now, io = self.now, self.view.io
        jit = self.model.kind is CheckpointKind.JIT

        def hand_over(vs: list[JobState]) -> int:  # s from the preemption until the RTJ may start (JIT writes)
            return max((io.write_seconds(v.alloc_nodes) for v in vs), default=0) if jit else 0

        info = target.info
        wall = info.walltime

        def sd_if_start(t: int) -> float:  # the RTJ's estimated slowdown if it starts at t (walltime as runtime)
            return (t - info.submit + wall) / wall

        h = hand_over(victims)
        sd_now = sd_if_start(now + h)
        for end in sorted({v.expected_end for v in victims if v.expected_end > now}):
            still = [v for v in victims if v.expected_end > end]
            start = end + hand_over(still)
            sd_then = sd_if_start(start)
            if sd_then > DEFER_MAX_SLOWDOWN or start - info.submit > DEFER_MAX_WAIT:
                break  # never deferred past these bounds (module docstring: an RTJ starved otherwise)
            gain = sum((wall + h + io.read_seconds(v.alloc_nodes)) / v.info.walltime
                       for v in victims if v.expected_end <= end)
            if gain >= self.spec.defer_weight * (sd_then - sd_now):
                return True
        return False

    def _at_risk(self, target: JobState) -> bool:
        """Whether waiting for the earliest walltime-based completion that frees a partition of the
        target RTJ's size gives it an estimated slowdown above ``spec.shield_theta`` (walltimes only)."""
        return self._sd_if_wait(target) > self.spec.shield_theta

    def _free_times(self) -> dict[int, int]:
        """Partition → the walltime-based time it is free of every running job and of this pass's starts
        (now for a free one); only the partitions some job blocks are listed."""
        conflict = self.machine.conflict_mask
        busy: dict[int, int] = {}
        ends = [(conflict[js.alloc], js.expected_end) for js in self.view.running.values()]
        ends += [(conflict[p], end) for p, end in self._pass_ends]
        for mask, end in ends:
            for q in _bits(mask):
                if busy.get(q, self.now) < end:
                    busy[q] = end
        return busy

    def _free_at(self, nodes: int, busy: dict[int, int] | None = None) -> int | None:
        """The earliest walltime-based time a partition for ``nodes`` is free (None: the machine has none)."""
        busy = self._free_times() if busy is None else busy
        times = [busy.get(p, self.now) for p in _bits(self.machine.candidate_mask(nodes))]
        return max(min(times), self.now) if times else None

    def _sd_if_wait(self, js: JobState, busy: dict[int, int] | None = None) -> float:
        """``js``'s estimated slowdown if it starts when ``_free_at`` frees a partition of its size (inf: never)."""
        free_at = self._free_at(js.info.nodes, busy)
        if free_at is None:
            return float("inf")
        info = js.info
        return (free_at - info.submit + info.walltime) / info.walltime

    def _bj_state(self, vis: list[JobState], mask: np.ndarray) -> tuple[JobState | None, list]:
        """(BJ target, its candidates [(partition, victims, cost)]) and their mask bits (module docstring)."""
        plan = self.plan
        target = next((js for js in vis if js.info.kind != "rt" and plan.find(js.info.nodes) is None), None)
        if target is None:
            return None, []
        holders = self.holders
        cands = self.machine.candidate_mask(target.info.nodes) & ~holders.hard
        # never a second preemption of a job (the offline model splits a job at most once)
        cands &= ~holders.mask_where(lambda q, jobs: any(v.n_preemptions > 0 for v in jobs))
        if not cands:
            return target, []
        now, cfg = self.now, self.spec.wcjs
        conflict, victims = holders.conflict, holders.victims
        scored = []
        for p in _bits(cands):
            vs = [v for q in _bits(conflict[p] & holders.busy) for v in victims[q]]
            if vs:  # a free partition of its size would have let it start
                scored.append((sum(preemption_cost(v, now, cfg) for v in vs), p, vs))
        scored.sort(key=lambda t: (t[0], t[1]))
        out = [(p, vs, c) for c, p, vs in scored[:self.spec.bj_candidates]]
        for c in range(len(out)):
            mask[self.spec.bj_first + c] = True
        return target, out

    def mask(self) -> np.ndarray:
        return self._state()[3]

    def target(self) -> JobState | None:
        return self._state()[1]

    def candidates(self) -> list[tuple[int, list[JobState], float]]:
        """(partition, victims, WCJS weighted cost) of each candidate action, in slot order."""
        return self._state()[2]

    def bj_target(self) -> JobState | None:
        """The waiting BJ the BJ-preemption slots free a partition for (None: no such slot is legal)."""
        self._state()
        return self._bj[0]

    def bj_candidates(self) -> list[tuple[int, list[JobState], float]]:
        """(partition, victims, WCJS weighted cost) of each BJ-preemption action, in slot order."""
        self._state()
        return self._bj[1]

    def split_wake(self) -> int | None:
        """With ``spec.wake``, when a job still waits after this pass: the earliest time after now at
        which a running checkpointable BJ that was never preempted (nor in this pass) has done
        ⌈W/10⌉ s of work (W its walltime) — the earliest point at which the offline model (and
        ``replan``) may split it — else None.  Only what a scheduler knows (start, walltime)."""
        if not self.spec.wake or not self.queue or self.model.kind is CheckpointKind.NO:
            return None
        now = self.now
        best = None
        for js in self.view.running.values():
            info = js.info
            if (info.kind == "rt" or not info.checkpointable or js.n_preemptions > 0 or js.status != RUNNING
                    or info.id in self._leaving):
                continue
            t = js.run_start + (info.walltime + 9) // 10
            if t > now and (best is None or t < best):
                best = t
        return best

    def rt_threshold_wake(self) -> int | None:
        """With ``spec.rt_wake``: the earliest time after now at which an RTJ still waiting after this
        pass crosses WCJS's threshold (its estimated slowdown exceeds ``WcjsConfig.rt_threshold``, the
        point at which WCJS makes it high-priority and may preempt for it; ``heuristics.realtime``'s
        ``wake_on_threshold``), else None.  Walltimes only."""
        return next_rt_threshold_crossing(self.queue, self.now, self.spec.wcjs) if self.spec.rt_wake else None

    def final_decisions(self) -> list[Decision]:
        """The pass's decisions when the agent waits: its starts and preemptions, then one wake-up at
        the earlier of ``split_wake`` and ``rt_threshold_wake`` (if any)."""
        wakes = [t for t in (self.split_wake(), self.rt_threshold_wake()) if t is not None]
        return self.decisions + [WakeAt(min(wakes))] if wakes else self.decisions

    def has_choice(self) -> bool:
        """Whether any action other than waiting is legal."""
        m = self.mask()
        return bool(m[:self.spec.wait_action].any())

    def apply(self, action: int) -> None:
        """Carry out a legal non-wait action in the plan and record its decisions."""
        vis, target, cands, mask = self._state()
        spec = self.spec
        if not (0 <= action < spec.wait_action) or not mask[action]:
            raise ValueError(f"action {action} is not a legal start or preemption now")
        plan = self.plan
        holders = self.holders
        conflict = self.machine.conflict_mask if self.machine.partitioned else None
        if action < spec.window:
            js = vis[action]
            p = None if self.backfill_alloc is None else self.backfill_alloc.get(js.info.id)
            if p is None or not plan.is_free(p, js.info.nodes):
                p = plan.find(js.info.nodes)
            plan.allocate(p, self.machine.allocated_nodes(js.info.nodes))
            self.decisions.append(Start(js.info.id, p))
            if conflict is not None:
                holders.hard |= conflict[p]  # never preempt a job started in this very pass
            start_at = self.now
        else:
            if action < spec.bj_first:
                p, _vs, _cost = cands[action - spec.window]
                js = target
            else:
                bj_target, bj_cands = self._bj
                p, _vs, _cost = bj_cands[action - spec.bj_first]
                js = bj_target
            n = self.machine.allocated_nodes(js.info.nodes)
            jit = self.model.kind is CheckpointKind.JIT
            start_at = self.now
            for v in holders.take(p):
                self.decisions.append(Preempt(v.info.id))
                if jit:
                    done = self.now + self.view.io.write_seconds(v.alloc_nodes)
                    self._leaving[v.info.id] = done
                    start_at = max(start_at, done)
                else:
                    self._leaving[v.info.id] = -1
                    plan.release(v.alloc, v.alloc_nodes)
            if plan.is_free(p, js.info.nodes):
                plan.allocate(p, n)
            else:  # JIT hand-over: bound now on hardware still being written
                plan.force_allocate(p, n)
            self.decisions.append(Start(js.info.id, p))
        self._pass_ends.append((p, start_at + js.info.walltime))
        self.queue.remove(js)
        self.n_started += 1
        self._cache = None
        if self.backfill_alloc is not None and (js.info.kind == "rt" or action >= spec.bj_first):
            # the batch pass after an RT start (or a BJ start by preemption), as WCJS's: the job busy
            # until start + walltime
            self._rt_started.append((js, p, start_at))
            if action < spec.window and self.backfill_alloc.get(js.info.id) == p:
                return  # a low-priority RTJ started where the batch pass planned it: part of that pass
            waiting = set(map(id, self.queue))
            order = [b for b in self._batch_order if id(b) in waiting]
            rts = [q for q in self.queue if q.info.kind == "rt"]
            self.backfill_alloc = self._batch_starts(order, rts)
            if spec.refit_window:  # the window as the new plan orders it (RtMixSpec.refit_window)
                self.queue = rts + _backfill_window(_batch_jobs(order), self.backfill_alloc)

    # ------------------------------------------------------------------------------ observation
    def observe(self) -> np.ndarray:
        """The observation: ``n_actions × spec.n_features`` float32, flattened (docs/rl.md)."""
        vis, target, cands, mask = self._state()
        spec = self.spec
        now = self.now
        io = self.view.io
        total = self.total
        obs = np.zeros((spec.n_actions, spec.n_features), dtype=np.float32)
        w = spec.window
        alloc_nodes = self.machine.allocated_nodes
        for i, js in enumerate(vis):
            info = js.info
            row = obs[i]
            row[0] = 1.0
            row[3] = 1.0 if info.kind == "rt" else 0.0
            row[4] = alloc_nodes(info.nodes) / total
            row[5] = info.walltime / TIME_SCALE
            row[6] = (now - info.submit) / TIME_SCALE
            row[7] = _sd_so_far(js, now)
            row[8] = js.saved / info.walltime
            row[9] = 1.0 if mask[i] else 0.0
            row[10] = io.write_seconds(alloc_nodes(info.nodes)) / IO_SCALE
            row[11] = min(js.n_preemptions, 4) / 4.0
        self._candidate_rows(obs, w, cands)
        if spec.bj_candidates:
            bj_target, bj_cands = self._bj
            first = spec.bj_first
            self._candidate_rows(obs, first, bj_cands)
            obs[first:first + len(bj_cands), N_FEATURES] = 1.0
            if bj_target is not None:
                obs[first:first + len(bj_cands), N_FEATURES + 1] = _sd_so_far(bj_target, now)
        obs[spec.wait_action, 2] = 1.0
        n_rt = sum(1 for js in self.queue if js.info.kind == "rt")
        obs[:, 23] = self.plan.free_nodes / total
        obs[:, 24] = min(n_rt, w) / w
        obs[:, 25] = min(len(self.queue) - n_rt, w) / w
        if target is not None:
            obs[:, 26] = min(max(estimated_slowdown(target, now) - 1.0, 0.0), SD_CLIP) / SD_CLIP
            obs[:, 27] = 1.0
        if spec.horizon_features:
            self._horizon_rows(obs, vis, target, cands)
        np.clip(obs, 0.0, OBS_HIGH, out=obs)
        return obs.reshape(-1)

    def _horizon_rows(self, obs: np.ndarray, vis: list[JobState], target: JobState | None, cands: list) -> None:
        """The ``HORIZON_FEATURES`` columns (their comment above): walltime-based, as the shield's risk test."""
        spec = self.spec
        now = self.now
        h = spec.horizon_first
        busy = self._free_times()

        def sd_feature(js: JobState) -> float:
            return min(max(self._sd_if_wait(js, busy) - 1.0, 0.0), SD_CLIP) / SD_CLIP

        def free_in(vs: list[JobState]) -> float:
            return max([0] + [v.expected_end - now for v in vs]) / TIME_SCALE

        for c, (_p, vs, _cost) in enumerate(cands):
            obs[spec.window + c, h] = free_in(vs)
        if target is not None:
            obs[:, h + 1] = sd_feature(target)
        if spec.bj_candidates:
            bj_target, bj_cands = self._bj
            first = spec.bj_first
            for c, (_p, vs, _cost) in enumerate(bj_cands):
                obs[first + c, h] = free_in(vs)
            if bj_target is not None and bj_cands:
                obs[first:first + len(bj_cands), h + 2] = bj_target.info.walltime / TIME_SCALE
                obs[first:first + len(bj_cands), h + 3] = sd_feature(bj_target)
        fits = [self.plan.find(js.info.nodes) is not None for js in vis]
        blocked = next((js for js, f in zip(vis, fits) if not f), None)
        shadow = None if blocked is None else self._free_at(blocked.info.nodes, busy)
        for i, js in enumerate(vis):
            if not fits[i]:
                free_at = self._free_at(js.info.nodes, busy)
                obs[i, h + 4] = OBS_HIGH if free_at is None else (free_at - now) / TIME_SCALE
            elif shadow is not None:
                obs[i, h + 5] = max(now + js.info.walltime - shadow, 0) / TIME_SCALE

    def _candidate_rows(self, obs: np.ndarray, first: int, cands: list) -> None:
        """Rows ``first ..`` of ``obs``: the preemption candidates' features (WCJS's cost terms, the cost)."""
        now = self.now
        io = self.view.io
        total = self.total
        cfg = self.spec.wcjs
        model = self.model
        for c, (p, vs, cost) in enumerate(cands):
            row = obs[first + c]
            row[1] = 1.0
            if not vs:
                continue
            terms = [preemption_cost_terms(v, now, cfg) for v in vs]
            row[12] = len(vs) / 4.0
            row[13] = sum(v.alloc_nodes for v in vs) / total
            row[14] = sum(t[0] for t in terms) / total
            row[15] = max(t[1] for t in terms) / max(cfg.near_completion_factor, 1.0)
            row[16] = max(t[2] for t in terms) / 5.0
            row[17] = max(t[3] for t in terms) / 5.0
            row[18] = cost / (total * 5.0)
            ages = [now - (v.last_ckpt_time if v.last_ckpt_time > v.run_start else v.run_start) for v in vs]
            row[19] = max(ages) / TIME_SCALE
            pens = [preemption_penalty(v, now, model, io) for v in vs]
            row[20] = max(pen[2] for pen in pens) / IO_SCALE
            row[21] = min(max(max(slowdown_after_preemption(v, now, model, io) for v in vs), 0.0), SD_CLIP) / SD_CLIP
            row[22] = sum(pen[1] for pen in pens) / TIME_SCALE


__all__ = ["BJ_FEATURES", "CONTEXT_JOBS", "DEFER_MAX_SLOWDOWN", "DEFER_MAX_WAIT", "MASK_SETTINGS", "changed_settings", "context_rules", "HORIZON_FEATURES", "ELIGIBILITIES", "SHIELDS", "FEATURES", "N_FEATURES", "ORDERS", "OPTIONAL_SETTINGS", "PASS_SETTINGS", "SETTING_TYPES", "RtMixPass", "RtMixSpec", "TIME_SCALE", "IO_SCALE", "SD_CLIP", "OBS_HIGH"]
