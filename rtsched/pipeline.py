"""The one run pipeline: a ``RunSpec`` → ``execute(spec)`` → a ``RunRecord``.

Every command and study that turns a trace into numbers goes through here — ``rtsched simulate``,
experiment grids, ``rtsched compare`` and ``rtsched rl evaluate`` — so that they cannot drift
apart:

    read the trace → mark real-time jobs → build the machine → build the policy (and checkpoint
    model) → simulate in the one core → re-check the schedule with the independent validator →
    measure with the one metrics module → provenance (what ran, on which inputs).

A ``RunSpec`` is plain data (JSON-able): it names the trace by path, the machine and the policy
by name, so that a run is described, hashed, shipped to a worker and repeated exactly.  Loaded
traces and machines are cached per process (keyed by path, size and modification time), so that a
grid or an evaluation over many policies reads each input once.

Machine resolution when ``machine`` is None: the embedded default trace runs on ``mira`` (the
aligned 96-block model); a trace whose header names a machine (``; Machine: mira``, written by
rtsched's generators) runs on it; an SWF trace runs on a flat cluster of its header's ``MaxProcs``
(else ``MaxNodes``); a Cobalt log or ALCF CSV (Mira's logs) runs on ``mira``; anything else needs
an explicit machine.
"""
from __future__ import annotations

import hashlib
import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from heuristics.registry import SCHEMES, available_policies, describe_policy, make_policy, scheme, scheme_checkpoint
from rtsched import metrics
from rtsched.version import __version__
from rtsched.checkpoint import DEFAULT_IO, CheckpointKind, CheckpointModel, IOModel
from rtsched.errors import DecisionError, InputError, OptionError, RtschedError
from rtsched.io import FORMATS, read_workload
from rtsched.io.cleaning import gc_paused
from rtsched.jobs import Workload
from rtsched.machines import Machine, check_machine_spec, machine_from_spec
from rtsched.rtmarking import MARKING_MODES, RtMarking, mark_realtime
from rtsched.sim.core import Simulator
from rtsched.sim.result import SimResult
from rtsched.sim.source import first_too_big
from rtsched.validate import validate_schedule
from rtsched.window import WindowSpec, check_selects

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = REPO_ROOT / "traces" / "mira_like_week.swf"
EVENT_ORDERS = ("design", "rlscheduler")


