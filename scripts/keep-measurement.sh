#!/usr/bin/env bash
# keep-measurement.sh RESULTS.jsonl DIR: copy a results file, gzipped (-n: no name or time, so
# the same rows give the same bytes), and its run file into DIR (under measurements/), with
# this machine's home directory written as ~ in the run file. See measurements/README.md.
set -euo pipefail
if [ $# -ne 2 ] || [ ! -f "$1" ]; then
	echo "usage: $0 RESULTS.jsonl DIR   (copies RESULTS.jsonl.gz and RESULTS.jsonl.run.json into DIR)" >&2
	exit 2
fi
src=$1 dir=$2 name=$(basename "$1")
mkdir -p "$dir"
# Whole lines only: a run still writing may have half a line at the end.
sed '$!b; /}$/!d' "$src" | gzip -n -9 > "$dir/$name.gz.tmp"
mv "$dir/$name.gz.tmp" "$dir/$name.gz"
if [ -f "$src.run.json" ]; then
	sed "s#$HOME/#~/#g" "$src.run.json" > "$dir/$name.run.json"
fi
echo "kept $(gunzip -c "$dir/$name.gz" | wc -l) rows of $src in $dir/$name.gz"
