"""Where the PPO trainer's environments live while it collects trajectories.

Two rollout modes (``PPOConfig.rollout``), one set of pools:

* ``"lockstep"``: the trainer keeps the networks and the sampling generator; it hands each step's
  actions to an *environment pool* (``reset_many`` / ``step_many``) and gets back, for every
  environment stepped, the next observation, its action mask, the reward and the end flags.
* ``"trajectories"``: the pool's workers sample whole trajectories themselves
  (``sample_trajectory``: the actor as a ``NumpyForward``, trajectory k's own random stream) and
  hand them back once per epoch (``trajectories``).

The pools:

* ``LocalEnvs`` — the environments in the trainer's process (``workers=1``);
* ``ProcessEnvs`` — ``workers`` processes (this one and ``workers - 1`` subprocesses), environment
  i (trajectory k) in worker ``i mod workers`` (``k mod workers``); each request goes to the
  subprocesses first, worker 0's share is done here meanwhile, then the replies are read, so the
  workers simulate in parallel;
* ``RayEnvs`` — the same with Ray actors only (``backend="ray"``; the ``ray`` extra), for workers
  on other machines of a Ray cluster.

Which process steps an environment changes nothing in what it computes: an environment's
trajectory depends only on its reset seed and the actions it is given; in the lock-step mode the
seeds and actions are drawn in the trainer in the same order for every pool and the results are
read back in environment order; in the trajectories mode each trajectory draws from its own
stream and the trainer orders them by index.  So a training run gives the same weights with 1, 2
or 16 workers (and on any backend) for the same settings (``tests/test_rl_rollouts.py``).

This module imports no PyTorch and no agent: a pool builds its environments with the
``make_env`` callable it is given (``rtsched.rl.agents.EnvFactory`` is the picklable one that rollout
workers receive).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import traceback
from typing import Callable, Sequence

import numpy as np

BACKENDS = ("local", "ray")
MODES = ("lockstep", "trajectories")  # PPOConfig.rollout

# (observation, action mask, reward, terminated, truncated, info) of one environment step.
StepResult = tuple


def _mask(env):
    m = getattr(env, "action_masks", None)
    if m is not None:
        return m()
    return np.ones(env.action_space.n, dtype=bool)


def _reset(env, seed: int):
    obs, _info = env.reset(seed=int(seed))
    return obs, _mask(env)


def _step(env, action: int) -> StepResult:
    obs, r, term, trunc, info = env.step(int(action))
    return obs, _mask(env), float(r), bool(term), bool(trunc), info


MAX_TRAJECTORY_TRIES = 1024


def sample_trajectory(env, forward, seed: int, epoch: int, k: int, max_len: int | None = None) -> dict:
    """Trajectory ``k`` of ``epoch`` in the ``"trajectories"`` rollout mode: ``env`` reset and
    stepped with actions sampled from ``forward``'s logits (a ``NumpyForward``), every random draw
    from ``numpy.random.default_rng([seed, epoch, k])`` — so the trajectory is the same in any
    worker.  A trajectory longer than ``max_len`` is discarded and the slot draws another sequence
    from the same stream.  Returns ``{"k", "obs", "mask", "act", "ret", "rew", "info", "discarded"}``."""
    rng = np.random.default_rng([seed, epoch, k])
    for tries in range(MAX_TRAJECTORY_TRIES):
        obs, mask = _reset(env, int(rng.integers(2**32)))
        o_list, m_list, a_list, r_list = [], [], [], []
        while True:
            logits = forward.logits(obs, mask).astype(np.float64)
            p = np.exp(logits - logits.max())
            cdf = np.cumsum(p)
            a = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(p) - 1)
            while not mask[a]:  # float ties at a masked edge (probability ~0): the previous legal slot
                a -= 1
            o_list.append(obs)
            m_list.append(mask)
            a_list.append(a)
            obs, mask, r, term, trunc, info = _step(env, a)
            r_list.append(r)
            if term or trunc:
                # "ret": the episode's return (the terminal reward when the others are 0, as for the picking
                # and inspector agents; the sum of the per-cycle rewards for the split window); "rew": per step
                ret = r if len(r_list) == 1 else float(np.sum(r_list))
                return {"k": k, "obs": np.stack(o_list), "mask": np.stack(m_list),
                        "act": np.asarray(a_list, dtype=np.int64), "ret": ret, "rew": r_list, "info": info,
                        "discarded": tries}
            if max_len is not None and len(a_list) >= max_len:
                break  # discarded: draw another sequence
    raise RuntimeError("too many discarded trajectories; raise max_traj_len")


def _handle(envs: dict, cmd: str, payload):
    """One request to the environments ``envs`` {index: env} (every pool and worker answers with this)."""
    if cmd == "reset":
        return [_reset(envs[i], x) for i, x in payload]
    if cmd == "step":
        return [_step(envs[i], x) for i, x in payload]
    if cmd == "teacher":  # the imitation teacher's action in each environment's current state (RLSchert)
        return [int(envs[i].teacher_action()) for i, _x in payload]
    if cmd == "trajectories":  # payload: (forward, seed, epoch, [k, ...], max_len); one env runs them all
        forward, seed, epoch, ks, max_len = payload
        env = envs[min(envs)]
        return [sample_trajectory(env, forward, seed, epoch, k, max_len) for k in ks]
    raise ValueError(f"unknown rollout request {cmd!r}")


class LocalEnvs:
    """The environments in this process."""

    def __init__(self, envs: Sequence) -> None:
        self.envs = list(envs)

    def __len__(self) -> int:
        return len(self.envs)

    def reset_many(self, items: list[tuple[int, int]]) -> list[tuple]:
        """Reset environment i with seed s for each (i, s); returns [(obs, mask)] in that order."""
        return [_reset(self.envs[i], s) for i, s in items]

    def step_many(self, items: list[tuple[int, int]]) -> list[StepResult]:
        """Step environment i with action a for each (i, a); returns the results in that order."""
        return [_step(self.envs[i], a) for i, a in items]

    def teacher_many(self, indices: list[int]) -> list[int]:
        """The imitation teacher's action in environment i's current state, for each i."""
        return _handle(dict(enumerate(self.envs)), "teacher", [(i, None) for i in indices])

    def trajectories(self, forward, seed: int, epoch: int, n: int, max_len: int | None = None) -> list[dict]:
        """Trajectories 0 .. n−1 of ``epoch`` sampled with ``forward`` (``sample_trajectory``), in order."""
        return _handle({0: self.envs[0]}, "trajectories", (forward, seed, epoch, list(range(n)), max_len))

    def close(self) -> None:
        self.envs = []


# ------------------------------------------------------------------------------------ subprocesses
def _serve(conn) -> None:
    """A worker: receive (make_env, indices), build the environments, then answer
    ("reset" | "step", [(i, x)]) until "close" or until the trainer's end of the pipe closes."""
    try:
        make_env, indices = conn.recv()
        envs = {i: make_env() for i in indices}
        conn.send(("ok", None))
    except EOFError:
        return
    except BaseException as exc:  # noqa: BLE001 - reported to the trainer, which raises it
        conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
        return
    while True:
        try:
            cmd, items = conn.recv()
        except (EOFError, KeyboardInterrupt):  # the trainer is gone
            return
        if cmd == "close":
            return
        try:
            conn.send(("ok", _handle(envs, cmd, items)))
        except BaseException as exc:  # noqa: BLE001
            conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def worker_main(fd: int) -> None:
    """Entry point of a rollout worker process: serve on the inherited pipe end ``fd``."""
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's to handle; it closes the pipe
    _serve(Connection(fd))


