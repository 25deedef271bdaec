"""``rtsched traces generate|stats|convert``: synthetic traces, the shipped ones, statistics, SWF conversion."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from rtsched.cli.common import (CONVERT_FORMATS, SWF_FORMATS, UsageError, changed_options, check_extension,
                                check_output, console, float_in, fmt, int_in, nonneg_int,
                                positive_int)

SHIPPED_DIR = Path(__file__).resolve().parents[2] / "traces"
# Largest generated traces (a few seconds and a few hundred MB): Lublin jobs, Mira-like days.
MAX_JOBS = 2_000_000
MAX_DAYS = 3660
MAX_SIZE = 10**8  # rtsched.io.cleaning.MAX_SIZE (the readers' largest size)
# ``traces generate``'s model options and their defaults (refused where the model or --shipped ignores them)
GENERATE_DEFAULTS = {"model": "miralike", "jobs": 10000, "nodes": None, "days": 7.0, "seed": 0}
LUBLIN_ONLY = ("jobs", "nodes")
MIRALIKE_ONLY = ("days",)


def register(sub) -> None:
    traces = sub.add_parser("traces", help="generate, inspect and convert traces")
    tsub = traces.add_subparsers(dest="traces_command", required=True, metavar="COMMAND")
    gen = tsub.add_parser("generate", help="generate a synthetic trace (or regenerate the shipped ones)")
    gen.add_argument("--shipped", action="store_true", help="regenerate the traces shipped in traces/ byte-for-byte")
    d = GENERATE_DEFAULTS
    gen.add_argument("--model", choices=["lublin", "miralike"], default=d["model"],
                     help=f"lublin: Lublin-Feitelson rigid jobs; miralike: the Mira-like model (default {d['model']})")
    gen.add_argument("--jobs", type=int_in(1, MAX_JOBS, "MAX_JOBS"), default=d["jobs"],
                     help=f"Lublin: number of jobs (1 .. {MAX_JOBS:,}; default {d['jobs']:,})")
    gen.add_argument("--nodes", type=int_in(1, MAX_SIZE, "MAX_SIZE"), help="Lublin: processors (default 256)")
    gen.add_argument("--days", type=float_in(0, MAX_DAYS, "MAX_DAYS"), default=d["days"],
                     help=f"Mira-like: days of arrivals (> 0, at most {MAX_DAYS:,}; default {d['days']:g})")
    gen.add_argument("--seed", type=nonneg_int, default=d["seed"], help=f"generator seed (>= 0, default {d['seed']})")
    gen.add_argument("--out", help="output SWF file (--shipped: output folder)")
    gen.set_defaults(func=generate)
    st = tsub.add_parser("stats", help="statistics of a trace")
    st.add_argument("trace", help="trace file, or - for standard input (then --format is needed)")
    st.add_argument("--format", choices=["swf", "cobalt", "alcf"], help="trace format (default: from the extension)")
    st.add_argument("--json", action="store_true", help="print a machine-readable JSON object")
    st.set_defaults(func=stats)
    cv = tsub.add_parser("convert", help="convert a Cobalt log or ALCF CSV (or SWF) to SWF, or to a Batsim workload")
    cv.add_argument("input", help="trace file, or - for standard input (then --format is needed)")
    cv.add_argument("output", help="SWF file to write (- for standard output); a name ending in .json writes a "
                                   "Batsim workload")
    cv.add_argument("--nb-res", type=positive_int,
                    help="Batsim output: the machine's resources (default: the trace header's size)")
    cv.add_argument("--format", choices=["swf", "cobalt", "alcf"], help="input format (default: from the extension)")
    cv.add_argument("--normalize-to-mira", action="store_true", help="seed 002 eq. 59 size normalisation")
    cv.set_defaults(func=convert)


def generate(args) -> int:
    from rtsched import generators
    from rtsched.io.swf import write_swf

    if args.shipped:
        given = changed_options(args, GENERATE_DEFAULTS)
        if given:
            raise UsageError(f"{', '.join(given)}: --shipped regenerates the shipped traces as they are "
                             "(it takes only --out)")
        out = args.out or str(SHIPPED_DIR)
        check_output(out, "--out", folder=True)
        for path in generators.regenerate_shipped_traces(out):
            print(path)
        return 0
    if not args.out:
        raise UsageError("--out FILE is required (or --shipped)")
    other = MIRALIKE_ONLY if args.model == "lublin" else LUBLIN_ONLY
    given = changed_options(args, {k: GENERATE_DEFAULTS[k] for k in other})
    if given:
        raise UsageError(f"{given[0]} applies to --model {'miralike' if args.model == 'lublin' else 'lublin'} only"
                         + ("" if args.model == "lublin" else " (the Mira-like model has Mira's sizes and draws "
                            "its jobs over --days)"))
    check_output(args.out, "--out")
    check_extension(args.out, "--out", SWF_FORMATS)
    if args.model == "lublin":
        wl = generators.generate_lublin(n_jobs=args.jobs, nodes=args.nodes or 256, seed=args.seed)
    else:
        wl = generators.generate_miralike(days=args.days, seed=args.seed)
        if not len(wl):
            raise UsageError(f"--days {args.days:g}: the Mira-like model drew no job in that span (seed {args.seed}); "
                             "give more days")
    write_swf(wl, args.out)
    print(f"{args.out}: {len(wl)} jobs")
    return 0


def stats(args) -> int:
    from rich.table import Table

    from rtsched.io import read_workload
    from rtsched.traces_stats import trace_statistics

    wl = read_workload(args.trace, args.format)
    fmt_read = args.format or getattr(wl.header, "fmt", None)
    result = trace_statistics(wl)
    if args.json:
        print(json.dumps({"trace": args.trace, "format": fmt_read, **result}, indent=2, allow_nan=False))
        return 0
    table = Table(title=f"{args.trace} ({fmt_read})")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for k, v in result.items():
        table.add_row(k, fmt(v) if not isinstance(v, (dict, list)) else json.dumps(v))
    console().print(table)
    return 0


def convert(args) -> int:
    from rtsched.io import read_workload
    from rtsched.io.swf import write_swf

    check_output(args.output, "output", stdout=True, inputs=(args.input,))
    check_extension(args.output, "output", CONVERT_FORMATS)
    batsim = args.output.lower().endswith(".json")
    if args.nb_res is not None and not batsim:
        raise UsageError("--nb-res applies to a Batsim workload output (a name ending in .json) only")
    wl = read_workload(args.input, args.format)
    if args.normalize_to_mira:
        from rtsched.io.normalize import normalize_to_mira

        wl = normalize_to_mira(wl)
    if args.output == "-":  # SWF on standard output (the count goes to stderr)
        from rtsched.io.swf import swf_lines

        for line in swf_lines(wl):
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
        print(f"-: {len(wl)} jobs", file=sys.stderr)
        return 0
    if batsim:
        from rtsched.export import write_batsim_workload

        nb_res = args.nb_res or wl.max_nodes
        if not nb_res:
            raise UsageError("--nb-res: the trace header gives no machine size; give the number of resources")
        write_batsim_workload(wl, args.output, nb_res)
        print(f"{args.output}: {len(wl)} jobs, Batsim workload on {nb_res} resources")
        return 0
    write_swf(wl, args.output)
    print(f"{args.output}: {len(wl)} jobs")
    return 0
