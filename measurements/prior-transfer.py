#!/usr/bin/env python3
"""Does a PriDe letter prior transfer across tasks? Accuracy of each results file's rows under
every prior of the same option count, from the files alone (no decoding).

Each FILE is a labelled results file of jev decide --debias pride (or --permute cyclic, or
jev bench --scorings ... --results). Its rows hold the raw log-probabilities of every option
(shift 0), and the rows decided under all k cyclic shifts (PriDe's estimation sample, or every
row of a cyclic file) hold the others. From them this script takes, per file and option count k:

  the file's own prior     the prior its PriDe records used (debias.prior), else, for a cyclic
                           file, PriDe's estimate from all its rows (debias_utils.simple: per row
                           the softmax of each position's mean log-probability over the k shifts,
                           averaged over the rows; debias.EstimateRowPrior, AveragePriors)
  a split-half distance    the total-variation distance between the estimates from the odd and
                           the even rows that have all k shifts: how far two samples of one task
                           put its prior, the noise any other distance is read against

and then, for every target file and every prior of its k (each file's own, and --prior FILEs),
the accuracy of the target's rows decided with one decode (not its estimation rows) when scored
log p(letter) − log prior(letter), with the TV distance between that prior and the target's own.

  python3 measurements/prior-transfer.py out/snips-pride.jsonl=snips out/b77k7-pride.jsonl=banking77 [--prior p.json] [--json]
"""
import argparse
import json
import math
import sys


def log_softmax(x):
    m = max(x)
    lse = m + math.log(sum(math.exp(v - m) for v in x))
    return [v - lse for v in x]


def softmax(x):
    return [math.exp(v) for v in log_softmax(x)]


def row_prior(perms, k):
    """PriDe's row prior: softmax over positions of the mean log-probability over the k shifts."""
    mean = [sum(perms[s][i] for s in range(k)) / k for i in range(k)]
    return softmax(mean)


def average(priors):
    k = len(priors[0])
    out = [sum(p[i] for p in priors) for i in range(k)]
    t = sum(out)
    return [v / t for v in out]


def tv(p, q):
    return 0.5 * sum(abs(a - b) for a, b in zip(p, q))


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if "error" in r or "options" not in r:
                continue
            k = len(r["options"])
            ids = [o["id"] for o in r["options"]]
            db = r.get("debias") or {}
            perms = {0: log_softmax([o["logprob"] for o in r["options"]])}
            for p in db.get("permutations") or []:
                perms[p["shift"]] = p["logprobs"]
            rows.append({
                "k": k,
                "label": ids.index(r["label"]) if r.get("label") in ids else None,
                "perms": perms,
                "sample": bool(db.get("prior_sample")),
                "prior": db.get("prior"),
                "method": db.get("method"),
            })
    return rows


def choose(logp, prior):
    s = [v - math.log(p) for v, p in zip(logp, prior)] if prior else logp
    return max(range(len(s)), key=lambda i: (s[i], -i))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="results files, each FILE or FILE=NAME")
    ap.add_argument("--prior", action="append", default=[], help="a prior file (jev decide --prior) to try too, PATH or PATH=NAME")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    files, priors = [], []  # priors: (name, k, prior)
    for spec in args.files:
        path, _, name = spec.partition("=")
        rows = load(path)
        if not rows:
            sys.exit("prior-transfer: no direct-contract decisions in " + path)
        name = name or path
        by_k = {}
        for r in rows:
            by_k.setdefault(r["k"], []).append(r)
        info = {"name": name, "by_k": {}}
        for k, rs in sorted(by_k.items()):
            full = [r for r in rs if len(r["perms"]) == k and k > 1]
            own = next((r["prior"] for r in rs if r["prior"] and not r["sample"]), None)
            estimated = average([row_prior(r["perms"], k) for r in full]) if full else None
            half = None
            if len(full) >= 4:
                a = average([row_prior(r["perms"], k) for r in full[0::2]])
                b = average([row_prior(r["perms"], k) for r in full[1::2]])
                half = tv(a, b)
            own = own or estimated
            info["by_k"][k] = {"rows": rs, "own": own, "full_rows": len(full), "split_half_tv": half}
            if own:
                priors.append((name, k, own))
        files.append(info)
    for spec in args.prior:
        path, _, name = spec.partition("=")
        with open(path) as f:
            p = json.load(f)
        for k, lp in p["priors"].items():
            priors.append((name or path, int(k), lp["prior"]))

    out = []
    for info in files:
        for k, d in sorted(info["by_k"].items()):
            target = [r for r in d["rows"] if not r["sample"] and r["label"] is not None]
            if not target:
                continue
            res = {"target": info["name"], "k": k, "rows": len(target), "estimation_rows": d["full_rows"],
                   "split_half_tv": d["split_half_tv"], "own_prior": d["own"], "scorings": []}
            right = sum(choose(r["perms"][0], None) == r["label"] for r in target)
            res["scorings"].append({"prior": "none (raw)", "correct": right, "accuracy": right / len(target), "tv_to_own": None})
            for name, pk, p in priors:
                if pk != k:
                    continue
                right = sum(choose(r["perms"][0], p) == r["label"] for r in target)
                res["scorings"].append({"prior": name + (" (own)" if name == info["name"] else ""), "correct": right,
                                        "accuracy": right / len(target), "tv_to_own": tv(p, d["own"]) if d["own"] else None,
                                        "values": p})
            out.append(res)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return
    for res in out:
        sh = "n/a" if res["split_half_tv"] is None else "%.3f" % res["split_half_tv"]
        print("%s, k=%d: %d rows decided with one decode; own prior from %d rows under all shifts (split-half TV %s)" % (
            res["target"], res["k"], res["rows"], res["estimation_rows"], sh))
        for s in res["scorings"]:
            t = "" if s["tv_to_own"] is None else "TV to own %.3f" % s["tv_to_own"]
            pv = "" if "values" not in s else "[" + " ".join("%.3f" % v for v in s["values"]) + "]"
            print("  %-28s %6.1f%% (%d/%d)  %-16s %s" % (s["prior"], 100 * s["accuracy"], s["correct"], res["rows"], t, pv))


if __name__ == "__main__":
    main()
