"""What ``report`` warns about in a results folder (issue 26), from the finished runs' records and
the error files:

* **identical seeds** -- runs that differ only in their seed but have byte-identical job tables
  (e.g. ``rt_percent = 0``: the seed only draws the real-time jobs, so "runs 3" with a spread of
  0.0 is one result counted three times);
* **changed inputs** -- runs of the same configuration whose input files have other content
  (a trace edited or regenerated under a finished study: old and new runs would be pooled);
* **fixed failures** -- error files of runs that a later run finished (the same key, or the same
  configuration with other input files): listed as fixed, not as failures.
"""
from __future__ import annotations

import os
from pathlib import Path

from rtsched.experiments.grid import GridRun, canonical_json, options_text
from rtsched.experiments.results import iter_records, load_errors, run_options


def _without(config: dict, *keys: str) -> str:
    return canonical_json({k: v for k, v in config.items() if k not in keys})


def run_text(rec: dict) -> str:
    """A run's description without its seed (``wk1 10% random baseline backfill=easy``)."""
    config = rec["config"]
    text = GridRun(rec["key"], config, str(rec.get("label") or "")).describe().rsplit(" seed ", 1)[0]
    options = options_text(run_options(config))
    return f"{text} {options}" if options else text


def folder_checks(out_dir: str | os.PathLike, records: list[dict] | None = None) -> dict:
    """``{"identical": [...], "changed": [...], "fixed": [...], "failed": [...]}`` of a folder.

    identical: ``{"run", "seeds"}`` per configuration whose runs over several seeds all have the
    same job table; changed: ``{"run", "versions", "keys"}`` per configuration finished with
    several versions of its input files; fixed / failed: the error records (``load_errors``)
    that a finished run has fixed / that no run has."""
    records = list(iter_records(Path(out_dir))) if records is None else records
    by_config: dict[str, list[dict]] = {}
    by_inputs_free: dict[str, list[dict]] = {}
    for rec in records:
        by_config.setdefault(_without(rec["config"], "seed"), []).append(rec)
        by_inputs_free.setdefault(_without(rec["config"], "inputs"), []).append(rec)
    identical = []
    for recs in by_config.values():
        digests = {(rec.get("table") or {}).get("sha256") for rec in recs}
        if len(recs) > 1 and len(digests) == 1 and None not in digests:
            identical.append({"run": run_text(recs[0]), "seeds": sorted(rec["config"]["seed"] for rec in recs)})
    by_base: dict[str, list[dict]] = {}
    for rec in records:
        by_base.setdefault(_without(rec["config"], "seed", "inputs"), []).append(rec)
    changed = []
    for recs in by_base.values():
        versions = {canonical_json(rec["config"].get("inputs") or {}) for rec in recs}
        if len(versions) > 1:
            changed.append({"run": run_text(recs[0]), "versions": len(versions),
                            "keys": sorted(rec["key"] for rec in recs)})
    finished_keys = {rec["key"] for rec in records}
    fixed, failed = [], []
    for err in load_errors(out_dir):
        config = err.get("config")
        same_key = err.get("key") in finished_keys
        same_config = isinstance(config, dict) and _without(config, "inputs") in by_inputs_free
        (fixed if same_key or same_config else failed).append(err)
    return {"identical": identical, "changed": changed, "fixed": fixed, "failed": failed}


def warning_lines(checks: dict) -> list[str]:
    """The report's warning sections (empty when there is nothing to say)."""
    lines: list[str] = []
    if checks["identical"]:
        lines += ["", f"## Warning: {len(checks['identical'])} configuration(s) whose seeds gave identical runs "
                      "(the seed changes nothing here, e.g. 0 % RTJs: 'runs' counts one result several times and "
                      "the spread over seeds is 0)"]
        lines += [f"  {c['run']}: seeds {', '.join(map(str, c['seeds']))}" for c in checks["identical"]]
    if checks["changed"]:
        lines += ["", f"## Warning: {len(checks['changed'])} configuration(s) finished with different input files "
                      "(a trace, partition file, APS sample or model changed under the study); the tables pool "
                      "every version: remove the runs/KEY.* files of the old version to keep one"]
        lines += [f"  {c['run']}: {c['versions']} versions, runs {', '.join(c['keys'])}" for c in checks["changed"]]
    if checks["fixed"]:
        lines += ["", f"## {len(checks['fixed'])} failure(s) fixed by a later run (runs/KEY.error.json kept for "
                      "the record)"]
        lines += [f"  {e.get('key')}  {e.get('label') or ''}: {str(e.get('error') or '').splitlines()[0] if e.get('error') else ''}"
                  for e in checks["fixed"]]
    return lines


__all__ = ["folder_checks", "run_text", "warning_lines"]
