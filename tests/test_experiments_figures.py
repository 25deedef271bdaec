"""Figures of a study without RTJs (issue 26): no empty real-time panels, no blank category figures,
a legend that shows every entry; summary_bars with seeds that gave identical results draws."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import conftest

from rtsched import pipeline
from rtsched.experiments import figures, run_grid
from rtsched.experiments.results import summary_frame
from rtsched.plots import study_boxplots


@pytest.fixture(autouse=True)
def fresh_caches():
    pipeline.clear_caches()



def write_swf(path: Path, n: int = 40, seed: int = 1, procs: int = 64) -> Path:
    return conftest.write_swf(path, n=n, seed=seed, procs=procs)


@pytest.fixture(scope="module")
def batch_study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("batch")
    write_swf(tmp / "t.swf")
    (tmp / "g.toml").write_text('name = "b"\n[trace]\npath = "t.swf"\n[grid]\npolicy = ["fcfs", "sjf"]\n'
                                'backfill = ["none", "easy"]\nseeds = 3\n')
    run_grid(tmp / "g.toml", out_dir=tmp / "out", jobs=1, progress=False)
    return tmp / "out"


def test_a_batch_only_study_draws_no_empty_panels_nor_blank_figures(batch_study, tmp_path, monkeypatch):
    drawn = []

    def spy(jobs, **kw):
        drawn.append((len(jobs), tuple(kw["kinds"])))
        fig = study_boxplots(jobs, **kw)
        drawn.append(fig)
        return fig

    monkeypatch.setattr(figures, "study_boxplots", spy)
    paths = figures.plot(batch_study, tmp_path / "fig")
    names = {p.name.split("_")[-1] for p in paths}
    assert names == {"overall.png", "narrow-short.png"}  # the jobs are all narrow and short
    for n_jobs, kinds in drawn[::2]:
        assert n_jobs > 0 and kinds == ("batch",)
    for fig in drawn[1::2]:
        assert len(fig.axes) == 2  # bounded slowdown and turnaround of the batch jobs
        assert not any(t.get_text() == "no jobs" for ax in fig.axes for t in ax.texts)
        assert [t.get_text() for t in fig.legends[0].get_texts()] == [
            "fcfs backfill=none", "fcfs backfill=easy", "sjf backfill=none", "sjf backfill=easy"]


def test_a_legend_of_many_long_entries_fits_the_figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    schemes = [f"policy-number-{i} backfill=easy option=value-{i}" for i in range(12)]
    jobs = pd.DataFrame([{"kind": k, "rt_percent": 10, "scheme": s, "bsld": 1.0 + i, "turnaround": 3600.0 * i}
                         for i, s in enumerate(schemes) for k in ("rt", "batch")])
    fig = study_boxplots(jobs, schemes=schemes)
    FigureCanvasAgg(fig).draw()
    legend = fig.legends[0]
    box = legend.get_window_extent()
    assert len(legend.get_texts()) == 12
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width and 0 <= box.y0 and box.y1 <= fig.bbox.height


def test_summary_bars_with_identical_seeds_draws(batch_study):
    frame = summary_frame(batch_study)
    frame["mean_bsld_rl"] = 0.1  # three seeds of 0.1: their mean rounds above their max
    fig = figures.summary_bars(frame, log=False)
    assert "identical results" in fig._suptitle.get_text()
    bars = [p.get_height() for ax in fig.axes for p in ax.patches]
    assert bars and all(h == pytest.approx(0.1) for h in bars)
