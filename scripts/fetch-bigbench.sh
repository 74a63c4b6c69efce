#!/usr/bin/env bash
# Fetches two BIG-bench tasks' labelled data from PyPI (bigbench==1.0.0, a 358 MB source
# package; Apache-2.0), checks the package and each file against the sha256 below, and prints
# the folder holding intent_recognition.json and social_iqa.json. For the transfer
# measurements (make transfer); no test and no user needs it. Cached under
# ${GOJEV_CACHE:-~/.cache/gojev}/data/bigbench-1.0.0; a second run only checks.
set -euo pipefail
pkg_sha=1bb398a5512c6d798cdebe0dfa0ac03f67f6033fa6b39c6ef71df978c7cbc5c2
declare -A file_sha=(
  [intent_recognition]=04ca74852de19abfc64c807b096f0094bacbb82131c793d8c413cad3dfdeb5ae
  [social_iqa]=edc9f568b70ae6d4af0783764dbe4e4f18aa1242c675a93f534338d73a565348
)
dir="${GOJEV_CACHE:-$HOME/.cache/gojev}/data/bigbench-1.0.0"
mkdir -p "$dir"
ok=1
for t in "${!file_sha[@]}"; do
  [ -f "$dir/$t.json" ] && echo "${file_sha[$t]}  $dir/$t.json" | sha256sum -c --quiet - 2>/dev/null || ok=0
done
if [ $ok = 1 ]; then echo "$dir"; exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-bigbench: pip download bigbench==1.0.0 (358 MB) ..." >&2
python3 -m pip download --quiet --no-deps --no-binary :all: bigbench==1.0.0 -d "$tmp" >&2
echo "$pkg_sha  $tmp/bigbench-1.0.0.tar.gz" | sha256sum -c --quiet - || { echo "fetch-bigbench: bigbench-1.0.0.tar.gz: sha256 mismatch" >&2; exit 1; }
for t in "${!file_sha[@]}"; do
  tar -xzf "$tmp/bigbench-1.0.0.tar.gz" -C "$tmp" "bigbench-1.0.0/bigbench/benchmark_tasks/$t/task.json"
  echo "${file_sha[$t]}  $tmp/bigbench-1.0.0/bigbench/benchmark_tasks/$t/task.json" | sha256sum -c --quiet - || { echo "fetch-bigbench: $t/task.json: sha256 mismatch" >&2; exit 1; }
  mv "$tmp/bigbench-1.0.0/bigbench/benchmark_tasks/$t/task.json" "$dir/$t.json"
done
echo "$dir"
