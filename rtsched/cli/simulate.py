"""``rtsched simulate``: one trace, one machine, one policy → a summary table or ``--json``.

With no TRACE it runs the embedded default: the shipped Mira-like week (``traces/mira_like_week.swf``)
on the aligned 96-block Mira model, 10 % of its jobs marked real-time (seed 0) and scheduled by
seed 002's headline scheme, JIT checkpointing with the weighted-cost heuristic (WCJS) over Cobalt's
wfp2 utility and first-fit backfilling.
"""
from __future__ import annotations

import json

from rtsched.cli.common import (SCHEDULE_FORMATS, EVALYS_FORMATS, UsageError, check_distinct_outputs, check_extension,
                                check_output, console, fmt, nonneg_int, percent, positive_int,
                                progress_bar)

EMBEDDED_DEFAULT_SCHEME = "wcjs-jit"  # the seed-002 headline scheme
EMBEDDED_DEFAULT_RT_PERCENT = 10.0
DEFAULT_POLICY = "wfp2"


def register(sub) -> None:
    sim = sub.add_parser("simulate", help="simulate a trace under a policy and print metrics",
                         description="Simulate a trace (SWF, Cobalt/Qsim log or ALCF CSV; - reads standard input) "
                                     "under a policy or a seed-002 scheme, validate the schedule and print metrics. "
                                     "Without TRACE: the embedded default (the shipped Mira-like week, 10 % RTJs, "
                                     "wcjs-jit).")
    sim.add_argument("trace", nargs="?", help="trace file, or - for standard input (default: the shipped Mira-like week)")
    sim.add_argument("--format", choices=["swf", "cobalt", "alcf"], help="trace format (default: from the extension)")
    sim.add_argument("--machine", help="mira, mira:BLOCKS, flat:N or a Cobalt partition .xml (default: the trace "
                                       "header's machine or size; Mira for Cobalt/ALCF logs)")
    sim.add_argument("--policy", help="fcfs, sjf, f1, wfp3, unicep, wfp2, unicef, baseline, highpq, preempt, wcjs, a "
                                      "trained RL model file or a shipped model's name (rtmix, rlschert-vasplike-kill, ...), or "
                                      "package.module:Class (default: wfp2; without TRACE: the scheme wcjs-jit)")
    sim.add_argument("--scheme", help="a seed-002 scheme (baseline, highpq, no-ckpt, sys-ckpt, app-ckpt-5, "
                                      "app-ckpt-10, jit-ckpt, wcjs-jit, wcjs-app-5, wcjs-app-10, wcjs-sys, wcjs-no); "
                                      "sets the policy and the checkpoint model")
    sim.add_argument("--backfill", help="none, easy, ff, bf, sjf, rlscheduler (default: ff; a trained model: its own; "
                                        "with --scheme: overrides the scheme's)")
    sim.add_argument("--checkpoint", help="no, sys[:SECONDS], app-PCT, jit (default: the scheme's; else a trained "
                                          "model's own, jit for rtmix; jit for replan; else no)")
    sim.add_argument("--rt-percent", type=percent, help="mark this %% of jobs real-time, 0-100 (default: 10 on the "
                                                         "embedded default trace, else 0)")
    sim.add_argument("--rt-mode", choices=["random", "short", "aps"], help="RTJ marking mode (default random)")
    sim.add_argument("--seed", type=nonneg_int, help="seed of the RTJ marking (>= 0, default 0)")
    sim.add_argument("--tau", type=positive_int, help="bounded-slowdown bound τ in s of the chosen --bsld-form "
                                                     "(default: 600 for seed002, 10 for rl)")
    sim.add_argument("--bsld-form", default="seed002", choices=["seed002", "rl"], help="bounded-slowdown formula")
    sim.add_argument("--window", help="results window START/DAYS: START an ISO date (UTC), epoch seconds or "
                                      "+SECONDS from the trace's start, e.g. 2018-01-21/7")
    sim.add_argument("--first-n", type=positive_int, help="only the first N jobs of the trace")
    sim.add_argument("--json", action="store_true", help="print a machine-readable JSON object")
    sim.add_argument("--schedule-out", help="write the schedule (CSV, or Parquet if the name ends in .parquet)")
    sim.add_argument("--evalys-out", help="write the run as an evalys / Batsim jobs.csv (rtsched.export)")
    sim.add_argument("--no-progress", action="store_true", help="no progress bar")
    sim.add_argument("--no-validate", action="store_true", help="skip the independent schedule validator")
    sim.set_defaults(func=run)


