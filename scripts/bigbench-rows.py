#!/usr/bin/env python3
"""Decision rows from BIG-bench multiple-choice tasks, for measuring how a calibration profile
and a PriDe prior fitted on one task transfer to another.

The tasks' labelled data ship inside the PyPI source package bigbench==1.0.0 (Google's BIG-bench,
Apache-2.0; sha256 pinned in scripts/fetch-bigbench.sh, which fetches it at measurement time:
nothing here is committed). Each task.json holds {"examples": [{"input", "target_scores":
{option: 0|1}}]}. This script writes one gojev row a line:

  intent_recognition  SNIPS voice-assistant intents (Coucke et al. 2018): 7 options, the same
                      seven intents on every item, shuffled per row with the seed (the task lists
                      them in one fixed order, which would confound letter bias with class bias)
                      state {"message": …}, question "Which intent does the user's message express?"
  social_iqa          Social IQa (Sap et al., EMNLP 2019): 3 answers per item, in the task's own
                      order (its gold positions are balanced: 643/655/656)
                      state {"text": …}, question "Which answer to the question at the end of the text is the most likely?"

Items are shuffled with the seed, then the first --rows are written; ids are TASK-NNNNN (the
item's index in task.json), option ids are the intent names or answer-1..answer-3.

  python3 scripts/bigbench-rows.py intent_recognition path/to/task.json --rows 300 > snips.jsonl
"""
import argparse
import json
import random
import sys

QUESTIONS = {
    "intent_recognition": "Which intent does the user's message express?",
    "social_iqa": "Which answer to the question at the end of the text is the most likely?",
}


def gold(target_scores):
    best = [o for o, s in target_scores.items() if s == 1]
    if len(best) != 1:
        raise ValueError("want exactly one option scored 1, got %r" % (target_scores,))
    return best[0]


def rows(task, examples, seed):
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    for idx in order:
        ex = examples[idx]
        text = ex["input"].strip()
        answer = gold(ex["target_scores"])
        names = list(ex["target_scores"])
        if task == "intent_recognition":
            text = text.removeprefix("Utterance:").strip()
            random.Random("%d-%d" % (seed, idx)).shuffle(names)
            options = [{"id": n, "description": n.replace("_", " ").capitalize() + "."} for n in names]
            label = answer
            state = {"message": text}
        else:
            options = [{"id": "answer-%d" % (i + 1), "description": n} for i, n in enumerate(names)]
            label = options[names.index(answer)]["id"]
            state = {"text": text}
        yield {"id": "%s-%05d" % (task, idx), "state": state, "question": QUESTIONS[task],
               "options": options, "label": label}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", choices=sorted(QUESTIONS))
    ap.add_argument("task_json", help="the task's task.json from the bigbench package")
    ap.add_argument("--rows", type=int, default=0, help="write only the first N rows (0: all)")
    ap.add_argument("--seed", type=int, default=77, help="shuffle seed (items, and SNIPS's options)")
    args = ap.parse_args()
    with open(args.task_json) as f:
        examples = json.load(f)["examples"]
    seen = set()
    n = 0
    for r in rows(args.task, examples, args.seed):
        key = json.dumps(r["state"], sort_keys=True)
        if key in seen:  # a few items repeat their text
            continue
        seen.add(key)
        sys.stdout.write(json.dumps(r, ensure_ascii=False) + "\n")
        n += 1
        if args.rows and n >= args.rows:
            break


if __name__ == "__main__":
    main()
