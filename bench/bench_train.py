"""Where a PPO epoch's time goes, per agent, against this machine's dense matmul limit (issue 24 §2).

Run:  PYTHONPATH=. python bench/bench_train.py [--agents rlscheduler,rlscheduler-bf,inspector,splitwindow,
          rlschert,rtmix] [--epochs 1] [--scale 1.0] [--trace PATH] [--no-limit] [--code TREE] [--json OUT]

``--code TREE`` times the rtsched of another checkout (``git archive <commit> | tar -x -C TREE``), so a
shell loop alternating ``--code main-tree`` and this checkout gives before/after side by side.

For every agent, one trainer at the agent's default networks and batch settings (the papers'; the
library's ``PPOConfig``, ``SPLIT_PPO_DEFAULTS``, ``RLSCHERT_PPO_DEFAULTS``, ``rtmix_train.FINE_TUNE``)
runs ``--epochs`` whole epochs (``trainer.collect`` then ``trainer.update``, the calls ``train`` makes),
timed by wall clock and by this process's CPU time (less sensitive to a shared machine's load).
``--scale`` multiplies the trajectories per epoch (a quick look; the defaults are the agents' own).

Then the last epoch's update is run a second time from the same starting state (weights,
optimisers) under a recording dispatch mode, which must reproduce the same losses and iteration
counts, and which times every ATen operator and files it under: forward (inside the actor's or
critic's ``forward``), loss and minibatch ops (the other ops of the loss), backward (run by the
autograd engine), optimiser step (inside ``Optimizer.step``) and zero_grad.  The plain run's wall
time less the operators' total is the time outside ATen kernels: Python, dispatch, autograd
bookkeeping ("outside ops").

The same recording keeps the shape and layout of every matrix product (``mm``, ``addmm``, ``addmm_``, ``bmm``)
of the update.  The matmul limit replays each shape alone in a tight loop (best of several) at the
update's thread count and at 2 threads: the time the update's matrix products need at this
machine's speed for those very shapes.  Printed: the update's matmul GFLOP/s, the limit's, and
their ratio (issue 24's target: the update within 2x of the limit).  Both sides count the same
FLOPs (2·n·k·m of each product the update ran, nothing for the products its shortcuts skip), so
the ratio is the update's CPU time over its own products' time run alone: fixed shapes, one
thread each, the replay with its operands hot in cache (in the update they come from memory), so
the limit errs on the fast side.  Products of other ATen ops (``mv``, ``baddbmm``, ...) would be
left out of both sides; the bench names any the update ran.

Finally the split window's paper budget (seed 004: 100,000 episodes of 1,000 placements, [1024,
512, 256] networks, the PPO passes of ``SPLIT_PPO_DEFAULTS``) in FLOPs, from the matrix products
measured in its epoch here (when ``splitwindow`` is among the agents), against what 2 cores do in
10 hours at the measured epoch speed and at the matmul limit.

And start-up: ``import torch`` and the first Adam construction and step, in a fresh interpreter.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time
from collections import defaultdict

import numpy as np

# ``--code TREE``: time another checkout's rtsched (e.g. main's, for before/after side by side)
CODE = sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv[:-1] else None
sys.path.insert(0, os.path.abspath(CODE) if CODE else os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from rtsched import __file__ as rtsched_file  # noqa: E402
from rtsched.files import atomic_write_text  # noqa: E402
from rtsched.machines import FlatCluster  # noqa: E402
from rtsched.rl.agents import EnvFactory, agent_part  # noqa: E402
from rtsched.rl.trainer import PPOConfig, PPOTrainer  # noqa: E402
from rtsched.rl.trace import load_trace  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data", "traces", "swf", "lublin_256.swf")
SAMPLE = os.path.join(REPO, "traces", "lublin_256_sample.swf")
AGENTS = ("rlscheduler", "rlscheduler-bf", "inspector", "splitwindow", "rlschert", "rtmix")
MATMULS = {"aten.mm.default", "aten.addmm.default", "aten.addmm_.default", "aten.bmm.default"}  # addmm_: block weight gradients
# ATen products that ``MATMULS`` does not count; the bench names any the update ran (none should:
# a product left out of the count would be missing from both the FLOPs and the limit)
OTHER_PRODUCTS = ("aten.mv.", "aten.dot.", "aten.vdot.", "aten.addmv", "aten.addbmm", "aten.baddbmm", "aten.matmul",
                  "aten.linear", "aten._addmm_activation", "aten.convolution", "aten.einsum", "aten.tensordot")
PAPER_SPLIT = {"episodes": 100_000, "placements": 1000}
BUDGET_S = 10 * 3600  # "10 hours on 2 cores"


# ------------------------------------------------------------------------------------ trainers
def build_trainer(agent: str, trace, scale: float) -> PPOTrainer:
    """A trainer of ``agent`` at its default networks and batch settings (workers=1, this process)."""
    mach = FlatCluster(trace.max_nodes) if trace is not None else None
    name = "rlscheduler" if agent == "rlscheduler-bf" else agent
    if agent in ("rlscheduler", "rlscheduler-bf"):
        backfill = "rlscheduler" if agent.endswith("-bf") else "none"
        factory = EnvFactory(name, trace, "bsld", backfill, mach, {"seq_len": 256, "window": 128})
    elif agent == "inspector":
        factory = EnvFactory(name, trace, "bsld", "none", mach, {"seq_len": 128})
    elif agent == "splitwindow":
        factory = EnvFactory(name, trace, machine=mach, options={"head": 10, "tail": 10, "placements": 1000})
    elif agent == "rlschert":
        factory = EnvFactory(name, "vasplike")
    elif agent == "rtmix":
        factory = EnvFactory(name, None)
    else:
        raise SystemExit(f"bench_train: unknown agent {agent!r}; choose from {', '.join(AGENTS)}")
    ppo = dict(getattr(agent_part(name, "recipe"), "PPO_DEFAULTS", {}))  # the agent's paper where it differs
    if "hidden" in ppo:
        ppo["hidden"] = tuple(ppo["hidden"])
    cfg = PPOConfig(**ppo)
    if scale != 1.0:
        cfg.trajs_per_epoch = max(1, round(cfg.trajs_per_epoch * scale))
    env0 = factory()
    return PPOTrainer(name, factory, cfg, {"agent": name}, getattr(env0, "norms", {}) or {}, first_env=env0)


def training_state(tr: PPOTrainer) -> dict:
    return copy.deepcopy({"actor": tr.actor.state_dict(), "critic": tr.critic.state_dict(),
                          "pi_opt": tr.pi_opt.state_dict(), "v_opt": tr.v_opt.state_dict(), "epoch": tr.epoch})


def load_training_state(tr: PPOTrainer, st: dict) -> None:
    st = copy.deepcopy(st)
    tr.actor.load_state_dict(st["actor"])
    tr.critic.load_state_dict(st["critic"])
    tr.pi_opt.load_state_dict(st["pi_opt"])
    tr.v_opt.load_state_dict(st["v_opt"])
    tr.epoch = st["epoch"]


# ------------------------------------------------------------------------------------ recording
class OpRecorder(TorchDispatchMode):
    """Times every ATen operator and files it by phase; keeps the matmuls' shapes and layouts."""

    def __init__(self) -> None:
        super().__init__()
        self.phase_s: dict[str, float] = defaultdict(float)
        self.phase_ops: dict[str, int] = defaultdict(int)
        self.matmuls: dict[tuple, int] = defaultdict(int)
        self.matmul_s = 0.0  # of the operators' time, in matrix products
        self.op_s: dict[str, float] = defaultdict(float)
        self.cpu_s = 0.0  # CPU seconds of the whole recorded update
        self.module_depth = 0
        self.in_step = False
        self.in_zero = False

    def phase(self) -> str:
        if self.in_step:
            return "optimiser step"
        if self.in_zero:
            return "zero_grad"
        if torch._C._current_autograd_node() is not None:
            return "backward"
        if self.module_depth > 0:
            return "forward"
        return "loss and minibatch ops"

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        ph = self.phase()
        t = time.thread_time()
        out = func(*args, **kwargs)
        dt = time.thread_time() - t
        self.phase_s[ph] += dt
        self.phase_ops[ph] += 1
        name = str(func)
        self.op_s[name] += dt
        if name in MATMULS:
            self.matmul_s += dt
            key = (name, ph, tuple((tuple(a.shape), tuple(a.stride())) for a in args if isinstance(a, torch.Tensor)),
                   tuple(sorted((k, v) for k, v in kwargs.items() if not isinstance(v, torch.Tensor))))
            self.matmuls[key] += 1
        return out


