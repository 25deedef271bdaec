"""The ``rtsched`` command line.

    rtsched simulate [TRACE] [--machine mira] [--policy wfp2] [--backfill ff] ...
    rtsched traces generate|stats|convert ...
    rtsched experiment run|report|plot ...
    rtsched instances generate ... / rtsched solve ... / rtsched compare ...
    rtsched rl train|evaluate ...

With no TRACE, ``simulate`` runs the embedded default: the shipped Mira-like week
(``traces/mira_like_week.swf``, regenerated in memory from its seed if the file is absent) on the
aligned 96-block Mira model, with 10 % of the jobs marked real-time (seed 0) and scheduled by the
seed-002 headline scheme, JIT checkpointing with the weighted-cost heuristic (WCJS) over Cobalt's
wfp2 utility and first-fit backfilling.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from rtsched.errors import RtschedError

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = REPO_ROOT / "traces" / "mira_like_week.swf"


def _console():
    from rich.console import Console

    return Console(stderr=False)


# ---------------------------------------------------------------------------------------- simulate
def _load_trace(args):
    from rtsched.io import read_workload

    if args.trace is None:
        if DEFAULT_TRACE.exists():
            return read_workload(str(DEFAULT_TRACE), "swf")
        from rtsched.generators import default_trace

        return default_trace()
    opts = {}
    if args.first_n:
        opts["first_n"] = args.first_n
    return read_workload(args.trace, args.format, **opts)


def _window(args, workload):
    if args.window is None:
        return None
    from rtsched.window import parse_window

    return parse_window(args.window, workload)


EMBEDDED_DEFAULT_SCHEME = "wcjs-jit"  # the seed-002 headline scheme
EMBEDDED_DEFAULT_RT_PERCENT = 10.0


def apply_embedded_default(args) -> None:
    """With no trace, no policy and no scheme, run the main job: 10 % RTJs under JIT+WCJS."""
    if args.trace is None and args.policy is None and args.scheme is None:
        args.scheme = EMBEDDED_DEFAULT_SCHEME
    if args.rt_percent is None:
        args.rt_percent = EMBEDDED_DEFAULT_RT_PERCENT if args.trace is None else 0.0
    if args.policy is None:
        args.policy = "wfp2"


def _check_fits(workload, machine, path: str) -> None:
    """Name the trace file and the job when a job asks for more nodes than the machine has."""
    from rtsched.errors import InputError

    for job in workload:
        if job.nodes > machine.total_nodes:
            raise InputError(f"job {job.id} requests {job.nodes} nodes, more than {machine.name} "
                             f"({machine.total_nodes} nodes) has; choose a larger --machine or drop the job",
                             path=path, field="nodes")


def build_policy(args):
    """Resolve ``--policy``/``--scheme`` names through the heuristics registry (or a model file)."""
    from heuristics.registry import make_policy, scheme

    if args.scheme:
        return scheme(args.scheme)
    policy = make_policy(args.policy, backfill=args.backfill)
    return policy, None


def cmd_simulate(args) -> int:
    from rtsched import metrics
    from rtsched.checkpoint import CheckpointModel
    from rtsched.machines import machine_from_spec
    from rtsched.sim.core import Simulator
    from rtsched.validate import validate_schedule

    apply_embedded_default(args)
    workload = _load_trace(args)
    if args.rt_percent:
        from rtsched.rtmarking import RtMarking, mark_realtime

        workload = mark_realtime(workload, RtMarking(percent=args.rt_percent, mode=args.rt_mode, seed=args.seed))
    machine = machine_from_spec(args.machine)
    _check_fits(workload, machine, args.trace or str(DEFAULT_TRACE))
    policy, scheme_ckpt = build_policy(args)
    ckpt = CheckpointModel.parse(args.checkpoint) if args.checkpoint else (scheme_ckpt or CheckpointModel.parse("no"))
    console = _console()
    progress_cb = None
    bar = None
    if not args.json and not args.no_progress and len(workload) >= 2000:
        from rich.progress import Progress

        bar = Progress(transient=True, console=console)
        task = bar.add_task(f"simulating {len(workload)} jobs", total=len(workload))
        bar.start()

        def progress_cb(done: int, total: int) -> None:
            bar.update(task, completed=done)

    try:
        sim = Simulator(workload, machine, checkpoint=ckpt, progress=progress_cb, progress_every=200)
        result = sim.run(policy)
    finally:
        if bar is not None:
            bar.stop()
    if not args.no_validate:
        validate_schedule(result.schedule, workload, machine, sim.io)
    window = _window(args, workload)
    # --tau sets the bound of the reported form; the other form keeps its paper's τ.
    tau_seed002 = args.tau if args.tau is not None and args.bsld_form == "seed002" else metrics.TAU_SEED002
    tau_rl = args.tau if args.tau is not None and args.bsld_form == "rl" else metrics.TAU_RL
    summary = metrics.summary_dict(result, window=window, tau_seed002=tau_seed002, tau_rl=tau_rl,
                                   bsld=args.bsld_form)
    summary["trace"] = args.trace or str(DEFAULT_TRACE.relative_to(REPO_ROOT))
    summary["machine"] = machine.name
    summary["policy"] = getattr(policy, "name", args.policy)
    summary["checkpoint"] = ckpt.label
    summary["jobs"] = len(workload)
    if args.schedule_out:
        names = machine.partition_names() if machine.partitioned else None
        result.schedule.write(args.schedule_out, names)
    if args.json:
        print(json.dumps(summary, indent=2, allow_nan=False))
    else:
        _print_summary(console, summary)
    return 0


def _fmt(x, digits=2):
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return f"{x:,}"


def _print_summary(console, summary: dict) -> None:
    from rich.table import Table

    title = (f"{summary['policy']} · {summary['checkpoint']} · {summary['machine']} · {summary['jobs']} jobs "
             f"· bounded slowdown τ = {summary['bsld_tau']} s ({summary['bsld_form']})")
    table = Table(title=title)
    for col in ("jobs", "n", "mean SD", "mean BSLD", "p95 SD", "mean wait (s)", "mean turnaround (s)"):
        table.add_column(col, justify="right")
    for group in ("all", "rt", "batch"):
        g = summary["summary"][group]
        table.add_row(group, _fmt(g["n"]), _fmt(g["mean_sd"]), _fmt(g["mean_bsld"]), _fmt(g["p95_sd"]),
                      _fmt(g["mean_wait"], 0), _fmt(g["mean_turnaround"], 0))
    console.print(table)
    console.print(f"utilization {summary['utilization']:.4f} · productive utilization "
                  f"{summary['productive_utilization']:.4f}")


# ---------------------------------------------------------------------------------------- traces
def cmd_traces_generate(args) -> int:
    from rtsched import generators
    from rtsched.io.swf import write_swf

    if args.shipped:
        written = generators.regenerate_shipped_traces(args.out or str(REPO_ROOT / "traces"))
        for path in written:
            print(path)
        return 0
    if not args.out:
        raise SystemExit("rtsched traces generate: --out FILE is required (or --shipped)")
    if args.model == "lublin":
        wl = generators.generate_lublin(n_jobs=args.jobs, nodes=args.nodes or 256, seed=args.seed)
    else:
        wl = generators.generate_miralike(days=args.days, seed=args.seed)
    write_swf(wl, args.out)
    print(f"{args.out}: {len(wl)} jobs")
    return 0


def cmd_traces_stats(args) -> int:
    from rich.table import Table

    from rtsched.io import read_workload
    from rtsched.traces_stats import trace_statistics

    wl = read_workload(args.trace, args.format)
    stats = trace_statistics(wl)
    if args.json:
        print(json.dumps(stats, indent=2, allow_nan=False))
        return 0
    table = Table(title=f"{args.trace}")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for k, v in stats.items():
        table.add_row(k, _fmt(v) if not isinstance(v, (dict, list)) else json.dumps(v))
    _console().print(table)
    return 0


def cmd_traces_convert(args) -> int:
    from rtsched.io import read_workload
    from rtsched.io.swf import write_swf

    wl = read_workload(args.input, args.format)
    if args.normalize_to_mira:
        from rtsched.io.normalize import normalize_to_mira

        wl = normalize_to_mira(wl)
    write_swf(wl, args.output)
    print(f"{args.output}: {len(wl)} jobs")
    return 0


# ---------------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rtsched", description="Real-time and batch job scheduling on HPC machines")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="simulate a trace under a policy and print metrics")
    sim.add_argument("trace", nargs="?", help="trace file (default: the shipped Mira-like week)")
    sim.add_argument("--format", choices=["swf", "cobalt", "alcf"], help="trace format (default: from the extension)")
    sim.add_argument("--machine", default="mira", help="mira, mira:BLOCKS, flat:N or a Cobalt partition .xml")
    sim.add_argument("--policy", help="fcfs, sjf, wfp3, unicep, f1, wfp2, baseline, highpq, wcjs, ..., or a trained "
                                    "RL model file (default: wfp2)")
    sim.add_argument("--scheme", help="a seed-002 scheme (baseline, highpq, jit-ckpt, wcjs-jit, wcjs-app-10, ...); "
                                      "sets the policy and the checkpoint model")
    sim.add_argument("--backfill", help="none, easy, ff, bf, sjf, rlscheduler (default: ff; a trained model: its own)")
    sim.add_argument("--checkpoint", help="no, sys[:SECONDS], app-PCT, jit (default: the scheme's, else no)")
    sim.add_argument("--rt-percent", type=float, help="mark this %% of jobs real-time (default: 10 on the embedded "
                                                          "default trace, else 0)")
    sim.add_argument("--rt-mode", default="random", choices=["random", "short", "aps"], help="RTJ marking mode")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--tau", type=int, help="bounded-slowdown bound τ in s of the chosen --bsld-form "
                                              "(default: 600 for seed002, 10 for rl)")
    sim.add_argument("--bsld-form", default="seed002", choices=["seed002", "rl"], help="bounded-slowdown formula")
    sim.add_argument("--window", help="results window START/DAYS (ISO date or epoch seconds), e.g. 2018-01-21/7")
    sim.add_argument("--first-n", type=int, help="only the first N jobs of the trace")
    sim.add_argument("--json", action="store_true", help="print a machine-readable JSON object")
    sim.add_argument("--schedule-out", help="write the schedule (CSV, or Parquet if the name ends in .parquet)")
    sim.add_argument("--no-progress", action="store_true")
    sim.add_argument("--no-validate", action="store_true", help="skip the independent schedule validator")
    sim.set_defaults(func=cmd_simulate)

    traces = sub.add_parser("traces", help="generate, inspect and convert traces")
    tsub = traces.add_subparsers(dest="traces_command", required=True)
    gen = tsub.add_parser("generate", help="generate a synthetic trace (or regenerate the shipped ones)")
    gen.add_argument("--shipped", action="store_true", help="regenerate the traces shipped in traces/ byte-for-byte")
    gen.add_argument("--model", choices=["lublin", "miralike"], default="miralike")
    gen.add_argument("--jobs", type=int, default=10000, help="Lublin: number of jobs")
    gen.add_argument("--nodes", type=int, help="Lublin: processors (default 256)")
    gen.add_argument("--days", type=float, default=7.0, help="Mira-like: days of arrivals")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--out", help="output SWF file (--shipped: output folder)")
    gen.set_defaults(func=cmd_traces_generate)
    st = tsub.add_parser("stats", help="statistics of a trace")
    st.add_argument("trace")
    st.add_argument("--format", choices=["swf", "cobalt", "alcf"])
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_traces_stats)
    cv = tsub.add_parser("convert", help="convert a Cobalt log or ALCF CSV (or SWF) to SWF")
    cv.add_argument("input")
    cv.add_argument("output")
    cv.add_argument("--format", choices=["swf", "cobalt", "alcf"])
    cv.add_argument("--normalize-to-mira", action="store_true", help="seed 002 eq. 59 size normalisation")
    cv.set_defaults(func=cmd_traces_convert)

    for hook in ("rtsched.experiments.cli:add_experiment_commands", "milp.cli:add_milp_commands",
                 "rtsched.rl.cli:add_rl_commands"):
        module_name, _, fn = hook.partition(":")
        try:
            module = __import__(module_name, fromlist=[fn])
        except ImportError as exc:  # an optional part (torch for rl) is not installed
            missing = getattr(exc, "name", None) or str(exc)
            _add_unavailable(sub, module_name, missing)
            continue
        getattr(module, fn)(sub)
    return parser


def _add_unavailable(sub, module_name: str, missing: str) -> None:
    command = {"rtsched.experiments.cli": "experiment", "milp.cli": "solve", "rtsched.rl.cli": "rl"}[module_name]
    p = sub.add_parser(command, help=f"(unavailable: needs {missing})")

    def fail(args) -> int:
        extra = " Install the RL extra: pip install torch==2.13.0 && pip install -e '.[rl]'" if command == "rl" else ""
        print(f"rtsched {command}: unavailable because {missing!r} cannot be imported.{extra}", file=sys.stderr)
        return 2

    p.set_defaults(func=fail)
    p.add_argument("rest", nargs=argparse.REMAINDER)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except RtschedError as exc:
        print(f"rtsched: error: {exc}", file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        print(f"rtsched: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("rtsched: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
