#!/usr/bin/env python3
"""Calibration of one yes/no question from a handful of its labelled answers (issue 48), from
results files alone: held-out ECE of P(yes) against the number of labelled answers.

Each argument is FILE=TASK, a jev decide results file of typed rows with one labelled noul
question (measurements/noul-pool.py's input). For each n in --rows, --draws times: n answers
drawn at random fit a map, the task's other answers score it. Maps:

  shrunk    jev calibrate's below 100 rows: a temperature on logit(P(yes)) with a Gaussian
            prior on log T around 1 (sd 1), MAP (calibrate.FitShrunk)
  platt     sigma(a logit(p) + b), maximum likelihood with a Gaussian prior (sd 1) on log a and
            on b: a bias term, which a temperature lacks

  python3 measurements/noul-few-labels.py out/noul/sarcasm-out.jsonl=sarcasm ...
"""
import argparse
import importlib.util
import math
import os

import numpy as np

spec = importlib.util.spec_from_file_location("noulpool", os.path.join(os.path.dirname(__file__), "noul-pool.py"))
pool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pool)

LOGT = np.linspace(math.log(0.05), math.log(20), 401)
A = np.exp(np.linspace(math.log(0.05), math.log(20), 121))
B = np.linspace(-4, 4, 161)


def fit_platt(x, y):
    z = A[:, None, None] * x[None, None, :] + B[None, :, None]
    q = np.clip(pool.sig(z), 1e-12, 1 - 1e-12)
    v = -(y * np.log(q) + (1 - y) * np.log(1 - q)).sum(-1) + np.log(A)[:, None] ** 2 / 2 + B[None, :] ** 2 / 2
    i, j = np.unravel_index(int(np.argmin(v)), v.shape)
    return A[i], B[j]


def fit_shrunk(x, y):
    z = x[None, :] / np.exp(LOGT)[:, None]
    q = np.clip(pool.sig(z), 1e-12, 1 - 1e-12)
    v = -(y * np.log(q) + (1 - y) * np.log(1 - q)).sum(-1) + LOGT ** 2 / 2
    return math.exp(LOGT[int(np.argmin(v))])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rows", default="10,20,40,80")
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ns = [int(v) for v in args.rows.split(",")]
    print(f"{args.draws} draws; held-out ECE of P(yes): mean [90th percentile]; AUROC is unchanged by either map (monotone)")
    print(f"{'task':11} {'rows':>4} {'n':>3}  {'raw':>6}  {'shrunk T':>15}  {'platt':>15}")
    for spec_ in args.files:
        path, name = spec_.split("=")
        p, _, y = pool.load(path)
        x, y = pool.logit(p), y.astype(float)
        rng = np.random.default_rng(args.seed)
        for n in ns:
            if n >= len(y) - 20:
                continue
            raw, sh, pl = [], [], []
            for _ in range(args.draws):
                idx = rng.permutation(len(y))
                fi, ho = idx[:n], idx[n:]
                t = fit_shrunk(x[fi], y[fi])
                a, b = fit_platt(x[fi], y[fi])
                raw.append(pool.ece(p[ho], y[ho]))
                sh.append(pool.ece(pool.sig(x[ho] / t), y[ho]))
                pl.append(pool.ece(pool.sig(a * x[ho] + b), y[ho]))
            f = lambda v: f"{np.mean(v):.3f} [{np.percentile(v, 90):.3f}]"
            print(f"{name:11} {len(y):4d} {n:3d}  {np.mean(raw):6.3f}  {f(sh):>15}  {f(pl):>15}")


if __name__ == "__main__":
    main()
