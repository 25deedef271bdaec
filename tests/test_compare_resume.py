"""``milp.compare.compare(cache_dir=...)`` / ``rtsched compare --cache DIR``: finished instances are
saved one file each, and a rerun (after Ctrl-C, SIGTERM or SIGKILL) takes them instead of solving."""
from __future__ import annotations

import json

import pytest

import milp.compare as mc
from milp.instance import SHIPPED_DIR, load_instance
from rtsched.cli import main

PATHS = sorted(str(p) for p in SHIPPED_DIR.glob("*.json"))[:3]


@pytest.fixture(scope="module")
def instances():
    return [load_instance(p) for p in PATHS]


def test_a_rerun_takes_every_instance_from_the_cache(tmp_path, instances, monkeypatch):
    first = mc.compare(instances, ["baseline"], method="milp-disjunctive", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == len(instances)

    def no_solving(task):
        raise AssertionError(f"{task[0].name} solved again")

    monkeypatch.setattr(mc, "_compare_task", no_solving)
    seen = []
    again = mc.compare(instances, ["baseline"], method="milp-disjunctive", cache_dir=tmp_path,
                       progress=lambda inst, runs: seen.append(inst.name))
    assert [r.to_json() for r in again] == [r.to_json() for r in first]
    assert seen == [i.name for i in instances]
    # other inputs, another key: solved again (here: refused by the patched task)
    with pytest.raises(AssertionError, match="solved again"):
        mc.compare(instances, ["baseline", "highpq"], method="milp-disjunctive", cache_dir=tmp_path)
    with pytest.raises(AssertionError, match="solved again"):
        mc.compare(instances, ["baseline"], method="milp-disjunctive", cache_dir=tmp_path, theta=1.5)


def test_an_interrupted_comparison_resumes_without_losing_finished_instances(tmp_path, instances, monkeypatch):
    real = mc._compare_task
    calls = []

    def interrupted_at_the_second(task):
        calls.append(task[0].name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(mc, "_compare_task", interrupted_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        mc.compare(instances, ["baseline"], method="milp-disjunctive", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 1
    # a file cut short by SIGKILL cannot exist (atomic writes); a damaged one is redone, not trusted
    (saved,) = tmp_path.glob("*.json")
    monkeypatch.setattr(mc, "_compare_task", lambda task: (calls.append(task[0].name), real(task))[1])
    calls.clear()
    runs = mc.compare(instances, ["baseline"], method="milp-disjunctive", cache_dir=tmp_path)
    assert calls == [i.name for i in instances[1:]]  # only the unfinished ones
    assert [r.instance for r in runs if r.policy == mc.OPTIMUM] == [i.name for i in instances]
    saved.write_text("{\"key\": ")
    calls.clear()
    mc.compare(instances, ["baseline"], method="milp-disjunctive", cache_dir=tmp_path)
    assert calls == [instances[0].name]


def test_the_cli_resumes_and_says_what_it_saved(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    args = ["compare", *PATHS, "--policies", "baseline", "--cache", str(cache), "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["cache"] == str(cache) and len(list(cache.glob("*.json"))) == len(PATHS)
    monkeypatch.setattr(mc, "_compare_task", lambda task: (_ for _ in ()).throw(KeyboardInterrupt))
    (next(cache.glob("*.json"))).unlink()
    assert main(args) == 130
    err = capsys.readouterr().err
    assert f"{len(PATHS) - 1} of {len(PATHS)} instances are saved in {cache}" in err and "interrupted" in err
    monkeypatch.undo()
    assert main(args) == 0
    untimed = [{k: v for k, v in r.items() if k not in ("seconds", "decision_seconds")} for r in first["runs"]]
    assert [{k: v for k, v in r.items() if k not in ("seconds", "decision_seconds")}  # the re-solved one's times differ
            for r in json.loads(capsys.readouterr().out)["runs"]] == untimed


def test_a_model_is_keyed_by_its_file_even_when_named_by_name(tmp_path, instances, monkeypatch):
    model = tmp_path / "m.pt"
    model.write_bytes(b"weights 1")
    monkeypatch.setattr(mc, "policy_source", lambda name: str(model) if name == "shipped-name" else None)
    before = mc.run_key(instances[0], ["wcjs-jit", "shipped-name"], "jit", {"method": "cpsat"})
    assert before == mc.run_key(instances[0], ["wcjs-jit", "shipped-name"], "jit", {"method": "cpsat", "workers": 1})
    model.write_bytes(b"weights 2")  # a newly shipped model under the same name: its rows are redone
    assert mc.run_key(instances[0], ["wcjs-jit", "shipped-name"], "jit", {"method": "cpsat"}) != before


def test_the_shipped_rtmix_name_reaches_its_file():
    pytest.importorskip("torch")
    from heuristics.registry import policy_source

    assert policy_source("rtmix").endswith("rtmix.pt") and policy_source("wcjs-jit") is None