def matmul_flops(key: tuple) -> int:
    name, _ph, tensors, _kw = key
    shapes = [s for s, _st in tensors]
    if name == "aten.bmm.default":
        (b, n, k), (_b, _k, m) = shapes
        return 2 * b * n * k * m
    (n, k), (_k, m) = shapes[-2], shapes[-1]
    return 2 * n * k * m


def recorded_update(tr: PPOTrainer, batch, state: dict) -> tuple[OpRecorder, dict]:
    """The update again from ``state`` under an ``OpRecorder`` (phases marked by hooks)."""
    load_training_state(tr, state)
    rec = OpRecorder()
    handles = []

    def enter(*_a):
        rec.module_depth += 1

    def leave(*_a):
        rec.module_depth -= 1

    for net in (tr.actor, tr.critic):
        handles.append(net.register_forward_pre_hook(enter))
        handles.append(net.register_forward_hook(leave))
    for opt in (tr.pi_opt, tr.v_opt):
        handles.append(opt.register_step_pre_hook(lambda *_a: setattr(rec, "in_step", True)))
        handles.append(opt.register_step_post_hook(lambda *_a: setattr(rec, "in_step", False)))
        zero = opt.zero_grad

        def timed_zero(*a, _zero=zero, **k):
            rec.in_zero = True
            try:
                return _zero(*a, **k)
            finally:
                rec.in_zero = False

        opt.zero_grad = timed_zero
    try:
        t = time.process_time()
        with rec:
            stats = tr.update(batch)
        rec.cpu_s = time.process_time() - t
    finally:
        for h in handles:
            h.remove()
        for opt in (tr.pi_opt, tr.v_opt):
            del opt.zero_grad  # the instance attribute; the class's method shows again
    return rec, stats


