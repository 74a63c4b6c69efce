#!/usr/bin/env bash
# Does a calibration profile (temperature) and a PriDe prior fitted on Banking77 transfer to
# other tasks? The measurement behind the README's transfer table (make transfer; about three
# hours on 2 cores with the default model). Every file goes to $OUT (default out/transfer).
#
#   fit    the 200-row Banking77 sample, 8 options (--debias pride: raw and PriDe scores)
#   t16    300 rows of test-16opt.jsonl whose messages are not in the sample (16 options)
#   b77k7  b77k3   rows 1001-1300 of test-8opt.jsonl cut to 7 and 3 options (scripts/cut-options.py)
#   snips  300 SNIPS intents rows (7 options), siqa 300 Social IQa rows (3 options), from PyPI
#          bigbench==1.0.0 (scripts/fetch-bigbench.sh, scripts/bigbench-rows.py)
# Each file is decided with --debias pride and its own prior (estimated on its 5 % sample);
# then, from the files alone: jev calibrate fits the profile on fit and scores it on each, and
# measurements/prior-transfer.py scores each file's rows under every prior of its option count.
# SETS="fit snips siqa" decides only those files (the figures then cover the files decided so
# far); ROWS=150 takes the first 150 of each file's 300 rows (every file but fit).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/transfer}
JEV=${JEV:-bin/jev}
THREADS=${THREADS:-$(nproc)}
data=${GOJEV_SHARED_DATA:-../shared/data}/banking77
SETS=${SETS:-fit t16 b77k7 b77k3 snips siqa}
ROWS=${ROWS:-300}
mkdir -p "$OUT"
python3 - "$data" "$OUT/t16.jsonl" "$ROWS" <<'PY'
import json, sys
d, out = sys.argv[1], sys.argv[2]
seen = {json.dumps(json.loads(l)["state"]) for l in open(d + "/sample-200-8opt.jsonl")}
rows = [l for l in open(d + "/test-16opt.jsonl") if json.dumps(json.loads(l)["state"]) not in seen][:int(sys.argv[3])]
open(out, "w").writelines(rows)
PY
cp "$data/sample-200-8opt.jsonl" "$OUT/fit.jsonl"
for k in 3 7; do sed -n "1001,$((1000 + ROWS))p" "$data/test-8opt.jsonl" | python3 scripts/cut-options.py $k > "$OUT/b77k$k.jsonl"; done
bb=$(./scripts/fetch-bigbench.sh)
python3 scripts/bigbench-rows.py intent_recognition "$bb/intent_recognition.json" --rows "$ROWS" > "$OUT/snips.jsonl"
python3 scripts/bigbench-rows.py social_iqa "$bb/social_iqa.json" --rows "$ROWS" > "$OUT/siqa.jsonl"
for n in $SETS; do
  [ -f "$OUT/$n-pride.jsonl.run.json" ] && grep -q '"finished": true' "$OUT/$n-pride.jsonl.run.json" && continue
  echo "transfer: deciding $n ..." >&2
  "$JEV" decide -t "$THREADS" -q --resume --debias pride --prior "$OUT/prior-$n.json" -i "$OUT/$n.jsonl" -o "$OUT/$n-pride.jsonl"
done
"$JEV" calibrate "$OUT/fit-pride.jsonl" -o "$OUT/profile.json" >/dev/null
decided=()
for n in fit t16 b77k7 b77k3 snips siqa; do [ -f "$OUT/$n-pride.jsonl" ] && decided+=("$n"); done
for n in "${decided[@]}"; do
  [ "$n" = fit ] && continue
  echo "== calibration fitted on the Banking77 sample, scored on $n"
  "$JEV" calibrate "$OUT/fit-pride.jsonl" --eval "$OUT/$n-pride.jsonl" | grep -A6 'held-out  '
  echo "== $n's own calibration (5-fold cross-validated)"
  "$JEV" calibrate "$OUT/$n-pride.jsonl" | grep -E 'scoring|temperature|fitted'
done
declare -A label=([fit]=banking77-8 [t16]=banking77-16 [b77k7]=banking77-7 [b77k3]=banking77-3 [snips]=snips [siqa]=siqa)
args=()
for n in "${decided[@]}"; do args+=("$OUT/$n-pride.jsonl=${label[$n]}"); done
python3 measurements/prior-transfer.py "${args[@]}"
