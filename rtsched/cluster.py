"""Joining or starting Ray, for every part of rtsched that runs work on it (experiment grids'
``--backend ray``, RL rollout actors).  Ray is an optional extra; nothing here imports it at
module level.

Which cluster, as Ray users expect (the rule of ``ray.init``): ``--address`` when given (``auto``:
the cluster of this node); else ``$RAY_ADDRESS``; else a cluster started with ``ray start`` on
this node; else a new local instance of ``cpus`` CPUs.  Before joining, the head's address is
probed: when nothing answers there as a Ray head does (gRPC) within ``CONNECT_TIMEOUT_S`` in all
(refused: at once), the call gives up with a one-line error instead of letting Ray retry for many
minutes.
"""
from __future__ import annotations

import os
import signal
import socket
import threading
import time

from rtsched.errors import OptionError, RtschedError

RAY_MISSING = "--backend ray needs Ray: install the ray extra (pip install -e '.[ray]')"
CONNECT_TIMEOUT_S = 10.0  # how long the probe of a cluster's head waits for its answer, s (connection and gRPC)


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


# A Ray head's GCS (and the Ray Client server of ``ray://``) speaks gRPC: HTTP/2 without TLS, whose
# server answers a client's connection preface with a SETTINGS frame (RFC 9113 §3.4).  Anything
# else at the port (a web server, a database, a port that accepts and stays silent) made Ray retry
# for many minutes (issue 26: still retrying after 400 s).
HTTP2_PREFACE = (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # then an empty SETTINGS frame:
                 b"\x00\x00\x00" b"\x04" b"\x00" b"\x00\x00\x00\x00")  # length 0, type 4, flags 0, stream 0
HTTP2_SETTINGS = 0x04  # frame type (RFC 9113 §6.5)


def probe(address: str, where: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise a one-line RtschedError unless a gRPC server (a Ray head) answers at ``address``
    within ``timeout`` seconds in all: nothing accepts a TCP connection (refused: at once), or
    something accepts but does not answer as gRPC does.  With ``RAY_USE_TLS`` set only the TCP
    connection is checked (the head then speaks TLS first)."""
    text = address.removeprefix("ray://")
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        if text == "auto":
            return
        raise OptionError(f"{where}: expected HOST:PORT (e.g. 10.0.0.1:6379) or auto, got {address!r}")
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout) as sock:
            if os.environ.get("RAY_USE_TLS", "0").strip().lower() in ("1", "true", "yes"):
                return
            answer = _http2_answer(sock, deadline)
    except OSError as exc:
        why = (f"no answer within {timeout:g} s" if isinstance(exc, TimeoutError)
               else (exc.strerror or type(exc).__name__).lower())
        raise RtschedError(f"cannot reach the Ray cluster at {address} ({where}): {why}; is its head running "
                           "(ray start --head --port=PORT)?") from None
    if answer is None or len(answer) < 9 or answer[3] != HTTP2_SETTINGS:
        why = (f"it accepts connections but gave no answer within {timeout:g} s" if not answer
               else "it answers, but not as a Ray head does (gRPC)")
        raise RtschedError(f"{address} ({where}) is not a Ray cluster's head: {why}; give the head's address "
                           "(ray start --head prints it; the port is 6379 unless --port was given)")


def _http2_answer(sock: socket.socket, deadline: float) -> bytes | None:
    """The first 9 bytes (a frame header) the server sends after an HTTP/2 preface; fewer when it
    closes first; None when nothing comes by ``deadline`` (``time.monotonic()``)."""
    sock.sendall(HTTP2_PREFACE)
    got = b""
    while len(got) < 9:
        left = deadline - time.monotonic()
        if left <= 0:
            return got or None
        sock.settimeout(left)
        try:
            chunk = sock.recv(9 - len(got))
        except TimeoutError:
            return got or None
        if not chunk:
            return got
        got += chunk
    return got


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
