#!/usr/bin/env python3
"""Accuracy of --permute N, with and without PriDe's prior, from one results file.

A results file decided with `--debias pride --permute N` (or `--permute N`, `--permute cyclic`)
holds, for every row, the log-probabilities of each cyclic shift it was decided under (shift 0
in "options", the others in "debias.permutations") and, under PriDe, the letter prior. Since
gojev's decoding is deterministic per prompt (a prompt's logits do not depend on what was
decoded with it), the rows' readouts under any subset of those shifts are what a run with
fewer shifts would read. This script recomputes, for every M that divides the shifts
available evenly (the shifts of --permute M, debias.Shifts: floor(j*k/M)), the choice of
  permute-M        mean over the M shifts of each option's log-probability (debias.AverageShifts)
  pride+permute-M  the same after dividing the prior out of each shift (debias.ApplyPrior)
and prints the accuracy of each over the labelled rows, with the mean decodes per row.

  python3 measurements/permute-curve.py out/pride-permute4.jsonl [--json]
"""
import argparse
import json
import math
import sys


def log_softmax(x):
    m = max(x)
    lse = m + math.log(sum(math.exp(v - m) for v in x))
    return [v - lse for v in x]


def shifts(k, n):
    if n <= 0 or n > k:
        n = k
    return [j * k // n for j in range(n)]


def choose(perms, k, prior):
    """perms: {shift: log-probabilities by position}; returns the index of the chosen option."""
    mean = [0.0] * k
    for s, lp in perms.items():
        if prior is not None:
            lp = log_softmax([v - math.log(p) for v, p in zip(lp, prior)])
        for i, v in enumerate(lp):
            mean[(i + s) % k] += v / len(perms)
    return max(range(k), key=lambda i: (mean[i], -i))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    rows = []
    with open(args.results) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if "error" in r or not r.get("label") or "options" not in r:
                continue
            k = len(r["options"])
            perms = {0: log_softmax([o["logprob"] for o in r["options"]])}
            db = r.get("debias") or {}
            for p in db.get("permutations") or []:
                perms[p["shift"]] = p["logprobs"]
            ids = [o["id"] for o in r["options"]]
            rows.append((k, perms, db.get("prior"), ids.index(r["label"]), bool(db.get("prior_sample"))))
    if not rows:
        sys.exit("permute-curve: no labelled direct-contract rows in " + args.results)
    have = min(len(p) for _, p, _, _, sample in rows if not sample) if any(not s for *_, s in rows) else 0
    out = []
    for m in range(1, 17):
        usable = [r for r in rows if set(shifts(r[0], m)) <= set(r[1])]
        if len(usable) < len(rows) or m > have:
            continue
        for with_prior in (False, True):
            if with_prior and any(r[2] is None for r in usable):
                continue
            right = sum(choose({s: r[1][s] for s in shifts(r[0], m)}, r[0], r[2] if with_prior else None) == r[3] for r in usable)
            name = ("pride+" if with_prior else "") + ("permute-%d" % m if m > 1 else "one decode")
            out.append({"scoring": name, "permutations": m, "prior": with_prior, "rows": len(usable),
                        "correct": right, "accuracy": right / len(usable)})
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return
    print("%-22s %12s %6s %9s" % ("scoring", "decodes/row", "rows", "accuracy"))
    for o in out:
        print("%-22s %12d %6d %8.1f%%" % (o["scoring"], o["permutations"], o["rows"], 100 * o["accuracy"]))


if __name__ == "__main__":
    main()
