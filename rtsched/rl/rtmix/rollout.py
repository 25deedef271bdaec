"""Rollout labels: one step of policy improvement of an ``rtmix`` model on Table-3 instances (issue 23,
eleventh session).

At every decision state of an episode (a state with more than one legal action: ``RtMixEnv`` takes the
forced ones itself) each legal action is tried on a copy of the environment and the base model plays the
rest of the episode greedily; the action's value is the episode's reward (``episode_reward``: −BJ mean −
penalty · max(0, RTJ mean − θ)).  The state is labelled with every action whose value is within ``tol`` of the
best (``good``, set labels as DAgger's) and the episode goes on with the best one (the base model's own choice
where it is among the best), so the states are those of the improved policy.  ``violation_cost`` takes a fixed
amount off an episode whose RTJ mean ends above θ: the acceptance counts such instances, the reward only
weighs the excess.  The improved policy is at least as good as the base model on every episode, by
construction.

The rollouts run the simulator, which knows the jobs' runtimes and the later arrivals; the network that is
fitted to the labels sees only its observation (walltimes, the queue), so what it learns is the action that is
best on average over the futures the generator draws given what it sees — the labels are privileged, the policy
is not.  With ``futures`` = K > 0 (twelfth session) the labels are not privileged either: each action is valued
by its mean over K futures drawn from the generator given the observed past (``sampled_states``).

Generator seeds: ``ROLLOUT_SEEDS`` (inside the PPO training range, above the seeds the committed DAgger runs and
curricula used, 200,000–201,151; never a validation or acceptance seed); episode i uses the default walltimes
for even i and walltime = runtime for odd i (``rtsched.rl.rtmix.dagger.episode_jobs``), as the acceptance sets
mix them.
"""
from __future__ import annotations

import concurrent.futures as cf
import copy
import json
import os
import time
from typing import Callable

import numpy as np

from rtsched.errors import OptionError
from rtsched.files import atomic_write_stream
from rtsched.generators.smallmix import redraw_unseen
from rtsched.rl.cloning import LearnerActor, greedy_action
from rtsched.rl.modelfiles import load_model, read_model_file
from rtsched.rl.nets import CONTEXT_ACTOR, growth_problem
from rtsched.rl.rtmix.core import BATCH_SETTINGS, PASS_SETTINGS, context_rules
from rtsched.rl.rtmix.options import CONTEXT_HIDDEN, ROLLOUT_ACTORS
from rtsched.rl.rtmix.dagger import episode_generator, episode_jobs
from rtsched.rl.rtmix.env import RtMixEnv
from rtsched.rl.rtmix.train import load_curriculum_data, model_slots, train_curriculum
from rtsched.sim.state import DONE, FUTURE

ROLLOUT_SEEDS = range(210_000, 260_000)
FUTURE_DRAWS = 7_919  # second word of the futures' seed sequence [instance seed, FUTURE_DRAWS]


def model_env(path: str, checkpoint: str = "jit", penalty: float | None = None) -> RtMixEnv:
    """A 16-block Table-3 environment with the settings model ``path`` was trained with (its window order
    and ``core.OPTIONAL_SETTINGS``), as the curriculum's Table-3 part builds it; ``penalty`` (default the
    environment's, 10) weighs the RTJ mean's excess over θ in the episode reward."""
    env = read_model_file(path)["env"]
    extra = {} if penalty is None else {"penalty": penalty}
    return RtMixEnv("mira:16", checkpoint, order=env.get("order", "submit"), validate=False, **model_slots(path),
                    **extra)


def _violation(env: RtMixEnv, info: dict, violation_cost: float) -> float:
    """``violation_cost`` if the finished episode's RTJ mean slowdown (``info``) ends above θ, else 0."""
    return violation_cost if info["rtj_sd_mean"] > env.theta + 1e-9 else 0.0


def _finish(env: RtMixEnv, obs: np.ndarray, info: dict, policy: Callable[[np.ndarray, np.ndarray], int],
            violation_cost: float) -> float:
    """The value still to come when ``policy`` plays ``env`` to its end from (obs, info): the rewards, less
    ``violation_cost`` if the episode's RTJ mean slowdown ends above θ."""
    total = 0.0
    done = env.finished
    while not done:
        obs, reward, term, trunc, info = env.step(policy(obs, info["action_mask"]))
        total += reward
        done = term or trunc
    return total - _violation(env, info, violation_cost)


