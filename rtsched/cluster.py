"""Joining or starting Ray, for every part of rtsched that runs work on it (experiment grids'
``--backend ray``, RL rollout actors).  Ray is an optional extra; nothing here imports it at
module level.

Which cluster, as Ray users expect (the rule of ``ray.init``): ``--address`` when given (``auto``:
the cluster of this node); else ``$RAY_ADDRESS``; else a cluster started with ``ray start`` on
this node; else a new local instance of ``cpus`` CPUs.  Before joining, the head's address is
probed: when nothing answers there within ``CONNECT_TIMEOUT_S`` (refused: at once), the call gives
up with a one-line error instead of letting Ray retry for many minutes.
"""
from __future__ import annotations

import os
import signal
import socket
import threading

from rtsched.errors import OptionError, RtschedError

RAY_MISSING = "--backend ray needs Ray: install the ray extra (pip install -e '.[ray]')"
CONNECT_TIMEOUT_S = 10.0  # how long the probe of a cluster's head waits for a TCP answer, s


def cluster_address(address: str | None) -> tuple[str | None, str]:
    """(the ``host:port`` of the cluster to join, or None for a new local instance; where that came
    from, for messages).  ``address``: ``--address`` (``auto``, ``HOST:PORT``, ``ray://...``)."""
    if address and address != "auto":
        return address, f"--address {address}"
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env and env != "auto":
        return env, f"RAY_ADDRESS={env}"
    try:  # a cluster started with `ray start` on this node (Ray's own lookup; None when there is none)
        from ray._private.services import canonicalize_bootstrap_address

        found = canonicalize_bootstrap_address(None)
    except Exception:  # noqa: BLE001 - a private helper of Ray: without it, Ray's own "auto" decides
        found = "auto" if address == "auto" else None
    if found is None and address == "auto":
        raise RtschedError("--address auto: no Ray cluster runs on this node (start one with `ray start --head`, "
                           "or give --address HOST:PORT)")
    return found, ("the Ray cluster of this node" if found else "a local Ray instance")


def probe(address: str, where: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise a one-line RtschedError when nothing accepts a TCP connection at ``address``'s head."""
    text = address.removeprefix("ray://")
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        if text == "auto":
            return
        raise OptionError(f"{where}: expected HOST:PORT (e.g. 10.0.0.1:6379) or auto, got {address!r}")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout):
            pass
    except OSError as exc:
        why = (f"no answer within {timeout:g} s" if isinstance(exc, TimeoutError)
               else (exc.strerror or type(exc).__name__).lower())
        raise RtschedError(f"cannot reach the Ray cluster at {address} ({where}): {why}; is its head running "
                           "(ray start --head --port=PORT)?") from None


def ensure_ray(address: str | None = None, cpus: int | None = None):
    """``(ray, started)`` of ``join_ray``."""
    ray, started, _ = join_ray(address, cpus)
    return ray, started


def join_ray(address: str | None = None, cpus: int | None = None):
    """``(ray, started, where)``: the ``ray`` module, initialised.  ``address``: an existing cluster
    (``auto`` or HOST:PORT); None: this session's Ray if one is initialised, else the cluster of
    ``$RAY_ADDRESS`` or of this node, else a local instance of ``cpus`` CPUs (all of them when
    None).  ``started`` says whether this call started it (its caller then shuts it down).  A
    one-line ``RtschedError`` when Ray is missing or unreachable.  A SIGTERM handler the caller
    installed (``rtsched``'s command line turns SIGTERM into an interrupt) is kept: ``ray.init``
    would replace it with its own, which exits with status 1."""
    try:
        import ray
    except ImportError:
        raise OptionError(RAY_MISSING) from None
    if ray.is_initialized():
        return ray, False, "this session's Ray"
    import logging

    target, where = cluster_address(address)
    if target is not None:
        probe(target, where)
    options = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": False}
    in_main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGTERM) if in_main else None
    try:
        if target is not None:
            ray.init(address=target, **options)
        else:
            # a small object store: tasks and actors exchange small objects, files go to folders
            ray.init(address="local", num_cpus=max(1, int(cpus)) if cpus else None,
                     object_store_memory=256 * 1024 * 1024, **options)
    except Exception as exc:  # noqa: BLE001 - unreachable cluster, no room for a local instance, ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise RtschedError(f"cannot start or reach {where}: {type(exc).__name__}: {first}") from None
    finally:
        if callable(handler):
            signal.signal(signal.SIGTERM, handler)
    return ray, True, (f"{target} from {where}" if target is not None and not where.startswith("--address")
                       else where.removeprefix("--address "))
