#!/usr/bin/env python3
"""The default calibration's research and fitting (issue 39), from results files alone: no decoding.

Each argument is FILE=TASK, a jev decide --debias pride results file of labelled rows (its
estimation-sample rows, decided under all k cyclic permutations, are left out of every figure,
as jev calibrate leaves them out). For each task it prints accuracy (raw, PriDe), the ECE of
PriDe's uncalibrated probabilities, the task's own temperature (fitted with its labels: the
ceiling), and the label-free alternatives researched:

  consensus T    a temperature fitted without labels from PriDe's own sample: each sample row's
                 k permutations, debiased, against the choice of their cyclic average
  agreement T    the temperature at which the mean top probability equals the sample's
                 permutation agreement with that choice (an accuracy estimate without labels)
  batch cal.     Batch Calibration (Zhou et al., ICLR 2024): each row's probabilities divided by
                 the file's mean probability per letter, renormalised

then a one-statistic stand-in for Thermometer (Shen et al., ICML 2024): each task's temperature
predicted from one label-free statistic of PriDe's own sample (every permutation of every sample
row, debiased: the mean top probability, the mean normalised entropy, the mean margin between
the top two log-probabilities, the permutations' agreement with their average, log k), by a
line through the log temperatures of the other tasks, and the ECE it gives the task held out;
then the leave-one-task-out table: for each task, one temperature fitted on the other tasks
(their negative log-likelihoods summed, each task weighted alike), and the ECE it gives the
held-out task; per option-count band and over every band. A band ships only if its temperature
lowers ECE on every task held out. With --profile OUT it writes the shipped profile
(calibrate/shipped/): one temperature fitted on every task, for the option counts of the bands
that ship, tied to the model's sha256, the chat template's sha256 and the prompt version.

  python3 measurements/calibration-pool.py out/tasks/siqa-pride.jsonl=siqa ... [--profile calibrate/shipped/NAME.json --model-sha256 S --model-file F --model-name N --template-sha256 S]
"""
import argparse
import json
import math
import sys

import numpy as np

BINS = 10
TS = np.exp(np.linspace(math.log(0.01), math.log(100), 2001))


def lsm(x):
    x = np.asarray(x, float)
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def softmax(x, t=1.0):
    return np.exp(lsm(np.asarray(x) / t))


def ece(conf, right):
    conf, right = np.asarray(conf), np.asarray(right, float)
    b = np.minimum((conf * BINS).astype(int), BINS - 1)
    return sum((b == i).sum() / len(conf) * abs(right[b == i].mean() - conf[b == i].mean()) for i in range(BINS) if (b == i).any())


def nll(X, G, t):
    z = lsm(X / t)
    return -z[np.arange(len(G)), G].mean()


def by_option(perm, s, k):
    out = np.empty(k)
    for i in range(k):
        out[(i + s) % k] = perm[i]
    return out


def binom_cdf(k, n, p):
    if p <= 0:
        return 1.0
    if p >= 1:
        return 1.0 if k >= n else 0.0
    return sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)) for i in range(k + 1))


def binomial_upper(k, n, delta):
    """calibrate.BinomialUpper: the Clopper-Pearson upper bound, by bisection."""
    if n == 0 or k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if binom_cdf(k, n, mid) >= delta:
            lo = mid
        else:
            hi = mid
    return lo


def sgr_ok(points, max_error, delta):
    """Whether calibrate.SGR finds a threshold (Geifman & El-Yaniv 2017), as the Go code searches."""
    ps = sorted(points, key=lambda p: -p[0])
    m = len(ps)
    steps = max(1, math.ceil(math.log2(m)))
    zmin, zmax, found = 0, m - 1, False
    for _ in range(steps):
        z = (zmin + zmax + 1) // 2
        theta = ps[m - 1 - z][0]
        covered = [p for p in ps if p[0] >= theta]
        wrong = sum(1 for p in covered if not p[1])
        if binomial_upper(wrong, len(covered), delta / steps) < max_error:
            found, zmax = True, z
        else:
            zmin = z
    return found


def smallest_budget(points, delta):
    """calibrate.SmallestBudget, in thousandths."""
    if not sgr_ok(points, 0.999, delta):
        return 1.0
    lo, hi = 0, 999
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if sgr_ok(points, mid / 1000, delta):
            hi = mid
        else:
            lo = mid
    return hi / 1000


def load(path):
    """Sample rows (k×k log-probabilities by position, gold) and the other rows (raw log-probabilities, gold)."""
    sample, rows = [], []
    for line in open(path):
        r = json.loads(line)
        if "options" not in r or r.get("label") is None:
            continue
        ids = [o["id"] for o in r["options"]]
        if r["label"] not in ids:
            continue
        g, k = ids.index(r["label"]), len(ids)
        raw = np.array([o["logprob"] for o in r["options"]])
        d = r.get("debias") or {}
        if d.get("prior_sample"):
            perms = [None] * k
            perms[0] = raw
            for p in d["permutations"]:
                perms[p["shift"]] = np.array(p["logprobs"])
            sample.append((np.array(perms), g))
        else:
            rows.append((raw, g))
    return sample, rows


