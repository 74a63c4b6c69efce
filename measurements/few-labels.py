#!/usr/bin/env python3
"""Calibration from a handful of labels (issue 48): held-out ECE against the number of
labelled rows a temperature is fitted on, for the pool's tasks of 5-16 options, from results
files alone (no decoding).

Each argument is FILE=TASK, a jev decide --debias pride results file of labelled rows
(measurements/calibration-pool.py's input). For each task and each n in --rows, --draws times:
n rows drawn at random fit a temperature on PriDe's scores, and the task's other rows score it
(held-out ECE). Two fits:

  mle         the temperature that minimises the n rows' negative log-likelihood
  shrunk      the same with a Gaussian prior on log T around T0 (--t0: the shipped 2-4 band's
              temperature; no pool task of 5-16 options was fitted for it): minimise
              n·NLL(T) + (log T - log T0)^2 / (2 s^2), s = --prior-sd

and, for the shrunk fit, the bound jev calibrate states: the n rows' 5-fold cross-validated
ECE (each fold calibrated by the temperature fitted on the other four) plus the 90th percentile
of its bootstrap spread; the table gives how often the held-out ECE stayed under it.

With FILE=TASK=MORE, MORE holds more rows of the same task (decided with FILE's PriDe prior:
--prior FILE's prior file), scored with FILE's prior: the n rows are drawn from both files'
rows together and the rest score them, so that the held-out set is large (its ECE is biased
upward when it holds few rows) and drawn like the labels (two slices of a source file can
differ: NewsArticles' later rows are easier, Banking77's harder). --fixed scores on MORE's
rows alone instead, drawing the n rows from FILE.

  python3 measurements/few-labels.py news.jsonl=news soc.jsonl=soc bias.jsonl=bias fit-pride.jsonl=banking77
"""
import argparse
import importlib.util
import math
import os

import numpy as np

spec = importlib.util.spec_from_file_location("pool", os.path.join(os.path.dirname(__file__), "calibration-pool.py"))
pool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pool)

LOGTS = np.linspace(math.log(0.05), math.log(20), 801)


def nll_curve(X, G):
    """Mean NLL of rows X (scores) with gold G at every temperature of LOGTS."""
    return np.array([pool.nll(X, G, math.exp(lt)) for lt in LOGTS])


def fit(X, G, t0=None, sd=None):
    c = nll_curve(X, G) * len(G)
    if t0 is not None:
        c = c + (LOGTS - math.log(t0)) ** 2 / (2 * sd * sd)
    return math.exp(LOGTS[int(np.argmin(c))])


def ece_at(X, G, t):
    p = pool.softmax(X, t)
    return pool.ece(p.max(1), p.argmax(1) == G)


def cv_bound(X, G, t0, sd, rng, folds=5, boots=200):
    """The n rows' 5-fold cross-validated ECE and its bootstrap 90th percentile."""
    n = len(G)
    idx = rng.permutation(n)
    conf, right = np.zeros(n), np.zeros(n, bool)
    for f in range(folds):
        test = idx[f::folds]
        train = np.setdiff1d(idx, test)
        t = fit(X[train], G[train], t0, sd)
        p = pool.softmax(X[test], t)
        conf[test], right[test] = p.max(1), p.argmax(1) == G[test]
    cv = pool.ece(conf, right)
    bs = [pool.ece(conf[b], right[b]) for b in (rng.integers(0, n, n) for _ in range(boots))]
    return cv, float(np.percentile(bs, 90))


class Held:
    """A task's held-out rows, scored as its fitting rows are: PriDe with the fitting file's prior."""

    def __init__(self, path, lp):
        _, rows = pool.load(path)
        self.X = np.array([pool.lsm(r - lp) for r, _ in rows])
        self.G = np.array([g for _, g in rows])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="FILE=TASK")
    ap.add_argument("--rows", default="10,20,40,80,160")
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--t0", type=float, default=0.605)
    ap.add_argument("--prior-sd", type=float, default=1.0, help="the prior's spread of log T")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fixed", action="store_true", help="score on MORE's rows alone (FILE=TASK=MORE)")
    args = ap.parse_args()
    ns = [int(x) for x in args.rows.split(",")]
    print(f"T0 {args.t0}, prior sd of log T {args.prior_sd}, {args.draws} draws; held-out ECE mean [90th percentile]")
    print(f"{'task':12} {'k':>2} {'held':>4} {'n':>4}  {'mle':>17}  {'shrunk':>17}  {'bound (mean)':>12} {'held <= bound':>13}  own T")
    for spec_ in args.files:
        path, name, *heldpath = spec_.split("=")
        t = pool.Task(name, path)
        h = Held(heldpath[0], t.lp) if heldpath else None
        if h is not None and not args.fixed:
            t.X, t.G, h = np.concatenate([t.X, h.X]), np.concatenate([t.G, h.G]), None
        own = pool.fit_t([t])
        rng = np.random.default_rng(args.seed)
        for n in ns:
            if n > len(t.G) or (h is None and n >= len(t.G) - 20):
                continue
            mle, shr, bound, held_ok = [], [], [], []
            for _ in range(args.draws):
                idx = rng.permutation(len(t.G))
                fi, ho = idx[:n], idx[n:]
                HX, HG = (h.X, h.G) if h else (t.X[ho], t.G[ho])
                tm = fit(t.X[fi], t.G[fi])
                ts = fit(t.X[fi], t.G[fi], args.t0, args.prior_sd)
                mle.append(ece_at(HX, HG, tm))
                e = ece_at(HX, HG, ts)
                shr.append(e)
                cv, b = cv_bound(t.X[fi], t.G[fi], args.t0, args.prior_sd, rng)
                bound.append(b)
                held_ok.append(e <= b)
            f = lambda v: f"{np.mean(v):.3f} [{np.percentile(v, 90):.3f}]"
            print(f"{name:12} {t.k:>2} {len(HG):>4} {n:>4}  {f(mle):>17}  {f(shr):>17}  {np.mean(bound):12.3f} {np.mean(held_ok):13.0%}  {own:.3f}")


if __name__ == "__main__":
    main()
