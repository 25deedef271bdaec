"""Run keys: the canonical JSON of a run configuration and its SHA-256 (the first 16 hex digits name
the run's files; tests/test_experiments_keys.py pins them), and how options are shown as text."""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any

SCHEMA_VERSION = 1  # the "schema" entry of every run configuration
HASH_LENGTH = 16  # hex digits of SHA-256 kept in run keys


def canon_number(x: Any) -> Any:
    """10 and 10.0 hash alike: integral floats become ints."""
    if isinstance(x, bool):
        return x
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"non-finite number {x!r} in a run configuration")
        return int(x) if x.is_integer() else x
    if isinstance(x, dict):
        return {str(k): canon_number(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [canon_number(v) for v in x]
    return x


def canonical_json(config: dict) -> str:
    """Canonical JSON of a run configuration: sorted keys, no whitespace, integral floats as ints."""
    return json.dumps(canon_number(config), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def config_hash(config: dict) -> str:
    """Stable key of a run configuration: SHA-256 of its canonical JSON, first 16 hex digits."""
    return hashlib.sha256(canonical_json(config).encode("ascii")).hexdigest()[:HASH_LENGTH]


def options_text(options: dict) -> str:
    """``k=v,k2=v2`` (sorted keys): how a run's options are shown in labels and tables."""
    return ",".join(f"{k}={_value_text(options[k])}" for k in sorted(options))


def _value_text(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":")) if isinstance(v, (dict, list)) else str(v)


__all__ = ["HASH_LENGTH", "SCHEMA_VERSION", "canon_number", "canonical_json", "config_hash", "options_text"]
