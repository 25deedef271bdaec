#!/usr/bin/env python
"""Fit the shipped parametric model of APS job runtimes (``rtsched/generators/aps_model.json``).

Reads the 996 APS analysis-job runtimes (s, one a line) that seed 002 draws real-time jobs from
(``../shared/data/aps/aps_runtimes_seconds.txt``) and fits a K-component mixture of log-normals
(K = 3 by default) by expectation-maximisation on ln(runtime).  EM starts from a deterministic
split of the sorted sample into K equal-count groups and runs to a fixed tolerance, so the output
is the same on every run.  ``rtsched.rtmarking`` samples this model when the APS sample file is not
available (mode "aps").

    python scripts/fit_aps.py [--sample PATH] [--out PATH] [--components K]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SAMPLE = REPO.parent / "shared" / "data" / "aps" / "aps_runtimes_seconds.txt"
DEFAULT_OUT = REPO / "rtsched" / "generators" / "aps_model.json"


def read_sample(path: Path) -> np.ndarray:
    values = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        try:
            v = float(s)
        except ValueError:
            raise SystemExit(f"{path}, line {lineno}: not a number: {s!r}") from None
        if not v > 0:
            raise SystemExit(f"{path}, line {lineno}: runtime must be > 0 s, got {s}")
        values.append(v)
    return np.asarray(values, dtype=float)


def fit_lognormal_mixture(x: np.ndarray, k: int, tol: float = 1e-10, max_iter: int = 10_000):
    """EM for a K-component Gaussian mixture on y = ln(x).  Returns (weights, mu, sigma, loglik, iters)."""
    y = np.log(x)
    groups = np.array_split(np.sort(y), k)
    w = np.array([len(g) for g in groups], dtype=float) / len(y)
    mu = np.array([g.mean() for g in groups])
    sd = np.array([max(g.std(), 1e-3) for g in groups])
    prev = -np.inf
    for it in range(1, max_iter + 1):
        # E step (log-sum-exp for stability)
        logp = (np.log(w)[None, :] - np.log(sd)[None, :] - 0.5 * math.log(2 * math.pi)
                - 0.5 * ((y[:, None] - mu[None, :]) / sd[None, :]) ** 2)
        m = logp.max(axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(logp - m).sum(axis=1))
        ll = float(lse.sum())
        r = np.exp(logp - lse[:, None])
        # M step
        nk = r.sum(axis=0)
        w = nk / len(y)
        mu = (r * y[:, None]).sum(axis=0) / nk
        sd = np.sqrt(np.maximum((r * (y[:, None] - mu[None, :]) ** 2).sum(axis=0) / nk, 1e-8))
        if ll - prev < tol * abs(ll):
            break
        prev = ll
    order = np.argsort(mu)
    return w[order], mu[order], sd[order], ll - float(y.sum()), it  # log-likelihood of x (Jacobian)


def mixture_cdf(x: np.ndarray, w, mu, sd) -> np.ndarray:
    from scipy.stats import norm

    y = np.log(x)
    return sum(wi * norm.cdf((y - mi) / si) for wi, mi, si in zip(w, mu, sd))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", type=Path, default=DEFAULT_SAMPLE)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--components", type=int, default=3)
    args = ap.parse_args(argv)
    if not args.sample.exists():
        print(f"APS sample not found: {args.sample}", file=sys.stderr)
        return 2
    x = read_sample(args.sample)
    w, mu, sd, ll, iters = fit_lognormal_mixture(x, args.components)
    xs = np.sort(x)
    n = len(xs)
    cdf = mixture_cdf(xs, w, mu, sd)
    ks = float(max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(0, n) / n)))
    model = {
        "model": "aps_runtime",
        "family": "lognormal_mixture",
        "description": ("APS analysis-job runtimes (s): ln(runtime) ~ sum_k weight_k N(mu_k, sigma_k^2); "
                        "samples are rounded to whole seconds and clipped to [min_s, max_s]."),
        "weights": [round(float(v), 6) for v in w],
        "mu": [round(float(v), 6) for v in mu],
        "sigma": [round(float(v), 6) for v in sd],
        "min_s": int(xs[0]),
        "max_s": int(xs[-1]),
        "fit": {
            "method": f"EM on ln(runtime), {args.components} components, equal-count initial split",
            "n": n,
            "iterations": iters,
            "log_likelihood": round(ll, 3),
            "ks_statistic": round(ks, 4),
            "sample_mean_s": round(float(xs.mean()), 3),
            "sample_median_s": float(np.median(xs)),
            "model_mean_s": round(float(np.sum(w * np.exp(mu + sd ** 2 / 2))), 3),
        },
        "source": {
            "file": "aps/aps_runtimes_seconds.txt (../shared/data)",
            "sha256": hashlib.sha256(args.sample.read_bytes()).hexdigest(),
            "origin": "samnickolay/qsim-scheduling-january-paper-v2 @ d5b2b86, list aps_runtimes in "
                      "src/Cobalt/Components/bqsim.py",
        },
        "generated_by": "scripts/fit_aps.py",
    }
    text = json.dumps(model, indent=2) + "\n"
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, args.out)  # atomic: a reader never sees half a file
    print(f"{args.out}: {args.components} components, KS {ks:.4f}, n {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
