#!/usr/bin/env bash
# Build llama.cpp's static libraries once and point third_party/native at them.
#
#   build-native.sh          the libraries (llama, ggml*, llama-common*, gojev-chat)
#   build-native.sh server   also llama-server and llama-bench into <entry>/bin (tests, jev bench)
#
# The result lives in a cache keyed by the pinned commit, the CMake flags, CMakeLists.txt, the
# compiler and the machine: $GOJEV_CACHE/native/<key>/{lib,include} (GOJEV_CACHE defaults to
# ~/.cache/gojev). A second run, or a fresh clone on the same machine, finds the key and does no
# native work. third_party/native is a symlink to the cache entry; llama/cgo_*.go link through it.
#
# Environment: GOJEV_CUDA=1 or GOJEV_METAL=1 choose a GPU backend; GOJEV_NATIVE_CPU=1 tunes for
# this CPU; LLAMA_CPP_DIR uses an existing checkout; JOBS sets build parallelism.
# GOJEV_SRC_DIR is where fetch.sh puts llama.cpp (default third_party/llama.cpp); GOJEV_NO_LINK=1
# leaves third_party/native and the source tree alone (also when third_party is not writable);
# GOJEV_NO_BUILD=1 only prints the entry when it is built (exit status 3 when it is not);
# GOJEV_PRINT_BUILD_TREE=1 only prints the build tree this clone would use.
#
# The script runs from a read-only folder too (a module in the Go module cache, where files lose
# their exec bit): it needs no exec bit and writes only to the cache. The cache key is computed
# before fetching, so a found entry costs no fetch. cmd/gojev-native runs it that way.
set -euo pipefail
want_server=0
[ "${1:-}" = server ] && want_server=1
root=$(cd "$(dirname "$0")/.." && pwd)
cache="${GOJEV_CACHE:-$HOME/.cache/gojev}"
say() { echo "native: $*" >&2; }

# The key needs no source tree: the pinned commit (or LLAMA_CPP_DIR's HEAD) and the flags without
# the source path. The source is fetched only when the entry has to be built.
commit=$(grep -E '^LLAMA_CPP_COMMIT=' "$root/third_party/llama.cpp.pin" | cut -d= -f2)
if [ -n "${LLAMA_CPP_DIR:-}" ]; then
  commit=$(git -C "$LLAMA_CPP_DIR" rev-parse HEAD 2>/dev/null || echo "dir:$LLAMA_CPP_DIR")
fi
src="(not fetched)"
fetch() {
  [ "$src" = "(not fetched)" ] || return 0
  src=$(bash "$root/third_party/fetch.sh")
  flags[1]="-DLLAMA_CPP_DIR=$src"
}

flags=(-DCMAKE_BUILD_TYPE=Release "-DLLAMA_CPP_DIR=$src")
[ "${GOJEV_CUDA:-0}" = 1 ] && flags+=(-DGOJEV_CUDA=ON)
[ "${GOJEV_METAL:-0}" = 1 ] && flags+=(-DGOJEV_METAL=ON)
[ "${GOJEV_NATIVE_CPU:-0}" = 1 ] && flags+=(-DGOJEV_NATIVE_CPU=ON)

key=$( {
  echo "$commit"
  printf '%s\n' "${flags[@]}" | grep -v LLAMA_CPP_DIR
  cat "$root/CMakeLists.txt" "$root"/csrc/* "$root"/third_party/patches/*
  ${CXX:-c++} --version | head -1
  uname -sm
} | sha256sum | cut -c1-16)
out="$cache/native/$key"
if [ "${GOJEV_NO_BUILD:-0}" = 1 ]; then
  # Only look: the entry's path when it is built, exit status 3 when it is not.
  [ -f "$out/.complete" ] || { say "no native build in $out (run build-native.sh without GOJEV_NO_BUILD)"; exit 3; }
  echo "$out"
  exit 0
fi

# The build tree is kept (keyed by the flags and this clone's path), so a later `server` build,
# or a change to csrc/, compiles only what changed. CMake ties a build tree to the source folder
# it was configured from: keyed by the flags alone, a second clone's `make server` failed ("does
# not match the source ... used to generate cache"), so each clone has its own build tree, and
# the built libraries and binaries ($out) are shared.
bkey=$(printf '%s\n' "$commit" "${flags[@]}" "$root" | grep -v LLAMA_CPP_DIR | sha256sum | cut -c1-16)
build="$cache/build/$bkey"
if [ "${GOJEV_PRINT_BUILD_TREE:-0}" = 1 ]; then
  echo "$build"
  exit 0
fi
jobs="${JOBS:-$(nproc 2>/dev/null || sysctl -n hw.ncpu)}"
configure() {
  command -v cmake >/dev/null || { say "cmake is not on PATH: install cmake (3.14 or later) and a C/C++ compiler"; exit 1; }
  fetch
  mkdir -p "$build"
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$root" -B "$build" "${gen[@]}" "${flags[@]}" -DGOJEV_BUILD_SERVER=ON >"$build.configure.log" 2>&1 \
    || { cat "$build.configure.log" >&2; say "cmake configure failed"; exit 1; }
}

if [ ! -f "$out/.complete" ]; then
  say "building llama.cpp ($commit) into $out; this takes a few minutes the first time"
  configure
  cmake --build "$build" --config Release -j "$jobs" \
    --target llama ggml ggml-base ggml-cpu llama-common llama-common-base gojev-chat >&2
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp/lib" "$out.tmp/include"
  # The archives the cgo layer links (libggml-<backend>.a for whichever backends were built).
  find "$build" \( -name 'libllama.a' -o -name 'libggml*.a' -o -name 'libllama-common*.a' \
    -o -name 'libgojev-chat.a' -o -name 'libcpp-httplib.a' \) -exec cp {} "$out.tmp/lib/" \;
  cp "$src"/include/*.h "$src"/ggml/include/*.h "$root"/csrc/*.h "$out.tmp/include/"
  printf '%s\n' "$commit" "${flags[@]}" > "$out.tmp/BUILDINFO"
  touch "$out.tmp/.complete"
  rm -rf "$out"
  mv "$out.tmp" "$out"
  say "done: $(ls "$out/lib" | tr '\n' ' ')"
fi
if [ "$want_server" = 1 ] && [ ! -x "$out/bin/llama-server" ]; then
  say "building llama-server and llama-bench from the pin (tests and benchmarks only); about 9 minutes on 2 cores the first time"
  configure
  cmake --build "$build" --config Release -j "$jobs" --target llama-server llama-bench >&2
  mkdir -p "$out/bin.tmp"
  cp "$build/bin/llama-server" "$build/bin/llama-bench" "$out/bin.tmp/"
  rm -rf "$out/bin"
  mv "$out/bin.tmp" "$out/bin"
  say "done: $out/bin/llama-server"
fi
if [ "${GOJEV_NO_LINK:-0}" != 1 ] && [ -w "$root/third_party" ]; then
  # In a clone, as before: the source tree is there too (tests read it), and the link.
  fetch >/dev/null
  ln -sfn "$out" "$root/third_party/native"
fi
echo "$out"
