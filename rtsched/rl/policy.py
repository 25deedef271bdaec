"""Trained agents as ordinary rtsched policies (``decide(view) -> list[Decision]``).

* ``RLSchedulerPolicy``: the job-picking network chooses the head among the FCFS-first window of
  the queue; the head is committed as in the environment (``CommittedHead``), with the chosen
  backfilling.
* ``InspectedPolicy``: a base priority whose picks the inspector network accepts or rejects; a
  reject asks for a scheduling point 600 s later (``WakeAt``) unless an arrival or completion comes
  first; at most 72 rejections per job.
* ``SplitWindowPolicy``: Deep Back-Filling's split-window network (seed 004) places jobs of its
  window one after another at each scheduling point until it picks Fwd or an invalid slot.

Both are meant for ``Simulator(..., event_order="rlscheduler")`` (the event order they were trained
in) but run in any event order.  Per-job features beyond the core ``Job`` (processors as requested,
memory, executable) come from ``extras`` {job id: (procs, memory, user, group, executable)}
(``RLTrace.extras``); without them processors = nodes and the others count as unknown.
Normalisation constants default to the model's training trace; pass ``norms`` (e.g.
``trace.norms()``) to normalise by the evaluated trace instead, as the authors' scripts do.
"""
from __future__ import annotations

import numpy as np
import torch

from heuristics.backfill import normalize_backfill
from heuristics.committed import COMMITTED_BACKFILLS, CommittedHead, CommittedHeadPolicy
from rtsched.errors import OptionError
from rtsched.rl.env_inspect import ACCEPT, Inspection, InspectorFeatures
from rtsched.rl.features import ArrivedRows, PickObservation
from rtsched.rl.nets import NumpyActor
from rtsched.rl.ppo import LoadedModel, ModelFileError, load_model
from rtsched.rl.splitwindow import SplitObservation
from rtsched.sim.core import SimView
from rtsched.sim.decisions import Decision, Start


_BOTH_ACTIONS = np.ones(2, dtype=bool)


def _norms_of(model: LoadedModel, norms: dict | None) -> dict:
    """The feature normalisation constants: ``norms`` when given, else the model's own."""
    out = dict(norms or model.norms)
    if not out:
        raise ModelFileError(f"{model.path}: the model records no normalisation constants (a stable-baselines3 zip "
                             "saved without rtsched.json); evaluate it with rtsched rl evaluate (the trace's "
                             "constants) or save it with rtsched.rl.sb3.save_model / attach_env")
    return out


def _choose(logits: np.ndarray, greedy: bool, gen: torch.Generator) -> int:
    """Greedy: the first maximal logit (as torch.argmax); otherwise a sample from the softmax."""
    if greedy:
        return int(np.argmax(logits))
    probs = torch.softmax(torch.from_numpy(np.asarray(logits, dtype=np.float32)), -1)
    return int(torch.multinomial(probs, 1, generator=gen))


class RLSchedulerPolicy:
    """RLScheduler's trained job-picking network as a core policy."""

    preemptive = False

    def __init__(self, model: LoadedModel | str, *, backfill=None, norms: dict | None = None,
                 extras: dict | None = None, greedy: bool = True, seed: int = 0) -> None:
        self.model = load_model(model) if not isinstance(model, LoadedModel) else model
        if self.model.agent != "rlscheduler":
            raise ValueError(f"{self.model.path}: a {self.model.agent} model, not a job-picking (rlscheduler) one")
        env = self.model.env
        self.backfill = normalize_backfill(env.get("backfill", "none") if backfill is None else backfill,
                                           COMMITTED_BACKFILLS)
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = self.model.scorer or NumpyActor(self.model.actor)
        self.obsb = PickObservation(int(self.model.arch["window"]), env.get("features", "code"),
                                    env.get("pad", "zeros"))
        self.rows = ArrivedRows(self.obsb, _norms_of(self.model, norms), extras)
        self.window = self.obsb.window
        self.driver = CommittedHead(self.backfill, fcfs_queue=True)
        self.name = f"rl:{self.model.path}+{self.backfill}"
        self.n_decisions = 0

    def decide(self, view: SimView) -> list[Decision]:
        d = self.driver
        d.sync(view)
        if d.head is None and not d.q:
            return []
        return d.run(view, self._pick)

    def _pick(self, q, view: SimView):
        self.rows.catch_up(view)
        vis = q[:self.window]
        k = len(vis)
        obs = self.obsb.observe(vis, view, self.driver.state_now(view))
        mask = np.zeros(self.window, dtype=bool)
        mask[:k] = True
        a = _choose(self.fast.logits(obs, mask), self.greedy, self.gen)
        self.n_decisions += 1
        return vis[a % k]  # a padded slot: slot a mod k, as the environment reads it