class WorkerError(RuntimeError):
    """An environment raised in a rollout worker (the message carries the worker's traceback)."""


class _Sharded:
    """Environment i lives in worker i mod n; requests are split by worker and answers merged back
    in request order."""

    n_workers: int

    def _split(self, items: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
        parts: list[list[tuple[int, int]]] = [[] for _ in range(self.n_workers)]
        for i, x in items:
            parts[i % self.n_workers].append((i, x))
        return parts

    def _merge(self, items, parts, answers) -> list:
        it = [iter(a) for a in answers]
        return [next(it[i % self.n_workers]) for i, _x in items]

    def reset_many(self, items):
        return self._call("reset", items)

    def step_many(self, items):
        return self._call("step", items)

    def teacher_many(self, indices: list[int]) -> list[int]:
        return self._call("teacher", [(i, None) for i in indices])

    def trajectories(self, forward, seed: int, epoch: int, n: int, max_len: int | None = None) -> list[dict]:
        """Trajectories 0 .. n−1 of ``epoch``: trajectory k sampled by worker k mod workers, each
        worker one request for all of its trajectories; returned in k order."""
        forward = forward.plain() if hasattr(forward, "plain") else forward
        payloads = [(forward, seed, epoch, list(range(w, n, self.n_workers)), max_len)
                    for w in range(self.n_workers)]
        answers = self._gather("trajectories", payloads)
        out = [t for part in answers for t in part]
        out.sort(key=lambda t: t["k"])
        return out


class ProcessEnvs(_Sharded):
    """``n_envs`` environments in ``workers`` processes: this one (shard 0) and ``workers - 1``
    subprocesses.  A step sends the subprocesses their actions first, steps shard 0 here meanwhile,
    then reads their answers, so the trainer works instead of waiting.

    Each subprocess is a fresh interpreter (``python -c "...worker_main(FD)"``, this process's
    ``sys.path`` as its ``PYTHONPATH``) talking over an inherited pipe: neither ``fork`` (unsafe
    beside PyTorch's and a progress bar's threads) nor ``spawn`` (which re-imports the caller's
    main script, breaking scripts without a ``__main__`` guard)."""

    def __init__(self, make_env: Callable, n_envs: int, workers: int, first=None) -> None:
        self.n = n_envs
        self.n_workers = max(1, min(workers, n_envs))
        self.conns = [None]  # shard 0: this process
        self.procs = []
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        try:
            for w in range(1, self.n_workers):
                parent, child = mp.Pipe()
                fd = child.fileno()
                code = f"from rtsched.rl.rollouts import worker_main; worker_main({fd})"
                # Its own session: a terminal's Ctrl-C reaches the trainer alone (which closes the pipes), and
                # the worker is scheduled as a separately started process (Linux shares a busy machine
                # between sessions: workers in the trainer's session would share its one slice).
                self.procs.append(subprocess.Popen([sys.executable, "-c", code], pass_fds=(fd,), env=env,
                                                   stdin=subprocess.DEVNULL, start_new_session=True))
                child.close()
                self.conns.append(parent)
                parent.send((make_env, list(range(w, n_envs, self.n_workers))))
            # shard 0 is built while the subprocesses build theirs
            mine = list(range(0, n_envs, self.n_workers))
            self.local = {i: (first if (i == 0 and first is not None) else make_env()) for i in mine}
            for c in self.conns[1:]:
                self._answer(c)
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return self.n

    def _answer(self, conn):
        try:
            status, payload = conn.recv()
        except EOFError:
            raise WorkerError("a rollout worker died (killed, or out of memory)") from None
        if status != "ok":
            raise WorkerError(f"rollout worker failed: {payload}")
        return payload

    def _gather(self, cmd: str, payloads: list) -> list:
        """Send payload w to worker w (w ≥ 1), answer worker 0's here meanwhile, collect the replies."""
        busy = [w for w, payload in enumerate(payloads) if payload and w > 0]
        for w in busy:
            self.conns[w].send((cmd, payloads[w]))
        answers = [[] for _ in payloads]
        if payloads[0]:
            answers[0] = _handle(self.local, cmd, payloads[0])
        for w in busy:
            answers[w] = self._answer(self.conns[w])
        return answers

    def _call(self, cmd: str, items):
        parts = self._split(items)
        return self._merge(items, parts, self._gather(cmd, parts))

    def close(self) -> None:
        self.local = {}
        for c in self.conns[1:]:
            try:
                c.send(("close", None))
            except (OSError, BrokenPipeError):
                pass
            c.close()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        self.conns, self.procs = [], []


# ------------------------------------------------------------------------------------ Ray actors
class _RayWorker:
    """A Ray actor holding some environments (the body of ``_serve`` without the pipe)."""

    def __init__(self, make_env: Callable, indices: list[int]) -> None:
        self.envs = {i: make_env() for i in indices}

    def call(self, cmd: str, payload):
        return _handle(self.envs, cmd, payload)


class RayEnvs(_Sharded):
    """``n_envs`` environments in ``workers`` Ray actors (one CPU each).  ``address``: an existing
    cluster (``"auto"``, ``HOST:PORT``), or None to start a local Ray instance (shut down on close)."""

    def __init__(self, make_env: Callable, n_envs: int, workers: int, address: str | None = None) -> None:
        from rtsched.cluster import ensure_ray

        self.n = n_envs
        self.n_workers = max(1, min(workers, n_envs))
        # a local instance gets a CPU per actor at least (actors ask for one CPU each)
        self.ray, self.started = ensure_ray(address, max(self.n_workers, os.cpu_count() or 1))
        ray = self.ray
        actor = ray.remote(num_cpus=1)(_RayWorker)
        self.actors = [actor.remote(make_env, list(range(w, n_envs, self.n_workers)))
                       for w in range(self.n_workers)]

    def __len__(self) -> int:
        return self.n

    def _gather(self, cmd: str, payloads: list) -> list:
        refs = {w: self.actors[w].call.remote(cmd, payload) for w, payload in enumerate(payloads) if payload}
        try:
            got = dict(zip(refs, self.ray.get(list(refs.values()))))
        except self.ray.exceptions.RayError as exc:
            raise WorkerError(f"rollout actor failed: {str(exc).splitlines()[0]}") from None
        return [got.get(w, []) for w in range(len(payloads))]

    def _call(self, cmd: str, items):
        parts = self._split(items)
        return self._merge(items, parts, self._gather(cmd, parts))

    def close(self) -> None:
        for a in getattr(self, "actors", []):
            self.ray.kill(a)
        self.actors = []
        if getattr(self, "started", False) and self.ray.is_initialized():
            self.ray.shutdown()
            self.started = False


def make_pool(make_env: Callable, n_envs: int, workers: int = 1, backend: str = "local", *,
              first=None, address: str | None = None):
    """The pool for ``workers`` (1: this process) on ``backend``.  ``first``: an environment already
    built here (reused by ``LocalEnvs`` as environment 0)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown rollout backend {backend!r}; choose from {', '.join(BACKENDS)}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if backend == "ray":
        return RayEnvs(make_env, n_envs, workers, address)
    if workers == 1:
        envs = ([first] if first is not None else []) + [make_env() for _ in range(n_envs - (first is not None))]
        return LocalEnvs(envs)
    return ProcessEnvs(make_env, n_envs, workers, first)


__all__ = ["BACKENDS", "LocalEnvs", "ProcessEnvs", "RayEnvs", "WorkerError", "make_pool"]
