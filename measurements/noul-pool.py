#!/usr/bin/env python3
"""The noul calibration (issue 48), from results files alone: no decoding.

Each argument is FILE=TASK[:held], a jev decide results file of typed rows with one labelled
noul question each (scripts/task-rows.py sarcasm|answerable|...): its records keep each noul
answer's raw readout (yes_no: p_yes and every yes/no spelling's log-probability). TASK:held
marks a task kept out of every fitting, reported as held out.

For each task it prints the base rate, AUROC and ECE of P(yes), pooled over every single-token
spelling of yes and no (as noul-v1 reads it) and read from the first spelling of each alone;
then, leave one task out over the fitting tasks, the map fitted on the others (their negative
log-likelihoods summed, each task weighted alike) and the ECE it gives the task left out:

  temperature   sigma(logit(p) / T)
  platt         sigma(a logit(p) + b)

and the map fitted on every fitting task, scored on the held-out tasks. A map ships only if it
lowered ECE on every task it was scored on without having been fitted on it. --profile OUT
writes the shipped profile's "noul" scoring (merged into an existing profile file).

  python3 measurements/noul-pool.py out/noul/sarcasm-out.jsonl=sarcasm ... out/noul/pubmedqa-out.jsonl=pubmedqa:held
"""
import argparse
import json
import math

import numpy as np

BINS = 10


def ece(p, y):
    p, y = np.asarray(p), np.asarray(y, float)
    b = np.minimum((p * BINS).astype(int), BINS - 1)
    return float(sum((b == i).sum() / len(p) * abs(y[b == i].mean() - p[b == i].mean()) for i in range(BINS) if (b == i).any()))


def auroc(p, y):
    p, y = np.asarray(p), np.asarray(y, bool)
    pos, neg = p[y], p[~y]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    gt = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(gt / (len(pos) * len(neg)))


def logit(p):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.log(p / (1 - p))


def sig(z):
    return 1 / (1 + np.exp(-z))


def load(path):
    pooled, first, y = [], [], []
    for line in open(path):
        r = json.loads(line)
        for name, a in (r.get("answers") or {}).items():
            yn, label = a.get("yes_no"), a.get("label")
            if a.get("type") != "noul" or yn is None or label is None:
                continue
            pooled.append(yn["p_yes"])
            ly, ln = yn["yes"][0]["logprob"], yn["no"][0]["logprob"]
            first.append(1 / (1 + math.exp(ln - ly)))
            y.append(bool(label))
    return np.array(pooled), np.array(first), np.array(y)


def nll(z, y):
    p = np.clip(sig(z), 1e-12, 1 - 1e-12)
    return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())


TS = np.exp(np.linspace(math.log(0.05), math.log(20), 801))


def fit_t(tasks):
    return float(TS[np.argmin([sum(nll(logit(t["p"]) / T, t["y"]) for t in tasks) for T in TS])])


def fit_platt(tasks):
    best = (math.inf, 1.0, 0.0)
    for a in np.linspace(0.05, 3, 60):
        for b in np.linspace(-3, 3, 121):
            v = sum(nll(a * logit(t["p"]) + b, t["y"]) for t in tasks)
            if v < best[0]:
                best = (v, a, b)
    return best[1], best[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="FILE=TASK or FILE=TASK:held")
    ap.add_argument("--profile", help="write (merge) the noul scoring into this shipped profile file, when it ships")
    args = ap.parse_args()
    tasks = []
    for spec in args.files:
        path, name = spec.split("=")
        held = name.endswith(":held")
        name = name.removesuffix(":held")
        p, p1, y = load(path)
        tasks.append({"name": name, "held": held, "p": p, "p1": p1, "y": y.astype(float)})
    print(f"{'task':12} {'rows':>4} {'yes':>5} {'AUROC':>6} {'ECE':>6}   first spelling only: {'AUROC':>6} {'ECE':>6}")
    for t in tasks:
        mark = " (held out)" if t["held"] else ""
        print(f"{t['name']:12} {len(t['y']):4d} {t['y'].mean():5.2f} {auroc(t['p'], t['y']):6.3f} {ece(t['p'], t['y']):6.3f}   {'':20} {auroc(t['p1'], t['y']):6.3f} {ece(t['p1'], t['y']):6.3f}{mark}")
    fitting = [t for t in tasks if not t["held"]]
    print("\nleave one task out (fitted on the other fitting tasks):")
    print(f"{'task':12} {'T':>6} {'ECE raw → T':>14} {'platt a, b':>14} {'ECE → platt':>12}")
    ok_t = ok_p = True
    for t in fitting:
        others = [o for o in fitting if o is not t]
        T = fit_t(others)
        a, b = fit_platt(others)
        raw, et, ep = ece(t["p"], t["y"]), ece(sig(logit(t["p"]) / T), t["y"]), ece(sig(a * logit(t["p"]) + b), t["y"])
        ok_t, ok_p = ok_t and et < raw, ok_p and ep < raw
        print(f"{t['name']:12} {T:6.3f} {raw:6.3f} → {et:5.3f} {a:6.2f},{b:6.2f} {raw:6.3f} → {ep:5.3f}")
    T = fit_t(fitting)
    a, b = fit_platt(fitting)
    print(f"\nfitted on every fitting task: T {T:.3f}; platt a {a:.3f} b {b:.3f}")
    for t in tasks:
        if not t["held"]:
            continue
        raw, et, ep = ece(t["p"], t["y"]), ece(sig(logit(t["p"]) / T), t["y"]), ece(sig(a * logit(t["p"]) + b), t["y"])
        ok_t, ok_p = ok_t and et < raw, ok_p and ep < raw
        print(f"{t['name']:12} (held out) ECE {raw:.3f} → T {et:.3f}, platt {ep:.3f}")
    print(f"\ntemperature {'ships' if ok_t else 'does not ship'}: lowers ECE on every task scored without it: {ok_t}")
    print(f"platt {'ships' if ok_p else 'does not ship'}: {ok_p}")


if __name__ == "__main__":
    main()