class InspectedPolicy:
    """A base priority inspected by a trained SchedInspector network (a core policy)."""

    preemptive = False

    def __init__(self, model: LoadedModel | str, *, base=None, backfill=None, norms: dict | None = None,
                 extras: dict | None = None, greedy: bool = True, seed: int = 0) -> None:
        self.model = load_model(model) if not isinstance(model, LoadedModel) else model
        if self.model.agent != "inspector":
            raise ValueError(f"{self.model.path}: a {self.model.agent} model, not an inspector one")
        env = self.model.env
        self.backfill = normalize_backfill(env.get("backfill", "none") if backfill is None else backfill,
                                           COMMITTED_BACKFILLS)
        self.base = CommittedHeadPolicy(base or env.get("base", "sjf"), self.backfill)
        self.norms = _norms_of(self.model, norms)
        self.extras = extras or {}
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = self.model.scorer or NumpyActor(self.model.actor)
        self.inspection = Inspection(int(env.get("max_interval", 600)), int(env.get("max_rejections", 72)))
        self.goal = env.get("goal", "bsld")
        self.features = env.get("features", "paper")
        self.driver = CommittedHead(self.backfill)
        self.name = f"inspected:{self.base.priority.name}:{self.model.path}+{self.backfill}"
        self._rejected = None
        self._blocked = False

    @property
    def n_inspections(self) -> int:
        return self.inspection.n_inspections

    @property
    def n_rejections(self) -> int:
        return self.inspection.n_rejections

    @property
    def n_blocked_rejections(self) -> int:
        return self.inspection.n_blocked_rejections

    def decide(self, view: SimView) -> list[Decision]:
        d = self.driver
        insp = self.inspection
        if d.sync(view):
            self.base.prepare(view)
            self.base.cache_keys(view.queue)
            insp.new_run()
            self.feat = InspectorFeatures(self.norms, view.machine.total_nodes, self.goal, self.backfill,
                                          self.features, insp.max_interval, insp.max_rejections)
        else:
            self.base.cache_keys(view.entered)
            if not insp.pass_due(view):
                return []  # a stale wake-up of an earlier reject
        if d.head is None and not d.q:
            return []
        self._rejected = None
        out = d.run(view, self._pick)
        if self._rejected is not None:
            out.append(insp.reject(self._rejected, view.now, self._blocked))
        return out

    def _pick(self, q, view: SimView):
        top = self.base.pick(q, view)
        insp = self.inspection
        if insp.capped(top):
            return top
        e = self.extras.get(top.info.id)
        obs = self.feat.observe(view, top, q, insp.count(top), e[0] if e else top.info.nodes,
                                self.driver.state_now(view))
        a = _choose(self.fast.logits(obs, _BOTH_ACTIONS), self.greedy, self.gen)
        insp.n_inspections += 1
        if a == ACCEPT:
            return top
        self._rejected = top
        self._blocked = obs[4] < 0.5  # "runnable" said no
        return None


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
        self.model = load_model(model) if not isinstance(model, LoadedModel) else model
        if self.model.agent != "splitwindow":
            raise ValueError(f"{self.model.path}: a {self.model.agent} model, not a split-window one")
        env = self.model.env
        self.head, self.tail = int(env["head"]), int(env["tail"])
        self.sigma = env.get("sigma", "remaining")
        self.norms = dict(norms or self.model.norms)
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = NumpyActor(self.model.actor)
        self.mask = np.ones(self.head + self.tail + 1, dtype=bool)
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
            self.obsb = SplitObservation(n, self.head, self.tail, self.norms["max_runtime"], sigma=self.sigma)
        obsb = self.obsb
        obsb.cores.sync(view.running)
        queue = list(view.queue)
        free = view.state.free_nodes
        now = view.now
        out: list[Decision] = []
        while queue:
            obs, vis = obsb.observe(queue, now)
            obsb.count_decision(len(queue))
            a = _choose(self.fast.logits(obs, self.mask), self.greedy, self.gen)
            self.n_decisions += 1
            if a >= len(vis) or vis[a].info.nodes > free:
                if out or view.running:
                    break
                a = 0  # idle machine: see the class docstring
                self.n_forced += 1
            js = vis[a]
            out.append(Start(js.info.id, None))
            free -= js.info.nodes
            queue.remove(js)
            obsb.cores.take(js.info.id, js.info.nodes, now, now + js.info.walltime)
        return out