def op_floor(n: int = 20000) -> float:
    """CPU seconds of one tiny operator call (``torch.add`` on one element): the fixed cost of issuing
    an op from Python (dispatch, allocation), whatever its size."""
    x = torch.zeros(1)

    def loop():
        t = time.process_time()
        for _ in range(n):
            torch.add(x, x)
        return time.process_time() - t

    return min(loop() for _ in range(3)) / n


def time_matmul(key: tuple, threads: int, min_s: float = 0.02, repeat: int = 5) -> float:
    """Best seconds per call of one recorded matmul, replayed alone with the same shapes and strides."""
    name, _ph, tensors, kw = key
    gen = torch.Generator().manual_seed(0)
    args = []
    for shape, stride in tensors:
        t = torch.empty_strided(shape, stride)
        t.copy_(torch.randn(shape, generator=gen))
        args.append(t)
    op = {"aten.mm.default": torch.ops.aten.mm.default, "aten.addmm.default": torch.ops.aten.addmm.default,
          "aten.addmm_.default": torch.ops.aten.addmm_.default, "aten.bmm.default": torch.ops.aten.bmm.default}[name]
    kwargs = dict(kw)
    # one thread: CPU time (what a loaded machine changes least); more: wall time
    clock = time.thread_time if threads == 1 else time.perf_counter
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        op(*args, **kwargs)
        n = 1
        while True:  # calls per timing: enough for min_s
            t = clock()
            for _ in range(n):
                op(*args, **kwargs)
            if clock() - t >= min_s or n >= 1 << 16:
                break
            n *= 4
        best = float("inf")
        for _ in range(repeat):
            t = clock()
            for _ in range(n):
                op(*args, **kwargs)
            best = min(best, (clock() - t) / n)
        return best
    finally:
        torch.set_num_threads(before)