def action_values(env: RtMixEnv, policy: Callable[[np.ndarray, np.ndarray], int], legal: np.ndarray,
                  violation_cost: float = 0.0) -> dict[int, float]:
    """Each legal action's value at ``env``'s current state: its reward plus the rest of the episode
    under ``policy`` (less ``violation_cost`` for an RTJ mean above θ), on a copy of the environment
    (``env`` is left as it was)."""
    values = {}
    for a in legal:
        trial = copy.deepcopy(env)
        obs, reward, _term, _trunc, info = trial.step(int(a))
        values[int(a)] = reward + _finish(trial, obs, info, policy, violation_cost)
    return values


def _blank_copy(env: RtMixEnv) -> RtMixEnv:
    """A copy of ``env`` without its episode (the replays' template: copied per draw, so kept small)."""
    held = env.sim, env.pass_, env.jobs, getattr(env, "workload", None)
    env.sim = env.pass_ = env.workload = None
    env.jobs = []
    try:
        return copy.deepcopy(env)
    finally:
        env.sim, env.pass_, env.jobs, env.workload = held


def sampled_states(env: RtMixEnv, template: RtMixEnv, jobs: list, history: list[tuple[np.ndarray, int]],
                   futures: int, rng: np.random.Generator, generator: dict, tries: int = 40) -> list[RtMixEnv]:
    """Up to ``futures`` environments in ``env``'s current state (time, observation, legal actions) whose
    unseen part — the runtimes of the jobs not finished, the jobs still to come — is drawn from the generator
    given what has been seen (``rtsched.generators.smallmix.redraw_unseen``): each draw is replayed from the
    start with the episode's ``history`` ((observation, action) of every agent step so far) on a copy of
    ``template`` and kept only if every observation along the way and the state reached are ``env``'s
    (rejection: the draw is then one the observed past allows); ``tries`` draws per sample at most."""
    sim = env.sim
    now = sim.now
    states = list(sim.by_id.values())
    finished = {st.id for st in states if st.status == DONE}
    above = {st.id: sim.work_done(st) for st in states if st.status not in (DONE, FUTURE)}
    here_obs, here_mask = env.pass_.observe(), env.action_masks()
    out: list[RtMixEnv] = []
    for _ in range(futures):
        for _try in range(tries):
            drawn = redraw_unseen(jobs, now, env.n_rt, rng, finished=finished, above=above, blocks=env.blocks,
                                  **generator)
            if drawn is None:
                continue
            trial = copy.deepcopy(template)
            obs, info = trial.reset(options={"jobs": drawn})
            same = True
            for seen_obs, act in history:
                if trial.finished or not np.array_equal(obs, seen_obs):
                    same = False
                    break
                obs, _r, _term, _trunc, info = trial.step(act)
            if (same and not trial.finished and trial.sim.now == now and np.array_equal(obs, here_obs)
                    and np.array_equal(info["action_mask"], here_mask)):
                out.append(trial)
                break
    return out


def improved_episode(env: RtMixEnv, jobs: list, policy: Callable[[np.ndarray, np.ndarray], int],
                     tol: float = 1e-9, violation_cost: float = 0.0, *, futures: int = 0,
                     generator: dict | None = None, rng: np.random.Generator | None = None) -> dict:
    """One episode of the improved policy (module docstring): its labelled decision states and rewards.
    ``futures`` > 0: each action's value is its mean over that many futures drawn given the observed past
    (``sampled_states``; the same draws for every action), not its value on the episode's own future;
    ``generator`` are the episode's generator settings, ``rng`` the draws' source."""
    template = _blank_copy(env) if futures > 0 else None
    obs, info = env.reset(options={"jobs": jobs})
    rows: dict[str, list] = {"obs": [], "mask": [], "act": [], "good": []}
    history: list[tuple[np.ndarray, int]] = []
    times: list[int] = []  # each labelled state's simulation time, s
    base = None  # the base model's own episode value
    total = 0.0
    changed = 0
    fallbacks = 0
    samples = 0
    done = env.finished
    while not done:
        mask = info["action_mask"]
        mine = policy(obs, mask)
        legal = np.flatnonzero(mask)
        if futures > 0:
            if base is None:
                base = action_values(env, policy, np.array([mine]), violation_cost)[mine]
            drawn = sampled_states(env, template, jobs, history, futures, rng, generator or {})
            samples += len(drawn)
            if drawn:
                per = [action_values(trial, policy, legal, violation_cost) for trial in drawn]
                values = {int(a): float(np.mean([v[int(a)] for v in per])) for a in legal}
            else:  # no draw reproduces the past (none in 78,552 draws on Table-3 instances): no improvement here —
                # the model's own action, not the episode's own future, which would anticipate
                fallbacks += 1
                values = {int(a): 0.0 if a == mine else -np.inf for a in legal}
        else:
            values = action_values(env, policy, legal, violation_cost)
            if base is None:  # its action's value at the first state is its episode's value
                base = values[mine]
        best = max(values.values())
        good = np.zeros(mask.shape, dtype=bool)
        good[[a for a, v in values.items() if v >= best - tol]] = True
        act = mine if good[mine] else max(values, key=values.get)
        changed += act != mine
        rows["obs"].append(obs)
        rows["mask"].append(mask.copy())
        rows["act"].append(act)
        rows["good"].append(good)
        history.append((obs.copy(), act))
        times.append(env.sim.now)
        obs, reward, term, trunc, info = env.step(act)
        total += reward
        done = term or trunc
    if base is not None:
        total -= _violation(env, info, violation_cost)
    return {**rows, "times": times, "base_reward": base, "reward": total if base is not None else None,
            "changed": changed, "samples": samples, "fallbacks": fallbacks}


