#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a fixed time each (default 15s; make fuzz: 2m):
#   scripts/fuzz.sh [TIME]
# A target that finds a crashing input fails the run, and go test writes the input under the
# package's testdata/fuzz/<Target>/ (commit it: it then runs in every go test as a seed).
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-15s}
targets=$(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . | grep -v '^./third_party/' | sort)
n=0
for file in $targets; do
  pkg="./$(dirname "${file#./}")"
  for target in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed 's/^func //'); do
    start=$(date +%s)
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$time" "$pkg" >/tmp/fuzz-$$.log 2>&1 || { cat /tmp/fuzz-$$.log; echo "fuzz: $pkg $target FAILED"; exit 1; }
    execs=$(grep -oE 'execs: [0-9]+' /tmp/fuzz-$$.log | tail -1)
    echo "fuzz: $pkg $target: $time, ${execs:-no execs line}, no failure ($(( $(date +%s) - start ))s)"
    n=$((n + 1))
  done
done
rm -f /tmp/fuzz-$$.log
echo "fuzz: $n targets passed"