def matmul_limit(rec: OpRecorder, threads: int) -> tuple[float, float]:
    """(seconds the update's matmuls take replayed alone at ``threads``, their FLOPs)."""
    secs = flops = 0.0
    timed: dict[tuple, float] = {}
    for key, count in rec.matmuls.items():
        shape_key = (key[0], key[2], key[3])  # the same product in two phases is timed once
        if shape_key not in timed:
            timed[shape_key] = time_matmul(key, threads)
        secs += count * timed[shape_key]
        flops += count * matmul_flops(key)
    return secs, flops


# ------------------------------------------------------------------------------------ per agent
def cpu_now() -> float:
    return time.process_time()


def epoch_row(agent: str, cfg, epochs: list[dict], built_s: float, batch) -> dict:
    """The epochs' figures: samples per second of the whole epoch, of collection and of the update."""
    steps = sum(r["steps"] for r in epochs)
    col = sum(r["collect_s"] for r in epochs)
    upd = sum(r["update_s"] for r in epochs)
    col_cpu = sum(r["collect_cpu_s"] for r in epochs)
    upd_cpu = sum(r["update_cpu_s"] for r in epochs)
    return {"agent": agent, "hidden": list(cfg.hidden), "actor": cfg.actor, "critic": cfg.critic,
            "trajs_per_epoch": cfg.trajs_per_epoch, "n_envs": cfg.n_envs,
            "minibatch": cfg.minibatch, "train_pi_iters": cfg.train_pi_iters, "train_v_iters": cfg.train_v_iters,
            "update_threads": cfg.torch_threads or 1, "built_s": round(built_s, 2), "epochs": epochs,
            "samples_per_epoch": steps / len(epochs), "epoch_s": (col + upd) / len(epochs),
            "epoch_cpu_s": (col_cpu + upd_cpu) / len(epochs), "collect_cpu_s": col_cpu / len(epochs),
            "update_cpu_s": upd_cpu / len(epochs),
            "samples_per_s": steps / (col + upd), "collect_samples_per_s": steps / col,
            "update_samples_per_s": steps / upd, "update_share": upd / (col + upd),
            "update_cpu_share": upd_cpu / (col_cpu + upd_cpu) if col_cpu + upd_cpu else 0.0,
            "last_update_s": epochs[-1]["update_s"]}


