"""The architecture's rules, checked: the import layers (import-linter contract in pyproject.toml)
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
    assert "1 kept, 0 broken" in proc.stdout


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
