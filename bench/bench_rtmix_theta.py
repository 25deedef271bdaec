"""Why an rtmix model breaks θ where ``replan`` does not (issue 23, fifth session), on validation instances only.

For every validation instance (``bench_rtmix_dagger.instances``: seeds 950,000 on with the default
walltimes, 960,000 on with walltime = runtime; never the acceptance or test sets) the model and
``replan`` (θ = 1.2, the compare default) are simulated under JIT; every rtmix scheduling pass is
logged.  An instance counts as a θ violation of a policy when its RTJ mean slowdown exceeds 1.2.
Where ``replan`` keeps the instance's RTJ mean ≤ 1.2, the instance's θ_used is exactly 1.2 (θ* is at
most any feasible schedule's RTJ mean), so "the model > 1.2 and replan ≤ 1.2" is exactly the set
of violations replan does not have (without solving the optimum).

Each RTJ the model delays longer than replan is classified by what the agent had and did at the
passes while it waited (first matching class, in this order):

* ``waited`` — the RTJ could start on a free partition and the agent ended the pass;
* ``bj_first`` — it could start and the agent started a BJ instead (after which it no longer fit);
* ``declined`` — it had no free partition, a preemption candidate was offered, and the agent
  waited or started something else;
* ``jit_handover`` — the agent preempted at once and the RTJ waited for the victims' JIT writes
  (replan's delay was shorter: it waited for a completion or chose a cheaper partition);
* ``no_action`` — no pass offered a start or a candidate for it (a missing action: the blocking
  jobs were RTJs, non-checkpointable, or started in the same pass).

    PYTHONPATH=. nice -n 10 python bench/bench_rtmix_theta.py --n 100 --models training/rtmix-dagger-theta16/round-10.pt

``--with KEY=V1,V2,...`` (repeatable) runs each model once per combination of environment settings
written into a temporary copy of its file (e.g. ``--with shield=risk --with conserve=0 --with
shield_theta=1.3,1.45``: the shield's parameter swept on validation), and prints beside the
classes the means and the paired intervals against WCJS-JIT.  ``--miralike SEED`` instead prints
why each model leaves that Mira-like week's machine idle.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

THETA = 1.2
CLASSES = ("waited", "bj_first", "declined", "jit_handover", "no_action")


def per_job(instance, name: str) -> dict[int, dict]:
    """Job id → {kind, submit, runtime, start, end, sd} of ``name`` simulated on ``instance`` (JIT)."""
    from milp.compare import online_spec
    from rtsched.pipeline import execute

    rec = execute(online_spec(instance, name), workload=instance.workload())
    out = {}
    for o in rec.outcomes:
        j = o.job
        out[j.id] = {"rt": j.kind == "rt", "submit": j.submit, "runtime": j.runtime, "start": o.first_start,
                     "end": o.end, "sd": (o.end - j.submit) / j.runtime, "jit_delay": o.jit_delay}
    return out


class PassLog:
    """Patches ``RtMixPolicy.decide`` to record, for every waiting RTJ at every agent step, what
    was legal for it and what the agent chose."""

    def __init__(self, idle: bool = False) -> None:
        self.steps: list[dict] = []
        self.idle = idle  # also record what each step offered for the machine's use (``idle_report``)

    def install(self) -> None:
        import numpy as np

        from rtsched.rl.rtmix import policy as pol
        from rtsched.rl.rtmix.core import RtMixPass

        log = self.steps
        original_apply = RtMixPass.apply
        original_init = RtMixPass.__init__

        def init(ps, view, spec, model=None):
            original_init(ps, view, spec, model)
            ps._logged_wait = True
            log.append({"now": ps.now, "rtjs": self._rtjs(ps), "action": "wait" if ps.has_choice() else "none",
                        **(self._idle(ps) if self.idle else {})})

        def apply(ps, action):
            vis, target, cands, mask = ps._state()
            kind = ("start_rt" if action < ps.spec.window and vis[action].info.kind == "rt" else
                    "start_bj" if action < ps.spec.window else
                    "preempt_rt" if action < ps.spec.bj_first else "preempt_bj")
            log[-1]["action"] = kind
            original_apply(ps, action)
            log.append({"now": ps.now, "rtjs": self._rtjs(ps), "action": "wait" if ps.has_choice() else "none",
                        **(self._idle(ps) if self.idle else {})})

        RtMixPass.__init__ = init
        RtMixPass.apply = apply
        self._np = np
        self._pol = pol

    @staticmethod
    def _idle(ps) -> dict:
        """What a pass offered the agent on a large machine: free node share, legal BJ starts, and
        whether a waiting job outside the visible window would fit now."""
        vis, _target, _cands, mask = ps._state()
        visible = {js.info.id for js in vis}
        hidden_fit = any(js.info.id not in visible and ps.plan.find(js.info.nodes) is not None for js in ps.view.queue)
        return {"free": ps.plan.free_nodes / ps.total, "bj_starts": sum(1 for i, js in enumerate(vis)
                                                                          if js.info.kind != "rt" and mask[i]),
                "hidden_fit": hidden_fit, "running": len(ps.view.running)}

    @staticmethod
    def _rtjs(ps) -> dict[int, str]:
        vis, target, cands, mask = ps._state()
        out = {}
        for i, js in enumerate(vis):
            if js.info.kind != "rt":
                continue
            out[js.info.id] = ("can_start" if mask[i] else
                               "candidates" if js is target and cands else "blocked")
        return out


def classify(jid: int, steps: list[dict], mine: dict, theirs: dict) -> str:
    """The class (module docstring) of RTJ ``jid``'s extra delay under the model."""
    seen = [(s["rtjs"][jid], s["action"]) for s in steps if jid in s["rtjs"]]
    for status, action in seen:
        if status == "can_start" and action == "wait":
            return "waited"
    for status, action in seen:
        if status == "can_start" and action == "start_bj":
            return "bj_first"
    for status, action in seen:
        if status == "candidates" and action in ("wait", "start_bj", "preempt_bj"):
            return "declined"
    if mine["jit_delay"] > 0:
        return "jit_handover"
    return "no_action"


