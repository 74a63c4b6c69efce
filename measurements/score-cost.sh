#!/usr/bin/env bash
# issue 48: what the default score and noul readings cost against raw (default model, 2 threads);
# the rows: scripts/typed-rows.py score AFINN-en-165.txt --same-question (every 6th of the first 180)
# and the first 30 of scripts/task-rows.py sarcasm
set -u
cd "$(dirname "$0")/.."
export GOJEV_MODEL="${GOJEV_MODEL:-$(scripts/fetch-model.sh)}"
go build -o /tmp/jev-cost ./cmd/jev
J=/tmp/jev-cost
farm-bench -n 3 --warmup 0 --timeout 1200 --vs "sh -c 'rm -f /tmp/c-b.jsonl*; exec $J decide -q -t 2 --score-reading listed --debias none -i out/score/afinn-typed30.jsonl -o /tmp/c-b.jsonl'" \
  -- sh -c "rm -f /tmp/c-a.jsonl*; exec $J decide -q -t 2 -i out/score/afinn-typed30.jsonl -o /tmp/c-a.jsonl"
farm-bench -n 3 --warmup 0 --timeout 900 --vs "sh -c 'rm -f /tmp/c-d.jsonl*; exec $J decide -q -t 2 --debias none -i out/noul/sarcasm30.jsonl -o /tmp/c-d.jsonl'" \
  -- sh -c "rm -f /tmp/c-c.jsonl*; exec $J decide -q -t 2 -i out/noul/sarcasm30.jsonl -o /tmp/c-c.jsonl"
