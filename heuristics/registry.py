"""Policies and seed-002 schemes by name: the CLI, the run pipeline and grids resolve names here.

``make_policy(name, **options)``:

* a queue priority of ``heuristics.priorities`` (``fcfs``, ``sjf``, ``f1``, ``wfp3``, ``unicep``,
  Cobalt's ``default``, ``wfp``, ``wfp2``, ``unicef``, the ``-authors`` keys, ...): options
  ``backfill`` (default ``ff``) and ``committed`` (False: the textbook ``BatchPolicy``; True:
  RLScheduler's committed-head rule, ``heuristics.committed``, backfill ``none`` by default);
* ``baseline`` — every job as a BJ: options ``priority`` (``wfp2``), ``backfill`` (``ff``);
* ``highpq`` — high-priority RT queue: ``priority``, ``backfill``, ``rt_order`` (``fcfs`` |
  ``slowdown``), ``blocking`` (``block`` | ``backfill`` | ``rt-only``; see ``heuristics.realtime``);
* ``preempt`` — the preemptive scheme: the same options plus ``checkpoint`` (a ``CheckpointModel`` or
  its text; default: the simulation's model);
* ``wcjs`` — weighted-cost job scheduling: ``config`` (a ``WcjsConfig``, a preset name ``mira-wk1`` /
  ``curie``, a mapping or a ``.toml`` path), ``checkpoint``, and any ``WcjsConfig`` field or
  ``bj_<category>`` / ``rt_<category>`` shorthand as a keyword (applied over ``config``);
* ``package.module:Class`` — a user's policy class (any object with ``decide(view)``), built with
  the options as keyword arguments;
* anything a *policy loader* takes: loaders are registered with ``register_policy_loader`` or
  under the ``rtsched.policy_loaders`` entry-point group (that is how trained RL models, a
  ``.pt`` file or a training folder, reach this registry without it importing ``rtsched.rl``).

``scheme(name, **options) -> (policy, CheckpointModel)`` builds a scheme of seed 002 (see
``SCHEMES``); options go to ``make_policy`` except ``sys_interval`` (s, SYS schemes) and ``io``
(an ``IOModel``), which shape the checkpoint model.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, fields
from typing import Any, Callable

from heuristics.batch import BatchPolicy
from heuristics.committed import CommittedHeadPolicy
from heuristics.priorities import PRIORITIES, get_priority
from rtsched.checkpoint import DEFAULT_IO, CheckpointModel, IOModel

BATCH_POLICIES = tuple(PRIORITIES)
REALTIME_POLICIES = ("baseline", "highpq", "preempt", "wcjs")
POLICY_LOADERS_GROUP = "rtsched.policy_loaders"

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


@dataclass(frozen=True)
class PolicyLoader:
    """A source of policies the registry does not know by name (e.g. trained model files).

    ``matches(name)`` says whether the loader takes ``name``; ``load(name, **options)`` builds it;
    ``source(name)``, when given, is the file the name stands for (a shipped model's name: its file),
    so that results can be tied to the file's content.
    """

    description: str
    matches: Callable[[str], bool]
    load: Callable[..., Any]
    source: Callable[[str], "str | None"] | None = None


_LOADERS: list[PolicyLoader] = []
_entry_points_loaded = False


def register_policy_loader(loader: PolicyLoader) -> None:
    """Make ``make_policy`` offer names that ``loader.matches`` (checked after the built-in names)."""
    if loader not in _LOADERS:
        _LOADERS.append(loader)


def policy_loaders() -> list[PolicyLoader]:
    """The registered loaders, those of the ``rtsched.policy_loaders`` entry points included
    (read once, on the first call: reading them costs a scan of the installed packages)."""
    global _entry_points_loaded
    if not _entry_points_loaded:
        from importlib.metadata import entry_points  # ~20 ms: only when a name is not built in

        _entry_points_loaded = True
        for ep in entry_points(group=POLICY_LOADERS_GROUP):
            try:
                register_policy_loader(ep.load())
            except ImportError:  # an optional part (torch for the RL models) is not installed
                continue
    return list(_LOADERS)


def policy_source(name: str) -> str | None:
    """The file a policy name stands for (a model file, or the shipped model a bare name such as
    ``rtmix`` reaches), else None (built-in heuristics: their code is the rtsched version)."""
    for loader in policy_loaders():
        if loader.source is not None and loader.matches(name):
            return loader.source(name)
    return None


def available_policies() -> list[str]:
    """Every name ``make_policy`` accepts (besides user classes and what loaders take)."""
    return list(BATCH_POLICIES) + list(REALTIME_POLICIES)


def available_schemes() -> list[str]:
    return list(SCHEMES)


def _check(name: str, options: dict[str, Any], allowed: tuple[str, ...]) -> None:
    bad = sorted(set(options) - set(allowed))
    if bad:
        raise ValueError(f"policy {name!r} takes no option(s) {bad}; it takes {', '.join(allowed) or 'none'}")


def _user_class(name: str, options: dict[str, Any]):
    """``package.module:Class`` built with ``options``; a clear error when it cannot be."""
    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"policy {name!r}: cannot import module {module_name!r} ({exc})") from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise ValueError(f"policy {name!r}: module {module_name!r} has no {attr!r}")
    try:
        policy = cls(**options)
    except TypeError as exc:
        raise ValueError(f"policy {name!r}: cannot be built with options {sorted(options)} ({exc})") from None
    if not callable(getattr(policy, "decide", None)):
        raise ValueError(f"policy {name!r}: {attr} has no decide(view) method")
    return policy


def _batch(key: str, options: dict[str, Any]):
    _check(key, options, ("backfill", "committed"))
    if options.get("committed"):
        return CommittedHeadPolicy(key, options.get("backfill", "none"))
    return BatchPolicy(get_priority(key), options.get("backfill", "ff"))


# The real-time schemes (heuristics.realtime, heuristics.wcjs) are imported by the calls that build
# them: a batch-policy command does not pay for them at start-up.
def _wcjs(options: dict[str, Any]):
    from heuristics.realtime import WcjsPolicy
    from heuristics.wcjs import WcjsConfig

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


def make_policy(name: str, **options: Any):
    """A policy by name (module docstring).  Options that are None are ignored (CLI defaults)."""
    key = name.strip().lower().replace("_", "-")
    options = {k: v for k, v in options.items() if v is not None}
    if key in PRIORITIES:
        return _batch(key, options)
    if key == "baseline":
        from heuristics.realtime import baseline_policy

        _check(key, options, ("priority", "backfill"))
        return baseline_policy(options.get("priority", "wfp2"), options.get("backfill", "ff"))
    if key == "highpq":
        from heuristics.realtime import HighPriorityQueuePolicy

        _check(key, options, _RT_OPTIONS)
        return HighPriorityQueuePolicy(**options)
    if key == "preempt":
        from heuristics.realtime import PreemptivePolicy

        _check(key, options, _RT_OPTIONS)
        return PreemptivePolicy(**options)
    if key == "wcjs":
        return _wcjs(options)
    for loader in policy_loaders():
        if loader.matches(name):
            return loader.load(name, **options)
    if ":" in name and not os.path.exists(name):
        return _user_class(name, options)
    kinds = "; ".join(loader.description for loader in policy_loaders())
    raise ValueError(f"unknown policy {name!r}; choose from {', '.join(available_policies())}"
                     f"{', ' + kinds if kinds else ''}, or package.module:Class")


def _scheme_key(name: str) -> str:
    key = name.strip().lower()
    if key not in SCHEMES:
        raise ValueError(f"unknown scheme {name!r}; choose from {', '.join(SCHEMES)}")
    return key


def scheme_checkpoint(name: str, *, io: IOModel | None = None, sys_interval: int | None = None) -> CheckpointModel:
    """The checkpoint model of a seed-002 scheme (``sys_interval``: s between SYS checkpoints)."""
    key = _scheme_key(name)
    ckpt_text = SCHEMES[key][1]
    if sys_interval is not None and not ckpt_text.startswith("sys"):
        raise ValueError(f"scheme {name!r} has no SYS checkpoints: sys_interval does not apply")
    if sys_interval is not None:
        ckpt_text = f"sys:{int(sys_interval)}"
    return CheckpointModel.parse(ckpt_text, io=io or DEFAULT_IO)


def scheme(name: str, **options: Any) -> tuple[Any, CheckpointModel]:
    """(policy, checkpoint model) of a seed-002 scheme label (``SCHEMES``)."""
    key = _scheme_key(name)
    policy_name = SCHEMES[key][0]
    options = dict(options)
    model = scheme_checkpoint(key, io=options.pop("io", None), sys_interval=options.pop("sys_interval", None))
    policy = make_policy(policy_name, **options)
    if policy_name != "baseline":
        policy.name = key  # the scheme label names the run (the baseline keeps "baseline(wfp2+ff)")
    return policy, model


def describe_policy(policy) -> str:
    """The batch queue's utility (priority) and the backfilling a built policy actually uses, in
    words (``"wfp2 utility, first-fit backfilling"``): what a scheme or a default leaves unsaid.
    Empty for a policy that has neither attribute (a user's class)."""
    from heuristics.backfill import BACKFILL_WORDS

    parts = []
    priority = getattr(policy, "priority", None)
    priority = getattr(priority, "name", priority)
    if isinstance(priority, str) and priority:
        parts.append(f"{priority} utility")
    backfill = getattr(policy, "backfill", None)
    if isinstance(backfill, str) and backfill:
        parts.append(BACKFILL_WORDS.get(backfill, f"{backfill} backfilling"))
    return ", ".join(parts)


__all__ = ["BATCH_POLICIES", "REALTIME_POLICIES", "SCHEMES", "PolicyLoader", "available_policies", "describe_policy",
           "available_schemes", "make_policy", "policy_loaders", "register_policy_loader", "scheme",
           "scheme_checkpoint"]
