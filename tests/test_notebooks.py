"""Every notebook in notebooks/ runs top to bottom in its small (CI) mode.

Notebooks call library code only; this test makes sure they keep working as the library changes.
A notebook switches to its full settings when RTSCHED_FULL=1 — that is never set here.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 900
pytestmark = pytest.mark.slow  # each notebook runs its small mode end to end: seconds to tens of seconds


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # The kernel is a child process: give it the repository on its path (an editable install has it
    # already; a bare checkout run with PYTHONPATH=. would otherwise lose it when cwd changes) and a
    # non-interactive matplotlib backend.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("RTSCHED_FULL", raising=False)
    monkeypatch.setenv("RTSCHED_NOTEBOOK_OUT", str(tmp_path))  # where a notebook may write its run files
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
