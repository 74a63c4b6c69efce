#!/usr/bin/env python3
"""Rows cut to K options: each labelled row keeps its gold option and the first K-1 others, in
the order the row lists them (so the gold option's position stays as random as the row made it).
Rows with K or fewer options, and unlabelled rows, are written as they are.

  python3 scripts/cut-options.py 3 < rows.jsonl > rows-3opt.jsonl
"""
import json
import sys


def cut(row, k):
    opts = row.get("options") or []
    label = row.get("label")
    if len(opts) <= k or label is None:
        return row
    kept, others = [], k - 1
    for o in opts:
        if o.get("id") == label:
            kept.append(o)
        elif others > 0:
            kept.append(o)
            others -= 1
    return dict(row, options=kept)


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit(__doc__.strip())
    k = int(sys.argv[1])
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(cut(json.loads(line), k), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