def bench_agent(agent: str, trace, args) -> dict:
    t0 = time.perf_counter()
    tr = build_trainer(agent, trace, args.scale)
    built_s = time.perf_counter() - t0
    cfg = tr.config
    epochs = []
    batch = state = stats = None
    try:
        for e in range(1, args.epochs + 1):
            c0, w0 = cpu_now(), time.perf_counter()
            batch = tr.collect(e)
            c1, w1 = cpu_now(), time.perf_counter()
            state = training_state(tr)
            stats = tr.update(batch)
            c2, w2 = cpu_now(), time.perf_counter()
            tr.epoch = e
            epochs.append({"epoch": e, "steps": batch.steps, "collect_s": w1 - w0, "update_s": w2 - w1,
                           "collect_cpu_s": c1 - c0, "update_cpu_s": c2 - c1, "pi_iters": stats["pi_iters"],
                           "mean_return": float(np.mean(batch.returns))})
            print(f"    epoch {e}: {batch.steps:,} samples · collect {w1 - w0:.2f} s (CPU {c1 - c0:.2f}) · update "
                  f"{w2 - w1:.2f} s (CPU {c2 - c1:.2f}) · pi iterations {stats['pi_iters']}", flush=True)
        if args.epochs_only:
            rec, again = None, stats
        else:
            final = training_state(tr)
            rec, again = recorded_update(tr, batch, state)
            load_training_state(tr, final)
    finally:
        tr.close()
    if rec is None:
        return epoch_row(agent, cfg, epochs, built_s, batch)
    if (again["pi_iters"], again["loss_pi"], again["loss_v"]) != (stats["pi_iters"], stats["loss_pi"], stats["loss_v"]):
        raise SystemExit(f"{agent}: the recorded update differs from the timed one ({again} vs {stats})")
    row = epoch_row(agent, cfg, epochs, built_s, batch)
    last = epochs[-1]
    ops_s = sum(rec.phase_s.values())
    threads = row["update_threads"]
    row.update({
        "update_phases_s": {k: round(v, 4) for k, v in sorted(rec.phase_s.items())},
        "update_phase_ops": dict(rec.phase_ops), "recorded_update_cpu_s": rec.cpu_s, "last_update_cpu_s": last["update_cpu_s"],
        "top_ops_s": dict(sorted(rec.op_s.items(), key=lambda kv: -kv[1])[:8]),
        "update_ops": sum(rec.phase_ops.values()), "op_floor_s": args.op_floor_s,
        "update_outside_ops_s": max(0.0, last["update_cpu_s"] - ops_s),
        "update_matmul_op_s": rec.matmul_s})
    if not args.no_limit:
        lim1, flops = matmul_limit(rec, threads)
        lim2, _ = matmul_limit(rec, 2) if args.two_threads and threads != 2 else (lim1, flops)
        row.update({"update_matmul_gflop": flops / 1e9, "update_gflops": flops / last["update_cpu_s"] / 1e9,
                    f"limit_s_{threads}t": lim1, "limit_gflops": flops / lim1 / 1e9, "limit_s_2t": lim2,
                    "limit_gflops_2t": flops / lim2 / 1e9, "update_over_limit": last["update_cpu_s"] / lim1,
                    "distinct_matmuls": len({(k[0], k[2], k[3]) for k in rec.matmuls}),
                    "uncounted_products": sorted(n for n in rec.op_s if n.startswith(OTHER_PRODUCTS)),
                    "matmul_calls": sum(rec.matmuls.values())})
    return row


def print_agent(row: dict) -> None:
    print(f"  {row['agent']}: {row['samples_per_epoch']:,.0f} samples/epoch · epoch {row['epoch_s']:.2f} s "
          f"(CPU {row['epoch_cpu_s']:.2f} s) = {row['samples_per_s']:,.0f} samples/s "
          f"({row['samples_per_epoch'] / row['epoch_cpu_s']:,.0f} per CPU s) · collect "
          f"{row['collect_samples_per_s']:,.0f}/s · update {row['update_samples_per_s']:,.0f}/s · update "
          f"{row['update_share']:.0%} of the wall time ({row['update_cpu_share']:.0%} of the CPU time)")
    if "update_phases_s" not in row:
        print(f"    CPU per epoch: collect {row['collect_cpu_s']:.2f} s, update {row['update_cpu_s']:.2f} s")
        return
    last = row["last_update_cpu_s"]
    parts = " · ".join(f"{k} {v:.2f} s ({v / last:.0%})" for k, v in sorted(row["update_phases_s"].items(),
                                                                       key=lambda kv: -kv[1]))
    floor = row["update_ops"] * row["op_floor_s"]
    print(f"    last update, CPU {last:.2f} s; its ops' CPU time by phase (run again under the recorder): {parts}; of the "
          f"ops, matmuls {row['update_matmul_op_s']:.2f} s · outside ops (plain CPU − ops) "
          f"{row['update_outside_ops_s']:.2f} s · {row['update_ops']:,} ops issued x {row['op_floor_s'] * 1e6:.1f} µs "
          f"(one tiny op) = {floor:.2f} s ({floor / last:.0%}) of fixed per-op cost")
    print("    top ops: " + " · ".join(f"{k.replace('aten.', '').replace('.default', '')} {v:.2f} s"
                                      for k, v in row["top_ops_s"].items()))
    if "limit_gflops" in row:
        t = row["update_threads"]
        print(f"    matmuls {row['update_matmul_gflop']:.2f} GFLOP ({row['matmul_calls']:,} calls, "
              f"{row['distinct_matmuls']} shapes): update {row['update_gflops']:.2f} GFLOP per CPU second · limit at {t} "
              f"thread(s) {row['limit_gflops']:.2f} GFLOP per CPU second ({row[f'limit_s_{t}t']:.2f} s)"
              + (f", at 2 threads {row['limit_gflops_2t']:.2f} GFLOP/s wall" if row["limit_s_2t"] != row[f"limit_s_{t}t"] else "")
              + f" · update / limit = {row['update_over_limit']:.2f}x (target <= 2)")
        print(f"    products outside the count: {', '.join(row['uncounted_products']) or 'none'}")


