#!/usr/bin/env python3
"""Typed rows (questions about a state, as the System One API asks them) from public labelled
data, for measuring gojev's choice, noul and score answers (jev decide, then jev report):

  choice   Banking77 rows of the contract ({"id", "state", "question", "options", "label"}) as
           typed rows: one choice question whose criteria are the row's options (name the
           option id, description the option's), labelled with the gold intent. The prompt is
           the row's, byte for byte.
  noul     the same Banking77 rows as yes/no questions: "Does the message express the intent
           …?", asked of the gold intent on even rows and of a distractor drawn from the row's
           other options (seeded) on odd rows, labelled true or false: half yes, half no.
  mixed    both of the above about each Banking77 row's message: requests of two questions
           (jev bench --serve).
  intents  a noul question for every option of each Banking77 row ("Does the message express
           the intent …?"): requests of 8 questions (jev bench --burst).
  score    AFINN-en-165 (Finn Årup Nielsen's word list, 3,382 English words rated from -5 to
           +5 by hand): the sentiment of one word on an 11-level rubric, labelled with the
           word's rating + 5; words drawn per rating (up to --per-level of each, seeded), so
           every level is measured. --reverse lists the rubric from +5 down (label 5 - rating),
           to measure position bias.

  python3 scripts/typed-rows.py choice ../shared/data/banking77/test-8opt.jsonl --skip 200 --rows 200 > choice.jsonl
  python3 scripts/typed-rows.py noul   ../shared/data/banking77/test-8opt.jsonl --skip 200 --rows 200 > noul.jsonl
  python3 scripts/typed-rows.py score  path/to/AFINN-en-165.txt --per-level 20 > score.jsonl
"""
import argparse
import json
import random
import sys

SCORE_LEVELS = [
    "very strongly negative (-5)", "strongly negative (-4)", "negative (-3)", "somewhat negative (-2)",
    "slightly negative (-1)", "neutral (0)", "slightly positive (+1)", "somewhat positive (+2)",
    "positive (+3)", "strongly positive (+4)", "very strongly positive (+5)",
]


def banking77(path, skip, rows):
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    return lines[skip:skip + rows] if rows else lines[skip:]


def choice(args):
    for r in banking77(args.source, args.skip, args.rows):
        q = {"type": "choice", "instructions": r["question"],
             "criteria": {o["id"]: o["description"] for o in r["options"]}, "label": r["label"]}
        yield {"id": r["id"], "state": r["state"], "questions": {"intent": q}}


def noul(args):
    for i, r in enumerate(banking77(args.source, args.skip, args.rows)):
        gold = next(o for o in r["options"] if o["id"] == r["label"])
        target = gold
        if i % 2 == 1:
            others = [o for o in r["options"] if o["id"] != r["label"]]
            target = random.Random("%s-%s" % (args.seed, r["id"])).choice(others)
        desc = target["description"].rstrip(".")
        q = {"type": "noul", "instructions": 'Does the customer\'s message express the intent "%s"?' % desc,
             "label": target is gold}
        yield {"id": r["id"], "state": r["state"], "questions": {"intent": q}}


def mixed(args):
    """A choice and a noul about each row's message: requests of two questions (jev bench --serve)."""
    for c, n in zip(choice(args), noul(args)):
        yield {"id": c["id"], "state": c["state"], "questions": {"intent": c["questions"]["intent"], "check": n["questions"]["intent"]}}


def intents(args):
    """A yes/no question for every option of each row, about its message: requests of as many
    noul questions as the row has options (8 for test-8opt.jsonl), for jev bench --burst."""
    for r in banking77(args.source, args.skip, args.rows):
        qs = {}
        for o in r["options"]:
            qs[o["id"]] = {"type": "noul", "label": o["id"] == r["label"],
                           "instructions": 'Does the customer\'s message express the intent "%s"?' % o["description"].rstrip(".")}
        yield {"id": r["id"], "state": r["state"], "questions": qs}


def score(args):
    by = {}
    with open(args.source) as f:
        for line in f:
            word, rating = line.rstrip("\n").rsplit("\t", 1)
            by.setdefault(int(rating), []).append(word)
    rng = random.Random(args.seed)
    picked = []
    for rating in sorted(by):
        words = sorted(by[rating])
        rng.shuffle(words)
        picked += [(w, rating) for w in words[:args.per_level]]
    rng.shuffle(picked)
    levels, instructions = SCORE_LEVELS, "How negative or positive is the sentiment of this word?"
    if args.reverse:
        # The same rubric from the other end (level 0 is +5): a model that favours a position,
        # or a letter, moves its scores the other way.
        levels, instructions = SCORE_LEVELS[::-1], "How positive or negative is the sentiment of this word?"
    for w, rating in picked:
        label = rating + 5 if not args.reverse else 5 - rating
        if args.as_rows:
            # The same question as a row of the contract (options "0" … "10", as a typed score is
            # decided): PriDe estimates its letter prior for 11 options from these.
            yield {"id": "afinn-" + w, "state": {"word": w}, "question": instructions,
                   "options": [{"id": str(i), "description": l} for i, l in enumerate(levels)], "label": str(label)}
            continue
        q = {"type": "score", "instructions": instructions, "criteria": levels, "label": label}
        yield {"id": "afinn-" + w, "state": {"word": w}, "questions": {"sentiment": q}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["choice", "noul", "score", "mixed", "intents"])
    ap.add_argument("source", help="Banking77 rows (choice, noul) or AFINN-en-165.txt (score)")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N rows (choice, noul)")
    ap.add_argument("--rows", type=int, default=0, help="write N rows (choice, noul; 0: all)")
    ap.add_argument("--per-level", type=int, default=20, help="words of each rating (score)")
    ap.add_argument("--reverse", action="store_true", help="score: the rubric from the most positive level down (level 0 = +5), to measure position bias")
    ap.add_argument("--as-rows", action="store_true", help="score: write rows of the contract (options \"0\" … \"10\") instead of typed rows, for PriDe's prior (jev decide --debias pride --prior FILE --prior-only)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for row in {"choice": choice, "noul": noul, "score": score, "mixed": mixed, "intents": intents}[args.kind](args):
        sys.stdout.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