class SpecError(OptionError):
    """A run specification that cannot run: ``field`` names the ``RunSpec`` field at fault (the
    command line maps it to its option), the message says what the field allows."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


# ------------------------------------------------------------------------------------- the spec
@dataclass(frozen=True)
class RunSpec:
    """Everything that decides a run's numbers (units: %, s).

    Attributes:
        trace: trace file path; None = the embedded default (the shipped Mira-like week).
        trace_format: ``swf`` | ``cobalt`` | ``alcf`` (None: from the extension).
        reader_options: options of the format's reader (``rtsched.io``), e.g. ``{"first_n": 500}``.
        jobs: (first, count): only this slice of the trace's jobs (in trace order), e.g. one of the
            RL papers' test sequences; None = every job.
        rt_percent, marking, marking_options, aps_path: real-time marking (``rtsched.rtmarking``).
        seed: seed of every random draw of the run (marking).
        machine: ``mira``, ``mira:BLOCKS``, ``flat:N`` or a partition ``.xml`` (None: module docstring).
        scheme: a seed-002 scheme (sets policy and checkpoint model); else ``policy``.
        policy: a registry name (``heuristics.registry``), a model file, or ``package.module:Class``.
        policy_options: keyword options of the policy (``backfill``, ``committed``, WCJS fields, ...);
            with a scheme, the scheme's options.
        checkpoint: checkpoint model text (``no``, ``sys[:S]``, ``app-PCT``, ``jit``); None: the
            scheme's, else ``no``.
        io: the checkpoint I/O cost model.
        event_order: the core's order of equal-time events (``design`` | ``rlscheduler``).
        window: the results window (``WindowSpec``); None: every job, utilization over the run.
        tau: τ of seed 002's bounded slowdown (s); ``tau_rl`` that of the RL papers' form;
            ``bsld_form`` which one the summary's ``mean_bsld`` reports.
        validate: re-check the schedule with the validator (does not change the numbers).
    """

    trace: str | None = None
    trace_format: str | None = None
    reader_options: Mapping[str, Any] = field(default_factory=dict)
    jobs: tuple[int, int] | None = None
    rt_percent: float = 0.0
    marking: str = "random"
    marking_options: Mapping[str, Any] = field(default_factory=dict)
    aps_path: str | None = None
    seed: int = 0
    machine: str | None = None
    scheme: str | None = None
    policy: str = "wfp2"
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    checkpoint: str | None = None
    io: IOModel = DEFAULT_IO
    event_order: str = "design"
    window: WindowSpec | None = None
    tau: int = metrics.TAU_SEED002
    tau_rl: int = metrics.TAU_RL
    bsld_form: str = "seed002"
    validate: bool = True

    def check(self) -> "RunSpec":
        """Refuse an option that cannot run, before any long work starts (raises ``SpecError``
        naming the option and the allowed values); returns self."""
        if isinstance(self.rt_percent, bool) or not isinstance(self.rt_percent, (int, float)):
            raise SpecError(f"must be a number in [0, 100] (a percentage), got {self.rt_percent!r} "
                            f"(a {type(self.rt_percent).__name__})", "rt_percent")
        if not (math.isfinite(self.rt_percent) and 0 <= self.rt_percent <= 100):
            raise SpecError(f"must be in [0, 100] %, got {self.rt_percent!r}", "rt_percent")
        if self.scheme is not None and not isinstance(self.scheme, str):
            raise SpecError(f"must be a scheme name ({', '.join(SCHEMES)}) or None, got {self.scheme!r}", "scheme")
        if self.scheme is None and (not isinstance(self.policy, str) or not self.policy.strip()):
            raise SpecError(f"must be a policy name ({', '.join(available_policies())}), a model file or "
                            f"package.module:Class, got {self.policy!r}", "policy")
        if self.trace_format is not None and self.trace_format not in FORMATS:
            raise SpecError(f"unknown trace format {self.trace_format!r}; choose from {', '.join(FORMATS)}",
                            "trace_format")
        if self.marking not in MARKING_MODES:
            raise SpecError(f"unknown marking {self.marking!r}; choose from {', '.join(MARKING_MODES)}", "marking")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise SpecError(f"must be a non-negative integer, got {self.seed!r}", "seed")
        for name in ("tau", "tau_rl"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise SpecError(f"must be a positive number of seconds, got {v!r}", name)
        if self.bsld_form not in metrics.BSLD_FORMS:
            raise SpecError(f"unknown form {self.bsld_form!r}; choose from {', '.join(metrics.BSLD_FORMS)}", "bsld_form")
        if self.event_order not in EVENT_ORDERS:
            raise SpecError(f"unknown event order {self.event_order!r}; choose from {', '.join(EVENT_ORDERS)}",
                            "event_order")
        if self.scheme is not None and self.scheme.strip().lower() not in SCHEMES:
            raise SpecError(f"unknown scheme {self.scheme!r}; choose from {', '.join(SCHEMES)}", "scheme")
        if self.checkpoint is not None:
            try:
                CheckpointModel.parse(self.checkpoint)
            except ValueError as exc:
                raise SpecError(str(exc), "checkpoint") from None
        if self.machine is not None:
            try:
                check_machine_spec(self.machine)
            except ValueError as exc:
                raise SpecError(str(exc), "machine") from None
        if self.jobs is not None:
            first, count = self.jobs
            if first < 0 or count < 1:
                raise SpecError(f"must be (first >= 0, count >= 1), got {self.jobs!r}", "jobs")
        return self

    def describe(self) -> dict[str, Any]:
        """The spec as plain JSON-able data."""
        d = asdict(self)
        d["window"] = self.window.as_dict() if self.window else None
        d["io"] = asdict(self.io)
        d["reader_options"] = dict(self.reader_options)
        d["marking_options"] = dict(self.marking_options)
        d["policy_options"] = {k: (v if isinstance(v, (str, int, float, bool, type(None))) else repr(v))
                               for k, v in self.policy_options.items()}
        d["jobs"] = list(self.jobs) if self.jobs else None
        return d


# ------------------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class LoadedTrace:
    """A loaded trace and where it came from."""

    workload: Workload
    path: str | None  # None: generated in memory
    sha256: str | None
    format: str | None


_TRACES: dict[tuple, LoadedTrace] = {}
_MACHINES: dict[tuple, Machine] = {}


def clear_caches() -> None:
    """Forget the loaded traces and machines (tests; a long session that edits its inputs is
    covered by the size/modification-time keys already)."""
    _TRACES.clear()
    _MACHINES.clear()


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _stamp(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def load_trace(spec: RunSpec) -> LoadedTrace:
    """The spec's trace, read once per process (cached by path, format, reader options, size and
    modification time)."""
    if spec.trace is None:
        if DEFAULT_TRACE.exists():
            return _load_file(str(DEFAULT_TRACE), "swf", dict(spec.reader_options))
        key = ("embedded", tuple(sorted(spec.reader_options.items())))
        if key not in _TRACES:  # the shipped file was removed: regenerate it from its seed
            from rtsched.generators import shipped_trace  # SciPy: only on this rare path

            wl = shipped_trace(DEFAULT_TRACE.name)
            unknown = sorted(set(spec.reader_options) - {"first_n"})
            if unknown:
                raise OptionError(f"reader option(s) {unknown} need the shipped file {DEFAULT_TRACE} "
                                  "(rtsched traces generate --shipped writes it)")
            first_n = spec.reader_options.get("first_n")
            if first_n:  # the reader's first_n: the first N jobs in (submit, id) order, a Workload's order
                wl = replace(wl, jobs=wl.jobs[:first_n])
            _TRACES[key] = LoadedTrace(wl, None, None, "swf")
        return _TRACES[key]
    return _load_file(spec.trace, spec.trace_format, dict(spec.reader_options))


def _load_file(path: str, fmt: str | None, options: dict) -> LoadedTrace:
    if path == "-":  # standard input: never cached
        return LoadedTrace(read_workload(path, fmt, **options), "-", None, fmt)
    try:
        stamp = _stamp(path)
    except OSError as exc:
        raise InputError(f"cannot read trace: {exc.strerror or exc}", path=path) from None
    key = (os.path.abspath(path), fmt, tuple(sorted(options.items())), stamp)
    hit = _TRACES.get(key)
    if hit is None:
        workload = read_workload(path, fmt, **options)
        if not len(workload):
            raise InputError("the trace has no jobs", path=path)
        hit = _TRACES[key] = LoadedTrace(workload, path, file_sha256(path), fmt or _format_of(workload))
    return hit


def _format_of(workload: Workload) -> str | None:
    return getattr(workload.header, "fmt", None) or None


def machine_spec_for(spec: RunSpec, trace: LoadedTrace) -> str:
    """The machine spec a run uses (module docstring: the rule when ``spec.machine`` is None)."""
    if spec.machine is not None:
        return spec.machine
    if spec.trace is None:
        return "mira"
    header = trace.workload.header
    named = header.get("Machine") if hasattr(header, "get") else None
    if named:
        return str(named).split()[0]
    fmt = trace.format
    if fmt == "swf":
        for key in ("MaxProcs", "MaxNodes"):
            value = _header_int(header, key)
            if value:
                return f"flat:{value}"
        raise SpecError(f"{trace.path}: the SWF header gives no machine size (MaxProcs / MaxNodes); give one "
                        "(flat:N, mira, mira:BLOCKS or a partition .xml)", "machine")
    if fmt in ("cobalt", "alcf"):
        return "mira"
    raise SpecError(f"{trace.path}: no machine given; use flat:N, mira, mira:BLOCKS or a partition .xml", "machine")


def _header_int(header, key: str) -> int | None:
    raw = header.get(key) if hasattr(header, "get") else None
    if not raw:
        return None
    try:
        value = int(float(str(raw).split()[0]))
    except ValueError:
        return None
    return value if value > 0 else None


def load_machine(text: str) -> Machine:
    """A machine from its spec, built once per process (a partition file also by size and time)."""
    key: tuple = (text,)
    if text.strip().lower().endswith(".xml"):
        try:
            key = (os.path.abspath(text), _stamp(text))
        except OSError as exc:
            raise InputError(f"cannot read the partition file: {exc.strerror or exc}", path=text) from None
    hit = _MACHINES.get(key)
    if hit is None:
        try:
            hit = _MACHINES[key] = machine_from_spec(text)
        except ValueError as exc:
            if isinstance(exc, RtschedError):
                raise
            raise SpecError(str(exc), "machine") from None
    return hit


def checkpoint_model(spec: RunSpec, policy: Any = None) -> CheckpointModel:
    """The spec's checkpoint model: ``checkpoint`` when given, else its scheme's, else the policy's
    own ``default_checkpoint`` (a trained model's: the one it was trained under), else ``no``."""
    if spec.checkpoint is not None:
        return CheckpointModel.parse(spec.checkpoint, io=spec.io)
    if spec.scheme is not None:
        options = spec.policy_options
        return scheme_checkpoint(spec.scheme, io=spec.io, sys_interval=options.get("sys_interval"))
    return CheckpointModel.parse(getattr(policy, "default_checkpoint", None) or "no", io=spec.io)


def build_policy(spec: RunSpec):
    """(policy, checkpoint model) of the spec: a scheme fixes both; otherwise the policy by name
    and the checkpoint model of :func:`checkpoint_model`."""
    options = dict(spec.policy_options)
    try:
        if spec.scheme is not None:
            policy, model = scheme(spec.scheme, io=spec.io, **options)
        else:
            policy, model = make_policy(spec.policy, **options), None
    except ValueError as exc:
        if isinstance(exc, RtschedError):
            raise
        text = str(exc)
        # about the backfilling when its head says so, not when the policy's own name does
        # (`--policy fcfs:backfill=true` was reported as a --backfill error)
        head = text.split(";")[0].replace(repr(spec.policy), "").replace(repr(spec.scheme), "")
        field = "backfill" if "backfill" in head else ("scheme" if spec.scheme else "policy")
        raise SpecError(text, field) from None
    if spec.checkpoint is not None:
        model = CheckpointModel.parse(spec.checkpoint, io=spec.io)
    return policy, model or checkpoint_model(spec, policy)


# ------------------------------------------------------------------------------------- the record
class RunRecord:
    """What a run produced: the simulation (outcomes, schedule), its measures and its provenance.

    ``summary`` (computed on first use) is ``rtsched.metrics.summary_dict`` plus the reader's
    cleaning counts; ``sequence_score(goal)`` is the RL papers' per-sequence score
    (``rtsched.metrics.sequence_metric``); ``provenance`` says what ran: trace (path, sha256,
    format, jobs), machine, policy, scheme, checkpoint, RT marking, seed, τ, window, event order,
    rtsched version.
    """

    def __init__(self, spec: RunSpec, workload: Workload, machine: Machine, result: SimResult, policy_name: str,
                 checkpoint: CheckpointModel, window: tuple[int, int] | None, provenance: dict, timings: dict,
                 cleaning: dict) -> None:
        self.spec = spec
        self.workload = workload
        self.machine = machine
        self.result = result
        self.policy_name = policy_name
        self.checkpoint = checkpoint
        self.window = window
        self.provenance = provenance
        self.timings = timings
        self.cleaning = cleaning
        # the utility and backfilling the policy used, in words (heuristics.registry.describe_policy);
        # for the printed header only: not in the JSON record, whose keys stay as they were
        self.policy_description = ""
        self._summary: dict | None = None
        self._table = None

    @property
    def outcomes(self):
        return self.result.outcomes

    @property
    def schedule(self):
        return self.result.schedule

    @property
    def summary(self) -> dict:
        """``rtsched.metrics.summary_dict`` of the run (window and τs of the spec), built once."""
        if self._summary is None:
            t = time.perf_counter()
            spec = self.spec
            summary = metrics.summary_dict(self.result, self.window, tau_seed002=spec.tau, tau_rl=spec.tau_rl,
                                           bsld=spec.bsld_form)
            summary["cleaning"] = dict(self.cleaning)
            self._summary = summary
            self.timings["metrics_s"] = self.timings.get("metrics_s", 0.0) + time.perf_counter() - t
        return self._summary

    def job_table(self):
        """The run's ``rtsched.metrics.job_table`` (a pandas DataFrame, window applied), built once."""
        if self._table is None:
            self._table = metrics.job_table(self.result, self.window, tau_seed002=self.spec.tau,
                                            tau_rl=self.spec.tau_rl)
        return self._table

    def sequence_score(self, goal: str, *, util_window: str = "last_end") -> float:
        """The RL papers' score of the run's jobs (``rtsched.metrics.sequence_metric``; τ = ``tau_rl``)."""
        outs = self.result.outcomes
        jobs = [o.job for o in outs]
        return metrics.sequence_metric(goal, [j.submit for j in jobs], [j.runtime for j in jobs],
                                       [o.first_start for o in outs], [j.nodes for j in jobs],
                                       self.machine.total_nodes, [j.user for j in jobs], tau=self.spec.tau_rl,
                                       util_window=util_window)

    def to_json(self) -> dict:
        """The ``--json`` object: provenance keys first, then the metrics."""
        return {**self.provenance, **self.summary}


def _display_path(spec: RunSpec, trace: LoadedTrace) -> str | None:
    """The trace as the user named it; the embedded default relative to the repository."""
    if spec.trace is not None:
        return spec.trace
    if trace.path is None:
        return None
    try:
        return Path(trace.path).resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return trace.path


def _mark(spec: RunSpec, workload: Workload) -> Workload:
    if not spec.rt_percent and not spec.marking_options.get("noncheckpointable_percent"):
        return workload
    try:
        marking = RtMarking(percent=spec.rt_percent, mode=spec.marking, seed=spec.seed, aps_path=spec.aps_path,
                            **dict(spec.marking_options))
    except TypeError as exc:
        raise SpecError(str(exc), "marking_options") from None
    return mark_realtime(workload, marking)


def _slice(workload: Workload, jobs: tuple[int, int] | None) -> Workload:
    if jobs is None:
        return workload
    first, count = jobs
    if first + count > len(workload):
        raise SpecError(f"jobs {first}..{first + count - 1} are past the trace's {len(workload)} jobs", "jobs")
    return workload.replace_jobs(workload.jobs[first:first + count],
                                 name=f"{workload.name}[{first}:{first + count}]")


class _TimedPolicy:
    """Forwards ``decide`` to a policy and adds up the time it takes (s)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.name = getattr(policy, "name", type(policy).__name__)
        self.seconds = 0.0

    def decide(self, view):
        t = time.perf_counter()
        try:
            return self.policy.decide(view)
        finally:
            self.seconds += time.perf_counter() - t


def execute(spec: RunSpec, *, workload: Workload | None = None, policy: Any = None,
            progress: Callable[[int, int], None] | None = None, progress_every: int = 200,
            time_decisions: bool = False, refuse_idle_checkpoint: bool = False) -> RunRecord:
    """Run ``spec`` through the pipeline (module docstring) and return its record.

    Args:
        workload: an in-memory workload to use instead of reading ``spec.trace`` (offline
            instances, generated workloads, the RL papers' cleaned traces); its provenance is its name.
        policy: a policy object built by the caller (e.g. a trained model given trace-level feature
            columns) instead of ``spec.policy``; the checkpoint model is still the spec's.
        progress: ``progress(done_jobs, total_jobs)``, called every ``progress_every`` completions.
        time_decisions: add up the time the policy spends deciding (``timings["decide_s"]``).
        refuse_idle_checkpoint: refuse a ``checkpoint`` given as JIT for a policy that never
            preempts (its ``preemptive`` attribute is False): the JIT write happens only at a
            preemption, so the option could never take effect (``rtsched simulate`` sets it; a
            grid or a comparison that crosses policies with checkpoint models does not).
    """
    spec.check()
    timings: dict[str, float] = {}
    t = time.perf_counter()
    policy, ckpt = _policy_and_checkpoint(spec, policy, refuse_idle_checkpoint)
    trace = LoadedTrace(workload, None, None, None) if workload is not None else load_trace(spec)
    machine_text = machine_spec_for(spec, trace)
    machine = load_machine(machine_text)
    description = describe_policy(policy)  # before any wrapper
    if time_decisions:
        policy = _TimedPolicy(policy)
    timings["load_s"] = time.perf_counter() - t
    t = time.perf_counter()
    marked, window = _run_workload(spec, trace, machine)
    timings["setup_s"] = time.perf_counter() - t
    t = time.perf_counter()
    # The core makes no reference cycles: collections would only walk the job objects (building
    # the simulator's three objects per job with the collector on takes 3x as long at 500,000 jobs).
    # A policy that looks only at waiting and running jobs lets the core drop each job's state
    # when it finishes: the live set is then the queue and the running jobs, not the trace.
    with gc_paused():
        sim = Simulator(marked, machine, checkpoint=ckpt, io=spec.io, progress=progress,
                        progress_every=progress_every, event_order=spec.event_order,
                        forget_done=getattr(policy, "live_jobs_only", False) is True)
        try:
            result = sim.run(policy)
        except DecisionError as exc:  # a policy asked for the impossible: say which one
            raise DecisionError(f"policy {getattr(policy, 'name', type(policy).__name__)}: {exc}") from None
        io = sim.io
        del sim  # its per-job state (the largest part of a run's memory) is not needed past the run
    timings["simulate_s"] = time.perf_counter() - t
    if time_decisions:
        timings["decide_s"] = policy.seconds
    if spec.validate:
        t = time.perf_counter()
        validate_schedule(result.schedule, marked, machine, io, outcomes=result.outcomes)
        timings["validate_s"] = time.perf_counter() - t
    cleaning = getattr(trace.workload.header, "cleaning", None)
    policy_name = getattr(policy, "name", type(policy).__name__)
    n_rt = int(result.outcomes.job_column("is_rt").sum())  # the column the summary groups by (built once)
    provenance = _provenance(spec, trace, marked, n_rt, machine, machine_text, policy_name, ckpt,
                             embedded=spec.trace is None and workload is None)
    record = RunRecord(spec, marked, machine, result, policy_name, ckpt, window, provenance, timings,
                       dict(cleaning) if cleaning else {})
    record.policy_description = description
    return record


def _policy_and_checkpoint(spec: RunSpec, policy: Any, refuse_idle_checkpoint: bool) -> tuple[Any, CheckpointModel]:
    """The policy (built from the spec unless given: a bad name or option fails before any trace
    is read) and the checkpoint model; a JIT model refused for a policy that never preempts when
    ``refuse_idle_checkpoint``."""
    if policy is None:
        policy, ckpt = build_policy(spec)
    else:
        ckpt = checkpoint_model(spec, policy)
    if (refuse_idle_checkpoint and spec.checkpoint is not None and ckpt.kind is CheckpointKind.JIT
            and getattr(policy, "preemptive", True) is False):
        raise SpecError(f"{spec.checkpoint!r}: policy {getattr(policy, 'name', spec.policy)} never preempts, and a "
                        "JIT checkpoint is written only at a preemption: it would change nothing; leave it out, "
                        "or choose a preemptive policy (preempt, wcjs, rtmix) or scheme", "checkpoint")
    return policy, ckpt


def _run_workload(spec: RunSpec, trace: LoadedTrace, machine: Machine) -> tuple[Workload, tuple[int, int] | None]:
    """The jobs that run (the spec's slice, RT-marked), checked against the machine, and the
    results window in s (None: all)."""
    marked = _mark(spec, _slice(trace.workload, spec.jobs))
    nodes = marked.column("nodes")  # columns: a reader's workload builds no Job object here
    first = first_too_big(machine, nodes)
    if first is not None:
        raise InputError(f"job {int(marked.column('id')[first])} requests {int(nodes[first])} nodes, more than "
                         f"{machine.describe()} has; choose a larger --machine", path=trace.path, field="nodes")
    window = spec.window.seconds(marked.start_time) if spec.window else None
    if window is not None:
        check_selects(spec.window, window, marked.column("submit").tolist(), marked.start_time)
    return marked, window


def _provenance(spec: RunSpec, trace: LoadedTrace, marked: Workload, n_rt: int, machine: Machine, machine_text: str,
                policy_name: str, ckpt: CheckpointModel, *, embedded: bool) -> dict:
    """What ran, on which inputs (``RunRecord.provenance``; the ``--json`` keys before the metrics);
    ``n_rt``: the real-time jobs among ``marked``."""
    return {
        "trace": _display_path(spec, trace),
        "trace_name": trace.workload.name,
        "trace_sha256": trace.sha256,
        "trace_format": trace.format,
        "embedded_default": embedded,
        "jobs": len(marked),
        "rt_jobs": n_rt,
        "batch_jobs": len(marked) - n_rt,
        "job_slice": list(spec.jobs) if spec.jobs else None,
        "machine": machine.name,
        "machine_spec": machine_text,
        "machine_nodes": machine.total_nodes,
        "policy": policy_name,
        "scheme": spec.scheme,
        "policy_options": spec.describe()["policy_options"],
        "checkpoint": ckpt.label,
        "rt_percent": spec.rt_percent,
        "marking": spec.marking if spec.rt_percent else None,
        "seed": spec.seed,
        "tau": spec.tau if spec.bsld_form == "seed002" else spec.tau_rl,
        "window_spec": spec.window.text() if spec.window else None,
        "event_order": spec.event_order,
        "validated": spec.validate,
        "rtsched_version": __version__,
    }


def with_options(spec: RunSpec, **changes: Any) -> RunSpec:
    """A copy of ``spec`` with fields changed (a dataclass ``replace`` that checks the result)."""
    return replace(spec, **changes).check()


__all__ = ["DEFAULT_TRACE", "EVENT_ORDERS", "RunRecord", "RunSpec", "SpecError", "LoadedTrace", "build_policy",
           "checkpoint_model", "clear_caches", "execute", "file_sha256", "load_machine", "load_trace", "machine_spec_for", "with_options"]
