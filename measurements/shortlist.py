#!/usr/bin/env python3
"""The shortlist's figures from `jev decide --many shortlist` records (no model).

  python3 measurements/shortlist.py out/ko/shortlist-sub.jsonl
  python3 measurements/shortlist.py --final-pass measurements/ko/shortlist-final-pass-sub.jsonl.gz
  python3 measurements/shortlist.py SL.jsonl --cut-rows ROWS.jsonl > cut.jsonl   # then jev decide --contract binary
  python3 measurements/shortlist.py SL.jsonl --binary BIN.jsonl [--binary CUT-BIN.jsonl]
  python3 measurements/shortlist.py SL.jsonl --resettle > now.jsonl   # records under the shipped rule
  python3 measurements/shortlist.py SL.jsonl --levers   # the rule's weight, k and per-option bias, re-read
  python3 measurements/shortlist.py TRAIN.jsonl --ship --held-out a=A.jsonl,A2.jsonl --held-out b=B.jsonl [--profile calibrate/shipped/X.json]

For the records of rows of more than 16 options decided by shortlist it prints the embedding
ranker's recall at k (the share of rows whose gold option is among the k best scores), the
binary reading's recall at k among the kept options, accuracy with a 95 % Wilson interval, ECE
(10 equal-width bins) of the reported probability and, with the Brier score over every
option, of the chosen option's share under the shipped rule (kept_mass times softmax(kappa logit p_yes) over the kept; records of the first
runs normalised p_yes instead, kappa 1 with p_yes near 0.5), and the mean prompt tokens, decoded tokens
and latency a row (latency includes queueing when rows run at once: the run's wall time over
its rows is the cost a row).

Several files are read as one set of rows. --binary pairs them with the binary contract's
records of the same rows (`jev decide --contract binary`) and prints both accuracies and exact
McNemar's p (two-sided binomial test of the rows only one of them got right), the shortlist
choosing under the shipped rule. The binary
contract reads each option in a prompt of its own (binary-candidates-v1: the context, the
question and that one candidate), so its decision over every option is the argmax of p_yes over
the shortlist's kept options (their p_yes are in the shortlist's record) and the others'; the
others may come from a run on rows cut to the options the shortlist cut (--cut-rows ROWS writes
them from the rows the shortlist decided), which costs the binary contract's prompts less the 16
the shortlist read. A row is paired only when every one of its options has a p_yes.

--ship fits a temperature over the shipped rule's distribution (over every option) on the
files' rows by the likelihood of the gold option, prints the ECE of each --held-out task before
and after and, with --profile, writes it into the shipped calibration profile as its
"shortlist" scoring (with the fitting rows' points for --max-error), only if it lowers every
held-out task's ECE.

--final-pass reads the records of the first build (2026-12-07), which decided the binary
reading's 4 best again in a direct-options-v1 final pass and chose by logit(p_yes) + w log
p_final: it prints the accuracy of each weight w (w = 0 is the binary reading alone, what
gojev ships).
"""
import argparse, gzip, json, math


KAPPA = 8.0  # gojev.ShortlistKappa


def records(path):
    """The labelled shortlist records of a results file."""
    return (r for r in raw_records(path) if "shortlist" in r and r.get("label"))


def logit(p):
    p = min(max(p, 1e-12), 1 - 1e-12)
    return math.log(p / (1 - p))


def choice(r, dist):
    """The shortlist's choice under dist: its kept option of highest share."""
    return max((c["id"] for c in r["candidates"]), key=lambda i: dist[i])


