#!/usr/bin/env python3
"""Re-read knockout records (jev decide on rows of more than 16 options) under other rules for the
final choice, without decoding: how many rows each rule gets right, and the paired counts and
McNemar exact p of each rule against the final pass's own argmax.

  final    the final pass's argmax over the survivors (what gojev recorded before the
           least-squares rule; the last pass's "chosen" in every record)
  product  argmax over the survivors of log p_final + log p_group: both passes' evidence, each
           pass's log-probabilities normalised over its own options
  pooled   argmax of (log p_final + log p_group + c_g) / 2, with c_g the mean of
           (log p_final - log p_group) over group g's survivors: the two passes as two
           measurements of one option's log-weight under Luce's choice axiom: the
           least-squares rule of knockout.Combine, what gojev records now

Usage: measurements/knockout-rules.py results.jsonl [--skip N] [--rows N]
"""
import argparse, json, math

def lse(xs):
    m = max(xs)
    return m + math.log(sum(math.exp(x - m) for x in xs))

def mcnemar(a, b):
    n, k = a + b, min(a, b)
    return 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N records (a rule chosen on them is then tested on the rest)")
    ap.add_argument("--rows", type=int, default=0, help="only the first N records (after --skip)")
    a = ap.parse_args()
    recs = [json.loads(l) for l in open(a.results) if l.strip()]
    recs = [r for r in recs if r.get("knockout") and r.get("label")][a.skip:]
    if a.rows:
        recs = recs[: a.rows]
    right = {"final": [], "product": [], "pooled": []}
    for r in recs:
        passes = r["knockout"]["passes"]
        fin = passes[-1]
        z = lse(fin["logprobs"])
        f = {o: l - z for o, l in zip(fin["options"], fin["logprobs"])}
        g, grp = {}, {}
        for i, p in enumerate(passes[:-1]):
            z = lse(p["logprobs"])
            for o, l in zip(p["options"], p["logprobs"]):
                g[o], grp[o] = l - z, i
        c = {}
        for i in range(len(passes) - 1):
            d = [f[o] - g[o] for o in fin["options"] if grp[o] == i]
            c[i] = sum(d) / len(d) if d else 0.0
        rules = {
            "final": lambda o: f[o],
            "product": lambda o: f[o] + g[o],
            "pooled": lambda o: (f[o] + g[o] + c[grp[o]]) / 2,
        }
        for name, score in rules.items():
            right[name].append(max(fin["options"], key=score) == r["label"])
    n = len(recs)
    print(f"{n} labelled knockout rows of {a.results}")
    for name, ok in right.items():
        gained = sum(x and not y for x, y in zip(ok, right["final"]))
        lost = sum(y and not x for x, y in zip(ok, right["final"]))
        print(f"{name:8s} {sum(ok):4d} right ({100 * sum(ok) / max(n, 1):.1f} %)  vs final: +{gained} -{lost}, McNemar p = {mcnemar(gained, lost):.3g}")

if __name__ == "__main__":
    main()