class Task:
    def __init__(self, name, path):
        self.name = name
        sample, rows = load(path)
        self.k = len(rows[0][0])
        prior = np.mean([softmax(p.mean(0)) for p, _ in sample], 0)
        lp = np.log(prior / prior.sum())
        self.lp = lp
        self.raw = np.array([lsm(r) for r, _ in rows])
        self.X = np.array([lsm(r - lp) for r, _ in rows])  # PriDe's scores
        self.G = np.array([g for _, g in rows])
        self.right = self.X.argmax(1) == self.G
        # label-free: the sample's permutations against their cyclic average's choice
        xs, ys, agree = [], [], []
        for perms, _ in sample:
            c = int(lsm(np.mean([by_option(perms[s], s, self.k) for s in range(self.k)], 0)).argmax())
            for s in range(self.k):
                d = lsm(by_option(perms[s] - lp, s, self.k))
                xs.append(d), ys.append(c), agree.append(int(d.argmax()) == c)
        self.xs, self.ys, self.agree = np.array(xs), np.array(ys), float(np.mean(agree))

    def ece_at(self, t):
        return ece(softmax(self.X, t).max(1), self.right)


def sample_stats(t):
    """Label-free statistics of a task's PriDe sample (t.xs: each permutation of each sample row, debiased)."""
    p, s = np.exp(t.xs), np.sort(t.xs, 1)[:, ::-1]
    ent = -(p * t.xs).sum(1) / math.log(t.k)
    return {"top": float(p.max(1).mean()), "entropy": float(ent.mean()), "margin": float((s[:, 0] - s[:, 1]).mean()),
            "agreement": t.agree, "log k": math.log(t.k)}


