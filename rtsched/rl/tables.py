"""The papers' result tables, built from rtsched runs (used by notebooks/rl_table5.ipynb).

* ``table_v``: seed 003's Table V layout — mean over test sequences of the average bounded slowdown
  (τ = 10 s) of FCFS, WFP3, UNICEP, SJF, F1 and the trained RLScheduler, per trace, without and with
  backfilling, all in the compatibility mode (``run_sequence``/``evaluate``).
* ``inspector_table``: seed 000's Table 4 layout for each base policy — the base policy alone on
  trace Y ("Base→Y"), inspected by a model trained on another trace ("'X'→Y") and by one trained on
  Y ("Y→Y"), with the relative gains (base − inspected)/base in % and the rejection ratio
  (rejections / inspections over all test sequences).
* ``train_table5_models``: trains the models these tables need, with one settings dict;
  ``export_table5_models`` / ``pretrained_table5_models`` write and read a folder of policy-only
  copies with a manifest (rtsched ships one, trained at the papers' settings, in ``pretrained/table5``).
* ``plot_table_v``: a bar chart of a ``table_v`` frame.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from heuristics.backfill import normalize_backfill
from heuristics.committed import COMMITTED_BACKFILLS
from rtsched.files import atomic_write_text
from rtsched.rl.api import train
from rtsched.rl.policies import policy_from_model
from rtsched.rl.modelfiles import export_model, read_model_file
from rtsched.rl.sequences import run_sequence, start_bounds
from rtsched.rl.trace import RLTrace, load_trace

# Table V's heuristic columns → compat priority names.  The published WFP3/UNICEP numbers come from the
# authors' code with its wait defect (docs/rl.md); ``authors_defect=False`` uses the correct formulas.
TABLE_V_COLUMNS = ("FCFS", "WFP3", "UNICEP", "SJF", "F1")
PAPER_LUBLIN1_STARTS = (1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085)
# Models trained by train_table5_models at the papers' settings, exported (export_table5_models).
PRETRAINED_TABLE5 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pretrained", "table5")
BACKFILL_LABELS = {"none": "without backfilling", "rlscheduler": "with backfilling", "easy": "with EASY backfilling"}


# Seed 003 Table V (mean avg bsld), the two traces the notebook reproduces.
PAPER_TABLE_V = {
    ("without backfilling", "Lublin-1"): (7273.8, 19754, 22275, 277.35, 258.37, 254.67),
    ("without backfilling", "SDSC-SP2"): (1727.5, 3000.9, 1848.5, 2680.6, 1232.1, 466.44),
    ("with backfilling", "Lublin-1"): (235.82, 133.87, 307.23, 73.31, 75.07, 58.64),
    ("with backfilling", "SDSC-SP2"): (1595.1, 1083.1, 548.01, 2167.8, 1098.2, 397.82),
}


def paper_table_v():
    """Seed 003's published Table V rows for Lublin-1 and SDSC-SP2, in ``table_v``'s layout."""
    import pandas as pd

    idx = pd.MultiIndex.from_tuples(list(PAPER_TABLE_V), names=["backfilling", "trace"])
    return pd.DataFrame(list(PAPER_TABLE_V.values()), index=idx, columns=[*TABLE_V_COLUMNS, "RL"])


def heuristic_priority(column: str, authors_defect: bool = True) -> str:
    key = column.lower()
    if key in ("wfp3", "unicep") and authors_defect:
        return f"{key}-authors"
    return key


def draw_test_starts(trace: RLTrace, n: int, seq_len: int, seed: int = 1, start_range=None) -> list[int]:
    """``n`` first jobs drawn uniformly (``seed``) from [seq_len, N − seq_len − 1) (the authors' test
    script), or from the part ``start_range`` allows (``rtsched.rl.sequences.start_bounds``; seed 000's
    test part: (0.2, 1), the last 80 %)."""
    lo, hi = start_bounds(len(trace), seq_len, start_range)
    return np.random.default_rng(seed).integers(lo, hi + 1, size=n).tolist()


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def _model_policy(path: str, trace: RLTrace, start: int, seq_len: int, backfill: str, **kw):
    return policy_from_model(path, backfill=backfill, extras=trace.extras(start, seq_len), norms=trace.norms(),
                             greedy=True, **kw)


def table_v(traces: Mapping[str, object], models: Mapping[tuple[str, str], str] | None = None, *,
            starts: Mapping[str, Sequence[int]] | None = None, n_sequences: int = 10, seq_len: int = 1024,
            backfills: Sequence = ("none", "rlscheduler"), seed: int = 1, authors_defect: bool = True,
            goal: str = "bsld"):
    """Table V: a DataFrame indexed by (backfilling, trace) with columns FCFS … F1 and RL.

    ``traces``: label → SWF path or RLTrace.  ``models``: (trace label, backfill) → model path (the RL
    column; NaN where absent).  ``starts``: label → first jobs; other traces draw ``n_sequences``
    starts with ``seed`` (``draw_test_starts``).  Values: mean over sequences of the goal's per-sequence value.
    """
    import pandas as pd

    models = dict(models or {})
    rows, index = [], []
    loaded = {label: load_trace(t) for label, t in traces.items()}
    for bf in backfills:
        b = normalize_backfill(bf, COMMITTED_BACKFILLS)
        for label, tr in loaded.items():
            st = list((starts or {}).get(label) or draw_test_starts(tr, n_sequences, seq_len, seed))
            row = {}
            for col in TABLE_V_COLUMNS:
                pri = heuristic_priority(col, authors_defect)
                row[col] = _mean([run_sequence(tr, s, seq_len, pri, backfill=b, goals=(goal,))[goal] for s in st])
            path = models.get((label, b))
            if path is not None:
                row["RL"] = _mean([run_sequence(tr, s, seq_len, _model_policy(path, tr, s, seq_len, b), backfill=b,
                                                goals=(goal,))[goal] for s in st])
            else:
                row["RL"] = float("nan")
            rows.append(row)
            index.append((BACKFILL_LABELS[b], label))
    return pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["backfilling", "trace"]))


@dataclass
class InspectedRun:
    value: float  # mean goal value over the sequences
    inspections: int
    rejections: int
    blocked_rejections: int = 0  # rejections of a job that could not start then anyway
    values: tuple[float, ...] = ()  # the goal value of each sequence, in the order of the starts
    blocked_inspections: int = 0  # inspections of a job that could not start then anyway
    forced: int = 0  # jobs accepted without asking (rejected 72 times already)


def inspect_sequences(model: str, trace: RLTrace, starts: Sequence[int], seq_len: int, backfill: str, base: str,
                      goal: str = "bsld") -> InspectedRun:
    """A base priority inspected by ``model`` on each sequence (greedy), with the rejection counts."""
    vals, insp, rej, blocked, blocked_insp, forced = [], 0, 0, 0, 0, 0
    for s in starts:
        pol = _model_policy(model, trace, s, seq_len, backfill, base=base)
        vals.append(run_sequence(trace, s, seq_len, pol, backfill=backfill, goals=(goal,))[goal])
        insp += pol.n_inspections
        rej += pol.n_rejections
        blocked += pol.n_blocked_rejections
        blocked_insp += pol.n_blocked_inspections
        forced += pol.n_forced
    return InspectedRun(_mean(vals), insp, rej, blocked, tuple(vals), blocked_insp, forced)


def inspector_table(traces: Mapping[str, object], models: Mapping[tuple[str, str], str], *,
                    bases: Sequence[str] = ("sjf", "f1"), cross_from: str | None = None, n_sequences: int = 50,
                    seq_len: int = 256, backfill="none", seed: int = 1, goal: str = "bsld"):
    """Seed 000's Table 4 layout for every base: rows (base, trace Y); columns ``Base→Y``,
    ``'X'→Y`` (X = ``cross_from``, the model trained on X inspecting Y), ``Y→Y``, the gains
    ``gain 'X'→Y %`` and ``gain Y→Y %`` = 100·(base − inspected)/base, and ``rejection ratio Y→Y``.

    ``models``: (base, trained-on trace label) → inspector model path.  Test sequences: ``n_sequences``
    × ``seq_len`` jobs drawn with ``seed`` (the paper: 50 × 256)."""
    import pandas as pd

    b = normalize_backfill(backfill, COMMITTED_BACKFILLS)
    loaded = {label: load_trace(t) for label, t in traces.items()}
    rows, index = [], []
    cross_col = f"'{cross_from}'→Y" if cross_from else None
    for base in bases:
        for label, tr in loaded.items():
            st = draw_test_starts(tr, n_sequences, seq_len, seed)
            base_v = _mean([run_sequence(tr, s, seq_len, base, backfill=b, goals=(goal,))[goal] for s in st])
            row = {"Base→Y": base_v}
            if cross_col:
                m = models.get((base, cross_from))
                row[cross_col] = inspect_sequences(m, tr, st, seq_len, b, base, goal).value if m else float("nan")
            own = models.get((base, label))
            run = inspect_sequences(own, tr, st, seq_len, b, base, goal) if own else None
            row["Y→Y"] = run.value if run else float("nan")
            if cross_col:
                row[f"gain {cross_col} %"] = 100.0 * (base_v - row[cross_col]) / base_v
            row["gain Y→Y %"] = 100.0 * (base_v - row["Y→Y"]) / base_v
            row["rejection ratio Y→Y"] = run.rejections / run.inspections if run and run.inspections else float("nan")
            # the share of those rejections whose job could not start anyway (seed 000 §4.4.1: "rejecting a
            # job that needs to wait for resources does not impact the performance")
            row["blocked share of rejections"] = (run.blocked_rejections / run.rejections if run and run.rejections
                                                  else float("nan"))
            rows.append(row)
            index.append((base.upper(), label))
    return pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["base", "trace Y"]))


def train_table5_models(traces: Mapping[str, str], out: str, *,
                        rl_backfills: Sequence[str] = ("none", "rlscheduler"),
                        inspector_bases: Sequence[str] = ("sjf", "f1"), rl_options: Mapping | None = None,
                        inspector_options: Mapping | None = None, epochs: int = 100,
                        inspector_epochs: int | None = None, progress=None) -> dict:
    """Train every model the two tables need; resumes runs already in ``out`` (same settings).

    Returns ``{"rl": {(trace, backfill): path}, "inspector": {(base, trace): path}, "history": {...}}``.
    ``progress(name, epoch, epochs, stats)`` is called after every epoch of every run."""
    models: dict = {"rl": {}, "inspector": {}, "history": {}}
    for label, path in traces.items():
        tr = load_trace(path)
        for bf in rl_backfills:
            b = normalize_backfill(bf, COMMITTED_BACKFILLS)
            name = f"rl-{_slug(label)}-{b}"
            folder = os.path.join(out, name)
            cb = (lambda e, n, s, name=name: progress(name, e, n, s)) if progress else None
            res = train("rlscheduler", tr, goal="bsld", backfill=b, epochs=epochs, out=folder, progress=cb,
                        **dict(rl_options or {}))
            models["rl"][(label, b)] = folder
            models["history"][name] = res["history"]
        for base in inspector_bases:
            name = f"inspector-{_slug(label)}-{base}"
            folder = os.path.join(out, name)
            cb = (lambda e, n, s, name=name: progress(name, e, n, s)) if progress else None
            res = train("inspector", tr, goal="bsld", backfill="none", epochs=inspector_epochs or epochs, out=folder,
                        progress=cb, base=base, **dict(inspector_options or {}))
            models["inspector"][(base, label)] = folder
            models["history"][name] = res["history"]
    return models


def export_table5_models(models: Mapping, dest: str | os.PathLike, *, note: str = "") -> dict:
    """Export every run of a ``train_table5_models`` result to ``dest`` as policy-only model files
    (:func:`rtsched.rl.modelfiles.export_model`) and write ``dest/manifest.json`` describing them.

    The manifest is written last, through a temporary file, so a folder whose manifest exists is
    complete.  Returns the manifest."""
    os.makedirs(dest, exist_ok=True)
    entries = []
    for kind, items in (("rl", models.get("rl", {})), ("inspector", models.get("inspector", {}))):
        for key, folder in items.items():
            name = os.path.basename(os.path.normpath(folder))
            info = export_model(folder, os.path.join(dest, f"{name}.pt"))
            st = read_model_file(info["path"])  # checks the written file as well
            last = st["history"][-1] if st.get("history") else {}
            label, arg = key if kind == "rl" else (key[1], key[0])
            entries.append({"file": f"{name}.pt", "agent": st["agent"], "trace": label,
                            "backfill": arg if kind == "rl" else st["env"].get("backfill"),
                            "base": arg if kind == "inspector" else None, "epochs": info["epoch"],
                            "trace_file": st["env"].get("trace_path"), "seed": st["ppo"].get("seed"),
                            "last_mean_return": last.get("mean_return"), "bytes": info["bytes"]})
    manifest = {"format": "rtsched-table5-models", "note": note, "models": entries}
    atomic_write_text(os.path.join(dest, "manifest.json"), json.dumps(manifest, indent=1) + "\n")
    return manifest


def pretrained_table5_models(folder: str | os.PathLike | None = None) -> dict:
    """The Table V / inspector models shipped with rtsched (or exported to ``folder``), in
    ``train_table5_models``'s layout: ``{"rl": {(trace, backfill): path}, "inspector": {(base, trace): path},
    "manifest": [...]}``; empty mappings when the folder has no manifest."""
    folder = os.fspath(folder) if folder is not None else PRETRAINED_TABLE5
    path = os.path.join(folder, "manifest.json")
    out: dict = {"rl": {}, "inspector": {}, "manifest": []}
    if not os.path.exists(path):
        return out
    where = "the file"
    try:
        with open(path) as fh:
            manifest = json.load(fh)
        for i, e in enumerate(manifest["models"]):
            where = f"models[{i}]"
            file = os.path.join(folder, e["file"])
            if e["agent"] == "rlscheduler":
                out["rl"][(e["trace"], normalize_backfill(e["backfill"], COMMITTED_BACKFILLS))] = file
            else:
                out["inspector"][(e["base"], e["trace"])] = file
            out["manifest"].append(e)
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a Table V model manifest ({where}: {type(exc).__name__}: {exc})") from exc
    return out


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in label.lower()).strip("-")


def plot_table_v(df, ax=None, title: str | None = None):
    """Grouped bars (log scale) of a ``table_v`` frame: one group per (backfilling, trace)."""
    from rtsched.plots import new_figure

    if ax is None:  # a Figure outside pyplot: a notebook shows it once, where it is displayed
        ax = new_figure((9, 3.6)).add_subplot()
    cols = list(df.columns)
    x = np.arange(len(df))
    w = 0.8 / len(cols)
    for i, c in enumerate(cols):
        ax.bar(x + (i - (len(cols) - 1) / 2) * w, df[c].to_numpy(dtype=float), w, label=c)
    ax.set_xticks(x, [f"{t}\n{b}" for b, t in df.index], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("mean bounded slowdown (τ = 10 s)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend([("RLScheduler" if c == "RL" else c) for c in cols], ncol=len(cols), fontsize=8)
    if title:
        ax.set_title(title)
    return ax.figure