# RunSpec field -> the option that sets it
OPTIONS = {"rt_percent": "--rt-percent", "marking": "--rt-mode", "seed": "--seed", "tau": "--tau", "tau_rl": "--tau",
           "bsld_form": "--bsld-form", "scheme": "--scheme", "checkpoint": "--checkpoint", "machine": "--machine",
           "policy": "--policy", "backfill": "--backfill", "jobs": "--first-n", "trace_format": "--format"}


def usage_error(exc) -> UsageError:
    """A pipeline ``SpecError`` as a usage error naming the command-line option."""
    option = OPTIONS.get(getattr(exc, "field", None) or "")
    return UsageError(f"{option}: {exc}" if option else str(exc))


def spec_from_args(args):
    """The ``RunSpec`` of a ``simulate`` command line (options checked, nothing read yet)."""
    from rtsched.metrics import TAU_RL, TAU_SEED002
    from rtsched.pipeline import RunSpec, SpecError
    from rtsched.window import WindowSpec

    embedded = args.trace is None and args.policy is None and args.scheme is None
    if args.trace is None and args.format is not None:
        raise UsageError("--format applies to a TRACE given (the embedded default is the shipped SWF week)")
    if args.policy is not None and args.scheme is not None:
        raise UsageError("--policy and --scheme exclude each other (a scheme sets the policy)")
    rt_percent = args.rt_percent
    if rt_percent is None:
        rt_percent = EMBEDDED_DEFAULT_RT_PERCENT if args.trace is None else 0.0
    if not rt_percent:
        given = [o for o, v in (("--rt-mode", args.rt_mode), ("--seed", args.seed)) if v is not None]
        if given:
            raise UsageError(f"{', '.join(given)}: they set the real-time marking, and no job is marked "
                             "(--rt-percent is 0; give a trace's RTJ share with --rt-percent)")
    window = None
    if args.window is not None:
        try:
            window = WindowSpec.parse(args.window)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    options = {}
    if args.backfill is not None:
        options["backfill"] = args.backfill
    reader = {"first_n": args.first_n} if args.first_n else {}
    tau = args.tau
    spec = RunSpec(
        trace=args.trace, trace_format=args.format, reader_options=reader, rt_percent=rt_percent,
        marking=args.rt_mode or "random", seed=args.seed or 0, machine=args.machine,
        scheme=EMBEDDED_DEFAULT_SCHEME if embedded else args.scheme,
        policy=args.policy or DEFAULT_POLICY, policy_options=options, checkpoint=args.checkpoint,
        window=window, bsld_form=args.bsld_form,
        tau=tau if tau is not None and args.bsld_form == "seed002" else TAU_SEED002,
        tau_rl=tau if tau is not None and args.bsld_form == "rl" else TAU_RL,
        validate=not args.no_validate)
    try:
        return spec.check()
    except SpecError as exc:
        raise usage_error(exc) from None


