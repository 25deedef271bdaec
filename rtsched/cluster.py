"""Joining or starting Ray, for every part of rtsched that runs work on it (experiment grids'
``--backend ray``, RL rollout actors).  Ray is an optional extra; nothing here imports it at
module level."""
from __future__ import annotations

from rtsched.errors import OptionError, RtschedError

RAY_MISSING = "--backend ray needs Ray: install the ray extra (pip install -e '.[ray]')"


def ensure_ray(address: str | None = None, cpus: int | None = None):
    """``(ray, started)``: the ``ray`` module, initialised.  ``address``: an existing cluster
    (``auto`` or HOST:PORT); None: this session's Ray if one is initialised, else a local instance
    of ``cpus`` CPUs (all of them when None).  ``started`` says whether this call started it (its
    caller then shuts it down).  A one-line ``RtschedError`` when Ray is missing or unreachable."""
    try:
        import ray
    except ImportError:
        raise OptionError(RAY_MISSING) from None
    if ray.is_initialized():
        return ray, False
    import logging

    options = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": False}
    try:
        if address:
            ray.init(address=address, **options)
        else:
            # a small object store: tasks and actors exchange small objects, files go to folders
            ray.init(num_cpus=max(1, int(cpus)) if cpus else None, object_store_memory=256 * 1024 * 1024, **options)
    except Exception as exc:  # noqa: BLE001 - unreachable cluster, no room for a local instance, ...
        where = f"the Ray cluster at --address {address}" if address else "a local Ray instance"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise RtschedError(f"cannot start or reach {where}: {type(exc).__name__}: {first}") from None
    return ray, True
