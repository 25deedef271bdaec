"""Teachers for the ``rtmix`` agent on instances too large to solve: a heuristic, or a trained model.

On a Mira-like week (96 blocks or the real partition file, hundreds of jobs, 10 % RTJs) no optimal
plan exists to imitate, so the curriculum (``rtsched.rl.rtmix.train.train_curriculum``) labels the
agent's decision points with a teacher instead:

* **a core policy** (``"wcjs"`` — WCJS under the simulation's checkpoint model, the seed-002
  heuristic the issue compares the agent with — or any ``make_policy`` name): at the first decision
  point of each scheduling pass the teacher decides the whole pass on that pass's view (its
  ``decide(view)``); its decisions become rtmix actions in order — a ``Start`` of a visible job is
  that job's slot; ``Preempt``\\ s followed by the ``Start`` of the target RTJ are the candidate
  whose partition is the teacher's (else the candidate sharing a victim with it, else the cheapest,
  which WCJS's own choice is when the candidate lists agree).  A decision with no rtmix action (a
  job outside the visible window, a partition the best-fit rule placed differently) is skipped;
  when none is left the teacher waits.  The episode follows the teacher's mapped actions, so the
  data are the states a teacher-like agent visits;
* **a trained rtmix model** (``RtMixPolicy``): its greedy action at each decision point of its own
  episodes — self-distillation, which keeps what a model does on small instances while it learns
  the large ones.

Neither reads an actual runtime (the teacher sees the same ``SimView`` a policy sees).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rtsched.sim.decisions import Preempt, Start


@dataclass
class TeacherEpisode:
    """One episode's (observation, mask, action) triples and how the teacher's decisions mapped."""

    obs: list = field(default_factory=list)
    masks: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    goods: list = field(default_factory=list)  # every action the teacher's pass makes right here (a set label)
    mapped: int = 0  # teacher decisions taken as rtmix actions
    skipped: int = 0  # teacher decisions with no rtmix action at their pass
    bj_sd_mean: float | None = None
    rtj_sd_mean: float | None = None


def _entries(decisions) -> list[tuple]:
    """The teacher's pass as ("start", job), ("free", job, partition, victims) and — preemptions
    whose job starts in a later pass, as ``replan``'s JIT preemptions (the job starts when the write
    ends) — ("preempt", None, None, victims) entries."""
    out: list[tuple] = []
    victims: list[int] = []
    for d in decisions:
        if isinstance(d, Preempt):
            victims.append(d.job_id)
        elif isinstance(d, Start):
            out.append(("free", d.job_id, d.alloc, frozenset(victims)) if victims else ("start", d.job_id))
            victims = []
    if victims:
        out.append(("preempt", None, None, frozenset(victims)))
    return out


def _pick(cands: list, partition, victims: frozenset, first: int, default: int | None) -> int | None:
    """The slot among ``cands`` (from slot ``first``) with the teacher's partition, else one sharing a
    victim with it, else ``default`` (a slot offset; None: no slot)."""
    pick = next((c for c, (p, _v, _cost) in enumerate(cands) if p == partition), None)
    if pick is None:
        pick = next((c for c, (_p, vs, _cost) in enumerate(cands) if victims & {v.info.id for v in vs}), default)
    return None if pick is None else first + pick


def _map(ps, entries: list[tuple]) -> tuple[int | None, int]:
    """(the action of the first teacher entry expressible now, index of that entry) or (None, -1)."""
    spec = ps.spec
    mask = ps.mask()
    vis = ps.visible()
    slot = {js.info.id: i for i, js in enumerate(vis)}
    target = ps.target()
    bj_target = ps.bj_target() if spec.bj_candidates else None
    for k, e in enumerate(entries):
        a = _map_entry(ps, e, mask, slot, target, bj_target)
        if a is not None and mask[a]:  # a shield (``RtMixSpec.shield``) may make an expressible entry illegal now
            return a, k
    return None, -1


def _map_entry(ps, e: tuple, mask: np.ndarray, slot: dict, target, bj_target) -> int | None:
    """The action expressing teacher entry ``e`` now, or None."""
    spec = ps.spec
    if e[0] == "preempt":  # for whom the teacher does not say yet: the RTJ first, then the BJ target
        a = _pick(ps.candidates(), None, e[3], spec.window, None) if target is not None else None
        if a is None and bj_target is not None:
            a = _pick(ps.bj_candidates(), None, e[3], spec.bj_first, None)
        return a
    i = slot.get(e[1])
    if i is not None and mask[i]:  # a start (or an RTJ that fits after all)
        return i
    if e[0] == "free" and target is not None and target.info.id == e[1]:
        cands = ps.candidates()
        return _pick(cands, e[2], e[3], spec.window, 0) if cands else None
    if e[0] == "free" and bj_target is not None and bj_target.info.id == e[1] and ps.bj_candidates():
        return _pick(ps.bj_candidates(), e[2], e[3], spec.bj_first, 0)
    return None


def _good(ps, entries: list[tuple], a: int) -> np.ndarray:
    """The actions as good as the label ``a``: within a pass the teacher's starts may come in any
    order (each is one of its decisions for this pass), so every expressible entry is a right answer."""
    good = np.zeros(ps.spec.n_actions, dtype=bool)
    good[a] = True
    for k in range(len(entries)):
        b, _ = _map(ps, entries[k:k + 1])
        if b is not None:
            good[b] = True
    return good


def policy_teacher_episode(env, jobs, teacher, learner=None, *, beta: float = 0.0, rng=None,
                           every_pass: bool = False) -> TeacherEpisode:
    """Run ``env`` on ``jobs`` labelled by core policy ``teacher`` (module docstring).  Without
    ``learner`` the episode follows the teacher's actions; with a learner (anything with
    ``fast.logits(obs, mask)``: an ``RtMixPolicy``, a ``LearnerActor``) it follows the learner's
    greedy actions — or, with probability ``beta`` at each state (``rng``: a NumPy generator), the
    teacher's — and records the teacher's label at each state (DAgger: the data cover the states the
    learner reaches by its own mistakes).  ``every_pass``: the teacher decides on every scheduling
    pass of the run, the forced ones included (a stateful teacher such as ``replan`` must see every
    completion, as it does as a policy), not only on those where the agent has a choice."""
    from rtsched.rl.cloning import greedy_action, mixed_action

    ep = TeacherEpisode()
    cur: dict = {"pass": None, "entries": []}

    def on_pass(ps) -> None:
        cur["pass"] = ps
        cur["entries"] = _entries(teacher.decide(ps.view))

    wait = env.spec_.wait_action
    env.pass_observer = on_pass if every_pass else None
    try:
        env.reset(options={"jobs": jobs})
        while not env._done:
            ps = env.pass_
            if ps is not cur["pass"]:
                on_pass(ps)
            entries = cur["entries"]
            a, k = _map(ps, entries)
            mask = ps.mask()
            obs = ps.observe()
            good = None if a is None else _good(ps, entries, a)
            if a is None:
                a = wait if mask[wait] else int(np.flatnonzero(mask)[0])
                good = np.zeros(len(mask), dtype=bool)
                good[a] = True
            else:
                ep.mapped += 1
            taken = mixed_action(a, None if learner is None else (lambda: greedy_action(learner, obs, mask)),
                                 beta, rng)
            if taken == a and k >= 0:  # entries before it stay pending: they may become visible in this pass
                entries.pop(k)
            elif taken < env.spec_.window:  # the learner started another job: drop its entry, if any
                jid = ps.visible()[taken].info.id
                cur["entries"] = [e for e in entries if e[1] != jid]
            if taken == wait:
                ep.skipped += len(cur["entries"])
                cur["entries"] = []
            ep.obs.append(obs)
            ep.masks.append(mask.copy())
            ep.actions.append(int(a))
            ep.goods.append(good)
            env.step(taken)
    finally:
        env.pass_observer = None
    ep.bj_sd_mean, ep.rtj_sd_mean = env.means()
    return ep


def model_teacher_episode(env, jobs, policy) -> TeacherEpisode:
    """Run ``env`` on ``jobs`` with a trained ``RtMixPolicy``'s greedy actions (self-distillation)."""
    ep = TeacherEpisode()
    obs, info = env.reset(options={"jobs": jobs})
    done = env._done
    while not done:
        mask = info["action_mask"]
        a = int(np.argmax(policy.fast.logits(obs, mask)))
        ep.obs.append(obs)
        ep.masks.append(mask.copy())
        ep.actions.append(a)
        good = np.zeros(len(mask), dtype=bool)
        good[a] = True
        ep.goods.append(good)
        ep.mapped += 1
        obs, _r, done, _t, info = env.step(a)
    ep.bj_sd_mean, ep.rtj_sd_mean = env.means()
    return ep


def stack(episodes: list[TeacherEpisode]) -> dict:
    """The episodes' triples as the ``{"obs", "mask", "act", "good"}`` arrays ``behaviour_clone`` takes."""
    obs = [o for ep in episodes for o in ep.obs]
    masks = [m for ep in episodes for m in ep.masks]
    acts = [a for ep in episodes for a in ep.actions]
    goods = [g for ep in episodes for g in ep.goods]
    return {"obs": np.asarray(obs, dtype=np.float32).reshape(len(obs), -1),
            "mask": np.asarray(masks, dtype=bool).reshape(len(masks), -1),
            "act": np.asarray(acts, dtype=np.int64),
            "good": np.asarray(goods, dtype=bool).reshape(len(goods), -1)}


__all__ = ["TeacherEpisode", "model_teacher_episode", "policy_teacher_episode", "stack"]
