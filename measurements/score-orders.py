#!/usr/bin/env python3
"""A score question's rubric read in both orders: how each way of reading and combining the
two level distributions ranks the items, from results files already decoded (no model).

  score-orders.py LISTED.jsonl REVERSED.jsonl [--prior PRIOR.json] [--content-free CF.jsonl] [--json]

LISTED and REVERSED are `jev decide --debias none` results of the same items as rows of the
contract (scripts/typed-rows.py KIND --as-rows, and --reverse [--same-question]): options "0" …
"n-1" are the rubric's levels, lowest first in LISTED and highest first in REVERSED (option i of
REVERSED is level n-1-i; its label n-1-gold). Each record's options carry their raw
log-probabilities by position (letter). A PriDe prior file (debias/shipped/*.json, or one of jev
decide --prior) gives the letter prior for n options.

For each reading it prints Spearman's rho between the expected level (sum of i p_i) and the
gold level, the MAE of the expected level, the share of items whose most probable level is the
gold one, and the share of the most frequent most-probable level (a position bias piles items
on one level). Readings:

  listed, reversed          one order, raw
  both, geometric           the two orders' log-probabilities by level averaged, renormalised
                            (the antisymmetric part of the letter bias cancels: a letter's
                            bias in one order is its mirror's in the other)
  both, arithmetic          the two orders' probabilities by level averaged (yzma's reverse read)
  listed/reversed, pride    one order, PriDe's letter prior divided out
  both, pride, geometric    each order's prior divided out, then averaged
  both, pride, arithmetic
  both, content-free divided   gojev's default: the geometric reading, less the rubric's own
                            combined reading without content (the state "N/A", "" and
                            "[MASK]", contextual calibration's inputs), the part of the bias
                            that both orders share
"""
import argparse
import json
import math


def load(path):
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if "options" not in r or "label" not in r:
                continue
            lp = [o["logprob"] for o in sorted(r["options"], key=lambda o: int(o["id"]))]
            out[r["id"]] = (lp, int(r["label"]))
    return out


def softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    s = sum(e)
    return [v / s for v in e]


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va and vb else 0.0


def figures(dists, golds):
    exp = [sum(i * p for i, p in enumerate(d)) for d in dists]
    top = [max(range(len(d)), key=lambda i: d[i]) for d in dists]
    counts = {}
    for t in top:
        counts[t] = counts.get(t, 0) + 1
    n = len(dists)
    return {"rho": spearman(exp, golds), "mae": sum(abs(e - g) for e, g in zip(exp, golds)) / n,
            "exact": sum(t == g for t, g in zip(top, golds)) / n,
            "top_level": max(counts, key=counts.get), "top_share": max(counts.values()) / n}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("listed")
    ap.add_argument("reversed")
    ap.add_argument("--prior", help="a PriDe prior file holding the letter prior for the rubric's level count")
    ap.add_argument("--content-free", help="`jev decide --debias none` results of the rubric read without content: rows cf<EVIDENCE>-listed and cf<EVIDENCE>-rev, the state each of \"N/A\", \"\" and \"[MASK]\" (gojev's default reading divides their combined levels out)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    listed, rev = load(args.listed), load(args.reversed)
    ids = [i for i in listed if i in rev]
    n = len(listed[ids[0]][0])
    prior = None
    if args.prior:
        p = json.load(open(args.prior))
        byk = p.get("priors") or p.get("by_options")
        prior = byk[str(n)]["prior"]
    golds = [listed[i][1] for i in ids]
    for i in ids:
        assert rev[i][1] == n - 1 - listed[i][1], "REVERSED's label is n-1-gold"

    def by_level(lp, reversed_):
        return lp[::-1] if reversed_ else lp

    def debiased(lp):
        return [x - math.log(q) for x, q in zip(lp, prior)]

    def read(name, fn):
        return name, [fn(listed[i][0], rev[i][0]) for i in ids]

    readings = [
        read("listed", lambda a, b: softmax(a)),
        read("reversed", lambda a, b: softmax(by_level(b, True))),
        read("both, geometric", lambda a, b: softmax([(x + y) / 2 for x, y in zip(a, by_level(b, True))])),
        read("both, arithmetic", lambda a, b: [(x + y) / 2 for x, y in zip(softmax(a), softmax(by_level(b, True)))]),
    ]
    if prior:
        readings += [
            read("listed, pride", lambda a, b: softmax(debiased(a))),
            read("reversed, pride", lambda a, b: softmax(by_level(debiased(b), True))),
            read("both, pride, geometric", lambda a, b: softmax([(x + y) / 2 for x, y in zip(debiased(a), by_level(debiased(b), True))])),
            read("both, pride, arithmetic", lambda a, b: [(x + y) / 2 for x, y in zip(softmax(debiased(a)), softmax(by_level(debiased(b), True)))]),
        ]
    if args.content_free:
        cf = {}
        for line in open(args.content_free):
            r = json.loads(line)
            lp = [o["logprob"] for o in sorted(r["options"], key=lambda o: int(o["id"]))]
            ev, order = r["id"].rsplit("-", 1)
            cf.setdefault(ev, {})[order] = lp
        levels = [0.0] * n
        for reads in cf.values():
            m = [(x + y) / 2 for x, y in zip(reads["listed"], by_level(reads["rev"], True))]
            z = math.log(sum(math.exp(v) for v in m))
            levels = [acc + (v - z) / len(cf) for acc, v in zip(levels, m)]
        readings.append(read("both, content-free divided (default)",
                             lambda a, b: softmax([(x + y) / 2 - c for x, y, c in zip(a, by_level(b, True), levels)])))
    out = {name: figures(d, golds) for name, d in readings}
    if args.json:
        print(json.dumps({"items": len(ids), "levels": n, "readings": out}, indent=2))
        return
    print(f"{len(ids)} items, {n} levels")
    print(f"{'reading':38} {'rho':>6} {'MAE':>6} {'exact':>6}  most frequent level")
    for name, f in out.items():
        print(f"{name:38} {f['rho']:6.3f} {f['mae']:6.3f} {f['exact']:6.1%}  {f['top_level']} on {f['top_share']:.1%}")


if __name__ == "__main__":
    main()
