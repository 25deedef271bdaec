"""RLSchert's environment (seed 001) on the one core simulator: ``rtsched/RLSchert-v0``.

Description:
    The agent selects one of the 5 visible waiting jobs, kills one of the 8 visible running jobs
    (its work is lost, it is re-queued with its latest running prediction as its estimate:
    ``rtsched.sim.decisions.Kill``), or does nothing (None), which lets time move on.  The logic
    is ``rtsched.rl.rlschert.core.RLSchertCore`` (shared with the trained policy).  Two modes:

    * ``mode="event"`` (default): None advances the core to its next scheduling point (an arrival
      or completion while jobs wait); a select needs room now;
    * ``mode="slotted"``: the paper's DeepRM-style simulator, faithful: 5-min slots, None advances
      one slot, selects reserve the job at its earliest offset on the 120 × ``units`` canvas,
      running jobs' reservations follow their running predictions.

    Workloads: ``workload="vasplike"`` draws a sequence of the calibrated VASP-like workload
    (``rtsched.generators.vasplike``, parameter set ``"calibrated"``: Bernoulli arrivals at rate 0.7
    over 200 slots on a ``units``-unit cluster, pre-run and running predictions per job) at every
    reset, ``"vasplike-stated"`` of the paper's stated figures (the shipped ``rlschert-vasplike-*``
    models' training workload); training draws never use the held-out generator seeds
    (``HELD_OUT_SEEDS``, the evaluation's); a trace (SWF
    path, ``Workload`` or ``RLTrace``) gives windows of ``seq_len`` jobs on a flat cluster of its
    size, the requested times replaced by ``rtsched.rl.rlschert.predict.PrerunModel``'s pre-run estimates
    (its log-median fit, fitted once on the first 80 % of the trace) and the running predictions from its conditional
    model.  Steps where only None is allowed are taken without asking the agent.

Observation space:
    ``Box(0, 1, (n,), float32)``: event mode n = 5·5 + 8·6 + 3 = 76 features; slotted mode the
    flattened 120 × (units + 50 + 2) image (8,640 with 20 units).  See ``rtsched.rl.rlschert.core``.

Action space:
    ``Discrete(14)``: 0–4 select, 5–12 kill, 13 None; ``info["action_mask"]`` and ``action_masks()``
    mark the legal ones.  An illegal action is taken as None when None is legal, else as the first
    legal action (so that unmasked random agents stay legal).

Reward:
    Seed 001 Eq. 9 integrated over each time advance: −Σ over the jobs in the system of
    Δt / (predicted length), the running jobs' lengths from their running predictions (pre-run
    ones without ``dynamic``), the others' from their estimates; summed over an episode it is
    −Σ slowdown when predictions are exact.  0 for selects and kills.

Episode end:
    Terminated when every job of the sequence has finished; truncated after ``max_steps`` (3000)
    agent decisions.  The final ``info`` holds ``slowdown`` (mean (end − submit) / runtime, Eq. 13),
    ``completion`` (mean end − submit, in slots, Eq. 14), ``kills`` and ``lost_slots``; the schedule
    is checked by the independent validator (lost work included).
"""
from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rtsched.generators.vasplike import generate_vasplike, param_set, trace_param_set, training_seed
from rtsched.jobs import Workload
from rtsched.machines import FlatCluster
from rtsched.metrics import job_columns
from rtsched.rl.rlschert.core import (KILL_RULES, ArrayPredictions, ModelPredictions, RLSchertConfig, RLSchertCore,
                                 heuristic_action, obs_shape)
from rtsched.sim.core import Simulator
from rtsched.validate import validate_schedule

VASPLIKE = "vasplike"
_MODEL_CACHE: dict = {}


