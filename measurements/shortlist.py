#!/usr/bin/env python3
"""The shortlist's figures from `jev decide --many shortlist` records (no model).

  python3 measurements/shortlist.py out/ko/shortlist-sub.jsonl
  python3 measurements/shortlist.py --final-pass measurements/ko/shortlist-final-pass-sub.jsonl.gz

For the records of rows of more than 16 options decided by shortlist it prints the embedding
ranker's recall at k (the share of rows whose gold option is among the k best scores), the
binary reading's recall at k among the kept options, accuracy with a 95 % Wilson interval, ECE
(10 equal-width bins) of the reported probability and of the chosen option's share under the
shipped rule (kept_mass times softmax(kappa logit p_yes) over the kept; records of the first
runs normalised p_yes instead, kappa 1 with p_yes near 0.5), and the mean prompt tokens, decoded tokens
and latency a row (latency includes queueing when rows run at once: the run's wall time over
its rows is the cost a row).

--final-pass reads the records of the first build (2026-12-07), which decided the binary
reading's 4 best again in a direct-options-v1 final pass and chose by logit(p_yes) + w log
p_final: it prints the accuracy of each weight w (w = 0 is the binary reading alone, what
gojev ships).
"""
import argparse, gzip, json, math


def records(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            if "shortlist" in r and r.get("label"):
                yield r


def wilson(k, n, z=1.96):
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def ece(conf, right, bins=10):
    e = 0.0
    for b in range(bins):
        idx = [i for i, c in enumerate(conf) if b / bins < c <= (b + 1) / bins]
        if idx:
            e += len(idx) / len(conf) * abs(sum(conf[i] for i in idx) / len(idx) - sum(right[i] for i in idx) / len(idx))
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--final-pass", action="store_true")
    ap.add_argument("--kappa", type=float, default=8.0, help="the kept options' shares, softmax(kappa logit p_yes) (gojev.ShortlistKappa)")
    a = ap.parse_args()
    rs = list(records(a.file))
    n = len(rs)
    if not n:
        raise SystemExit("no labelled shortlist records in " + a.file)
    sl = [r["shortlist"] for r in rs]
    rank = []
    for r, s in zip(rs, sl):
        gold = next(o["score"] for o in s["scores"] if o["id"] == r["label"])
        rank.append(sum(o["score"] > gold for o in s["scores"]))
    print("rows", n)
    print("ranker recall:", "  ".join("@%d %.3f" % (k, sum(x < k for x in rank) / n) for k in (1, 4, 8, 16, 32)))
    if a.final_pass:
        def lo(p):
            p = min(max(p, 1e-12), 1 - 1e-12)
            return math.log(p / (1 - p))
        for w in (0, 0.25, 0.5, 1, 2):
            right = 0
            for r, s in zip(rs, sl):
                ids = [o["id"] for o in r["options"]]
                lp = (r.get("debias") or {}).get("scores") or [o["logprob"] for o in r["options"]]
                m = max(lp)
                z = m + math.log(sum(math.exp(x - m) for x in lp))
                py = {o["id"]: o["p_yes"] for o in s["reranked"]}
                best = max(range(len(ids)), key=lambda k: lo(py[ids[k]]) + w * (lp[k] - z))
                right += ids[best] == r["label"]
            print("final pass weight %.2f: %d/%d right (%.1f %%)" % (w, right, n, 100 * right / n))
        return
    py = [sorted(r["candidates"], key=lambda c: -c["p_yes"]) for r in rs]
    print("binary recall among the kept:", "  ".join("@%d %.3f" % (k, sum(r["label"] in [c["id"] for c in p[:k]] for r, p in zip(rs, py)) / n) for k in (1, 2, 4, 8)))
    right = [r["chosen"] == r["label"] for r in rs]
    lo, hi = wilson(sum(right), n)
    print("accuracy %d/%d = %.1f %% [%.1f, %.1f]" % (sum(right), n, 100 * sum(right) / n, 100 * lo, 100 * hi))
    print("ECE %.3f as recorded (probability %.3f mean)" % (ece([r["probability"] for r in rs], right), sum(r["probability"] for r in rs) / n))
    # The shipped rule (gojev.Shortlist.Distribution), for records written before it had kappa.
    for kappa in sorted({a.kappa, 1.0}):
        conf = []
        for r, p in zip(rs, py):
            z = [kappa * math.log(min(max(c["p_yes"], 1e-12), 1 - 1e-12) / (1 - min(max(c["p_yes"], 1e-12), 1 - 1e-12))) for c in r["candidates"]]
            m = max(z)
            share = math.exp(kappa * math.log(p[0]["p_yes"] / (1 - p[0]["p_yes"])) - m) / sum(math.exp(x - m) for x in z)
            conf.append(r["shortlist"]["kept_mass"] * share)
        print("ECE %.3f with kappa %g (probability %.3f mean)" % (ece(conf, right), kappa, sum(conf) / n))
    mean = lambda xs: sum(xs) / len(xs)
    print("a row: %.0f prompt tokens, %.0f decoded, %d prompts (one state embedding, %d binary)" % (
        mean([r["stats"]["prompt_tokens"] for r in rs]), mean([r["stats"]["decoded_tokens"] for r in rs]),
        1 + len(rs[0]["candidates"]), len(rs[0]["candidates"])))


if __name__ == "__main__":
    main()