def mcnemar(a_only, b_only):
    """Exact two-sided McNemar p: the binomial(n, 1/2) tail of the discordant rows."""
    n, k = a_only + b_only, min(a_only, b_only)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def raw_records(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        for line in f:
            yield json.loads(line)


def cut_rows(rs, rows_path):
    """The input rows, each cut to the options its shortlist record cut."""
    kept = {r["id"]: {c["id"] for c in r["candidates"]} for r in rs}
    for row in raw_records(rows_path):
        if row.get("id") in kept:
            row["options"] = [o for o in row["options"] if o["id"] not in kept[row["id"]]]
            print(json.dumps(row, ensure_ascii=False))


def paired(rs, binary_paths, kappa):
    """The binary contract's decision on each shortlist row, from its p_yes over every option."""
    p_yes = {}
    for path in binary_paths:
        for r in raw_records(path):
            for c in r.get("candidates") or []:
                p_yes.setdefault(r.get("id"), {})[c["id"]] = c["p_yes"]
    both = sl_only = bin_only = n = 0
    for r in rs:
        py = dict(p_yes.get(r["id"], {}))
        py.update({c["id"]: c["p_yes"] for c in r["candidates"]})
        if len(py) < len(r["shortlist"]["scores"]):
            continue
        n += 1
        b = max(py, key=py.get) == r["label"]
        s = choice(r, distribution(r, kappa)) == r["label"]  # under the shipped rule, whatever build wrote r
        both += b and s
        sl_only += s and not b
        bin_only += b and not s
    if not n:
        raise SystemExit("no shortlist row has every option's p_yes in " + ", ".join(binary_paths))
    print("paired rows %d: shortlist %d right (%.1f %%), binary %d right (%.1f %%); only shortlist %d, only binary %d, McNemar p %.3g" % (
        n, both + sl_only, 100 * (both + sl_only) / n, both + bin_only, 100 * (both + bin_only) / n, sl_only, bin_only, mcnemar(sl_only, bin_only)))


def distribution(r, kappa, product=True):
    """A shortlist record's distribution over every option (gojev.Shortlist's rule, recomputed
    from its scores and p_yes): the cut options keep the ranker's shares, softmax(score/tau); the
    kept share kept_mass by softmax(score/tau + kappa logit p_yes) (product: ShortlistRule,
    "ranker-times-binary"), or by softmax(kappa logit p_yes) alone (the records before it)."""
    s = r["shortlist"]
    score = {o["id"]: o["score"] for o in s["scores"]}
    kept = {c["id"]: kappa * logit(c["p_yes"]) + (score[c["id"]] / s["tau"] if product else 0) for c in r["candidates"]}
    m = max(kept.values())
    z = sum(math.exp(v - m) for v in kept.values())
    dist = {o["id"]: o["probability"] for o in s["distribution"] if o["id"] not in kept}
    dist.update({i: s["kept_mass"] * math.exp(v - m) / z for i, v in kept.items()})
    return dist


def levers(rs, kappa):
    """Accuracy of the product rule's choice with one thing changed at a time: the ranker's
    weight w against logit p_yes (the rule's is 1/(kappa tau)); the ranker's k best decided
    (of the 16 kept); each option's logit p_yes less beta times its mean over these rows
    (label-free, over the whole file)."""
    def right(w=None, k=None, beta=0.0):
        n = 0
        for r in rs:
            s = r["shortlist"]
            score = {o["id"]: o["score"] for o in s["scores"]}
            ww = 1 / (kappa * s["tau"]) if w is None else w
            cands = sorted(r["candidates"], key=lambda c: -score[c["id"]])[:k or len(r["candidates"])]
            best = max(cands, key=lambda c: logit(c["p_yes"]) - beta * (mean[c["id"]] - grand) + ww * score[c["id"]])
            n += best["id"] == r["label"]
        return "%.1f %%" % (100 * n / len(rs))
    by = {}
    for r in rs:
        for c in r["candidates"]:
            by.setdefault(c["id"], []).append(logit(c["p_yes"]))
    mean = {i: sum(v) / len(v) for i, v in by.items()}
    grand = sum(sum(v) for v in by.values()) / sum(len(v) for v in by.values())
    print("ranker weight:", "  ".join("%g %s" % (w, right(w=w)) for w in (0, 0.5, 1, 1.5, 2, 2.5, 3, 4)))
    print("k best decided:", "  ".join("%d %s" % (k, right(k=k)) for k in (2, 4, 6, 8, 12, 16)))
    print("option mean subtracted, beta:", "  ".join("%g %s" % (b, right(beta=b)) for b in (0, 0.25, 0.5, 0.75, 1)))


def tempered(dist, t):
    """softmax(log dist / t): a temperature map over a shortlist's distribution (calibrate's
    temperature over the log distribution, gojev's "shortlist" scoring)."""
    lp = {i: math.log(max(q, 1e-300)) / t for i, q in dist.items()}
    m = max(lp.values())
    z = sum(math.exp(v - m) for v in lp.values())
    return {i: math.exp(v - m) / z for i, v in lp.items()}


def ship(rs, held_out, kappa, profile):
    """Fit a temperature over the shipped rule's distribution on rs (the likelihood of the
    gold option), print each held-out task's ECE before and after, and, when it lowers every
    one and profile is given, write it into that profile as the "shortlist" scoring."""
    dists = [distribution(r, kappa) for r in rs]
    nll = lambda t: -sum(math.log(max(tempered(d, t)[r["label"]], 1e-300)) for r, d in zip(rs, dists)) / len(rs)
    t = min((0.5 + 0.01 * i for i in range(301)), key=nll)
    print("temperature %.2f: mean negative log-likelihood of the gold option on the %d fitting rows %.3f (at 1: %.3f)" % (t, len(rs), nll(t), nll(1.0)))

    def conf_right(rows, t):
        out = []
        for r in rows:
            d = tempered(distribution(r, kappa), t)
            c = choice(r, d)
            out.append((d[c], c == r["label"]))
        return out
    lowered, lines = True, []
    for task in held_out:
        name, _, files = task.rpartition("=")
        rows = [r for path in files.split(",") for r in records(path)]
        name = name or files.split(",")[0].rsplit("/", 1)[-1].split(".")[0]
        before, after = (ece([c for c, _ in cr], [k for _, k in cr]) for cr in (conf_right(rows, 1.0), conf_right(rows, t)))
        lowered &= after < before
        lines.append("%s (%d rows) ECE %.3f -> %.3f" % (name, len(rows), before, after))
        print("held out: " + lines[-1])
    if not profile:
        return
    if not lowered:
        raise SystemExit("not written: the temperature does not lower ECE on every held-out task")
    prof = json.load(open(profile))
    points = sorted(([c, int(k)] for c, k in conf_right(rs, t)), key=lambda p: -p[0])
    prof["scorings"]["shortlist"] = {
        "method": "temperature", "reason": "fitted on labelled rows of one task, lowers ECE on every task held out (measurements/shortlist.py --ship)",
        "before": {}, "cross_validated": {}, "folds": 0,
        "fitted": {"method": "temperature", "pooled": {"method": "temperature", "t": t}},
        "points": points}
    note = prof["note"].split(" Shortlist rows:")[0].replace("and other scorings, stay", "and other scorings but the shortlist's, stay")
    prof["note"] = note + (" Shortlist rows: temperature %.2f over the shortlist's distribution, fitted on %d labelled Banking77 training rows (train.csv); held out: %s." % (t, len(rs), "; ".join(lines)))
    with open(profile, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    print("wrote the shortlist scoring into " + profile)


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
    ap.add_argument("file", nargs="+")
    ap.add_argument("--final-pass", action="store_true")
    ap.add_argument("--binary", action="append", default=[], metavar="FILE", help="the binary contract's records of the same rows (repeatable)")
    ap.add_argument("--cut-rows", metavar="ROWS", help="write the rows of ROWS cut to the options each shortlist cut, and stop")
    ap.add_argument("--resettle", action="store_true", help="write the records with chosen, probability, correct and the shortlist's distribution under the shipped rule (ShortlistRule, --kappa), as gojev settles them now, and stop")
    ap.add_argument("--fit-kappa", action="store_true", help="print the kappa of highest likelihood of the gold option under the shipped rule (fit it on training rows)")
    ap.add_argument("--kappa", type=float, default=KAPPA, help="the shipped rule's kappa (gojev.ShortlistKappa)")
    ap.add_argument("--levers", action="store_true", help="print the accuracy with the ranker's weight, the k decided, or each option's mean logit p_yes changed, and stop")
    ap.add_argument("--ship", action="store_true", help="fit a temperature over the distribution on the files (training rows), print the ECE of every --held-out task before and after, and stop")
    ap.add_argument("--held-out", action="append", default=[], metavar="[NAME=]FILES", help="with --ship: one held-out task's records, comma-separated files (repeatable)")
    ap.add_argument("--profile", metavar="FILE", help="with --ship: write the temperature into this calibration profile (the shipped one) as the shortlist scoring, if it lowers ECE on every held-out task")
    a = ap.parse_args()
    rs = [r for path in a.file for r in records(path)]
    n = len(rs)
    if not n:
        raise SystemExit("no labelled shortlist records in " + ", ".join(a.file))
    if a.cut_rows:
        return cut_rows(rs, a.cut_rows)
    if a.ship:
        return ship(rs, a.held_out, a.kappa, a.profile)
    if a.levers:
        return levers(rs, a.kappa)
    if a.resettle:
        for r in rs:
            dist = distribution(r, a.kappa)
            s = r["shortlist"]
            s["rule"], s["kappa"] = "ranker-times-binary", a.kappa
            s["distribution"] = [{"id": o["id"], "probability": dist[o["id"]]} for o in s["scores"]]
            r["chosen"] = choice(r, dist)
            r["probability"], r["correct"] = dist[r["chosen"]], r["chosen"] == r["label"]
            print(json.dumps(r, ensure_ascii=False))
        return
    sl = [r["shortlist"] for r in rs]
    rank = []
    for r, s in zip(rs, sl):
        gold = next(o["score"] for o in s["scores"] if o["id"] == r["label"])
        rank.append(sum(o["score"] > gold for o in s["scores"]))
    print("rows", n)
    print("ranker recall:", "  ".join("@%d %.3f" % (k, sum(x < k for x in rank) / n) for k in (1, 4, 8, 16, 32)))
    if a.final_pass:
        for w in (0, 0.25, 0.5, 1, 2):
            right = 0
            for r, s in zip(rs, sl):
                ids = [o["id"] for o in r["options"]]
                lp = (r.get("debias") or {}).get("scores") or [o["logprob"] for o in r["options"]]
                m = max(lp)
                z = m + math.log(sum(math.exp(x - m) for x in lp))
                py = {o["id"]: o["p_yes"] for o in s["reranked"]}
                best = max(range(len(ids)), key=lambda k: logit(py[ids[k]]) + w * (lp[k] - z))
                right += ids[best] == r["label"]
            print("final pass weight %.2f: %d/%d right (%.1f %%)" % (w, right, n, 100 * right / n))
        return
    py = [sorted(r["candidates"], key=lambda c: -c["p_yes"]) for r in rs]
    print("binary recall among the kept:", "  ".join("@%d %.3f" % (k, sum(r["label"] in [c["id"] for c in p[:k]] for r, p in zip(rs, py)) / n) for k in (1, 2, 4, 8)))
    right = [r["chosen"] == r["label"] for r in rs]
    print("ECE %.3f as recorded (accuracy %.1f %%, probability %.3f mean)" % (
        ece([r["probability"] for r in rs], right), 100 * sum(right) / n, sum(r["probability"] for r in rs) / n))
    # The rules, recomputed from each record's scores and p_yes (records of any build).
    if a.fit_kappa:
        ks = [0.5 * i for i in range(1, 41)]
        ll = [sum(math.log(max(distribution(r, k)[r["label"]], 1e-300)) for r in rs) for k in ks]
        best = ks[ll.index(max(ll))]
        print("kappa of highest likelihood under ranker-times-binary: %g (mean log-likelihood of the gold option %.3f; at %g: %.3f)" % (
            best, max(ll) / n, KAPPA, ll[ks.index(KAPPA)] / n if KAPPA in ks else float("nan")))
    rights = []
    for name, product, kappa in (("ranker-times-binary (shipped)", True, a.kappa), ("binary alone (before 2026-12-07)", False, 8.0), ("binary alone, p_yes normalised", False, 1.0)):
        conf, right, brier = [], [], 0.0
        for r in rs:
            dist = distribution(r, kappa, product)
            chosen = choice(r, dist)
            conf.append(dist[chosen])
            right.append(chosen == r["label"])
            brier += sum((q - (i == r["label"])) ** 2 for i, q in dist.items())
        lo, hi = wilson(sum(right), n)
        print("%s, kappa %g: accuracy %d/%d = %.1f %% [%.1f, %.1f]; ECE %.3f, Brier %.3f (over every option), probability %.3f mean" % (
            name, kappa, sum(right), n, 100 * sum(right) / n, 100 * lo, 100 * hi, ece(conf, right), brier / n, sum(conf) / n))
        rights.append(right)
    only_new = sum(x and not y for x, y in zip(rights[0], rights[1]))
    only_old = sum(y and not x for x, y in zip(rights[0], rights[1]))
    print("ranker-times-binary against binary alone: right only under the first %d, only under the second %d, McNemar p %.3g" % (
        only_new, only_old, mcnemar(only_new, only_old)))
    mean = lambda xs: sum(xs) / len(xs)
    print("a row: %.0f prompt tokens, %.0f decoded, %d prompts (one state embedding, %d binary)" % (
        mean([r["stats"]["prompt_tokens"] for r in rs]), mean([r["stats"]["decoded_tokens"] for r in rs]),
        1 + len(rs[0]["candidates"]), len(rs[0]["candidates"])))
    if a.binary:
        paired(rs, a.binary, a.kappa)


if __name__ == "__main__":
    main()
