#!/usr/bin/env bash
# Fetch a prebuilt ggml backend plugin for the pinned llama.cpp and print its path.
#
#   fetch-plugin.sh vulkan|cuda|metal
#
# The plugin comes from the npm package third_party/plugins.tsv names for this GPU and platform
# (node-llama-cpp's prebuilt binaries of the same llama.cpp release gojev pins). The tarball is
# verified against the recorded sha256 before anything is extracted; the plugin and the
# libggml-base it was built with (they must travel together) go to
# $GOJEV_CACHE/plugins/<gpu>-<platform>-<version>/ with a SHA256SUMS of what was extracted,
# and the tarball is deleted. A second run finds them there and fetches nothing.
#
# Load the plugin with jev --plugin PATH, GOJEV_PLUGINS=PATH, or gojev.Options.Plugins.
# GOJEV_NO_FETCH=1 only prints the path when the plugin is there (exit status 3 when it is not).
# Needs npm for the download (no Node.js code runs), tar and sha256sum (or shasum on macOS).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache="${GOJEV_CACHE:-$HOME/.cache/gojev}"
say() { echo "fetch-plugin: $*" >&2; }
gpu="${1:-}"
case "$gpu" in
  vulkan|cuda|metal) ;;
  *) say "usage: fetch-plugin.sh vulkan|cuda|metal"; exit 2 ;;
esac
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64) platform=linux-arm64 ;;
  Darwin-arm64) platform=mac-arm64 ;;
  Darwin-x86_64) platform=mac-x64 ;;
  *) platform="$(uname -s)-$(uname -m)" ;;
esac
row=$(awk -F'\t' -v g="$gpu" -v p="$platform" '$1 == g && $2 == p' "$here/plugins.tsv")
if [ -z "$row" ]; then
  say "no prebuilt $gpu plugin for $platform in third_party/plugins.tsv; build libggml-$gpu.so from the pinned source with GGML_BACKEND_DL=ON (scripts/gpu-bench.sh shows how for CUDA; the README's "On a GPU")"
  exit 1
fi
IFS=$'\t' read -r _ _ pkg sha folder file needs <<<"$row"
version="${pkg##*@}"
dest="$cache/plugins/$gpu-$platform-$version"
sha256() { if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi; }
if [ -f "$dest/.complete" ]; then
  if (cd "$dest" && sha256 -c --status SHA256SUMS 2>/dev/null); then
    echo "$dest/$file"
    exit 0
  fi
  say "$dest does not match its SHA256SUMS (changed since it was fetched): fetching it again"
fi
if [ "${GOJEV_NO_FETCH:-0}" = 1 ]; then
  say "no $gpu plugin in $dest (run fetch-plugin.sh $gpu, or gojev-native install --gpu $gpu)"
  exit 3
fi
command -v npm >/dev/null || { say "npm is not on PATH: install Node.js's npm (the plugin comes from the npm package $pkg)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say "downloading $pkg from the npm registry"
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null) || { say "npm pack $pkg failed"; exit 1; }
tarball=$(ls "$tmp"/*.tgz)
echo "$sha  $tarball" | sha256 -c --status || { say "sha256 mismatch for $pkg (want $sha); nothing extracted"; exit 1; }
base=libggml-base.so
[ "$platform" = mac-arm64 ] || [ "$platform" = mac-x64 ] && base=libggml-base.dylib
tar -xzf "$tarball" -C "$tmp" "$folder/$file" "$folder/$base" "$folder/_nlcBuildMetadata.json" package/LICENSE
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp"
cp "$tmp/$folder/$file" "$tmp/$folder/$base" "$tmp/$folder/_nlcBuildMetadata.json" "$tmp/package/LICENSE" "$dest.tmp/"
(cd "$dest.tmp" && sha256 "$file" "$base" > SHA256SUMS)
printf 'package %s\ntarball sha256 %s\nneeds %s\n' "$pkg" "$sha" "$needs" > "$dest.tmp/SOURCE"
touch "$dest.tmp/.complete"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
say "$gpu plugin in $dest (needs $needs)"
echo "$dest/$file"