def fit_t(tasks):
    return float(TS[np.argmin([sum(nll(t.X, t.G, T) for t in tasks) for T in TS])])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="FILE=TASK")
    ap.add_argument("--bands", default="2-4,5-16")
    ap.add_argument("--profile")
    ap.add_argument("--model-sha256"), ap.add_argument("--model-file"), ap.add_argument("--model-name")
    ap.add_argument("--template-sha256")
    a = ap.parse_args()
    tasks = [Task(f.split("=", 1)[1], f.split("=", 1)[0]) for f in a.files]

    print("| task | k | rows | accuracy raw → PriDe | ECE, PriDe uncalibrated | own T (labels) → ECE | consensus T → ECE | agreement T → ECE | Batch Calibration: accuracy, ECE |")
    print("|---|---|---|---|---|---|---|---|---|")
    own = {t.name: fit_t([t]) for t in tasks}
    for t in tasks:
        cons = float(TS[np.argmin([nll(t.xs, t.ys, T) for T in TS])])
        agr = float(TS[np.argmin([abs(softmax(t.X, T).max(1).mean() - t.agree) for T in TS])])
        p = np.exp(t.raw)
        q = p / p.mean(0)
        q /= q.sum(1, keepdims=True)
        bc_right = q.argmax(1) == t.G
        print("| %s | %d | %d | %.1f → %.1f %% | %.3f | %.3f → %.3f | %.3f → %.3f | %.3f → %.3f | %.1f %%, %.3f |" % (
            t.name, t.k, len(t.G), 100 * (t.raw.argmax(1) == t.G).mean(), 100 * t.right.mean(), t.ece_at(1),
            own[t.name], t.ece_at(own[t.name]), cons, t.ece_at(cons), agr, t.ece_at(agr), 100 * bc_right.mean(), ece(q.max(1), bc_right)))

    stats = {t.name: sample_stats(t) for t in tasks}
    names = list(stats[tasks[0].name])
    print("\n| task | own T | " + " | ".join("sample's %s" % n for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for t in tasks:
        print("| %s | %.3f | " % (t.name, own[t.name]) + " | ".join("%.3f" % stats[t.name][n] for n in names) + " |")
    print("\n| temperature from the sample's | " + " | ".join(t.name for t in tasks) + " | tasks at ECE ≤ 0.10 |")
    print("|---|" + "---|" * (len(tasks) + 1))
    for n in names:
        cells, ok = [], 0
        for t in tasks:
            rest = [u for u in tasks if u is not t]
            b, c = np.polyfit([stats[u.name][n] for u in rest], [math.log(own[u.name]) for u in rest], 1)
            T = math.exp(c + b * stats[t.name][n])
            e = t.ece_at(T)
            ok += e <= 0.10
            cells.append("T %.2f → %.3f" % (T, e))
        print("| %s | %s | %d of %d |" % (n, " | ".join(cells), ok, len(tasks)))

    bands = [tuple(int(x) for x in b.split("-")) for b in a.bands.split(",")]
    groups = [("every band (2-16)", (2, 16))] + [("band %d-%d" % b, b) for b in bands]
    print("\n| fitted on the other tasks of | held-out task | T | ECE uncalibrated → calibrated |")
    print("|---|---|---|---|")
    ships = {}
    for label, (lo, hi) in groups:
        inb = [t for t in tasks if lo <= t.k <= hi]
        ok = len(inb) >= 2
        for t in inb if len(inb) >= 2 else []:
            T = fit_t([u for u in inb if u is not t])
            before, after = t.ece_at(1), t.ece_at(T)
            ok = ok and after < before
            print("| %s | %s | %.3f | %.3f → %.3f |" % (label, t.name, T, before, after))
        ships[(lo, hi)] = (ok, inb)
        print("| %s | %s | | %s |" % (label, "(all: T %.3f)" % fit_t(inb) if inb else "", "ships" if ok else ("fewer than two tasks" if len(inb) < 2 else "does not ship")))

    if not a.profile:
        return
    ok, pool = ships[(2, 16)]
    chosen = (2, 16) if ok else None
    if not chosen:
        shipped = [(b, ships[b][1]) for b in bands if ships[b][0]]
    else:
        shipped = [((2, 16), pool)]
    if not shipped:
        print("\nno band ships: no profile written", file=sys.stderr)
        return
    by_options, points, lines = {}, [], []
    for (lo, hi), inb in shipped:
        T = fit_t(inb)
        for k in range(lo, hi + 1):
            by_options[str(k)] = {"method": "temperature", "t": T, "rows": int(sum(len(t.G) for t in inb))}
        for t in inb:
            for c, r in zip(softmax(t.X, T).max(1), t.right):
                points.append([float(c), 1 if r else 0])
        lines.append("options %d-%d: T %.4f fitted on %s" % (lo, hi, T, ", ".join("%s (%d rows)" % (t.name, len(t.G)) for t in inb)))
    points.sort(key=lambda p: -p[0])
    least = smallest_budget(points, 0.1)
    tops, ents, letters = [], [], [0] * 16
    for _, inb in shipped:
        for t in inb:
            for x in np.exp(t.X):
                c = int(x.argmax())
                tops.append(float(x[c]))
                ents.append(float(-(x * np.log(np.maximum(x, 1e-300))).sum() / math.log(len(x))))
                letters[c] += 1
    while letters and letters[-1] == 0:
        letters.pop()
    ks = {t.k for _, inb in shipped for t in inb}
    stats = {"rows": len(tops), "k": ks.pop() if len(ks) == 1 else -1, "top_mean": float(np.mean(tops)), "top_sd": float(np.std(tops)),
             "entropy_mean": float(np.mean(ents)), "entropy_sd": float(np.std(ents)), "letters": letters}
    prof = {
        "format": "gojev-calibration-v1", "prompt_version": "direct-options-v1",
        "model": {"file": a.model_file, "name": a.model_name, "sha256": a.model_sha256},
        "chat_template_sha256": a.template_sha256,
        "note": "gojev's shipped default calibration (issue 39; docs/calibration.md): temperature scaling of PriDe's scores, one temperature "
                "fitted on a pool of public labelled tasks, chosen by leave-one-task-out validation; " + "; ".join(lines) +
                ". Rows of other option counts, and other scorings, stay uncalibrated. Its fitting rows certify --max-error %.3f or more at confidence 0.9 (SGR), pooled across tasks: "
                "a budget holds for a file only where its rows are drawn like them (the shift check). Made by measurements/calibration-pool.py." % least,
        "scorings": {"pride": {
            "method": "temperature", "reason": "leave-one-task-out: lowers ECE on every task held out (measurements/calibration-pool.py)",
            "before": {}, "cross_validated": {}, "folds": 0,
            "fitted": {"method": "temperature", "pooled": {"method": "temperature", "t": 1}, "by_options": by_options, "only_by_options": True},
            "points": points, "fitting_stats": stats}},
        "sources": [], "references": [
            "Guo et al., On Calibration of Modern Neural Networks, ICML 2017 (temperature scaling, ECE)",
            "Geifman & El-Yaniv, Selective Classification for Deep Neural Networks, NeurIPS 2017 (SGR)"]}
    try:  # keep what other scripts merged in (measurements/noul-pool.py's "noul" scoring and its sentence)
        old = json.load(open(a.profile))
    except (OSError, ValueError):
        old = None
    if old and old.get("model", {}).get("sha256") == a.model_sha256:
        for name, sc in old.get("scorings", {}).items():
            if name != "pride":
                prof["scorings"][name] = sc
        if " Noul answers:" in old.get("note", ""):
            prof["note"] = prof["note"].replace("other scorings, stay", "other scorings but noul, stay") + " Noul answers:" + old["note"].split(" Noul answers:", 1)[1]
        if " Shortlist rows:" in old.get("note", ""):  # measurements/shortlist.py --ship's
            prof["note"] = prof["note"].replace("other scorings, stay", "other scorings but the shortlist's, stay") + " Shortlist rows:" + old["note"].split(" Shortlist rows:", 1)[1]
    with open(a.profile, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    print("\nwrote %s: %s; certifies --max-error %.3f or more at confidence 0.9" % (a.profile, "; ".join(lines), least), file=sys.stderr)


if __name__ == "__main__":
    main()