_WORKER: dict = {}


def _worker_init(model: str, penalty: float | None, one_thread: bool = True) -> None:
    """Load ``model`` and its environment for ``_episode_task`` (a worker process takes one torch thread)."""
    if one_thread:
        import torch
        torch.set_num_threads(1)
    env = model_env(model, penalty=penalty)
    learner = LearnerActor(load_model(model).actor)
    _WORKER.update(env=env, policy=lambda obs, mask: greedy_action(learner, obs, mask))


def _episode_task(args: tuple) -> dict:
    seed, index, tol, violation_cost, futures = args
    env = _WORKER["env"]
    return improved_episode(env, episode_jobs(seed, index, env), _WORKER["policy"], tol, violation_cost,
                            futures=futures, generator=episode_generator(index, env),
                            rng=np.random.default_rng([seed, FUTURE_DRAWS]))


def rollout_labels(model: str, seeds: range, *, tol: float = 1e-9, violation_cost: float = 0.0,
                   penalty: float | None = None, futures: int = 0, workers: int = 1,
                   progress: Callable[[int, int], None] | None = None) -> tuple[dict, dict]:
    """The improved policy's labelled states over the Table-3 instances of ``seeds`` (module docstring),
    with model file ``model`` as the base policy; ``violation_cost`` is taken off the value of an episode
    whose RTJ mean ends above θ (the acceptance counts such instances) and ``penalty`` (default 10) weighs the
    RTJ mean's excess over θ; ``futures`` > 0 values each action over that many futures drawn given the
    observed past instead of the episode's own (``improved_episode``); ``workers`` processes share the
    episodes (the same labels for any count); returns (data, statistics)."""
    tasks = [(s, i, tol, violation_cost, futures) for i, s in enumerate(seeds)]
    parts: dict[str, list] = {"obs": [], "mask": [], "act": [], "good": []}
    base, improved, changed, episodes, samples, fallbacks = [], [], 0, 0, 0, 0

    def take(i: int, ep: dict) -> None:
        nonlocal changed, episodes, samples, fallbacks
        for k in parts:
            parts[k] += ep[k]
        if ep["base_reward"] is not None:
            base.append(ep["base_reward"])
            improved.append(ep["reward"])
            episodes += 1
        changed += ep["changed"]
        samples += ep["samples"]
        fallbacks += ep["fallbacks"]
        if progress is not None:
            progress(i + 1, len(tasks))

    if workers <= 1:
        _worker_init(model, penalty, one_thread=False)
        for i, task in enumerate(tasks):
            take(i, _episode_task(task))
    else:
        with cf.ProcessPoolExecutor(workers, initializer=_worker_init, initargs=(model, penalty)) as pool:
            for i, ep in enumerate(pool.map(_episode_task, tasks, chunksize=8)):
                take(i, ep)
    env = _WORKER["env"] if workers <= 1 else model_env(model, penalty=penalty)
    width = env.observation_space.shape[0]
    data = {"obs": np.asarray(parts["obs"], dtype=np.float32).reshape(-1, width),
            "mask": np.asarray(parts["mask"], dtype=bool).reshape(-1, env.action_space.n),
            "act": np.asarray(parts["act"], dtype=np.int64),
            "good": np.asarray(parts["good"], dtype=bool).reshape(-1, env.action_space.n)}
    stats = {"episodes": len(seeds), "violation_cost": violation_cost, "penalty": env.penalty, "futures": futures,
             "with_decisions": episodes,
             "decisions": int(len(data["act"])), "changed": int(changed), "seeds": [seeds.start, seeds.stop],
             "base_reward_mean": float(np.mean(base)) if base else None,
             "improved_reward_mean": float(np.mean(improved)) if improved else None}
    if futures > 0:
        stats.update(future_samples=int(samples), fallback_states=int(fallbacks))
    return data, stats


