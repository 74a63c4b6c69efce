#!/usr/bin/env bash
# jev serve under a burst and under SIGTERM, measured from outside the process as a client sees
# it (docs/typed-questions.md): serve-burst.sh MODEL.gguf ROWS.jsonl OUT_DIR [TIMEOUT]
#
#   1. jev serve --timeout TIMEOUT (default 20s); 48 requests at once (the rows' questions),
#      each retrying as told (jev bench --burst 48 --url): first answers by status and time,
#      time until all are answered, questions/s. Written to OUT_DIR/burst.json.
#   2. a fresh jev serve (--timeout SIGTERM_TIMEOUT, default jev serve's 2m: long enough for the
#      24 to be admitted on the model); 24 requests at once, SIGTERM one second after the last was sent (jev bench --burst 24 --url --sigterm): how many are answered, and the
#      server's exit code. Written to OUT_DIR/sigterm.json and OUT_DIR/sigterm.exit.
#
# THREADS (default: every CPU) sets jev serve's -t. ROWS: typed rows, for example
#   python3 scripts/typed-rows.py intents ../shared/data/banking77/test-8opt.jsonl --skip 400 --rows 48
set -euo pipefail
model="$1" rows="$2" out="$3" timeout="${4:-20s}"
threads="${THREADS:-$(nproc)}"
jev="$(cd "$(dirname "$0")/.." && pwd)/bin/jev"
mkdir -p "$out"
serve() { # starts jev serve with "$@", sets pid and url
  "$jev" serve -m "$model" -t "$threads" --port 0 "$@" >"$out/serve.out" 2>>"$out/serve.log" &
  pid=$!
  for _ in $(seq 600); do
    url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$out/serve.out" 2>/dev/null || true)"
    [ -n "$url" ] && return 0
    kill -0 "$pid" 2>/dev/null || { echo "jev serve exited: $(tail -3 "$out/serve.log")" >&2; exit 1; }
    sleep 0.5
  done
  echo "jev serve did not start" >&2; exit 1
}
: >"$out/serve.log"
serve --timeout "$timeout"
echo "== burst: 48 requests at once, jev serve --timeout $timeout ($url)"
"$jev" bench --burst 48 --url "$url" -i "$rows" -o "$out/burst.json"
kill -TERM "$pid"; wait "$pid" || true
serve --timeout "${SIGTERM_TIMEOUT:-2m}"
echo "== SIGTERM with 24 requests in flight, jev serve --timeout ${SIGTERM_TIMEOUT:-2m} ($url)"
"$jev" bench --burst 24 --url "$url" -i "$rows" --sigterm "$pid" --sigterm-after 1s -o "$out/sigterm.json"
set +e; wait "$pid"; code=$?; set -e
echo "$code" >"$out/sigterm.exit"
echo "== jev serve exited $code after the drain: $(grep -c 'path=/v1/systemone status=200' "$out/serve.log") answers logged in all"
