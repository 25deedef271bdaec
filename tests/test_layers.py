"""The architecture's rules, checked: the import-linter contracts in pyproject.toml (layers; RL agents
independent of each other; the shared RL parts import no agent), no import cycle in ``rtsched.rl``,
and the command line's start-up (building the parser imports no heavy package)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_import_layers_contract_is_kept():
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(lint).exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    proc = subprocess.run([lint, "--config", str(REPO / "pyproject.toml")], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 kept, 0 broken" in proc.stdout


def import_cycles(graph, package: str) -> list[list[str]]:
    """The import cycles among the modules of ``package`` in a grimp graph: every strongly connected
    component of more than one module, and every module that imports itself (Tarjan's algorithm,
    iterative: the graph is small, but a recursion limit should not decide a test).  Function-level
    imports count: grimp reads every import statement."""
    nodes = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    inside = set(nodes)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & inside) for m in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            if i < len(edges[v]):
                work.append((v, i + 1))
                w = edges[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in edges[v]:
                    cycles.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return cycles


def _rl_graph():
    grimp = pytest.importorskip("grimp")  # installed with import-linter
    return grimp.build_graph("rtsched", "heuristics", "milp")


def test_no_import_cycle_in_the_rl_package():
    assert import_cycles(_rl_graph(), "rtsched.rl") == []


def test_the_cycle_check_finds_a_cycle_added_to_the_graph():
    """The check is not vacuous: an import added to the real graph that closes a loop is found — the
    model files importing the RLSchert environment (which loads its teacher through the model files),
    a module importing itself, and the rollouts importing an agent's recipe (recipe -> trainer ->
    rollouts: the shape of the old env_rlschert -> ppo -> rollouts -> env_rlschert circle)."""
    graph = _rl_graph()
    graph.add_import(importer="rtsched.rl.modelfiles", imported="rtsched.rl.rlschert.env")
    cycles = import_cycles(graph, "rtsched.rl")
    assert len(cycles) == 1 and {"rtsched.rl.modelfiles", "rtsched.rl.rlschert.env"} <= set(cycles[0])
    graph.add_import(importer="rtsched.rl.sb3", imported="rtsched.rl.sb3")
    assert ["rtsched.rl.sb3"] in import_cycles(graph, "rtsched.rl")
    # the old circle through the rollouts: rollouts -> an environment -> the trainer -> rollouts
    graph = _rl_graph()
    graph.add_import(importer="rtsched.rl.rollouts", imported="rtsched.rl.rlschert.recipe")
    assert any({"rtsched.rl.rollouts", "rtsched.rl.trainer"} <= set(c) for c in import_cycles(graph, "rtsched.rl"))


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_building_the_parser_imports_no_heavy_package():
    mods = _modules_after("from rtsched.cli import build_parser\nbuild_parser()")
    heavy = {"numpy", "pandas", "torch", "matplotlib", "pulp", "ortools", "scipy", "gymnasium"}
    assert not heavy & {m.split(".")[0] for m in mods}


def test_cli_choice_lists_match_the_library():
    from milp.solve import METHODS
    from rtsched.cli import offline, rl
    from rtsched.metrics import SEQUENCE_GOALS
    from heuristics.committed import COMMITTED_BACKFILLS
    from rtsched.rl.rollouts import BACKENDS, MODES

    assert tuple(offline.METHODS) == tuple(METHODS)
    from milp.compare import RTJ_TIEBREAK

    assert offline.COMPARE_TIEBREAK is RTJ_TIEBREAK  # rtsched compare and milp.compare.compare: one default
    from milp.compare import REFERENCE

    assert offline.COMPARE_REFERENCE == REFERENCE
    assert tuple(rl.ROLLOUT_BACKENDS) == tuple(BACKENDS)
    assert tuple(rl.ROLLOUT_MODES) == tuple(MODES)
    assert tuple(rl.GOALS) == tuple(SEQUENCE_GOALS)
    assert tuple(rl.BACKFILLS) == tuple(COMMITTED_BACKFILLS)


def test_a_heuristic_rl_evaluation_never_imports_torch(tmp_path):
    trace = REPO / "traces" / "lublin_256_sample.swf"
    mods = _modules_after(
        "from rtsched.cli import main\n"
        f"assert main(['rl', 'evaluate', '--trace', {str(trace)!r}, '--policies', 'fcfs,sjf', "
        "'--starts', '100,300', '--seq-len', '128', '--json']) == 0")
    assert "torch" not in {m.split(".")[0] for m in mods}


def test_rl_package_exports_are_not_also_submodule_names():
    """``rtsched.rl``'s lazy exports must not share a name with one of its submodules: importing the
    submodule rebinds the package attribute, so ``from rtsched.rl import NAME`` would give the function
    in one process and the module in another (docs/rl.md's Python example hit this with ``evaluate``)."""
    import importlib.util

    import rtsched.rl

    clashes = [name for name in rtsched.rl.__all__ if importlib.util.find_spec(f"rtsched.rl.{name}") is not None]
    assert clashes == []
    mods = _modules_after("from rtsched.rl.api import train\nfrom rtsched.rl.evaluate import evaluate\n"
                          "assert callable(train) and callable(evaluate) and evaluate.__name__ == 'evaluate'")
    assert "rtsched.rl.evaluate" in mods