def paper_split_budget(row: dict) -> dict:
    """Seed 004's budget in FLOPs from the splitwindow epoch measured here (1 episode of 1,000
    placements per epoch, the default networks and passes)."""
    per_ep = row["samples_per_epoch"]  # decisions (placements and Fwd actions) of one epoch's episodes
    if row["placements"] != PAPER_SPLIT["placements"]:
        raise SystemExit("paper_split_budget: measure episodes of the paper's 1,000 placements")
    scale = 1 / row["trajs_per_epoch"]  # per episode
    # the matmuls of one update (measured) and of collection: one actor and one critic forward per placement
    hidden = row["hidden"]
    obs_dim, n_act = row["obs_dim"], row["n_actions"]
    fwd = 2 * sum(a * b for a, b in zip([obs_dim, *hidden], [*hidden, n_act]))
    fwd += 2 * sum(a * b for a, b in zip([obs_dim, *hidden], [*hidden, 1]))
    per_episode = (row["update_matmul_gflop"] * 1e9 + fwd * per_ep) * scale
    total = per_episode * PAPER_SPLIT["episodes"]
    ep_s = row["epoch_cpu_s"] * scale  # CPU seconds per episode
    core_s = 2 * BUDGET_S  # both cores busy for 10 hours (two runs side by side, or perfect 2-thread scaling)
    out = {"flops_per_episode": per_episode, "total_flops": total, "episode_cpu_s": ep_s,
           "paper_core_days_at_measured": PAPER_SPLIT["episodes"] * ep_s / 86400,
           "episodes_in_10h_measured": core_s / ep_s,
           "episodes_in_10h_at_limit": core_s * row["limit_gflops"] * 1e9 / per_episode,
           "flops_in_10h_at_limit": core_s * row["limit_gflops"] * 1e9}
    print(f"  split window, paper budget: {PAPER_SPLIT['episodes']:,} episodes x {PAPER_SPLIT['placements']:,} "
          f"placements ({per_ep * scale:,.0f} decisions here), networks {hidden}, {row['train_pi_iters']}+{row['train_v_iters']} passes of minibatch "
          f"{row['minibatch']}: {per_episode / 1e9:.1f} GFLOP per episode, {total:.2e} FLOP in all")
    print(f"    measured here {ep_s:.2f} CPU s per episode -> {out['paper_core_days_at_measured']:.1f} core-days "
          f"({out['paper_core_days_at_measured'] / 2:.1f} days on 2 cores); 10 h on 2 cores (72,000 core-seconds): "
          f"{out['episodes_in_10h_measured']:,.0f} episodes at the measured speed, "
          f"{out['episodes_in_10h_at_limit']:,.0f} at the one-thread matmul limit "
          f"({out['flops_in_10h_at_limit']:.2e} FLOP)")
    return out


