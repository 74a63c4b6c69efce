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

and the map fitted on every fitting task, scored on the held-out tasks. The map is chosen leave
one task out (the lower mean ECE over the fitting tasks, each scored by the map fitted without
it); it ships, fitted on every fitting task, if it lowers ECE on every held-out task (kept out
of every fitting: issue 48's rule). What it does to each fitting task left out is printed
beside it. --profile FILE merges the shipped "noul" scoring into that profile (the shipped
direct-options-v1 profile, which the defaults load) and says so in its note.

  python3 measurements/noul-pool.py out/noul/sarcasm-out.jsonl=sarcasm ... out/noul/pubmedqa-out.jsonl=pubmedqa:held \
      out/typed/noul-out.jsonl=banking77:held   # make typed's Banking77 yes/no questions
"""
import argparse
import json
import math
import sys

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
    print(f"{'task':12} {'rows':>4} {'yes':>5} {'AUROC':>6} {'ECE':>6}   first spelling only: {'AUROC':>6} {'ECE':>6}   own T (its labels) → ECE")
    for t in tasks:
        mark = " (held out)" if t["held"] else ""
        own = fit_t([t])
        print(f"{t['name']:12} {len(t['y']):4d} {t['y'].mean():5.2f} {auroc(t['p'], t['y']):6.3f} {ece(t['p'], t['y']):6.3f}   {'':20} {auroc(t['p1'], t['y']):6.3f} {ece(t['p1'], t['y']):6.3f}"
              f"   {own:6.2f} → {ece(sig(logit(t['p']) / own), t['y']):.3f}{mark}")
    fitting = [t for t in tasks if not t["held"]]
    print("\nleave one task out (fitted on the other fitting tasks):")
    print(f"{'task':12} {'T':>6} {'ECE raw → T':>14} {'platt a, b':>14} {'ECE → platt':>12}")
    ok_t = ok_p = True
    loto = {"raw": [], "t": [], "p": []}
    for t in fitting:
        others = [o for o in fitting if o is not t]
        T = fit_t(others)
        a, b = fit_platt(others)
        raw, et, ep = ece(t["p"], t["y"]), ece(sig(logit(t["p"]) / T), t["y"]), ece(sig(a * logit(t["p"]) + b), t["y"])
        ok_t, ok_p = ok_t and et < raw, ok_p and ep < raw
        loto["raw"].append(raw), loto["t"].append(et), loto["p"].append(ep)
        print(f"{t['name']:12} {T:6.3f} {raw:6.3f} → {et:5.3f} {a:6.2f},{b:6.2f} {raw:6.3f} → {ep:5.3f}")
    T = fit_t(fitting)
    a, b = fit_platt(fitting)
    print(f"\nfitted on every fitting task: T {T:.3f}; platt a {a:.3f} b {b:.3f}")
    held = []
    for t in tasks:
        if not t["held"]:
            continue
        raw, et, ep = ece(t["p"], t["y"]), ece(sig(logit(t["p"]) / T), t["y"]), ece(sig(a * logit(t["p"]) + b), t["y"])
        held.append({"name": t["name"], "raw": raw, "temperature": et, "platt": ep})
        print(f"{t['name']:12} (held out) ECE {raw:.3f} → T {et:.3f}, platt {ep:.3f}")
    print(f"\nlowers ECE on every fitting task left out: temperature {ok_t}, platt {ok_p}")
    print(f"mean ECE over the fitting tasks left out: raw {np.mean(loto['raw']):.3f}, temperature {np.mean(loto['t']):.3f}, platt {np.mean(loto['p']):.3f}")
    chosen = "temperature" if np.mean(loto["t"]) <= np.mean(loto["p"]) else "platt"
    worse = [h["name"] for h in held if h[chosen] >= h["raw"]]
    ships = bool(held) and not worse
    print(f"chosen leave one task out: {chosen}; it {'ships' if ships else 'does not ship'}: "
          f"ECE lowered on every held-out task: {ships}" + (f" (not on {', '.join(worse)})" if worse else ""))
    if args.profile and ships:
        write_profile(args.profile, chosen, T, a, b, fitting)
    elif args.profile:
        print("no profile written", file=sys.stderr)


def write_profile(path, method, T, a, b, fitting):
    """Merge the "noul" scoring into the profile at path: the map on P(yes), its fitting rows'
    points (the calibrated probability of the answer given, and whether it is right:
    calibrate.Sample.Point), and a sentence in the note."""
    prof = json.load(open(path))
    if method == "temperature":
        m = {"method": "temperature", "binary": True, "t": T, "rows": int(sum(len(t["y"]) for t in fitting))}
        z = lambda p: logit(p) / T
        what = "T %.4f" % T
    else:
        m = {"method": "platt", "binary": True, "a": a, "b": b, "rows": int(sum(len(t["y"]) for t in fitting))}
        z = lambda p: a * logit(p) + b
        what = "a %.3f, b %.3f" % (a, b)
    points = []  # calibrate.Sample.Point: the answer is the uncalibrated P(yes)'s side of 0.5
    for t in fitting:
        for raw, p, y in zip(t["p"], sig(z(t["p"])), t["y"]):
            yes = raw >= 0.5
            points.append([float(p if yes else 1 - p), 1 if yes == bool(y) else 0])
    points.sort(key=lambda x: -x[0])
    prof["scorings"]["noul"] = {
        "method": method, "reason": "chosen leave one task out; lowers ECE on every held-out yes/no task (measurements/noul-pool.py)",
        "before": {}, "cross_validated": {}, "folds": 0,
        "fitted": {"method": method, "pooled": m}, "points": points}
    sentence = (" Noul answers: %s scaling of P(yes), %s, fitted on %s; chosen leave one task out and shipped because it lowered ECE on "
                "every yes/no task kept out of every fitting (made by measurements/noul-pool.py)." %
                (method, what, ", ".join("%s (%d rows)" % (t["name"], len(t["y"])) for t in fitting)))
    note = prof.get("note", "").split(" Noul answers:")[0]
    prof["note"] = note.replace("Rows of other option counts, and other scorings, stay uncalibrated.",
                                "Rows of other option counts, and other scorings but noul, stay uncalibrated.") + sentence
    with open(path, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    print(f"wrote the noul scoring ({method}, {what}) into {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
