"""The ``context`` actor (``rtsched.rl.nets``, rtmix's ``core.context_rules``): the rows it picks, by hand; its
NumPy forward pass against PyTorch's; a model file with it, written by the rollout recipe, loads and schedules;
a damaged rule is refused when the file is read."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("gymnasium")
torch = pytest.importorskip("torch")

from rtsched.rl.inference import context_row  # noqa: E402
from rtsched.rl.nets import NumpyActor, PickActor, context_rows  # noqa: E402
from rtsched.rl.rtmix.core import FEATURES, context_rules  # noqa: E402
from rtsched.rl.rtmix.policy import PRETRAINED_RTMIX  # noqa: E402

COL = {name: i for i, name in enumerate(FEATURES)}
N_FEATURES, SLOTS, WINDOW = 30, 15, 8  # the shipped model's rows: 28 features + the 2 BJ-preemption ones


def _job(x, slot, rt, fits, walltime):
    x[slot, COL["is_job"]] = 1.0
    x[slot, COL["job_rt"]] = float(rt)
    x[slot, COL["job_fits"]] = float(fits)
    x[slot, COL["job_walltime"]] = walltime


def test_the_context_rows_by_hand():
    rules = context_rules(WINDOW)
    x = np.zeros((SLOTS, N_FEATURES), dtype=np.float32)
    _job(x, 0, rt=1, fits=1, walltime=0.1)  # an RTJ that can start: not context
    _job(x, 1, rt=0, fits=1, walltime=0.2)  # a BJ that can start: not context
    _job(x, 2, rt=0, fits=0, walltime=0.3)  # the first blocked BJ
    _job(x, 3, rt=1, fits=0, walltime=0.4)  # the first blocked RTJ
    _job(x, 4, rt=0, fits=0, walltime=0.5)  # a later blocked BJ
    x[9, COL["is_candidate"]] = 1.0  # a candidate row beyond the visible jobs is never a context row
    assert np.array_equal(context_row(x, rules[0]), x[2])
    assert np.array_equal(context_row(x, rules[1]), x[3])
    y = x.copy()
    y[2:5] = 0.0  # nothing blocked: zero rows
    assert not context_row(y, rules[0]).any() and not context_row(y, rules[1]).any()
    z = np.zeros_like(x)
    _job(z, WINDOW, rt=0, fits=0, walltime=0.9)  # slot 8 is past the window's jobs
    assert not context_row(z, rules[0]).any()
    batch = torch.as_tensor(np.stack([x, y, z]))
    for rule, rows in zip(rules, context_rows(batch, rules)):
        assert np.array_equal(rows.numpy(), np.stack([context_row(v, rule) for v in (x, y, z)]))


def test_the_numpy_forward_pass_equals_pytorch():
    torch.manual_seed(3)
    actor = PickActor(N_FEATURES, SLOTS, "context", (16, 8), context_rules(WINDOW)).eval()
    rng = np.random.default_rng(3)
    obs = rng.random((200, SLOTS, N_FEATURES), dtype=np.float32)
    for col in ("is_job", "job_rt", "job_fits"):  # a mix of blocked, startable, RTJ and BJ rows, and none
        obs[:, :, COL[col]] = rng.random((200, SLOTS)) < 0.5
    mask = rng.random((200, SLOTS)) < 0.4
    mask[:, -1] = True
    flat = torch.as_tensor(obs.reshape(200, -1))
    with torch.no_grad():
        want = actor(flat, torch.as_tensor(mask)).numpy()
    fast = NumpyActor(actor).plain()
    got = np.stack([fast.logits(flat[i].numpy(), mask[i]) for i in range(200)])
    assert np.allclose(got, want, atol=1e-5) and (got[~mask] == want[~mask]).all()
    # the context matters: the same slot scores differently beside another blocked BJ
    a, b = obs[0].copy(), obs[0].copy()
    for v in (a, b):
        v[:WINDOW, COL["is_job"]] = 0.0
        _job(v, 0, rt=0, fits=1, walltime=0.1)
    _job(a, 1, rt=0, fits=0, walltime=0.2)
    _job(b, 1, rt=0, fits=0, walltime=3.0)
    m = np.zeros(SLOTS, dtype=bool)
    m[[0, SLOTS - 1]] = True
    assert fast.logits(a.reshape(-1), m)[0] != fast.logits(b.reshape(-1), m)[0]


def test_a_context_actor_grown_from_the_shipped_kernel_starts_as_it():
    from rtsched.rl.modelfiles import load_model
    from rtsched.rl.nets import context_from_kernel
    kernel = load_model(PRETRAINED_RTMIX).actor
    grown = context_from_kernel(kernel, (96, 40, 16), context_rules(WINDOW)).eval()
    rng = np.random.default_rng(5)
    obs = torch.as_tensor(rng.random((300, SLOTS * N_FEATURES), dtype=np.float32))
    mask = torch.as_tensor(rng.random((300, SLOTS)) < 0.4)
    mask[:, -1] = True
    with torch.no_grad():
        assert torch.equal(grown(obs, mask), kernel(obs, mask))
    fast, slow = NumpyActor(grown), NumpyActor(kernel)
    for i in range(20):
        assert np.allclose(fast.logits(obs[i].numpy(), mask[i].numpy()), slow.logits(obs[i].numpy(), mask[i].numpy()),
                           atol=1e-5)
    # the added units and the context columns do learn: one gradient step moves the grown actor off the kernel
    opt = torch.optim.SGD(grown.parameters(), lr=0.5)
    grown.train()
    loss = torch.nn.functional.cross_entropy(grown(obs, mask), mask.to(torch.int64).argmax(1))
    loss.backward()
    first = [m for m in grown.net if isinstance(m, torch.nn.Linear)][0]
    assert first.weight.grad[:, N_FEATURES:].abs().sum() > 0
    opt.step()
    for hidden in ((32, 32, 16), (64, 32)):  # narrower than the kernel's 64-32-16, or another depth
        with pytest.raises(ValueError, match="at least as wide"):
            context_from_kernel(kernel, hidden, context_rules(WINDOW))
    with pytest.raises(ValueError, match="grows from a kernel actor"):
        context_from_kernel(grown, (128, 64, 32), context_rules(WINDOW))


@pytest.mark.parametrize("rule", [[[99, [[0, 1]]]], [[8, [[30, 1]]]], [[8, [[0, 2]]]], [[8, "x"]]])
def test_a_damaged_context_rule_is_refused_when_the_model_is_read(tmp_path, rule):
    from rtsched.rl.modelfiles import ModelFileError, load_model, read_model_file
    st = read_model_file(PRETRAINED_RTMIX)
    st["arch"] = dict(st["arch"], actor="context", context=rule)
    path = tmp_path / "bad.pt"
    torch.save(st, path)
    with pytest.raises(ModelFileError, match="bad.pt"):
        load_model(str(path))
    with pytest.raises(ValueError, match="context rules are for the 'context' network alone"):
        PickActor(N_FEATURES, SLOTS, "kernel", (8,), context_rules(WINDOW))


def test_the_rollout_recipe_fits_a_context_actor_that_schedules(tmp_path, capsys):
    from milp.compare import run_online
    from milp.instance import table3_instance
    from rtsched.cli import main
    from rtsched.rl.modelfiles import load_model, read_model_file
    from rtsched.rl.rtmix.rollout import rollout_labels
    from rtsched.rl.rtmix.train import _save_data

    cur = tmp_path / "cur"
    cur.mkdir()
    states, _ = rollout_labels(PRETRAINED_RTMIX, range(259_980, 259_985))
    _save_data(str(cur / "data-0.npz"), {**states, "parts": {"small": {"episodes": 0, "decisions": 0}}})
    base = ["rl", "train", "--agent", "rtmix", "--recipe", "rollout", "--no-progress", "--rollout-curriculum",
            str(cur), "--rollout-weeks-rounds", "0"]
    out = str(tmp_path / "out")
    assert main(base + ["--rollout-seed", "259990", "--rollout-episodes", "6", "--bc-epochs", "1", "--out", out]) == 0
    capsys.readouterr()
    labels = str(tmp_path / "out" / "model-rollout.npz")
    # wrong uses: one line each, exit 2, nothing written
    for extra, message in ((["--rollout-hidden", "8"], "--rollout-hidden: the sizes of --rollout-actor context"),
                           (["--rollout-actor", "context", "--rollout-hidden", "8,0"], "expected positive layer sizes"),
                           (["--rollout-actor", "context", "--rollout-hidden", "big"], "--rollout-hidden: expected"),
                           (["--rollout-labels", labels + ",nothere.npz"], "--rollout-labels: no file nothere.npz")):
        assert main(base + extra + ["--out", out + "2"]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1
    other = tmp_path / "other-rollout.npz"  # labels of another observation layout
    with np.load(labels) as z:
        np.savez_compressed(other, obs=z["obs"][:, :-15], mask=z["mask"], act=z["act"], good=z["good"])
    assert main(base + ["--rollout-labels", f"{labels},{other}", "--out", out + "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "other-rollout.npz: its observations (435 columns, 15 actions) are not those of" in err
    assert len(err.splitlines()) == 1
    with pytest.raises(SystemExit) as exc:
        main(base + ["--rollout-actor", "wide", "--out", out + "2"])
    assert exc.value.code == 2 and "--rollout-actor" in capsys.readouterr().err
    assert not (tmp_path / "out2").exists()
    assert main(base + ["--rollout-labels", labels, "--rollout-actor", "context-from-base", "--rollout-hidden",
                        "16,8", "--out", out + "2"]) == 2  # narrower than the base model's kernel
    assert "at least as wide" in capsys.readouterr().err
    assert not (tmp_path / "out2").exists()  # refused before anything was written
    # the labels file twice (labels of several files together), a new context actor
    assert main(base + ["--rollout-labels", f"{labels},{labels}", "--rollout-actor", "context", "--rollout-hidden",
                        "16,8", "--bc-epochs", "2", "--json", "--out", out + "2"]) == 0
    summary = json.loads(capsys.readouterr().out)
    one = read_model_file(labels.replace("-rollout.npz", ".pt"))["history"][-1]["rollout"]["decisions"]
    assert summary["rollout"]["decisions"] == 2 * one and len(summary["rollout"]["files"]) == 2
    model = str(tmp_path / "out2" / "model.pt")
    st = read_model_file(model)
    assert st["arch"]["actor"] == "context" and st["arch"]["hidden"] == [16, 8]
    assert st["arch"]["context"] == context_rules(WINDOW) and st["history"][-1]["actor"] == "context"
    assert st["env"] == read_model_file(PRETRAINED_RTMIX)["env"]
    assert load_model(model).actor.arch == "context"
    # it schedules Table-3 instances through the policy layer (the schedule validator runs on every run)
    for seed in (259_990, 259_991):
        r = run_online(table3_instance(seed, walltime_factor=(1.0, 2.0), name=f"t{seed}"), model, "jit")
        assert r.bj_sd_mean >= 1.0 and r.rtj_sd_mean >= 1.0
    # grown from the base model's kernel, not fitted (learning rate 0): it schedules as the base model does
    from rtsched.rl.rtmix.rollout import improve_by_rollouts
    grown = str(tmp_path / "grown.pt")
    improve_by_rollouts(PRETRAINED_RTMIX, grown, curriculum=str(cur), weeks_rounds=0, seeds=range(0), epochs=1, lr=0.0,
                        labels_from=labels, actor="context-from-base")
    assert read_model_file(grown)["arch"]["actor"] == "context"
    for seed in (259_990, 259_991, 259_992):
        inst = table3_instance(seed, walltime_factor=(1.0, 1.0), name=f"t{seed}")
        a, b = run_online(inst, grown, "jit"), run_online(inst, PRETRAINED_RTMIX, "jit")
        assert (a.bj_sd_mean, a.rtj_sd_mean, a.extra["preemptions"]) == (b.bj_sd_mean, b.rtj_sd_mean,
                                                                          b.extra["preemptions"])