def idle_report(model: str, seed: int, machine: str) -> str:
    """Why ``model`` leaves a Mira-like week's machine idle: its steps split by what they offered."""
    from rtsched.experiments.weeks import outcome_row, policy_fields
    from rtsched.generators import generate_miralike
    from rtsched.pipeline import RunSpec, execute

    plog = PassLog(idle=True)
    plog.install()
    spec = RunSpec(machine=machine, **policy_fields(model), rt_percent=10.0, marking="random", seed=seed, tau=600)
    row = outcome_row(execute(spec, workload=generate_miralike(days=7.0, seed=seed)), model)
    steps = plog.steps
    half = [s for s in steps if s["free"] >= 0.5]
    waited_bj = sum(1 for s in half if s["action"] == "wait" and s["bj_starts"] > 0)
    no_start_hidden = sum(1 for s in half if s["bj_starts"] == 0 and s["hidden_fit"] and s["action"] in ("wait", "none"))
    return (f"{model}, Mira-like week {seed}: utilization {row['utilization']:.3f}; {len(steps)} pass steps, {len(half)} with "
            f"≥ 50 % of the nodes free: the agent waited with a legal BJ start on {waited_bj}; no visible BJ could "
            f"start while a job outside the window fitted on {no_start_hidden}")


def variants(models: list[str], settings: list[str], folder: str) -> list[str]:
    """Each model, once per combination of ``settings`` ("KEY=V1,V2"): copies with those environment
    settings in ``folder`` (numbers as floats, other values as text)."""
    import itertools

    import torch

    if not settings:
        return models
    keys, values = [], []
    for item in settings:
        k, _, v = item.partition("=")
        keys.append(k)
        values.append([float(x) if x.replace(".", "", 1).isdigit() else x for x in v.split(",")])
    out = []
    for m in models:
        from rtsched.rl.modelfiles import model_file
        st = torch.load(model_file(m), map_location="cpu", weights_only=True)
        for combo in itertools.product(*values):
            tag = "-".join(f"{k}{v}" for k, v in zip(keys, combo))
            # the run folder in the name too: round-2.pt of two runs must not share a copy
            stem = "-".join(os.path.normpath(m).removesuffix(".pt").split(os.sep)[-2:])
            path = os.path.join(folder, f"{stem}-{tag}.pt")
            torch.save({**st, "env": {**st["env"], **dict(zip(keys, combo))}}, path)
            out.append(path)
    return out