def trace_predictions(trace, train_share: float = 0.8, seed: int = 0, epochs: int = 400):
    """A trace's jobs with pre-run estimates as requested times, and their running predictions:
    ``(RLTrace-like workload of all jobs, ModelPredictions)``.  The model is fitted on the first
    ``train_share`` of the jobs and cached per trace (name, size) and settings."""
    from rtsched.rl.rlschert.predict import PrerunModel
    from rtsched.rl.trace import load_trace

    tr = load_trace(trace)
    key = (tr.name, len(tr), train_share, seed, epochs)
    if key not in _MODEL_CACHE:
        wl = Workload(list(tr.jobs), name=tr.name)
        cut = int(round(len(wl.jobs) * train_share))
        model = PrerunModel(seed=seed, epochs=epochs).fit(wl.replace_jobs(wl.jobs[:cut]))
        loc = model.location(wl)
        # The requested time is the log-median fit (the conditional model's location), capped by the
        # walltime when it is a real cap: MAPE-optimal points are biased low (on Lublin they fall to
        # one 5-min unit for every job) and would hide the jobs' differences from a scheduler.
        est = loc if not model.use_walltime else np.minimum(loc, [j.walltime for j in wl.jobs])
        est = np.maximum(1, np.ceil(est)).astype(np.int64)
        jobs = [j.__class__(j.id, j.submit, j.runtime, int(e), j.nodes, j.kind, j.user, j.group, j.queue,
                            j.checkpointable) for j, e in zip(wl.jobs, est)]
        caps = {j.id: float(j.walltime) for j in wl.jobs} if model.use_walltime else None
        preds = ModelPredictions(model, {j.id: float(m) for j, m in zip(wl.jobs, loc)}, caps)
        _MODEL_CACHE[key] = (tr, jobs, preds)
    return _MODEL_CACHE[key]