def startup() -> dict:
    """Fresh-interpreter seconds of ``import torch`` and of the first Adam construction + step."""
    code = ("import time;t=time.perf_counter();import torch;a=time.perf_counter()-t;"
            "t=time.perf_counter();p=[torch.nn.Parameter(torch.zeros(4))];o=torch.optim.Adam(p);"
            "p[0].grad=torch.ones(4);o.step();b=time.perf_counter()-t;print(a,b)")
    best = (float("inf"), float("inf"))
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        best = min(best, (float(out[0]), float(out[1])))
    print(f"  start-up (fresh interpreter, best of 3): import torch {best[0]:.2f} s · first Adam construction + step "
          f"{best[1]:.2f} s")
    return {"import_torch_s": best[0], "first_adam_s": best[1]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", default=",".join(AGENTS), help=f"comma-separated, from {', '.join(AGENTS)}")
    ap.add_argument("--trace", default=SHARED if os.path.exists(SHARED) else SAMPLE)
    ap.add_argument("--epochs", type=int, default=1, help="epochs per agent (the breakdown is of the last)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply each agent's trajectories per epoch")
    ap.add_argument("--no-limit", action="store_true", help="skip the matmul microbenchmark")
    ap.add_argument("--two-threads", action="store_true", help="also the matmul limit at 2 threads (wall time)")
    ap.add_argument("--epochs-only", action="store_true",
                    help="only the epochs' timings: no start-up, recorded update or matmul limit (before/after loops)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--code", help="a checkout whose rtsched to time (default: this one)")
    args = ap.parse_args(argv)
    args.no_limit = args.no_limit or args.epochs_only
    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    for a in agents:
        if a not in AGENTS:
            print(f"bench_train: --agents: unknown agent {a!r}; choose from {', '.join(AGENTS)}", file=sys.stderr)
            return 2
    trace = load_trace(args.trace) if any(a in ("rlscheduler", "rlscheduler-bf", "inspector", "splitwindow")
                                          for a in agents) else None
    print(f"# bench_train  python {sys.version.split()[0]}  torch {torch.__version__}  {os.cpu_count()} CPUs  "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}  trace {os.path.basename(args.trace)}  "
          f"epochs {args.epochs}  scale {args.scale}  code {os.path.dirname(os.path.dirname(rtsched_file))}")
    args.op_floor_s = op_floor()
    result = {"startup": None if args.epochs_only else startup(), "agents": [], "op_floor_us": args.op_floor_s * 1e6}
    for a in agents:
        print(f"  -- {a}", flush=True)
        row = bench_agent(a, trace, args)
        if a == "splitwindow":
            probe = EnvFactory("splitwindow", trace, machine=FlatCluster(trace.max_nodes),
                               options={"head": 10, "tail": 10, "placements": 1000})()
            row["obs_dim"] = int(np.prod(probe.observation_space.shape))
            row["n_actions"] = int(probe.action_space.n)
            row["placements"] = int(probe.placements)
        print_agent(row)
        result["agents"].append(row)
        if a == "splitwindow" and not args.no_limit:
            result["paper_split_budget"] = paper_split_budget(row)
    rl = next((r for r in result["agents"] if r["agent"] == "rlscheduler"), None)
    if rl is not None:
        print(f"  RLScheduler without backfilling, 100 epochs extrapolated from {args.epochs} epoch(s) at scale "
              f"{args.scale}: {100 * rl['epoch_cpu_s'] / args.scale / 60:.1f} min CPU (the wall time of an idle machine; "
              f"target <= 30 min), {100 * rl['epoch_s'] / args.scale / 60:.1f} min wall at this run's load")
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
