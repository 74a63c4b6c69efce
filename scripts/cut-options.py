#!/usr/bin/env python3
"""Rows cut to K options: each labelled row keeps its gold option and the first K-1 others, in
the order the row lists them, with the gold option put at a position drawn uniformly from the K
(seeded by the row's id), so every letter is gold about equally often.

(Until 2026-12-03 the gold option kept its place among the others, which puts it last whenever it
stood at K-1 or later in the source row: cut from 8 options to 3, the gold was C in 106 of 150
rows, and a letter prior then changed accuracy through that skew rather than through the task.)
Rows with K or fewer options, and unlabelled rows, are written as they are.

  python3 scripts/cut-options.py 3 [--seed 0] < rows.jsonl > rows-3opt.jsonl
"""
import argparse
import json
import random
import sys


def cut(row, k, seed=0):
    opts = row.get("options") or []
    label = row.get("label")
    if len(opts) <= k or label is None:
        return row
    gold = [o for o in opts if o.get("id") == label]
    if len(gold) != 1:
        return row
    kept = [o for o in opts if o.get("id") != label][: k - 1]
    kept.insert(random.Random("%d:%s" % (seed, row.get("id"))).randrange(k), gold[0])
    return dict(row, options=kept)


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("k", type=int)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.k < 1:
        sys.exit("cut-options: K must be at least 1")
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(cut(json.loads(line), a.k, a.seed), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
