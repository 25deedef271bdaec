"""The WCJS teacher replayed through the rtmix actions against WCJS as a policy (issue 23, ninth session).

A curriculum's data on Mira-like weeks are its WCJS teacher's decisions expressed as rtmix actions, so a
learner that follows the teacher perfectly reaches the replayed teacher, not WCJS.  For each generated
Mira-like week (``rtsched.generators.generate_miralike``, validation seeds; the RTJ marking seed = the
week's seed) this runs ``rtsched.rl.rtmix.replay.replay_gap``: the teacher through an ``RtMixEnv`` with
the given settings, and WCJS (with the environment's batch priority and backfilling) in the core, under
JIT checkpointing on the same machine.  Printed per week: both runs' mean bounded slowdown (τ = 600 s,
seed 002's form, every job) of BJs and RTJs and the first time their schedules differ; then the means and
the replay's ratio to the policy.

    PYTHONPATH=. python bench/bench_rtmix_replay.py --miralike 9001-9006 \\
        --model training/rtmix-dagger-theta15/round-23-risk150-conserve0-auto.pt \\
        --set batch_backfill=sjf --set shield=none --set rt_wake=true --set refit_window=true --set low_rt_batch=true

``--model`` takes the environment settings a model was trained with (``model_slots``); ``--set KEY=VALUE``
(repeatable) sets any ``RtMixSpec`` setting beyond the window order (``--order``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchcli import one_line_errors, require_input, seed_list  # noqa: E402  (bench/ is sys.path[0] as a script)
from rtsched.errors import OptionError  # noqa: E402
from rtsched.files import atomic_write_text  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PARTITIONS = SHARED_DATA / "mira" / "mira-partitions.xml"
PROG = "bench_rtmix_replay"


def parse_settings(items: list[str]) -> dict:
    """``KEY=VALUE`` items as ``RtMixSpec`` settings, each read with its type (``core.SETTING_TYPES``)."""
    from rtsched.rl.rtmix.core import OPTIONAL_SETTINGS, SETTING_TYPES

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in OPTIONAL_SETTINGS:
            raise OptionError(f"--set {item!r}: give KEY=VALUE with KEY one of {', '.join(OPTIONAL_SETTINGS)}")
        kind = SETTING_TYPES[key]
        if kind is bool:
            if value.lower() not in ("true", "false", "1", "0"):
                raise OptionError(f"--set {item!r}: {key} is true or false")
            out[key] = value.lower() in ("true", "1")
        else:
            try:
                out[key] = kind(value)
            except ValueError:
                raise OptionError(f"--set {item!r}: {key} takes a {kind.__name__}") from None
    return out


def main() -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--miralike", default="9001-9006", help="generated Mira-like week seeds (default 9001-9006)")
    ap.add_argument("--days", type=float, default=7.0, help="days per generated week (default 7)")
    ap.add_argument("--machine", default=str(PARTITIONS), help="partition XML or mira[:BLOCKS] (default: the real "
                    "partition file)")
    ap.add_argument("--model", help="an rtmix model file whose environment settings to use")
    ap.add_argument("--set", dest="settings", action="append", default=[], help="KEY=VALUE: an RtMixSpec setting")
    ap.add_argument("--order", default="backfill", help="the window order (default backfill)")
    ap.add_argument("--rt-percent", type=float, default=10.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.machine.endswith(".xml"):
        require_input(PROG, args.machine, "--machine")
    if args.model:
        require_input(PROG, args.model, "--model")
    from rtsched.rl.rtmix.env import RtMixEnv
    from rtsched.rl.rtmix.replay import replay_gap, teacher_options
    from rtsched.rl.rtmix.train import miralike_jobs, model_slots

    settings = model_slots(args.model) if args.model else {}
    settings.update(parse_settings(args.settings))
    try:
        seeds = seed_list(args.miralike)
    except ValueError:
        raise OptionError(f"--miralike {args.miralike!r}: seeds as A-B ranges or numbers, comma-separated") from None
    try:
        RtMixEnv(args.machine, "jit", order=args.order, **settings)
    except ValueError as exc:
        raise OptionError(f"--set/--order: {exc}") from None
    rows = []
    t0 = time.perf_counter()
    print(f"Mira-like weeks {args.miralike} ({args.days:g} days, {args.rt_percent:g} % RTJs), machine "
          f"{Path(args.machine).name}, JIT; environment order {args.order}, settings {settings}")
    print(f"{'week':>6} {'replayed BJ':>12} {'policy BJ':>10} {'replayed RTJ':>13} {'policy RTJ':>11} {'first diff (s)':>15}")
    for seed in seeds:
        env = RtMixEnv(args.machine, "jit", order=args.order, validate=True, **settings)
        gap = replay_gap(env, miralike_jobs(seed, args.days, args.rt_percent, env.machine.total_nodes))
        (rb, rr), (pb, pr) = gap.means("replayed"), gap.means("policy")
        rows.append({"seed": seed, "replayed_bj": rb, "replayed_rtj": rr, "policy_bj": pb, "policy_rtj": pr,
                     "first_difference": gap.first_difference})
        diff = "same schedule" if gap.first_difference is None else f"{gap.first_difference:,}"
        print(f"{seed:>6} {rb:12.3f} {pb:10.3f} {rr:13.3f} {pr:11.3f} {diff:>15}", flush=True)
    mean = {k: sum(r[k] for r in rows) / len(rows) for k in ("replayed_bj", "policy_bj", "replayed_rtj", "policy_rtj")}
    same = sum(r["first_difference"] is None for r in rows)
    print(f"teacher wcjs {teacher_options(env)}: means BJ replayed {mean['replayed_bj']:.3f} / policy "
          f"{mean['policy_bj']:.3f} ({mean['replayed_bj'] / mean['policy_bj'] - 1:+.1%}), RTJ {mean['replayed_rtj']:.3f} / "
          f"{mean['policy_rtj']:.3f} ({mean['replayed_rtj'] / mean['policy_rtj'] - 1:+.1%}); the same schedule on "
          f"{same} of {len(rows)} weeks; {time.perf_counter() - t0:.1f} s")
    if args.json:
        atomic_write_text(args.json, json.dumps({"settings": settings, "order": args.order, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(one_line_errors(PROG, main))
