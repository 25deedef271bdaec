"""The shipped grid files keep their run keys: result folders written by earlier versions stay valid.

The keys below were computed by the grid code as it was before the general axes (policy, backfill,
checkpoint, ...) came in (commit 459f00e); a change to the hashed configuration of seed-002 grids
would orphan every stored result, so it must show up here.  A key covers the trace's bytes: the
grids on the shared data (whose files do not change) are checked where that data is present; for
the grids on the shipped Mira-like week, which is regenerated now and then, the key is pinned with
the trace's digest set to zeros (everything else of the configuration, and the hashing, pinned),
and the real key too while the week is the one of 459f00e.
"""
from __future__ import annotations

from pathlib import Path


from rtsched.experiments import config_hash, expand_grid

from conftest import shared_data

REPO = Path(__file__).resolve().parents[1]

WEEK_459F00E = "4daf19fcadb94b5b4b609db35ae6effe509829272690ade9dcfe96067897fbfd"  # traces/mira_like_week.swf then
SMOKE = {  # label: (key with the trace digest zeroed, real key with the week of 459f00e)
    "miralike300 10% random baseline seed 0": ("c07b1cfff68d1cc4", "7a5d733f9279090c"),
    "miralike300 10% random wcjs-jit seed 0": ("72a8ff219c379765", "9f1d01798fcb453c"),
    "miralike300 20% random baseline seed 0": ("7856c0c5ca5675dd", "617455d0253b6b9c"),
    "miralike300 20% random wcjs-jit seed 0": ("1387dcb26167be58", "7f047081df948e79"),
}
MIRALIKE = {  # the shipped week, no shared data needed (the aps runs need the APS sample)
    0: ("44a7204d6f465cb4", "57ca32f888df95e0"),
    1: ("b8cfe3c06a022d97", "73bada98bfc30a18"),
    420: ("00f42d3425c73ab5", "201c335c6bea0ad0"),
}
HEADLINE = {
    0: "e6b6c97df6dac620",    # wk1 (real partition file), baseline, seed 0
    1: "33831b3c200a7f6a",    # wk1, baseline, seed 1
    20: "f6d17e019e218446",   # wk1-aligned, baseline, seed 0
    39: "d6b0a21e7a97cfbf",   # wk1-aligned, wcjs-jit, seed 9
}
OTHERS = {  # scheme options and the APS marking are in the hash
    ("headline_wk1_authors", "wk1 10% random wcjs-jit seed 0"): "51c7eb8b02ad89a7",
    ("paper_curie", "curie 10% random wcjs-jit seed 0"): "32c13eedbcc6ef42",
    ("paper_wk1", "wk1 10% aps wcjs-jit seed 0"): "21d81283561330af",
    ("paper_wk1", "wk1 20% aps highpq seed 9"): "1c950ba3d7eb9285",
    ("study_small_wk1", "wk1 10% random wcjs-app-5 seed 0"): "718010a588a771ca",
}


def _zeroed_trace_key(run) -> str:
    c = run.config
    return config_hash({**c, "inputs": {**c["inputs"], "trace": "0" * 64}})


def _check_week_keys(runs: dict, pinned: dict) -> None:
    for label, (zeroed, real) in pinned.items():
        run = runs[label]
        assert run.key == config_hash(run.config)
        assert _zeroed_trace_key(run) == zeroed, run.describe()
        if run.config["inputs"]["trace"] == WEEK_459F00E:
            assert run.key == real, run.describe()


def test_smoke_grid_keeps_its_run_keys():
    runs = {r.describe(): r for r in expand_grid(REPO / "experiments" / "smoke.toml")}
    assert set(runs) == set(SMOKE)
    _check_week_keys(runs, SMOKE)


def test_miralike_grid_keeps_its_run_keys(monkeypatch, tmp_path):
    # the aps runs need the APS sample: point the shared-data folder at one with a stand-in file only
    # when the real one is absent (the aps runs are not among those pinned)
    runs = _expand_without_aps_check(REPO / "experiments" / "miralike.toml", monkeypatch, tmp_path)
    _check_week_keys(dict(enumerate(runs)), MIRALIKE)


def test_headline_grid_keeps_its_run_keys():
    shared_data("traces", "mira", "wk1.log")
    runs = expand_grid(REPO / "experiments" / "headline_wk1.toml")
    assert len(runs) == 40
    for index, key in HEADLINE.items():
        assert runs[index].key == key, runs[index].describe()


def test_other_shipped_grids_keep_their_run_keys():
    shared_data("traces", "curie", "cea-curie-cobalt.log")
    shared_data("aps", "aps_runtimes_seconds.txt")
    for (grid, label), key in OTHERS.items():
        runs = {r.describe(): r.key for r in expand_grid(REPO / "experiments" / f"{grid}.toml")}
        assert runs[label] == key, (grid, label)


def _expand_without_aps_check(path: Path, monkeypatch, tmp_path: Path):
    from rtsched.experiments.grid import shared_data_dir

    if not (shared_data_dir() / "aps" / "aps_runtimes_seconds.txt").exists():
        (tmp_path / "aps").mkdir()
        (tmp_path / "aps" / "aps_runtimes_seconds.txt").write_text("600\n")
        monkeypatch.setenv("SHARED_DATA", str(tmp_path))
    return expand_grid(path)


def test_a_shipped_model_named_by_name_is_keyed_by_its_content(tmp_path, monkeypatch):
    """A grid run of ``policy = "rtmix"`` must not reuse results of an older shipped model."""
    import heuristics.registry as registry
    from rtsched.experiments import grid as grid_module

    model = tmp_path / "m.pt"
    model.write_bytes(b"weights 1")
    monkeypatch.setattr(registry, "policy_source", lambda name: str(model) if name == "rtmix" else None)
    sample = REPO / "traces" / "lublin_256_sample.swf"
    (tmp_path / "g.toml").write_text(f"""
name = "k"
[[traces]]
name = "sample"
path = "{sample}"
machine = "flat:256"
[grid]
policy = ["fcfs", "rtmix"]
seeds = 1
""")

    def keys():
        return {r.config["policy"]: r.key for r in expand_grid(tmp_path / "g.toml")}

    before = keys()
    model.write_bytes(b"weights 2")
    grid_module._DIGESTS.clear()
    after = keys()
    assert before["fcfs"] == after["fcfs"] and before["rtmix"] != after["rtmix"]
