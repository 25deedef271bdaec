"""Weighted-cost job scheduling (WCJS, seed 002 §6, Alg. 1-2): configuration, estimates and costs.

Everything here is walltime-based: a policy never sees a job's actual runtime.  Times in s.

* **Estimated slowdown** (eqs. 56-58).  A waiting job: ``(now - submit + remaining) / walltime``
  with ``remaining = walltime - saved`` (the work a preempted job still has to do after restoring its
  checkpoint; ``= walltime`` for a job that never ran, which is eq. 56).  A job holding resources:
  ``(estimated_end - submit) / walltime`` (eq. 57), where the estimated end is the core's
  walltime-based ``expected_end`` of the current stint (eq. 58: ``now + walltime - work done``, plus
  the restart read and the periodic writes still due in that stint).
* **Slowdown after a preemption** (the BJ-threshold criterion): the estimated slowdown the BJ would
  have if it were preempted now and restarted at once:
  ``(now + overhead + (walltime - kept) - submit) / walltime`` where, for the checkpoint model of the
  preemption, ``kept`` is the work that survives (JIT: all the work done; SYS/APP: the last completed
  checkpoint ``saved``; NO: nothing) and ``overhead`` = JIT write (only when there is unsaved work)
  + restart read (only when something is kept).  Lost work is ``done - kept``.  "Work done" is
  estimated from the job's public fields: ``saved`` plus the time run since the last completed
  checkpoint, or since the stint began less its restart read (an in-progress periodic write is
  counted as work: a small over-estimate).  The authors' code tested the BJ's *current* estimated
  slowdown instead; ``threshold_estimate = "current"`` selects that.
* **Weighted cost** of preempting a BJ (Alg. 2 lines 17-27, authors' factors), a product of
  ``nodes`` (requested; ``cost_nodes = "allocated"`` for the partition size),
  ``near_completion_factor`` (5) if ``remaining <= min(near_completion_fraction * walltime,
  near_completion_cap)`` (25 %, 900 s) with ``remaining = expected_end - now``,
  ``max(1 + ln(age / ckpt_age_scale), 1)`` with ``age = now - max(last checkpoint, stint start)``
  (900 s), and ``log2(slowdown_log_offset + current estimated slowdown)`` (offset 2).
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

from rtsched.checkpoint import CheckpointKind, CheckpointModel, IOModel
from rtsched.sim.state import WAITING, JobState


# ------------------------------------------------------------------------------------- thresholds
@dataclass(frozen=True, slots=True)
class Thresholds:
    """Slowdown thresholds by job category (narrow/wide by nodes, short/long by walltime)."""

    narrow_short: float
    narrow_long: float
    wide_short: float
    wide_long: float

    @classmethod
    def of(cls, value: Any) -> "Thresholds":
        """Build from a ``Thresholds``, a mapping or a sequence.

        Mapping keys: ``narrow`` (both narrow categories), ``narrow_short``, ``narrow_long``,
        ``wide_short``, ``wide_long`` (``-`` accepted for ``_``); every category must be given.
        Sequence: 3 values (narrow, wide-short, wide-long: the authors' Mira form) or 4 values
        (narrow-short, narrow-long, wide-short, wide-long: their Curie form).
        """
        if isinstance(value, Thresholds):
            return value
        if isinstance(value, Mapping):
            d = {str(k).replace("-", "_").lower(): float(v) for k, v in value.items()}
            if "narrow" in d:
                n = d.pop("narrow")
                d.setdefault("narrow_short", n)
                d.setdefault("narrow_long", n)
            names = ("narrow_short", "narrow_long", "wide_short", "wide_long")
            unknown = sorted(set(d) - set(names))
            if unknown:
                raise ValueError(f"unknown threshold categories {unknown}; use narrow, narrow_short, narrow_long, "
                                 "wide_short, wide_long")
            missing = [n for n in names if n not in d]
            if missing:
                raise ValueError(f"thresholds miss the categories {missing}")
            return cls(**d)
        values = [float(v) for v in value]
        if len(values) == 3:
            return cls(values[0], values[0], values[1], values[2])
        if len(values) == 4:
            return cls(*values)
        raise ValueError(f"thresholds need 3 (narrow, wide-short, wide-long) or 4 values, got {len(values)}")

    def get(self, wide: bool, long: bool) -> float:
        if wide:
            return self.wide_long if long else self.wide_short
        return self.narrow_long if long else self.narrow_short


# Reference values of the authors' simulator (anchors.md §1.1; DESIGN.md).
MIRA_WK1_BJ = Thresholds(1.5, 1.5, 17.31, 4.77)
MIRA_WK1_RT = Thresholds(1.1, 1.1, 2.0, 1.59)
CURIE_BJ = Thresholds(1.5, 3.21, 13.5, 6.02)
CURIE_RT = Thresholds(1.1, 1.1, 2.0, 2.0)


# ------------------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class WcjsConfig:
    """Every threshold, weight and factor of WCJS (defaults: the authors' Mira wk1 values).

    Attributes (times in s):
        bj_thresholds: a BJ is not preempted if that would push its estimated slowdown past this.
        rt_thresholds: an RTJ whose estimated slowdown exceeds this enters the high-priority queue.
        narrow_max_nodes: narrow = requested nodes <= this (4096); wide otherwise.
        short_max_walltime: short = walltime <= this (7200 s = 120 min); long otherwise.
        near_completion_factor / near_completion_fraction / near_completion_cap: the cost weight
            (5) of a BJ whose remaining walltime is <= min(fraction * walltime, cap) (25 %, 900 s).
        ckpt_age_scale: s in max(1 + ln(age / scale), 1) (900 s).
        slowdown_log_offset: c in log2(c + slowdown) (2).
        weight_near_completion / weight_checkpoint_age / weight_slowdown: switch each factor.
        cost_nodes: "requested" (authors) or "allocated" (partition size) nodes in the cost.
        reject_larger / reject_threshold: switch the size and BJ-threshold eligibility criteria
            (the RTJ criterion is not optional: RTJs are never preempted).
        threshold_estimate: "after" (slowdown after the preemption, with its overheads) or
            "current" (the BJ's current estimated slowdown, as the authors' code).
        priority / backfill: the batch policy of the low-priority queue (wfp2 + first-fit).
        blocking: while a high-priority RTJ waits: "rt-only" (the default, the authors' simulator:
            BJs start as usual, low-priority RTJs wait), "block" (Alg. 1's text: no low-priority job
            starts; a wide RTJ that cannot preempt then stalls every BJ, docs/realtime.md) or
            "backfill" (low-priority jobs may start if they do not delay the first waiting one).
        wake_on_threshold: ask the simulator for a scheduling pass when a waiting RTJ crosses its
            threshold (otherwise it is promoted at the next event).
    """

    bj_thresholds: Thresholds = MIRA_WK1_BJ
    rt_thresholds: Thresholds = MIRA_WK1_RT
    narrow_max_nodes: int = 4096
    short_max_walltime: int = 7200
    near_completion_factor: float = 5.0
    near_completion_fraction: float = 0.25
    near_completion_cap: float = 900.0
    ckpt_age_scale: float = 900.0
    slowdown_log_offset: float = 2.0
    weight_near_completion: bool = True
    weight_checkpoint_age: bool = True
    weight_slowdown: bool = True
    cost_nodes: str = "requested"
    reject_larger: bool = True
    reject_threshold: bool = True
    threshold_estimate: str = "after"
    priority: str = "wfp2"
    backfill: str = "ff"
    blocking: str = "rt-only"
    wake_on_threshold: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "bj_thresholds", Thresholds.of(self.bj_thresholds))
        object.__setattr__(self, "rt_thresholds", Thresholds.of(self.rt_thresholds))
        if self.cost_nodes not in ("requested", "allocated"):
            raise ValueError(f"cost_nodes must be 'requested' or 'allocated', got {self.cost_nodes!r}")
        if self.threshold_estimate not in ("after", "current"):
            raise ValueError(f"threshold_estimate must be 'after' or 'current', got {self.threshold_estimate!r}")
        if self.blocking not in ("block", "backfill", "rt-only"):
            raise ValueError(f"blocking must be 'rt-only', 'block' or 'backfill', got {self.blocking!r}")
        if self.ckpt_age_scale <= 0:
            raise ValueError("ckpt_age_scale must be > 0 s")

    # --- presets and loading ---------------------------------------------------------------
    @classmethod
    def preset(cls, name: str) -> "WcjsConfig":
        """``mira-wk1`` (the defaults: the authors' Mira wk1 values) or ``curie`` (their CEA-Curie
        thresholds, four categories: BJ 1.5 / 3.21 / 13.5 / 6.02, RTJ 1.1 / 1.1 / 2.0 / 2.0 for
        narrow-short, narrow-long, wide-short, wide-long)."""
        key = name.strip().lower().replace("_", "-")
        if key in ("mira", "mira-wk1", "wk1", "default"):
            return cls()
        if key in ("curie", "cea-curie"):
            return cls(bj_thresholds=CURIE_BJ, rt_thresholds=CURIE_RT)
        raise ValueError(f"unknown WCJS preset {name!r}; use mira-wk1 or curie")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "WcjsConfig":
        """Build from a mapping (e.g. a TOML table): an optional ``preset`` ("mira-wk1", "curie"),
        then any field by name; ``bj_thresholds``/``rt_thresholds`` take what ``Thresholds.of``
        takes.  Shorthands ``bj_narrow``, ``bj_wide_short``, ... (and ``rt_...``) set one category.
        Unknown keys raise ValueError naming them."""
        data = dict(data or {})
        base = cls.preset(str(data.pop("preset"))) if "preset" in data else cls()
        names = {f.name for f in fields(cls)}
        updates: dict[str, Any] = {}
        per_cat: dict[str, dict[str, float]] = {"bj": {}, "rt": {}}
        unknown = []
        for key, value in data.items():
            k = str(key).replace("-", "_").lower()
            if k in names:
                updates[k] = value
            elif k[:3] in ("bj_", "rt_") and k[3:] in ("narrow", "narrow_short", "narrow_long", "wide_short",
                                                        "wide_long"):
                per_cat[k[:2]][k[3:]] = float(value)
            else:
                unknown.append(key)
        if unknown:
            raise ValueError(f"unknown WCJS configuration keys {sorted(map(str, unknown))}; "
                             f"known: preset, {', '.join(sorted(names))}, bj_/rt_<category>")
        cfg = replace(base, **updates)
        for kind, cats in per_cat.items():
            if cats:
                attr = f"{kind}_thresholds"
                cur = getattr(cfg, attr)
                merged = {"narrow_short": cur.narrow_short, "narrow_long": cur.narrow_long,
                          "wide_short": cur.wide_short, "wide_long": cur.wide_long}
                if "narrow" in cats:
                    merged["narrow_short"] = merged["narrow_long"] = cats.pop("narrow")
                merged.update(cats)
                cfg = replace(cfg, **{attr: Thresholds(**merged)})
        return cfg

    @classmethod
    def from_toml(cls, source: str | Path, table: str | None = "wcjs") -> "WcjsConfig":
        """Load from a TOML file path or TOML text; ``table`` names the table holding the
        configuration (dotted names allowed; None: the whole document)."""
        text = None
        if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and "=" not in source):
            path = Path(source)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise ValueError(f"{path}: cannot read the WCJS configuration: {exc}") from exc
            where = str(path)
        else:
            text = str(source)
            where = "<toml text>"
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{where}: not valid TOML: {exc}") from exc
        if table:
            for part in table.split("."):
                if part not in doc:
                    raise ValueError(f"{where}: no [{table}] table")
                doc = doc[part]
        try:
            return cls.from_dict(doc)
        except ValueError as exc:
            raise ValueError(f"{where}: [{table}]: {exc}") from exc

    @classmethod
    def coerce(cls, value: Any) -> "WcjsConfig":
        """A config from a ``WcjsConfig``, a preset name, a mapping, a TOML path or None (defaults)."""
        if value is None:
            return cls()
        if isinstance(value, WcjsConfig):
            return value
        if isinstance(value, Mapping):
            return cls.from_dict(value)
        if isinstance(value, (str, Path)):
            s = str(value)
            if s.endswith(".toml"):
                return cls.from_toml(s)
            return cls.preset(s)
        raise TypeError(f"cannot make a WCJS configuration from {type(value).__name__}")

    # --- categories ------------------------------------------------------------------------
    def is_wide(self, nodes: int) -> bool:
        return nodes > self.narrow_max_nodes

    def is_long(self, walltime: int) -> bool:
        return walltime > self.short_max_walltime

    def category(self, nodes: int, walltime: int) -> str:
        """"narrow-short", "narrow-long", "wide-short" or "wide-long" (requested nodes, walltime)."""
        return f"{'wide' if self.is_wide(nodes) else 'narrow'}-{'long' if self.is_long(walltime) else 'short'}"

    def rt_threshold(self, nodes: int, walltime: int) -> float:
        return self.rt_thresholds.get(self.is_wide(nodes), self.is_long(walltime))

    def bj_threshold(self, nodes: int, walltime: int) -> float:
        return self.bj_thresholds.get(self.is_wide(nodes), self.is_long(walltime))


# ------------------------------------------------------------------------------------- estimates
def estimated_slowdown(js: JobState, now: int) -> float:
    """Walltime-based estimated slowdown (eqs. 56-58); see the module docstring."""
    info = js.info
    w = info.walltime
    if js.status == WAITING or js.alloc < -1:
        remaining = w - js.saved if js.saved < w else 0
        return (now - info.submit + remaining) / w
    end = js.expected_end if js.expected_end > now else now
    return (end - info.submit) / w


def is_high_priority(js: JobState, now: int, cfg: "WcjsConfig") -> bool:
    """Whether WCJS serves RTJ ``js`` in its high-priority queue at ``now`` (Alg. 1): its estimated
    slowdown exceeds its category's RT threshold; at or below it the RTJ waits in the batch queue."""
    info = js.info
    return estimated_slowdown(js, now) > cfg.rt_threshold(info.nodes, info.walltime)


def threshold_crossing(submit: int, walltime: int, threshold: float) -> int:
    """First integer time t at which a never-run waiting job's estimated slowdown exceeds
    ``threshold``: (t - submit + walltime) / walltime > threshold."""
    t = submit + int(math.floor((threshold - 1.0) * walltime)) + 1
    while t - 1 >= submit and (t - 1 - submit + walltime) / walltime > threshold:
        t -= 1
    while not (t - submit + walltime) / walltime > threshold:
        t += 1
    return t


def next_rt_threshold_crossing(jobs, now: int, cfg: WcjsConfig) -> int | None:
    """The earliest time after ``now`` at which a waiting RTJ of ``jobs`` that never ran to a checkpoint
    crosses its threshold (``threshold_crossing`` of ``cfg.rt_threshold``): when WCJS makes it
    high-priority, and so when a scheduler following WCJS needs a pass; None if there is none."""
    first = None
    for js in jobs:
        info = js.info
        if info.kind != "rt" or js.saved:
            continue
        t = threshold_crossing(info.submit, info.walltime, cfg.rt_threshold(info.nodes, info.walltime))
        if t > now and (first is None or t < first):
            first = t
    return first


def work_since_checkpoint(js: JobState, now: int, io: IOModel) -> int:
    """Estimated work (s) done since the job's last restorable point (0 for a job not running).

    If a periodic checkpoint completed during the current stint, the time since it ended; else the
    time since the stint began, less the restart read when the stint began with one."""
    if js.run_start < 0:
        return 0
    if js.last_ckpt_time > js.run_start:
        since = now - js.last_ckpt_time
    else:
        since = now - js.run_start - (io.read_seconds(js.alloc_nodes) if js.saved > 0 else 0)
    return since if since > 0 else 0


def preemption_penalty(js: JobState, now: int, model: CheckpointModel, io: IOModel) -> tuple[int, int, int]:
    """(kept work, lost work, time overhead) in s if ``js`` were preempted now under ``model``.

    Overhead = the JIT write (when there is unsaved work) + the restart read (when work is kept)."""
    since = work_since_checkpoint(js, now, io)
    done = min(js.saved + since, js.info.walltime)
    nodes = js.alloc_nodes
    kind = model.kind
    if kind is CheckpointKind.JIT:
        kept = done
        overhead = io.write_seconds(nodes) if since > 0 else 0
    elif kind is CheckpointKind.NO:
        kept = 0
        overhead = 0
    else:
        kept = min(js.saved, done)
        overhead = 0
    if kept > 0:
        overhead += io.read_seconds(nodes)
    return kept, done - kept, overhead


def slowdown_after_preemption(js: JobState, now: int, model: CheckpointModel, io: IOModel) -> float:
    """Estimated slowdown of ``js`` if preempted now and restarted at once (module docstring)."""
    kept, _lost, overhead = preemption_penalty(js, now, model, io)
    w = js.info.walltime
    return (now + overhead + (w - kept) - js.info.submit) / w


def preemption_cost_terms(js: JobState, now: int, cfg: WcjsConfig) -> tuple[float, float, float, float]:
    """The factors of the WCJS weighted cost of preempting running BJ ``js`` now: (nodes,
    near-completion weight, checkpoint-age weight, slowdown weight); a switched-off factor is 1.
    Their product is :func:`preemption_cost`."""
    info = js.info
    w = info.walltime
    nodes = float(info.nodes if cfg.cost_nodes == "requested" else js.alloc_nodes)
    end = js.expected_end if js.expected_end > now else now
    near = age_f = sd_f = 1.0
    if cfg.weight_near_completion:
        if end - now <= min(cfg.near_completion_fraction * w, cfg.near_completion_cap):
            near = cfg.near_completion_factor
    if cfg.weight_checkpoint_age:
        ref = js.last_ckpt_time if js.last_ckpt_time > js.run_start else js.run_start
        age = now - ref
        if age > 0:
            f = 1.0 + math.log(age / cfg.ckpt_age_scale)
            if f > 1.0:
                age_f = f
    if cfg.weight_slowdown:
        sd_f = math.log2(cfg.slowdown_log_offset + (end - info.submit) / w)
    return nodes, near, age_f, sd_f


def preemption_cost(js: JobState, now: int, cfg: WcjsConfig) -> float:
    """WCJS weighted cost of preempting running BJ ``js`` now (module docstring)."""
    nodes, near, age_f, sd_f = preemption_cost_terms(js, now, cfg)
    score = nodes
    if near != 1.0:
        score *= near
    if age_f != 1.0:
        score *= age_f
    if cfg.weight_slowdown:
        score *= sd_f
    return score


__all__ = ["is_high_priority", "next_rt_threshold_crossing", "Thresholds", "WcjsConfig", "MIRA_WK1_BJ", "MIRA_WK1_RT", "CURIE_BJ", "CURIE_RT", "estimated_slowdown",
           "threshold_crossing", "work_since_checkpoint", "preemption_penalty", "slowdown_after_preemption",
           "preemption_cost", "preemption_cost_terms"]