class RLSchertEnv(gym.Env):
    """Gymnasium environment of RLSchert (see module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, workload=VASPLIKE, *, mode: str = "event", units: int = 20, dynamic: bool = True,
                 kill: bool = True, n_wait: int = 5, n_run: int = 8, slot: int = 300, horizon: int = 120,
                 max_job_units: int = 10, job_rate: float = 0.7, simu_len: int = 200, seq_len: int = 256,
                 start_range=None, max_steps: int = 3000, teacher: str = "sjf", validate: bool = True,
                 predictor_epochs: int = 400, train_sequences: int | None = None, kill_teacher: str = "rule") -> None:
        super().__init__()
        self.cfg = RLSchertConfig(mode=mode, n_wait=n_wait, n_run=n_run, slot=slot, horizon=horizon,
                                  max_job_units=max_job_units, dynamic=dynamic, kill=kill)
        params_name = trace_param_set(workload)
        self.source = VASPLIKE if params_name is not None else "trace"
        if self.source == VASPLIKE:
            self.params = dataclasses.replace(param_set(params_name), job_rate=job_rate, simu_len=simu_len, slot=slot)
            self.machine = FlatCluster(units, name=f"units-{units}")
            self.trace_name = workload  # one of VASPLIKE_TRACES
        else:
            if mode == "slotted":
                raise ValueError("the slotted mode runs the VASP-like workload (a trace's jobs are not on 5-min "
                                 "slots or 10-core units); use mode='event' for traces")
            from rtsched.rl.sequences import start_bounds

            tr, self._jobs, self._preds = trace_predictions(workload, epochs=predictor_epochs)
            self.trace_name = tr.name
            self.machine = FlatCluster(tr.max_nodes)
            self.seq_len = int(seq_len)
            self.bounds = start_bounds(len(self._jobs), self.seq_len, start_range)
        self.units = self.machine.total_nodes
        self.max_steps = int(max_steps)
        self.teacher = teacher
        if kill_teacher not in KILL_RULES:
            raise ValueError(f"kill_teacher: unknown kill rule {kill_teacher!r} (known: {', '.join(KILL_RULES)})")
        self.kill_teacher = kill_teacher
        self._teacher_model = None
        self.validate = validate
        self.train_sequences = train_sequences
        self.core = RLSchertCore(self.cfg, self.units)
        self.observation_space = spaces.Box(0.0, 1.0, obs_shape(self.units, self.cfg), dtype=np.float32)
        self.action_space = spaces.Discrete(self.cfg.n_actions)
        self.sim: Simulator | None = None
        self.workload: Workload | None = None
        self._mask = np.zeros(self.cfg.n_actions, dtype=bool)
        self._done = True
        self.n_steps = 0

    # ------------------------------------------------------------------------------ episode
    def _draw(self, options: dict | None):
        options = options or {}
        if self.source == VASPLIKE:
            seed = options.get("sequence")
            if seed is None:  # a fixed training set (seed 001 Alg. 1: 16 sequences) or a fresh draw
                seed = training_seed(int(self.np_random.integers(0, self.train_sequences or 2**31 - 1)))
            seq = generate_vasplike(int(seed), self.params)
            preds = ArrayPredictions({j.id: r for j, r in zip(seq.workload.jobs, seq.running)}, self.cfg.slot)
            return seq.workload, preds, int(seed)
        start = options.get("start")
        if start is None:
            lo, hi = self.bounds
            start = int(self.np_random.integers(lo, hi + 1))
        start = int(start)
        if not 0 <= start <= len(self._jobs) - self.seq_len:
            raise ValueError(f"start {start} outside [0, {len(self._jobs) - self.seq_len}]")
        jobs = self._jobs[start:start + self.seq_len]
        t0 = jobs[0].submit
        wl = Workload([j.__class__(j.id, j.submit - t0, j.runtime, j.walltime, j.nodes, j.kind, j.user, j.group,
                                   j.queue, j.checkpointable) for j in jobs], name=f"{self.trace_name}@{start}")
        return wl, self._preds, start

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        wl, preds, ident = self._draw(options)
        self.workload = wl
        self.core = RLSchertCore(self.cfg, self.units, preds)
        self.sim = Simulator(wl, self.machine)
        self.n_steps = 0
        self.ident = ident
        self._done = not self.sim.advance()
        if not self._done:
            self.core.sync(self.sim.view)
            self._skip()
        info = {"sequence" if self.source == VASPLIKE else "start": ident}
        return self._obs(), self._info(info)

    def _members(self) -> list[tuple[int, float]]:
        """(job index, predicted length s) of every job in the system now."""
        core, now = self.core, self.sim.now
        out = [(js.idx, float(js.info.walltime)) for js in core.waiting]
        out += [(js.idx, float(js.info.walltime)) for js in core.ready]
        out += [(js.idx, float(js.info.walltime)) for js in core.pending_start]
        out += [(js.idx, float(core.length(js, now))) for js in core.running if js not in core.pending_start]
        return out

    def _move_on(self) -> float:
        """End the pass: hand its decisions to the core and advance time; the reward meanwhile."""
        sim = self.sim
        view = sim.view
        members = self._members()
        decisions = self.core.flush(view)
        t0 = sim.now
        if decisions:
            sim.apply(decisions)
        more = sim.advance()
        t1 = sim.now
        ends = sim.outcomes.end  # a column (array('q'))
        reward = 0.0
        if t1 > t0:
            for idx, length in members:
                end = ends[idx]
                stop = t1 if end < 0 or end > t1 else end
                if stop > t0:
                    reward -= (stop - t0) / length
        if not more or sim.n_done == len(sim.jobs):
            self._done = True
        else:
            self.core.sync(view)
        return reward

    def _skip(self) -> float:
        """Take the steps where only None is legal; their reward."""
        total = 0.0
        cfg = self.cfg
        while not self._done:
            self._mask = self.core.masks(self.sim.view)
            if self._mask[:cfg.none_action].any():
                return total
            total += self._move_on()
        return total

    def step(self, action):
        if self._done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        a = int(action)
        if not 0 <= a < self.cfg.n_actions:
            raise ValueError(f"action {a} outside Discrete({self.cfg.n_actions})")
        mask = self._mask
        if not mask[a]:
            a = self.cfg.none_action if mask[self.cfg.none_action] else int(np.flatnonzero(mask)[0])
        reward = 0.0
        if self.core.act(a, self.sim.view):
            reward += self._move_on()
        elif not self._done:
            self._mask = self.core.masks(self.sim.view)
        reward += self._skip()
        self.n_steps += 1
        terminated = self._done
        truncated = not terminated and self.n_steps >= self.max_steps
        info = self._finish() if terminated else {}
        return self._obs(), float(reward), terminated, truncated, self._info(info)

    def _finish(self) -> dict:
        res = self.sim.result("rlschert-env")
        if self.validate:
            validate_schedule(res.schedule, self.workload, self.machine, self.sim.io, outcomes=res.outcomes)
        cols = job_columns(res)
        slot = self.cfg.slot
        return {"slowdown": float(cols["sd"].mean()), "completion": float(cols["turnaround"].mean()) / slot,
                "kills": int(cols["n_kills"].sum()), "lost_slots": float(cols["t_lost"].sum()) / slot,
                "jobs": len(cols), "decisions": self.n_steps}

    # ------------------------------------------------------------------------------ views
    def _obs(self) -> np.ndarray:
        if self._done:
            return np.zeros(self.observation_space.shape, dtype=np.float32)
        return self.core.observe(self.sim.view)

    def _info(self, info: dict) -> dict:
        info["action_mask"] = self.action_masks()
        return info

    @property
    def network_shape(self) -> tuple[int, int]:
        """(n_features, window) of this agent's networks (``rtsched.rl.nets.build_networks``): the observation's size and the number of actions."""
        return int(np.prod(self.observation_space.shape)), int(self.action_space.n)

    def action_masks(self) -> np.ndarray:
        """Legal actions (sb3-contrib's MaskablePPO protocol); only None once the episode is over."""
        if self._done:
            m = np.zeros(self.cfg.n_actions, dtype=bool)
            m[self.cfg.none_action] = True
            return m
        return self._mask.copy()

    def canvas(self) -> np.ndarray:
        """The slotted canvas (``horizon`` × units job ids, 0 free)."""
        return self.core.canvas()

    def heuristic(self, priority: str = "sjf", rule_kill: bool = False) -> int:
        """The action of a heuristic (``rtsched.rl.rlschert.core.heuristic_action``) in the current state."""
        return heuristic_action(self.core, self.sim.view, priority, rule_kill=rule_kill, mask=self._mask)

    def teacher_action(self) -> int:
        """The imitation teacher's action (seed 001 §3.6): the kill of ``kill_teacher`` (the
        rule-based kill, or the remaining-time kill) when it fires, else the select (or None) of
        ``teacher``: a trained no-kill RLSchert model file (the paper's teacher; greedy) or a
        heuristic name (``sjf``, ``saf``, ...)."""
        cfg = self.cfg
        if cfg.kill:
            j = self.core.kill_by(self.kill_teacher, self.sim.view)
            if j is not None and self._mask[cfg.n_wait + j]:
                return cfg.n_wait + j
        if isinstance(self.teacher, str) and not self.teacher.endswith(".pt") and "/" not in self.teacher:
            return self.heuristic(self.teacher)
        if self._teacher_model is None:
            from rtsched.rl.nets import NumpyActor
            from rtsched.rl.modelfiles import load_model

            self._teacher_model = NumpyActor(load_model(self.teacher).actor)
        mask = self._mask.copy()
        mask[cfg.n_wait:cfg.none_action] = False
        if not mask.any():
            return int(np.flatnonzero(self._mask)[0])
        return int(np.argmax(self._teacher_model.logits(self.core.observe(self.sim.view), mask)))


__all__ = ["RLSchertEnv", "VASPLIKE", "trace_predictions"]
