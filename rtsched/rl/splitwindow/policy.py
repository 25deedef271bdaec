"""Deep Back-Filling's split-window network (seed 004) as a core policy: it places jobs of its window
one after another at each scheduling point until it picks Fwd or an invalid slot (docs/rl.md); and
its imitation teacher (``WindowTeacherPolicy``) as a core policy, to score it beside the network."""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from rtsched.errors import OptionError
from rtsched.rl.modelfiles import LoadedModel, agent_model
from rtsched.rl.nets import NumpyActor
from rtsched.rl.policies import choose_action
from rtsched.rl.splitwindow.observation import SplitObservation, teacher_slot, valid_slots, window_slots
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Start


class SplitWindowPolicy:
    """Deep Back-Filling's trained split-window network as a core policy (a flat cluster).

    At each scheduling point it places window jobs one after another (the environment's schedule
    cycling) until the network picks Fwd or an invalid slot.  One rule the environment does not
    have: on an idle machine (nothing running) a pass that would place nothing starts the first
    window job instead (all fit), because a policy cannot know whether another job will still
    arrive and the run must finish; ``n_forced`` counts these starts.  Backfilling options are
    not taken: the agent back-fills by itself."""

    preemptive = False

    def __init__(self, model: LoadedModel | str, *, greedy: bool = True, seed: int = 0, norms: dict | None = None,
                 **_ignored) -> None:
        self.model = agent_model(model, "splitwindow", "a split-window one")
        env = self.model.env
        self.head, self.tail = int(env["head"]), int(env["tail"])
        self.sigma = env.get("sigma", "remaining")
        self.time_scale = env.get("time_scale", "linear")
        self.norms = dict(norms or self.model.norms)
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = NumpyActor(self.model.actor)
        self.mask = np.ones(self.head + self.tail + 1, dtype=bool)
        # trained with --mask-invalid: the same mask at every pick (the environment's action_masks)
        self.mask_invalid = bool(env.get("mask_invalid", False))
        self.name = f"splitwindow:{self.head}-{self.tail}:{self.model.path}"
        self.obsb: SplitObservation | None = None
        self._run = None
        self.n_decisions = 0
        self.n_forced = 0

    def decide(self, view: SimView) -> list[Decision]:
        if self._run != view.run_id:
            self._run = view.run_id
            n = view.machine.total_nodes
            if int(self.norms.get("n_cores", n)) != n:
                raise OptionError(f"{self.model.path}: trained for {int(self.norms['n_cores'])} cores, the machine "
                                  f"has {n}; run it on flat:{int(self.norms['n_cores'])}")
            self.obsb = SplitObservation(n, self.head, self.tail, self.norms["max_runtime"], sigma=self.sigma,
                                         time_scale=self.time_scale)
        obsb = self.obsb
        obsb.cores.sync(view.running)
        now = view.now

        def pick(queue: list, free: int) -> tuple[list, int]:
            obs, vis = obsb.observe(queue, now)
            obsb.count_decision(len(queue))
            self.n_decisions += 1
            mask = valid_slots(vis, free, self.head + self.tail) if self.mask_invalid else self.mask
            return vis, choose_action(self.fast.logits(obs, mask), self.greedy, self.gen)

        def started(js) -> None:
            obsb.cores.take(js.info.id, js.info.nodes, now, now + js.info.walltime)

        out, forced = schedule_cycle(list(view.queue), view.state.free_nodes, bool(view.running), pick, started)
        self.n_forced += forced
        return out


class WindowTeacherPolicy:
    """The split window's imitation teacher (``teacher_slot``: ``sjf``, the shortest window job that
    fits, or ``fcfs``, the first) as a core policy, with the network policy's schedule cycling and its
    idle-machine rule (``schedule_cycle``): what a perfect clone of the teacher would score."""

    preemptive = False

    def __init__(self, head: int, tail: int, rule: str = "sjf") -> None:
        self.head, self.tail, self.rule = int(head), int(tail), rule
        self.name = f"teacher-{rule}-{self.head}-{self.tail}"
        self.n_forced = 0

    def decide(self, view: SimView) -> list[Decision]:
        def pick(queue: list, free: int) -> tuple[list, int]:
            vis = window_slots(queue, self.head, self.tail)
            return vis, teacher_slot(vis, free, self.rule)

        out, forced = schedule_cycle(list(view.queue), view.state.free_nodes, bool(view.running), pick)
        self.n_forced += forced
        return out


def schedule_cycle(queue: list, free: int, running: bool, pick: Callable[[list, int], tuple[list, int]],
                   started: Callable[[object], None] | None = None) -> tuple[list[Decision], int]:
    """One scheduling point's schedule cycling: ``pick(queue, free)`` → (window, slot) until the slot
    is Fwd, empty or does not fit the ``free`` cores; each start leaves the queue and calls
    ``started(job)``.  On an idle machine (``running`` false, nothing started yet) a pass that would
    start nothing starts the window's first job instead (``SplitWindowPolicy``'s docstring).
    Returns (the starts, how many were forced so)."""
    out: list[Decision] = []
    forced = 0
    while queue:
        vis, a = pick(queue, free)
        if a < 0 or a >= len(vis) or vis[a].info.nodes > free:
            if out or running:
                break
            a = 0
            forced += 1
        js = vis[a]
        out.append(Start(js.info.id, None))
        free -= js.info.nodes
        queue.remove(js)
        if started is not None:
            started(js)
    return out, forced


def from_model(model: LoadedModel, **kwargs) -> SplitWindowPolicy:
    """The policy of a loaded split-window model (``rtsched.rl.policies.policy_from_model``)."""
    return SplitWindowPolicy(model, greedy=kwargs.get("greedy", True), seed=kwargs.get("seed", 0), norms=None)