def read_labels(path: str) -> tuple[dict, dict]:
    """The labels and statistics of a ``-rollout.npz`` file that ``improve_by_rollouts`` wrote (files of the
    eleventh session hold none but the count: ``{"decisions": n, "labels_from": path}``); ``OptionError`` naming the file when it is
    not one."""
    try:
        with np.load(path, allow_pickle=False) as z:
            labels = {k: z[k] for k in ("obs", "mask", "act", "good")}
            stats = json.loads(str(z["stats"])) if "stats" in z.files else {}
    except (OSError, ValueError, KeyError) as exc:
        raise OptionError(f"{path}: not a rollout-labels file ({exc})") from None
    n = len(labels["act"])
    if not (len(labels["obs"]) == len(labels["mask"]) == len(labels["good"]) == n):
        raise OptionError(f"{path}: not a rollout-labels file (its arrays have different lengths)")
    return labels, {**stats, "decisions": n, "labels_from": path}


def merged_labels(paths: list[str]) -> tuple[dict, dict]:
    """The labels of several ``-rollout.npz`` files together (``read_labels`` each, in the order given) and their
    statistics: one file's as ``read_labels`` gives them; several: ``{"decisions", "changed", "labels_from",
    "files": [each file's]}``."""
    read = [read_labels(p) for p in paths]
    if len(read) == 1:
        return read[0]
    first = (read[0][0]["obs"].shape[1], read[0][0]["mask"].shape[1])  # (observation columns, actions)
    for path, (lab, _) in zip(paths, read):
        shape = (lab["obs"].shape[1], lab["mask"].shape[1])
        if shape != first:
            raise OptionError(f"{path}: its observations ({shape[0]} columns, {shape[1]} actions) are not those of "
                              f"{paths[0]} ({first[0]}, {first[1]})")
    labels = {k: np.concatenate([lab[k] for lab, _ in read]) for k in read[0][0]}
    return labels, {"decisions": int(len(labels["act"])), "changed": int(sum(st.get("changed", 0) for _, st in read)),
                    "labels_from": list(paths), "files": [st for _, st in read]}


