#!/usr/bin/env python3
"""Banking77 decision rows with every intent as an option: 77 options a row, in a seeded
shuffle, label the gold intent. The same layout as the project's shared 8- and 16-option rows
(question "Which intent does the customer's message express?", option ids the intent names,
descriptions the names in words: card_arrival -> "Card arrival."). test.csv is sorted by intent,
so the rows come in a seeded shuffle of it (ids keep the test.csv row index); --rows N keeps the
first N of that order. Cut them to 16 options (the gold and 15 others, in the row's order)
with scripts/cut-options.py 16.

  python3 scripts/banking77-rows.py ../shared/data/banking77/test.csv ../shared/data/banking77/categories.json --rows 300 > b77-77.jsonl
"""
import argparse
import csv
import json
import random
import sys


def describe(intent):
    return intent.replace("_", " ").capitalize() + "."


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("test_csv", help="Banking77's test.csv (columns text, category)")
    ap.add_argument("categories_json", help="Banking77's categories.json: the 77 intent names, a JSON list")
    ap.add_argument("--rows", type=int, default=0, help="write only the first N rows (0: all)")
    ap.add_argument("--seed", type=int, default=77, help="seed of each row's option order")
    args = ap.parse_args()
    with open(args.categories_json) as f:
        intents = json.load(f)
    if len(intents) != len(set(intents)):
        sys.exit("banking77-rows: duplicate intents in " + args.categories_json)
    with open(args.test_csv, newline="") as f:
        records = list(csv.DictReader(f))
    order_of_rows = list(range(len(records)))
    random.Random(args.seed).shuffle(order_of_rows)
    if args.rows:
        order_of_rows = order_of_rows[:args.rows]
    for i in order_of_rows:
        rec = records[i]
        if rec["category"] not in intents:
            sys.exit("banking77-rows: line %d: unknown intent %r" % (i + 2, rec["category"]))
        order = list(intents)
        random.Random(args.seed * 1_000_003 + i).shuffle(order)
        row = {"id": "banking77-77-%05d" % i, "state": {"message": rec["text"]},
               "question": "Which intent does the customer's message express?",
               "options": [{"id": o, "description": describe(o)} for o in order],
               "label": rec["category"]}
        sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
