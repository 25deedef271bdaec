"""Expert actions for the ``rtmix`` agent: an optimal offline plan replayed through ``RtMixEnv``.

The plan is a schedule (``rtsched.schedule.Schedule``: the segments an exact solve returns, see
``milp.solve``); this module never solves anything itself (``rtsched.experiments.rtmix`` solves and
calls it).  At each decision point of the environment the *expert* chooses, from the legal actions:

1. a visible job the plan has started by now (its first part, or the second part of a split BJ,
   is due): the earliest plan start first, then the widest, then the lowest id;
2. else, when the plan preempts a BJ now (the end of its first part's run, before its checkpoint
   write), the candidate action whose victims include that BJ (for the target RTJ);
3. else wait (the plan starts nothing now); if waiting is not legal, the first legal action
   (a forced divergence, counted).

Because the environment places jobs with the machine's best-fit rule, not on the plan's
partitions, and only RTJs may preempt (only WCJS-eligible candidates), some plans have no online
equivalent.  Each episode is classified (``ExpertEpisode.outcome``):

* ``exact`` — the environment's schedule has the plan's segments (partitions included);
* ``same_times`` — every job starts and completes at the plan's times (other partitions): the same
  slowdowns, hence the same objective;
* ``partition`` — a due job found no free partition because earlier best-fit placements differ
  from the plan's (a plan choice the partition rule cannot express);
* ``preemption`` — the plan preempts a BJ in a way the environment cannot: not for a waiting RTJ
  (offline BJs may displace BJs), or on a partition that is not among the K eligible candidates;
* ``unexplained`` — every job starts at its plan time, yet the schedules differ (kept as its own class).

A divergence at a point where the environment did not ask (only one action was legal) is classified
afterwards from the earliest first start that differs from the plan.
* ``forced`` — a job started before its plan start because waiting was illegal: the plan keeps the
  machine idle for a job that has not arrived yet (it knows the future), while an online scheduler
  with nothing running must start something (the environment and the policy never wait on an idle
  machine).

The imitation data keeps the expert's actions up to an episode's first divergence only (after it
the expert is no longer following an optimal plan); ``docs/rl.md`` reports the shares.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rtsched.schedule import CKPT, RESTART, RUN, Schedule


@dataclass(frozen=True)
class PlannedJob:
    """A job's plan: first start, partition, the preemption time (end of the first run segment
    when split, else None), the restart (start of the second part) and the completion (s)."""

    start: int
    partition: int
    preempt_at: int | None
    restart: int | None
    end: int


def plan_of(schedule: Schedule) -> dict[int, PlannedJob]:
    out = {}
    for jid, segs in schedule.by_job().items():
        segs = sorted(segs, key=lambda s: s.start)
        ck = [s for s in segs if s.kind == CKPT]
        rs = [s for s in segs if s.kind == RESTART]
        pre = ck[0].start if ck else None
        restart = rs[0].start if rs else None
        out[jid] = PlannedJob(segs[0].start, segs[0].partition, pre, restart, max(s.end for s in segs))
    return out


@dataclass
class ExpertEpisode:
    """One plan replayed: the decision points' observations, masks and expert actions, whether
    each was taken while the episode still followed the plan, and the outcome class."""

    obs: list[np.ndarray] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    on_plan: list[bool] = field(default_factory=list)
    outcome: str = "exact"
    reasons: list[str] = field(default_factory=list)
    bj_sd_mean: float = 0.0
    rtj_sd_mean: float = 0.0

    @property
    def reproduced(self) -> bool:
        return self.outcome in ("exact", "same_times")


def _due(plan: PlannedJob, js, now: int) -> bool:
    if js.saved > 0 or js.n_preemptions > 0:  # the second part of a split BJ
        return plan.restart is not None and plan.restart <= now
    return plan.start <= now


def expert_action(env, plan: dict[int, PlannedJob]) -> tuple[int, str | None]:
    """(the expert's action, the divergence it reveals or None) at the environment's decision point."""
    ps = env.pass_
    spec = ps.spec
    mask = ps.mask()
    now = ps.now
    vis = ps.visible()
    due = [(plan[js.info.id].start, -js.info.nodes, js.info.id, i) for i, js in enumerate(vis)
           if mask[i] and _due(plan[js.info.id], js, now)]
    if due:
        return min(due)[3], None
    reason = None
    preempted_now = [jid for jid, pj in plan.items() if pj.preempt_at == now and jid in ps.view.running]
    if preempted_now:
        for c, (_p, victims, _cost) in enumerate(ps.candidates()):
            if any(v.info.id in preempted_now for v in victims):
                return spec.window + c, None
        reason = "preemption"
    blocked_due = [js for i, js in enumerate(vis) if not mask[i] and _due(plan[js.info.id], js, now)]
    if reason is None and blocked_due:
        # a job with a planned preemption by now has started, hence arrived: the view knows it
        missed = [jid for jid, pj in plan.items()
                  if pj.preempt_at is not None and pj.preempt_at <= now and ps.view.job(jid).n_preemptions == 0]
        reason = "preemption" if missed else "partition"
    if mask[spec.wait_action]:
        return spec.wait_action, reason
    return int(np.flatnonzero(mask)[0]), reason or "forced"


def expert_episode(env, jobs, schedule: Schedule) -> ExpertEpisode:
    """Replay ``schedule`` (a plan for ``jobs``) through ``env`` with the expert (module docstring)."""
    plan = plan_of(schedule)
    ep = ExpertEpisode()
    obs, info = env.reset(options={"jobs": list(jobs)})
    done = env._done
    following = True
    while not done:
        a, why = expert_action(env, plan)
        if why is not None and following:
            following = False
            ep.reasons.append(why)
        ep.obs.append(obs)
        ep.masks.append(info["action_mask"].copy())
        ep.actions.append(a)
        ep.on_plan.append(following)
        obs, _r, done, _t, info = env.step(a)
    ep.bj_sd_mean, ep.rtj_sd_mean = env.means()
    res = env.result()
    reasons = list(ep.reasons)
    if not reasons:  # a divergence at a point that was no agent step (only one action was legal)
        reasons = _first_divergence(res, plan)
    ep.outcome = classify(res.schedule, schedule, reasons)
    return ep


def _first_divergence(res, plan: dict[int, PlannedJob]) -> list[str]:
    """The class of the earliest first start that differs from the plan: ``forced`` when the job
    started early (the environment does not wait on an idle machine), else ``preemption`` when
    the plan had preempted a BJ by then and ``partition`` when not."""
    diffs = sorted((min(o.first_start, plan[o.job.id].start), o.job.id, o) for o in res.outcomes
                   if o.first_start != plan[o.job.id].start)
    if not diffs:
        return []
    t, _jid, o = diffs[0]
    if o.first_start < plan[o.job.id].start:
        return ["forced"]
    preempted = any(pj.preempt_at is not None and pj.preempt_at <= t for pj in plan.values())
    return ["preemption" if preempted else "partition"]


def _key(s):
    return (s.job_id, s.start, s.end, s.kind, s.partition, s.progress_from, s.progress_to)


def classify(got: Schedule, planned: Schedule, reasons: list[str]) -> str:
    """``exact``, ``same_times`` or the first divergence's class (module docstring)."""
    if sorted(map(_key, got)) == sorted(map(_key, planned)):
        return "exact"

    def times(s: Schedule):
        return {jid: (min(g.start for g in segs), max(g.end for g in segs)) for jid, segs in s.by_job().items()}

    if times(got) == times(planned):
        return "same_times"
    return reasons[0] if reasons else "unexplained"


__all__ = ["PlannedJob", "plan_of", "ExpertEpisode", "expert_action", "expert_episode", "classify", "RUN"]