def improve_by_rollouts(base: str, out: str, *, curriculum: str, weeks_rounds: int, seeds: range,
                        violation_cost: float = 3.0, penalty: float | None = None, futures: int = 0,
                        workers: int = 1, epochs: int = 10, lr: float = 1e-3, small_repeat: int = 2, seed: int = 0,
                        labels_from: str | list[str] | None = None, actor: str = "same",
                        hidden: tuple[int, ...] | None = None,
                        progress: Callable[[str], None] | None = None) -> dict:
    """One round of policy improvement of model ``base`` (issue 23, eleventh session; docs/rl.md "Rollout
    labels"): its actor is fitted ``epochs`` passes to (1) the Mira-like week states of curriculum folder
    ``curriculum`` (``data-0.npz`` … ``data-{weeks_rounds}.npz``, without data-0's Table-3 part), distilled to
    ``base``'s own action probabilities so that its behaviour on weeks stays, and (2) ``rollout_labels`` of
    ``base`` over the Table-3 instances of ``seeds`` (``violation_cost``, ``penalty``, ``futures``, ``workers``:
    ``rollout_labels``'), repeated ``small_repeat`` times.  Writes model file ``out`` (its history records the
    recipe) and ``out``'s stem + ``-rollout.npz`` (the labels and their statistics); ``labels_from``: such a file
    of an earlier call, whose labels are fitted instead of rolling out again (``seeds`` and the rollout options
    are then those the file records; several files: their labels together).  ``actor``: "same" fits ``base``'s
    own actor; "context" fits a new ``context`` actor (``core.context_rules``; hidden sizes ``hidden``, default
    ``options.CONTEXT_HIDDEN``) to the same data, ``base`` still giving the week states' distilled probabilities;
    "context-from-base": the same actor started as ``base``'s kernel exactly (``nets.context_from_kernel``; each
    hidden layer at least as wide as the kernel's).
    Returns the rollout statistics and the fit's last row."""
    if actor not in ROLLOUT_ACTORS:
        raise OptionError(f"actor {actor!r}: choose from {', '.join(ROLLOUT_ACTORS)}")
    hidden = tuple(hidden or CONTEXT_HIDDEN)
    say = progress or (lambda text: None)
    st = read_model_file(base)
    if actor == "context-from-base":  # before any work: can the base model's network grow?
        problem = growth_problem(st["arch"]["actor"], st["arch"]["hidden"], hidden)
        if problem:
            raise OptionError(f"{base}: {problem}")
    paths = [os.path.join(curriculum, f"data-{r}.npz") for r in range(weeks_rounds + 1)]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise OptionError(f"curriculum data: {missing[0]}: file not found (the curriculum's command writes it)")
    if labels_from is not None:
        files = [labels_from] if isinstance(labels_from, str) else list(labels_from)
        labels, stats = merged_labels(files)
        say(f"labels of {len(files)} file(s): {len(labels['act'])} states")
    else:
        t0 = time.perf_counter()
        labels, stats = rollout_labels(base, seeds, violation_cost=violation_cost, penalty=penalty, futures=futures,
                                       workers=workers, progress=lambda i, n: say(f"rollouts {i}/{n}")
                                       if i % 500 == 0 or i == n else None)
        stats["seconds"] = round(time.perf_counter() - t0, 1)
        say(f"rollouts: {stats['decisions']} states, {stats['changed']} changed; mean value "
            f"{stats['base_reward_mean']:.4f} -> {stats['improved_reward_mean']:.4f} (the improved policy, which "
            + ("looks ahead over drawn futures)" if futures else "knows the futures)"))
    keys = ("obs", "mask", "act", "good")
    datas = [load_curriculum_data(p) for p in paths]
    n_small = datas[0]["parts"].get("small", {}).get("decisions", 0)
    weeks = [{k: d[k][n_small:] if r == 0 else d[k] for k in keys} for r, d in enumerate(datas)]
    if weeks[0]["obs"].shape[1] != labels["obs"].shape[1]:
        raise OptionError(f"curriculum data: {paths[0]}: its observations have {weeks[0]['obs'].shape[1]} columns, "
                          f"{base}'s {labels['obs'].shape[1]}")
    data = {k: np.concatenate([w[k] for w in weeks] + [labels[k]] * small_repeat) for k in keys}
    n_weeks = sum(len(w["act"]) for w in weeks)
    distill = np.zeros(len(data["act"]), dtype=bool)
    distill[:n_weeks] = True
    stem = os.path.splitext(out)[0]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    if labels_from is None:
        atomic_write_stream(stem + "-rollout.npz",
                            lambda fh: np.savez_compressed(fh, **labels, stats=np.array(json.dumps(stats))))
    env = st["env"]
    settings = {k: env[k] for k in (*BATCH_SETTINGS, *PASS_SETTINGS) if k in env}
    arch = None
    if actor != "same":
        arch = dict(st["arch"], actor=CONTEXT_ACTOR, hidden=list(hidden),
                    context=context_rules(int(env["window"])))
    res = train_curriculum(base, data, out, epochs=epochs, lr=lr, seed=seed, order=env.get("order", "submit"),
                           spec_settings=settings, distill=distill, arch=arch, grow=actor == "context-from-base",
                           progress=lambda e, n, row: say(f"fit {e}/{n}: accuracy {row['accuracy']:.3f}")
                           if e % 5 == 0 or e == n else None,
                           note={"recipe": "rollout-improvement", "rollout_base": os.path.basename(base),
                                 "rollout": stats, "weeks_data": f"{os.path.basename(os.path.normpath(curriculum))} "
                                 f"data-0..{weeks_rounds} (Mira-like week states, distilled)",
                                 "weeks_states": int(n_weeks), "small_repeat": small_repeat, "actor": actor,
                                 **({"labels_from": labels_from} if labels_from else {})})
    return {"out": out, "rollout": stats, "fit": res["history"][-1]}


__all__ = ["ROLLOUT_SEEDS", "action_values", "improve_by_rollouts",
           "improved_episode", "merged_labels", "model_env", "read_labels", "rollout_labels"]
