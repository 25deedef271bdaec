"""Shipped model files survive module moves: they hold tensors and plain containers only (no pickled
rtsched class or module path), and every one loads as its agent's policy."""
from __future__ import annotations

import io
import pickletools
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch")

PRETRAINED = Path(__file__).resolve().parents[1] / "rtsched" / "rl" / "pretrained"
SHIPPED = sorted(PRETRAINED.glob("*/*.pt"))
# What torch.save writes for a dict of tensors, numbers, strings and lists (weights_only loads these).
PLAIN_GLOBALS = {"torch._utils _rebuild_tensor_v2", "collections OrderedDict", "torch FloatStorage",
                 "torch LongStorage", "torch ByteStorage", "torch BoolStorage", "torch DoubleStorage"}


def _pickled_globals(path: Path) -> set[str]:
    with zipfile.ZipFile(path) as z:
        (name,) = [n for n in z.namelist() if n.endswith("data.pkl")]
        data = z.read(name)
    found = set()
    stack_strings: list[str] = []
    for op, arg, _pos in pickletools.genops(io.BytesIO(data)):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            stack_strings.append(arg)
        if op.name == "GLOBAL":
            found.add(str(arg))
        elif op.name == "STACK_GLOBAL":  # protocol 4: module and name pushed as the two strings before
            found.add(" ".join(stack_strings[-2:]))
    return found


def test_every_shipped_model_is_found():
    assert {p.parent.name for p in SHIPPED} == {"rlschert", "rtmix", "splitwindow", "table5"}
    assert len(SHIPPED) == 20  # rlschert: the calibrated-set vasplike models and the stated-set ones (issue 24)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_model_pickles_no_rtsched_path(path):
    globals_ = _pickled_globals(path)
    assert globals_ <= PLAIN_GLOBALS, globals_ - PLAIN_GLOBALS
    assert not any("rtsched" in g for g in globals_)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_model_loads_as_its_agents_policy(path):
    from rtsched.rl.agents import AGENTS
    from rtsched.rl.modelfiles import load_model
    from rtsched.rl.policies import policy_from_model

    model = load_model(str(path))
    assert model.agent in AGENTS
    policy = policy_from_model(str(path))
    # the agent's own policy class, from the agent's own folder
    assert type(policy).__module__ == f"{AGENTS[model.agent]}.policy"
    assert callable(policy.decide)


def test_a_training_checkpoint_pickles_no_rtsched_path(tmp_path):
    """What ``rl train`` writes each epoch (networks, optimisers, generator state, configuration, history)
    is plain data too, so checkpoints survive module moves as the shipped models do."""
    from rtsched.rl.api import train
    from rtsched.rl.modelfiles import load_model

    sample = Path(__file__).resolve().parents[1] / "traces" / "lublin_256_sample.swf"
    res = train("inspector", str(sample), epochs=1, out=str(tmp_path / "run"), seq_len=16, trajs_per_epoch=2,
                n_envs=2, train_pi_iters=1, train_v_iters=1)
    globals_ = _pickled_globals(Path(res["checkpoint"]))
    assert globals_ <= PLAIN_GLOBALS, globals_ - PLAIN_GLOBALS
    assert load_model(res["checkpoint"]).agent == "inspector"
