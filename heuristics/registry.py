"""Policies and seed-002 schemes by name (the CLI and the experiment runner resolve names here).

``make_policy(name, **options)``:

* batch policies ``fcfs``, ``sjf``, ``wfp3``, ``unicep``, ``f1``, ``smallest``, ``largest`` and Cobalt's
  ``default``, ``wfp``, ``wfp2``, ``unicef``; option ``backfill`` (default ``ff``);
* a path to a trained RL model (``rtsched rl train``; ``rtsched.rl.policy.load_policy``), option ``backfill``;
* ``baseline`` — every job as a BJ: options ``priority`` (``wfp2``), ``backfill`` (``ff``);
* ``highpq`` — high-priority RT queue: ``priority``, ``backfill``, ``rt_order`` (``fcfs`` |
  ``slowdown``), ``blocking`` (``block`` | ``backfill``);
* ``preempt`` — the preemptive scheme: the same options plus ``checkpoint`` (a ``CheckpointModel`` or
  its text; default: the simulation's model);
* ``wcjs`` — weighted-cost job scheduling: ``config`` (a ``WcjsConfig``, a preset name ``mira-wk1`` /
  ``curie``, a mapping or a ``.toml`` path), ``checkpoint``, and any ``WcjsConfig`` field or
  ``bj_<category>`` / ``rt_<category>`` shorthand as a keyword (applied over ``config``).

``scheme(name, **options) -> (policy, CheckpointModel)`` builds a scheme of seed 002 (see
``SCHEMES``); options go to ``make_policy`` except ``sys_interval`` (s, SYS schemes) and ``io``
(an ``IOModel``), which shape the checkpoint model.
"""
from __future__ import annotations

import os

from dataclasses import fields
from typing import Any

from heuristics.batch import BatchPolicy
from heuristics.priorities import PRIORITIES, get_priority
from heuristics.realtime import HighPriorityQueuePolicy, PreemptivePolicy, WcjsPolicy, baseline_policy
from heuristics.wcjs import WcjsConfig
from rtsched.checkpoint import DEFAULT_IO, CheckpointModel, IOModel

BATCH_POLICIES = ("fcfs", "sjf", "wfp3", "unicep", "f1", "smallest", "largest", "default", "wfp", "wfp2", "unicef")
REALTIME_POLICIES = ("baseline", "highpq", "preempt", "wcjs")

# scheme label -> (policy name, checkpoint model text)
SCHEMES: dict[str, tuple[str, str]] = {
    "baseline": ("baseline", "no"),
    "highpq": ("highpq", "no"),
    "no-ckpt": ("preempt", "no"),
    "sys-ckpt": ("preempt", "sys"),
    "app-ckpt-5": ("preempt", "app-5"),
    "app-ckpt-10": ("preempt", "app-10"),
    "jit-ckpt": ("preempt", "jit"),
    "wcjs-jit": ("wcjs", "jit"),
    "wcjs-app-5": ("wcjs", "app-5"),
    "wcjs-app-10": ("wcjs", "app-10"),
    "wcjs-sys": ("wcjs", "sys"),
    "wcjs-no": ("wcjs", "no"),
}

_RT_OPTIONS = ("priority", "backfill", "rt_order", "blocking", "checkpoint")


def available_policies() -> list[str]:
    """Every name ``make_policy`` accepts."""
    assert set(BATCH_POLICIES) <= set(PRIORITIES)
    return list(BATCH_POLICIES) + list(REALTIME_POLICIES)


def available_schemes() -> list[str]:
    return list(SCHEMES)


def _check(name: str, options: dict[str, Any], allowed: tuple[str, ...]) -> None:
    bad = sorted(set(options) - set(allowed))
    if bad:
        raise ValueError(f"policy {name!r} takes no option(s) {bad}; it takes {', '.join(allowed) or 'none'}")


def _looks_like_model(name: str) -> bool:
    """A trained RL model (``rtsched rl train`` output): an existing file or folder, or a ``.pt`` name."""
    return name.endswith(".pt") or os.path.exists(name)


def make_policy(name: str, **options: Any):
    """A policy by name (module docstring).  Options that are None are ignored (CLI defaults)."""
    key = name.strip().lower()
    options = {k: v for k, v in options.items() if v is not None}
    if key not in BATCH_POLICIES and _looks_like_model(name):
        from rtsched.rl.policy import load_policy  # torch: only when a model is asked for

        return load_policy(name, **options)
    if key in BATCH_POLICIES:
        _check(key, options, ("backfill",))
        return BatchPolicy(get_priority(key), options.get("backfill", "ff"))
    if key == "baseline":
        _check(key, options, ("priority", "backfill"))
        return baseline_policy(options.get("priority", "wfp2"), options.get("backfill", "ff"))
    if key == "highpq":
        _check(key, options, _RT_OPTIONS)
        return HighPriorityQueuePolicy(**options)
    if key == "preempt":
        _check(key, options, _RT_OPTIONS)
        return PreemptivePolicy(**options)
    if key == "wcjs":
        config = WcjsConfig.coerce(options.pop("config", None))
        checkpoint = options.pop("checkpoint", None)
        if options:
            names = {f.name for f in fields(WcjsConfig)}
            cats = {f"{k}_{c}" for k in ("bj", "rt") for c in ("narrow", "narrow_short", "narrow_long", "wide_short",
                                                                "wide_long")}
            bad = sorted(k for k in options if k not in names and k not in cats)
            if bad:
                raise ValueError(f"policy 'wcjs' takes no option(s) {bad}; it takes config, checkpoint and the "
                                 f"WcjsConfig fields {sorted(names)}")
            base = {f.name: getattr(config, f.name) for f in fields(WcjsConfig)}
            config = WcjsConfig.from_dict({**base, **options})
        return WcjsPolicy(config=config, checkpoint=checkpoint)
    raise ValueError(f"unknown policy {name!r}; choose from {', '.join(available_policies())}")


def scheme(name: str, **options: Any) -> tuple[Any, CheckpointModel]:
    """(policy, checkpoint model) of a seed-002 scheme label (``SCHEMES``)."""
    key = name.strip().lower()
    if key not in SCHEMES:
        raise ValueError(f"unknown scheme {name!r}; choose from {', '.join(SCHEMES)}")
    policy_name, ckpt_text = SCHEMES[key]
    options = dict(options)
    io: IOModel = options.pop("io", None) or DEFAULT_IO
    interval = options.pop("sys_interval", None)
    if interval is not None and not ckpt_text.startswith("sys"):
        raise ValueError(f"scheme {name!r} has no SYS checkpoints: sys_interval does not apply")
    if interval is not None:
        ckpt_text = f"sys:{int(interval)}"
    model = CheckpointModel.parse(ckpt_text, io=io)
    policy = make_policy(policy_name, **options)
    if policy_name != "baseline":
        policy.name = key  # the scheme label names the run (the baseline keeps "baseline(wfp2+ff)")
    return policy, model


__all__ = ["BATCH_POLICIES", "REALTIME_POLICIES", "SCHEMES", "available_policies", "available_schemes",
           "make_policy", "scheme"]
