"""``rtsched experiment run|report|plot|status``: experiment grids (``rtsched.experiments``)."""
from __future__ import annotations

import json

from rtsched.cli.common import check_output, name_list, positive_int


def register(subparsers) -> None:
    exp = subparsers.add_parser("experiment", help="run seed-002 style experiment grids; tables and figures",
                                description="Experiment grids: a TOML file -> one result file per run "
                                            "(resumable, parallel) -> tables and figures.")
    esub = exp.add_subparsers(dest="experiment_command", required=True)

    run = esub.add_parser("run", help="run (or resume) every unfinished run of a grid")
    run.add_argument("grid", help="grid TOML file (e.g. experiments/headline_wk1.toml)")
    run.add_argument("--out", help="results folder (default: the grid's out_dir, else results/<name>)")
    run.add_argument("-j", "--jobs", type=positive_int, default=2, help="worker processes (default 2; 1 = in-process)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--dry-run", action="store_true", help="list the runs and their state; run nothing")
    run.add_argument("--json", action="store_true", help="print the run summary as JSON")
    run.set_defaults(func=cmd_run)

    rep = esub.add_parser("report", help="tables: mean RTJ/BJ slowdown per scheme, RTJ %%, category; headline")
    rep.add_argument("dir", help="results folder")
    rep.add_argument("--csv", help="also write the tables as CSV files into this folder")
    rep.set_defaults(func=cmd_report)

    plt = esub.add_parser("plot", help="boxplot figures like seed 002 Figs. 3-7")
    plt.add_argument("dir", help="results folder")
    plt.add_argument("--out", help="figure folder (default DIR/figures)")
    plt.add_argument("--schemes", help="comma-separated schemes to show (default: the grid's figure_schemes)")
    plt.add_argument("--dpi", type=positive_int, default=120, help="PNG resolution (default 120)")
    plt.set_defaults(func=cmd_plot)

    st = esub.add_parser("status", help="how many runs of a grid are done, failed, pending")
    st.add_argument("grid")
    st.add_argument("--out")
    st.set_defaults(func=cmd_status)


def cmd_run(args) -> int:
    from rtsched.experiments.runner import plan, run_grid

    check_output(args.out, "--out", folder=True)
    if args.dry_run:
        frame = plan(args.grid, args.out)
        print(frame.to_string(index=False))
        print(frame["status"].value_counts().to_string())
        return 0
    summary = run_grid(args.grid, out_dir=args.out, jobs=args.jobs, progress=not args.no_progress and not args.json)
    if args.json:
        print(json.dumps(summary, indent=2))
    return 1 if summary["failed"] else 0


def cmd_status(args) -> int:
    from rtsched.experiments.runner import plan

    frame = plan(args.grid, args.out)
    print(frame["status"].value_counts().to_string())
    return 0


def cmd_report(args) -> int:
    from pathlib import Path

    from rtsched.experiments.report import report, report_tables

    tables = report_tables(args.dir)
    print(report(args.dir, tables), end="")
    if args.csv:
        check_output(args.csv, "--csv", folder=True)
        out = Path(args.csv)
        out.mkdir(parents=True, exist_ok=True)
        for name, frame in tables.items():
            frame.to_csv(out / f"{name}.csv", index=False)
        print(f"tables written to {out}/")
    return 0


def cmd_plot(args) -> int:
    from rtsched.experiments.figures import plot

    schemes = name_list(args.schemes, "--schemes") if args.schemes is not None else None
    check_output(args.out, "--out", folder=True)
    for path in plot(args.dir, args.out, schemes=schemes, dpi=args.dpi):
        print(path)
    return 0
