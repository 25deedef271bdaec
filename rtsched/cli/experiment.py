"""``rtsched experiment run|report|plot|status|merge``: experiment grids (``rtsched.experiments``)."""
from __future__ import annotations

import json

from rtsched.cli.common import UsageError, check_output, int_in, name_list

BACKENDS = ("local", "ray")  # rtsched.experiments.backends.BACKENDS (checked by the tests)


def register(subparsers) -> None:
    exp = subparsers.add_parser("experiment", help="run experiment grids (any run option as an axis); tables and "
                                                   "figures",
                                description="Experiment grids: a TOML file -> one result file per run "
                                            "(resumable, parallel, on one machine or a Ray cluster) -> "
                                            "summary.parquet, tables and figures.")
    esub = exp.add_subparsers(dest="experiment_command", required=True, metavar="COMMAND")

    run = esub.add_parser("run", help="run (or resume) every unfinished run of a grid")
    run.add_argument("grid", help="grid TOML file (e.g. experiments/headline_wk1.toml)")
    run.add_argument("--out", help="results folder (default: the grid's out_dir, else ./results/<name>)")
    run.add_argument("-j", "--jobs", type=int_in(1, 1024), default=2,
                     help="worker processes (default 2; 1 = in this process); with --backend ray and no "
                          "--address: the CPUs of the local Ray instance")
    run.add_argument("--backend", choices=BACKENDS, default="local",
                     help="local: worker processes on this machine (default); ray: each run a Ray task "
                          "(needs the ray extra)")
    run.add_argument("--address", help="Ray cluster to join with --backend ray: auto or HOST:PORT (default: "
                                       "$RAY_ADDRESS, else a cluster started with `ray start` on this node, else a "
                                       "new local Ray instance); nothing answering there fails within 10 s")
    run.add_argument("--shard", help="run only shard I of N (I/N, 0 <= I < N): runs I, I+N, I+2N, ... of the "
                                     "grid, e.g. a Slurm array task's $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT")
    run.add_argument("--no-summary", action="store_true",
                     help="do not rewrite summary.parquet at the end (shards of a job array: `experiment report` "
                          "or `experiment merge` writes it once)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar (the outcome is still printed)")
    run.add_argument("--dry-run", action="store_true", help="list the runs and their state; run nothing")
    run.add_argument("--json", action="store_true", help="print the run summary as JSON")
    run.set_defaults(func=cmd_run)

    rep = esub.add_parser("report", help="tables: seed-002 slowdown tables, or mean / median / p95 of SD, BSLD and "
                                         "wait per axis combination")
    rep.add_argument("dir", help="results folder")
    rep.add_argument("--csv", help="also write the tables as CSV files into this folder")
    rep.add_argument("--generic", action="store_true",
                     help="the generic table (per axis combination) even for a seed-002 study")
    rep.set_defaults(func=cmd_report)

    plt = esub.add_parser("plot", help="boxplot figures like seed 002 Figs. 3-7")
    plt.add_argument("dir", help="results folder")
    plt.add_argument("--out", help="figure folder (default DIR/figures)")
    plt.add_argument("--schemes", help="comma-separated schemes to show (default: the grid's figure_schemes)")
    plt.add_argument("--dpi", type=int_in(1, 1200, "larger figures exhaust memory"), default=120,
                     help="PNG resolution (default 120, at most 1200)")
    plt.set_defaults(func=cmd_plot)

    mrg = esub.add_parser("merge", help="merge results folders of one grid (shards) into one study folder",
                          description="Copy every finished run of the folders (results folders of one grid, e.g. "
                                      "shards run into separate folders) into one folder and write its "
                                      "summary.parquet once.  Folders of different grids are refused.")
    mrg.add_argument("dirs", nargs="+", metavar="DIR", help="results folders of one grid")
    mrg.add_argument("--out", help="the merged folder (default: the first DIR)")
    mrg.set_defaults(func=cmd_merge)

    st = esub.add_parser("status", help="how many runs of a grid are done, running, failed, corrupt, pending")
    st.add_argument("grid", help="grid TOML file (e.g. experiments/headline_wk1.toml)")
    st.add_argument("--out", help="results folder (default: the grid's out_dir, else ./results/<name>)")
    st.add_argument("--shard", help="only shard I/N of the grid")
    st.set_defaults(func=cmd_status)