def run(args) -> int:
    from rtsched.pipeline import DEFAULT_TRACE, SpecError, execute

    spec = spec_from_args(args)
    inputs = (args.trace or str(DEFAULT_TRACE), args.machine, args.policy)
    check_output(args.schedule_out, "--schedule-out", inputs=inputs)
    check_output(args.evalys_out, "--evalys-out", inputs=inputs)
    check_extension(args.schedule_out, "--schedule-out", SCHEDULE_FORMATS)
    check_extension(args.evalys_out, "--evalys-out", EVALYS_FORMATS)
    check_distinct_outputs({"--schedule-out": args.schedule_out, "--evalys-out": args.evalys_out})
    try:
        with progress_bar("simulating", not args.json and not args.no_progress) as update:
            record = execute(spec, progress=update, refuse_idle_checkpoint=True)
    except SpecError as exc:
        raise usage_error(exc) from None
    if args.schedule_out:
        names = record.machine.partition_names() if record.machine.partitioned else None
        record.schedule.write(args.schedule_out, names)
    if args.evalys_out:
        from rtsched.export import write_evalys_jobs

        write_evalys_jobs(record, args.evalys_out)
    out = record.to_json()
    if out["trace"] is None and spec.trace is None:
        out["trace"] = "traces/mira_like_week.swf (regenerated in memory)"
    if args.json:
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        print_summary(console(), {**out, "ran_as": record.policy_description})
    return 0


def title(out: dict) -> str:
    """One line that says what ran."""
    sha = f", sha256 {out['trace_sha256'][:12]}…" if out.get("trace_sha256") else ""
    # "RNG seed": the marking's random seed, never to be read as the seed-002 paper
    rt = (f"{out['rt_jobs']:,} RTJs ({out['rt_percent']:g} % {out['marking']}, RNG seed {out['seed']})"
          if out["rt_percent"] else "no RTJs")
    how = f"scheme {out['scheme']}" if out.get("scheme") else f"policy {out['policy']}"
    # what the policy ran with (utility, backfilling), then the options given
    extra = ", ".join([out["ran_as"]] if out.get("ran_as") else []
                      + [f"{k} {v}" for k, v in (out.get("policy_options") or {}).items()
                         if not (k == "backfill" and out.get("ran_as"))])
    window = f"window {out['window_spec']}" if out.get("window_spec") else "all jobs"
    # the policy that ran, when its name says more than the scheme or policy asked for
    ran = f" = {out['policy']}" if out["policy"] not in (out.get("scheme"), how.split(" ", 1)[1]) else ""
    unchecked = " · NOT validated (--no-validate)" if out.get("validated") is False else ""
    return (f"{out['trace']} ({out['jobs']:,} jobs{sha}; {rt}) · machine {out['machine']} "
            f"({out['machine_nodes']:,} nodes) · {how}{' (' + extra + ')' if extra else ''}{ran} · "
            f"{out['checkpoint']} · {window}{unchecked} · rtsched {out['rtsched_version']}")


def print_summary(con, out: dict) -> None:
    from rich.table import Table

    table = Table(title=title(out), title_justify="left")
    for col in ("jobs", "n", "mean SD", "mean BSLD", "p95 SD", "mean wait (s)", "mean turnaround (s)"):
        table.add_column(col, justify="right")
    for group in ("all", "rt", "batch"):
        g = out["summary"][group]
        table.add_row(group, fmt(g["n"]), fmt(g["mean_sd"]), fmt(g["mean_bsld"]), fmt(g["p95_sd"]),
                      fmt(g["mean_wait"], 0), fmt(g["mean_turnaround"], 0))
    con.print(table)
    con.print(f"utilization {out['utilization']:.4f} · productive utilization {out['productive_utilization']:.4f} "
              f"(window {out['window'][0]:,}–{out['window'][1]:,} s)")
    tau = out["bsld_tau"]
    form = ("(wait + max(runtime, τ)) / max(runtime, τ), the seed-002 paper's form" if out["bsld_form"] == "seed002"
            else "max(1, turnaround / max(runtime, τ)), the RL papers' form")
    con.print(f"SD = slowdown = turnaround / runtime; BSLD = bounded slowdown = {form}, τ = {tau} s; "
              "wait and turnaround in s; RT = real-time jobs, batch = batch jobs.", style="dim")
    cleaning = out.get("cleaning") or {}
    if cleaning:
        con.print("reader cleaning: " + ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in sorted(cleaning.items())),
                  style="dim")
