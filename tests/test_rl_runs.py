"""A long run's folder read back (``rtsched.rl.runs``) and its validation curve drawn with references."""
from __future__ import annotations

import json

import pytest

from rtsched.errors import InputError
from rtsched.rl.runs import read_run


def _write(path, doc) -> None:
    path.write_text(json.dumps(doc))


def test_read_run_joins_budget_and_validation(tmp_path):
    """Two steps of 100.5 + 3,500 CPU s are 1.000139 CPU h; the curve comes back in epoch order whatever
    the file's order; the best row and the references are the file's."""
    _write(tmp_path / "budget.json", {"steps": [
        {"started": "x", "first_epoch": 1, "last_epoch": 10, "cpu_s": 100.5, "wall_s": 200.0},
        {"started": "y", "first_epoch": 11, "last_epoch": 25, "cpu_s": 3500.0, "wall_s": 4000.0}],
        "cpu_s": 3600.5, "wall_s": 4200.0})
    _write(tmp_path / "selection.json", {
        "validation": "greedy average wait (s)", "references": {"sjf+easy": 14645.4, "fcfs+easy": 31127},
        "best": {"epoch": 5, "validation": 9.0},
        "epochs": [{"epoch": 10, "validation": 12.0}, {"epoch": 0, "validation": 11.0},
                   {"epoch": 5, "validation": 9.0}]})
    rec = read_run(str(tmp_path))
    assert rec.cpu_s == pytest.approx(3600.5) and rec.cpu_h == pytest.approx(3600.5 / 3600)
    assert rec.wall_s == pytest.approx(4200.0)
    assert rec.last_epoch == 25
    assert [r["epoch"] for r in rec.curve] == [0, 5, 10]
    assert rec.best == {"epoch": 5, "validation": 9.0}
    assert rec.references == {"sjf+easy": 14645.4, "fcfs+easy": 31127.0}
    assert rec.validation == "greedy average wait (s)"
    assert rec.name == tmp_path.name


def test_read_run_without_files_is_empty_and_bad_files_are_named(tmp_path):
    rec = read_run(str(tmp_path))
    assert (rec.cpu_s, rec.curve, rec.best, rec.last_epoch) == (0.0, [], None, 0)
    (tmp_path / "budget.json").write_text("{not json")
    with pytest.raises(InputError, match="budget.json"):
        read_run(str(tmp_path))
    _write(tmp_path / "budget.json", {"cpu_s": 1.0})
    with pytest.raises(InputError, match="'steps'"):
        read_run(str(tmp_path))
    _write(tmp_path / "budget.json", {"steps": []})
    _write(tmp_path / "selection.json", {"epochs": [{"epoch": 1, "validation": None}]})
    with pytest.raises(InputError, match="selection.json.*epoch 1"):
        read_run(str(tmp_path))
    with pytest.raises(InputError, match="not a run folder"):
        read_run(str(tmp_path / "nope"))


def test_validation_curve_with_reference_lines():
    """Flat references are drawn in every panel, nested ones only in their own panel, at their values."""
    pytest.importorskip("matplotlib")
    from rtsched.plots import learning_curve

    curve = [{"epoch": e, "validation": 100.0 + e} for e in (0, 5, 10)]
    fig = learning_curve(curve, key="validation", references={"SJF + EASY": 120.0, "teacher": 90.0},
                         ylabel="average wait (s)")
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert list(lines[0].get_ydata()) == [100.0, 105.0, 110.0]
    assert [float(line.get_ydata()[0]) for line in lines[1:]] == [120.0, 90.0]
    assert ax.get_ylabel() == "average wait (s)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["validation", "SJF + EASY 120", "teacher 90"]
    fig = learning_curve({"a": curve, "b": curve}, key="validation", references={"b": {"teacher": 95.0}})
    a, b = [ax for ax in fig.axes if ax.get_visible()]
    assert len(a.get_lines()) == 1 and len(b.get_lines()) == 2
    assert float(b.get_lines()[1].get_ydata()[0]) == 95.0