def _shard(args):
    from rtsched.experiments.runner import parse_shard

    return parse_shard(args.shard) if args.shard is not None else None


def cmd_run(args) -> int:
    from rich.console import Console

    from rtsched.experiments.runner import plan, run_grid

    if args.address and args.backend != "ray":
        raise UsageError("--address names a Ray cluster: use it with --backend ray")
    shard = _shard(args)
    check_output(args.out, "--out", folder=True)
    if args.dry_run:
        frame = plan(args.grid, args.out, shard=shard)
        print(frame.to_string(index=False))
        print(frame["status"].value_counts().to_string())
        return 0
    if args.backend == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            from rtsched.experiments.backends import RAY_MISSING

            raise UsageError(RAY_MISSING)
    summary = run_grid(args.grid, out_dir=args.out, jobs=args.jobs,
                       progress=not args.no_progress and not args.json, console=Console(stderr=True, soft_wrap=True),
                       backend=args.backend, address=args.address, shard=shard, summary=not args.no_summary)
    if args.json:
        print(json.dumps(summary, indent=2))
    return 1 if summary["failed"] else 0


def cmd_merge(args) -> int:
    from rtsched.experiments.merge import merge

    check_output(args.out, "--out", folder=True)
    result = merge(args.dirs, args.out)
    print(f"merged into {result['out_dir']}: {result['copied']} run(s) copied, {result['present']} already there, "
          f"{result['errors']} error file(s) copied; {result['runs']} of {result['grid_runs']} runs finished; "
          "summary.parquet written")
    return 0


def cmd_status(args) -> int:
    from rtsched.experiments.runner import plan

    frame = plan(args.grid, args.out, shard=_shard(args))
    print(frame["status"].value_counts().to_string())
    for _, r in frame[frame["status"] == "corrupt"].iterrows():
        print(f"corrupt: {r['key']}  {r['trace']} seed {r['seed']}: {r['problem']} (the next run recomputes it)")
    return 0


def cmd_report(args) -> int:
    from pathlib import Path

    from rtsched.experiments import store
    from rtsched.experiments.report import report, report_tables
    from rtsched.experiments.results import summary_is_stale, write_summary

    check_output(args.csv, "--csv", folder=True)  # before any output: not a report, then an error
    if summary_is_stale(args.dir):  # runs finished since (other shards, machines): bring it up to date
        try:
            with store.FolderLock(Path(args.dir)):
                write_summary(args.dir)
        except PermissionError:  # a read-only folder: the tables below are read from the runs anyway
            pass
    tables = report_tables(args.dir, generic=True if args.generic else None)
    print(report(args.dir, tables), end="")
    if args.csv:
        out = Path(args.csv)
        out.mkdir(parents=True, exist_ok=True)
        for name, frame in tables.items():
            if name == "checks":  # warnings, printed in the report
                continue
            store.atomic_write(out / f"{name}.csv", lambda tmp, frame=frame: frame.to_csv(tmp, index=False))
        print(f"tables written to {out}/")
    return 0


def cmd_plot(args) -> int:
    from rtsched.experiments.figures import plot

    schemes = name_list(args.schemes, "--schemes") if args.schemes is not None else None
    check_output(args.out, "--out", folder=True)
    paths = plot(args.dir, args.out, schemes=schemes, dpi=args.dpi)
    for path in paths:
        print(path)
    if not paths:  # not silently nothing: say why
        from rtsched.errors import InputError

        what = (f"none of --schemes {','.join(schemes)} has a finished run here" if schemes
                else "the folder has no finished run to plot")
        raise InputError(f"no figure written: {what} (rtsched experiment report {args.dir} lists the runs)",
                         path=args.dir)
    return 0