class RLSchertPolicy:
    """A trained RLSchert network as a core policy: at each scheduling point it selects and kills
    through ``rtsched.rl.rlschert.RLSchertCore`` (exactly as in its environment) until it chooses
    None.  ``predictions``: the running predictions (``rtsched.rl.rlschert`` classes; default the
    requested times, i.e. no running information).  In the slotted mode it asks to be woken every
    slot.  Greedy (argmax) unless ``greedy=False``."""

    preemptive = False  # it kills (Kill), it never preempts with a checkpoint

    def __init__(self, model: LoadedModel | str, *, predictions=None, greedy: bool = True, seed: int = 0,
                 units: int | None = None, rule_kill: bool = False) -> None:
        import dataclasses

        from rtsched.rl.rlschert import RLSchertConfig

        self.model = load_model(model) if not isinstance(model, LoadedModel) else model
        if self.model.agent != "rlschert":
            raise ValueError(f"{self.model.path}: a {self.model.agent} model, not an RLSchert one")
        env = self.model.env
        self.cfg = RLSchertConfig(mode=env.get("mode", "event"), n_wait=int(env.get("n_wait", 5)),
                                  n_run=int(env.get("n_run", 8)), slot=int(env.get("slot", 300)),
                                  horizon=int(env.get("horizon", 120)), max_job_units=int(env.get("max_job_units", 10)),
                                  dynamic=bool(env.get("dynamic", True)), kill=bool(env.get("kill", True)))
        # rule_kill: the rule-based kill before the network's choice, the network choosing among the
        # other actions (the paper's "RLSchert with the rule-based kill" on a no-kill model).
        self.rule_kill = rule_kill
        self.model_kills = self.cfg.kill
        if rule_kill:
            self.cfg = dataclasses.replace(self.cfg, kill=True)
        self.units = units
        self.predictions = predictions
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed)
        self.fast = NumpyActor(self.model.actor)
        self.core = None
        self.name = f"rlschert:{self.model.path}{'+rule-kill' if rule_kill else ''}"
        self.n_decisions = 0

    def decide(self, view: SimView) -> list[Decision]:
        from rtsched.rl.rlschert import RLSchertCore, run_pass

        if self.core is None or self.core.run_id != view.run_id:
            units = self.units or view.machine.total_nodes
            expect = int(self.model.arch["n_features"])
            self.core = RLSchertCore(self.cfg, units, self.predictions)
            from rtsched.rl.rlschert import obs_shape

            got = obs_shape(units, self.cfg)[0]
            if got != expect:
                raise ModelPolicyError(f"{self.model.path}: the model observes {expect} values, this machine "
                                       f"({units} units, {self.cfg.mode} mode) gives {got}")
        core = self.core

        cfg = self.cfg

        def choose(v, mask):
            self.n_decisions += 1
            if self.rule_kill:
                j = core.rule_kill(v)
                if j is not None and mask[cfg.n_wait + j]:
                    return cfg.n_wait + j
                if not self.model_kills:
                    mask = mask.copy()
                    mask[cfg.n_wait:cfg.none_action] = False
                    if not mask.any():
                        mask[cfg.none_action] = True
            return _choose(self.fast.logits(core.observe(v), mask), self.greedy, self.gen)

        return run_pass(core, view, choose)


def policy_from_model(path: str, **kwargs):
    """The right policy class for a model file (job picking, inspector, split window or RLSchert)."""
    model = load_model(path)
    if model.agent == "rlschert":
        extra = {k: kwargs[k] for k in ("predictions", "greedy", "seed", "units", "rule_kill") if k in kwargs}
        return RLSchertPolicy(model, **extra)
    if model.agent == "rtmix":
        from rtsched.rl.policy_rtmix import RtMixPolicy

        kwargs.pop("base", None)
        if kwargs.pop("backfill", None) is not None:
            raise ModelPolicyError(f"{path}: an rtmix model schedules real-time/batch mixes on a partitioned Mira "
                                   "machine and takes no backfill option (rl evaluate's flat-cluster sequences "
                                   "always set one): run it with rtsched simulate --policy rtmix or rtsched compare")
        return RtMixPolicy(model, **kwargs)
    if model.agent == "rlscheduler":
        kwargs.pop("base", None)
        return RLSchedulerPolicy(model, **kwargs)
    if model.agent == "splitwindow":
        return SplitWindowPolicy(model, greedy=kwargs.get("greedy", True), seed=kwargs.get("seed", 0),
                                 norms=None)
    return InspectedPolicy(model, **kwargs)


class ModelPolicyError(OptionError):
    """A trained model asked to schedule in a way it cannot (the message names the model)."""


def load_policy(path, backfill=None, **options):
    """A trained model (file or training folder) as a core policy: what the policy registry calls
    for a model path (``rtsched simulate --policy MODEL_PATH``, grids, ``compare``).

    ``backfill``: ``None`` keeps the backfilling the model was trained with; otherwise ``none``,
    ``rlscheduler`` or ``easy`` (the rules a committed-head policy implements).  Other options go to
    ``RLSchedulerPolicy`` / ``InspectedPolicy`` (``greedy``, ``norms``, ``extras``, ``base``, ``seed``).
    Raises ``ModelFileError`` naming the file for a missing, corrupt or mismatched model.
    """
    if backfill is not None:
        try:
            backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS)
        except ValueError:
            raise ModelPolicyError(f"{path}: a trained model schedules with backfilling "
                                   f"{', '.join(COMMITTED_BACKFILLS)} (or its training setting when none is given), "
                                   f"not {backfill!r}") from None
    return policy_from_model(path, backfill=backfill, **options)