def main() -> None:
    from bench_rtmix_dagger import VALIDATION_EXACT_SEED, VALIDATION_SEED, instances

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--models", required=True, help="comma-separated rtmix model names or files")
    ap.add_argument("--replan", default="replan")
    ap.add_argument("--cache", default="runs/theta-why-replan.json", help="replan's per-job rows (JSON), reused")
    ap.add_argument("--details", type=int, default=6, help="violating instances printed job by job")
    ap.add_argument("--miralike", type=int, help="instead: the idle diagnosis on this Mira-like week (validation)")
    ap.add_argument("--machine", default=os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "shared", "data", "mira", "mira-partitions.xml"))
    ap.add_argument("--with", dest="settings", action="append", default=[], help="KEY=V1,V2: environment settings")
    args = ap.parse_args()
    from benchcli import require_input
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        if model.endswith(".pt") or os.sep in model:  # a model file, not a shipped model's name: before any run
            require_input("bench_rtmix_theta.py", model, "--models")
    import tempfile
    tmp = tempfile.TemporaryDirectory()
    args.models = ",".join(variants([m.strip() for m in args.models.split(",") if m.strip()], args.settings, tmp.name))
    if args.miralike is not None:
        for model in [m.strip() for m in args.models.split(",") if m.strip()]:
            print(idle_report(model, args.miralike, args.machine), flush=True)
        return
    insts = instances(args.n, VALIDATION_SEED, VALIDATION_EXACT_SEED, "val")
    cache = {}
    if os.path.exists(args.cache):
        with open(args.cache, encoding="utf-8") as fh:
            cache = json.load(fh)
    key = f"{args.replan}:{args.n}"
    if key not in cache:
        cache[key] = {i.name: {str(k): v for k, v in per_job(i, args.replan).items()} for i in insts}
        from rtsched.files import atomic_write_text
        os.makedirs(os.path.dirname(os.path.abspath(args.cache)), exist_ok=True)
        atomic_write_text(args.cache, json.dumps(cache))
    rp = {name: {int(k): v for k, v in jobs.items()} for name, jobs in cache[key].items()}

    def rt_mean(jobs: dict) -> float:
        sds = [j["sd"] for j in jobs.values() if j["rt"]]
        return sum(sds) / len(sds)

    from milp.compare import PolicyRun, paired, run_online

    rbj = [sum(j["sd"] for j in jobs.values() if not j["rt"]) / sum(1 for j in jobs.values() if not j["rt"])
           for jobs in rp.values()]
    print(f"{args.replan}: BJ {sum(rbj) / len(rbj):.3f}, RTJ {sum(rt_mean(j) for j in rp.values()) / len(rp):.3f} "
          f"over {len(rp)} validation instances")

    wcjs = [run_online(i, "wcjs-jit") for i in insts]
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        runs: list = list(wcjs)
        plog = PassLog()
        plog.install()
        counts: Counter = Counter()
        viol_model = viol_replan = only_model = only_replan = 0
        printed = 0
        for inst in insts:
            plog.steps.clear()
            mine = per_job(inst, model)
            bj = [j["sd"] for j in mine.values() if not j["rt"]]
            runs.append(PolicyRun(inst.name, model, sum(bj) / len(bj), rt_mean(mine)))
            theirs = rp[inst.name]
            vm, vr = rt_mean(mine) > THETA + 1e-9, rt_mean(theirs) > THETA + 1e-9
            viol_model += vm
            viol_replan += vr
            only_replan += vr and not vm
            if not vm or vr:
                continue
            only_model += 1
            for jid, j in sorted(mine.items()):
                if not j["rt"] or j["start"] - j["submit"] <= theirs[jid]["start"] - theirs[jid]["submit"]:
                    continue
                c = classify(jid, plog.steps, j, theirs[jid])
                counts[c] += 1
                if printed < args.details:
                    print(f"  {inst.name} RTJ {jid}: submit {j['submit']}, runtime {j['runtime']}, model start "
                          f"{j['start']} (SD {j['sd']:.2f}, JIT wait {j['jit_delay']}), replan start "
                          f"{theirs[jid]['start']} (SD {theirs[jid]['sd']:.2f}) → {c}")
            printed += 1
        from bench_rtmix_dagger import _ci
        v = paired(runs, model, "wcjs-jit")
        me = [r for r in runs if r.policy == model]
        print(f"{model}: BJ {sum(r.bj_sd_mean for r in me) / len(me):.3f}, RTJ {sum(r.rtj_sd_mean for r in me) / len(me):.3f}; "
              f"vs WCJS-JIT ΔBJ {_ci(v, 'bj')}, ΔRTJ {_ci(v, 'rtj')}")
        print(f"{model}: RTJ mean > {THETA} on {viol_model}/{len(insts)} (replan {viol_replan}); only the model: "
              f"{only_model}, only replan: {only_replan}; RTJs the model delays more there, by class: "
              + ", ".join(f"{c} {counts[c]}" for c in CLASSES), flush=True)


if __name__ == "__main__":
    from benchcli import one_line_errors  # bench/ is sys.path[0] when run as a script

    raise SystemExit(one_line_errors("bench_rtmix_theta.py", main))
