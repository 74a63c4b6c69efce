#!/usr/bin/env bash
# The typed questions' measurements (docs/typed-questions.md; make typed): choice and noul on
# Banking77 rows 201-400 of test-8opt.jsonl (held out: no profile or prior was fitted on them),
# score on AFINN-en-165 word sentiment, in both rubric orders (position bias), each decided by
# jev decide with the default model into $OUT (default out/typed), resumable, then reported.
# AFINN comes from PyPI (afinn==0.1, its source package, sha256-checked), fetched once into the
# cache; nothing of it is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-out/typed}"
THREADS="${THREADS:-$(nproc)}"
B77="${B77:-../shared/data/banking77}"
model="$(./scripts/fetch-model.sh)"
cache="${GOJEV_CACHE:-$HOME/.cache/gojev}/data/afinn-0.1"
afinn="$cache/AFINN-en-165.txt"
if ! echo "3a06ace6047b203fc1adff0dd3d498ff68528d9206b84242fbce4fc2083a389b  $afinn" | sha256sum -c --quiet - 2>/dev/null; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --no-binary :all: afinn==0.1 -d "$tmp" >&2
  echo "cf2f728ccc6f2974f2f27e2110e4c05a0133a2f14a40387c463a8c9fdd4ab61b  $tmp/afinn-0.1.tar.gz" | sha256sum -c --quiet -
  tar -xzf "$tmp/afinn-0.1.tar.gz" -C "$tmp" afinn-0.1/afinn/data/AFINN-en-165.txt
  mkdir -p "$cache"
  mv "$tmp/afinn-0.1/afinn/data/AFINN-en-165.txt" "$afinn"
  echo "3a06ace6047b203fc1adff0dd3d498ff68528d9206b84242fbce4fc2083a389b  $afinn" | sha256sum -c --quiet -
fi
mkdir -p "$OUT"
python3 scripts/typed-rows.py choice "$B77/test-8opt.jsonl" --skip 200 --rows 200 > "$OUT/choice.jsonl"
python3 scripts/typed-rows.py noul "$B77/test-8opt.jsonl" --skip 200 --rows 200 > "$OUT/noul.jsonl"
python3 scripts/typed-rows.py score "$afinn" --per-level 20 > "$OUT/score.jsonl"
python3 scripts/typed-rows.py score "$afinn" --per-level 20 --reverse > "$OUT/score-rev.jsonl"
for k in noul score score-rev choice; do
  bin/jev decide -m "$model" -t "$THREADS" -q --resume --debias none -i "$OUT/$k.jsonl" -o "$OUT/$k-out.jsonl"
done
bin/jev report "$OUT/choice-out.jsonl=choice" "$OUT/noul-out.jsonl=noul" "$OUT/score-out.jsonl=score" "$OUT/score-rev-out.jsonl=score-reversed" --json "$OUT/report.json"
