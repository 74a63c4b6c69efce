#!/usr/bin/env bash
# Throughput of gojev's decision paths on a GPU machine that has the NVIDIA driver, nvcc, cmake
# and python3, but no Go and no network.
#
# On the build machine (a gojev clone after `make`):
#   scripts/gpu-bench.sh pack [BUNDLE.tar.gz]     default out/gpu-bench.tar.gz, at most 60 MB:
#       bin/jev (stripped), the pinned llama.cpp's ggml/ sources (CPU and CUDA backends only),
#       gguf-py, the Qwen2 vocab GGUF, scripts/synthetic-model.py and this script.
#       GPU_BENCH_PY=3.12 (the GPU machine's python) adds a numpy wheel for a machine without
#       numpy (about 16 MB).
# On the GPU machine, in the unpacked folder:
#   ./gpu-bench.sh run [--arch 90] [--plugin FILE] [--shape qwen2.5-1.5b] [--type f16]
#                      [--rows 64] [--out results] [--grid | --grid-only] [--quant q4_k_m]
#                      [--llama-bench FILE | --build-llama-bench]
#       1. builds the CUDA plugin (libggml-cuda.so, GGML_BACKEND_DL) from the bundled llama.cpp
#          for one architecture (90 = H100/H200), unless --plugin names one already there
#          (plugin/ keeps the last one built); with --grid, with the flash-attention kernels
#          and, unless --llama-bench names one, llama-bench from the same build;
#       2. writes a model of Qwen2.5-1.5B's shape with random weights and the real Qwen2
#          vocabulary and template (scripts/synthetic-model.py);
#       3. generates Banking77-shaped rows (8 and 16 options) and runs jev bench with the
#          paths engine (one sequence), packed and sequential (one at a time): direct with 8
#          and with 16 options, the binary contract, and rows of all 28 intents (the
#          shortlist, the default above 16 options); JSON and charts into --out.
#       4. with --grid: the batch grid of docs/gpu.md on the 8-option rows (sequences per
#          decode, n_batch, n_ubatch, flash attention, kv_unified, the shared prefix), the
#          prepare path and, with --llama-bench, llama.cpp's prefill rate on the same model;
#          again on the model quantized to --quant (jev quantize) unless --quant none;
#          grid.md and grid-*.json into --out. --grid-only skips step 3's runs.
#   ./gpu-bench.sh run --cpu --shape tiny --rows 8     the same on the CPU backend, no CUDA
#       (how the script is tested without a GPU); --build-llama-bench builds a CPU llama-bench
#       from the bundle for the grid.
# Every step prints its time. On 16 cores the run without the grid fits 9 minutes; for one
# device call of at most 10 minutes, the grid goes alone: run --arch 90 --rows 512 --grid-only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "gpu-bench: $*" >&2; }
t0=$(date +%s)
step_start=$t0
step() {
  local now
  now=$(date +%s)
  say "== $1: $((now - step_start))s (total $((now - t0))s)"
  step_start=$now
}

pack() {
  local root out tmp jev tree
  root=$(cd "$here/.." && pwd)
  out="${1:-$root/out/gpu-bench.tar.gz}"
  jev="${JEV_BIN:-$root/bin/jev}"
  tree="${LLAMA_CPP_DIR:-$root/third_party/llama.cpp}"
  [ -x "$jev" ] || { say "no $jev: run make first"; exit 1; }
  [ -f "$tree/ggml/CMakeLists.txt" ] || { say "no llama.cpp tree at $tree: run make first"; exit 1; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  local b="$tmp/gpu-bench"
  mkdir -p "$b/bin" "$b/llama.cpp/models" "$b/scripts" "$b/wheels"
  cp "$jev" "$b/bin/jev"
  strip "$b/bin/jev" 2>/dev/null || true
  # The llama.cpp tree that builds the CUDA plugin and llama-bench, with ggml's CPU and CUDA
  # backends only (the others' folders are read only when enabled) and without the server, its
  # web UI, the tests, examples and models (LLAMA_BUILD_SERVER, _TESTS and _EXAMPLES are off).
  tar -C "$tree" --exclude='ggml/src/ggml-'{vulkan,sycl,opencl,metal,hexagon,et,webgpu,openvino,cann,virtgpu,zdnn,zendnn,rpc,blas,hip,musa} \
    --exclude=tools/{ui,server,cli} --exclude=.git \
    -cf - CMakeLists.txt cmake common ggml gguf-py include src tools vendor LICENSE licenses | tar -C "$b/llama.cpp" -xf -
  cp "$tree/models/ggml-vocab-qwen2.gguf" "$b/llama.cpp/models/"
  cp "$here/synthetic-model.py" "$b/scripts/"
  cp "$here/gpu-bench.sh" "$b/"
  if [ -n "${GPU_BENCH_PY:-}" ]; then
    python3 -m pip download --quiet --only-binary=:all: --platform manylinux2014_x86_64 \
      --python-version "$GPU_BENCH_PY" --no-deps -d "$b/wheels" 'numpy<2.3' >&2 \
      || { say "no numpy wheel for python $GPU_BENCH_PY"; exit 1; }
  fi
  mkdir -p "$(dirname "$out")"
  tar -C "$tmp" -czf "$out" gpu-bench
  local size
  size=$(wc -c <"$out")
  say "wrote $out ($((size / 1048576)) MB)"
  if [ "$size" -gt $((60 * 1048576)) ]; then
    say "the bundle is over 60 MB"
    exit 1
  fi
  echo "$out"
}

run() {
  local arch=90 plugin="" shape=qwen2.5-1.5b wtype=f16 rows=64 out=results cpu=0 threads grid=0 quant=q4_k_m lbench="" build_bench=0 basic=1
  threads=$(nproc 2>/dev/null || echo 4)
  while [ $# -gt 0 ]; do
    case "$1" in
      --arch) arch=$2; shift 2 ;;
      --plugin) plugin=$2; shift 2 ;;
      --shape) shape=$2; shift 2 ;;
      --type) wtype=$2; shift 2 ;;
      --rows) rows=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      --cpu) cpu=1; shift ;;
      --grid) grid=1; shift ;;
      --quant) quant=$2; shift 2 ;;
      --llama-bench) lbench=$2; shift 2 ;;
      --build-llama-bench) build_bench=1; shift ;;
      --grid-only) grid=1 basic=0; shift ;;
      *) say "unknown argument $1"; exit 2 ;;
    esac
  done
  local jev="${JEV_BIN:-$here/bin/jev}" tree="${LLAMA_CPP_DIR:-$here/llama.cpp}"
  jev_bin=$jev
  local synth="$here/scripts/synthetic-model.py"
  [ -f "$synth" ] || synth="$here/synthetic-model.py"
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  say "jev $("$jev" version 2>/dev/null | head -1); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"

  # 1. The CUDA plugin.
  local gpu_flags=()
  if [ "$cpu" = 1 ]; then
    gpu_flags=(-ngl 0)
  else
    # plugin/ keeps the last plugin built; the grid reuses it only when it has the flash-
    # attention kernels (plugin/flash-attn says ON), and the llama-bench built with it.
    if [ -z "$plugin" ] && [ -f "$here/plugin/libggml-cuda.so" ] &&
      { [ "$grid" = 0 ] || [ "$(cat "$here/plugin/flash-attn" 2>/dev/null)" = ON ]; }; then
      plugin="$here/plugin/libggml-cuda.so"
      if [ "$grid" = 1 ] && [ -z "$lbench" ] && [ -x "$out/build-cuda/bin/llama-bench" ]; then
        lbench="$out/build-cuda/bin/llama-bench"
      fi
    fi
    if [ -z "$plugin" ]; then
      command -v nvcc >/dev/null || { say "nvcc is not on PATH (or pass --plugin libggml-cuda.so)"; exit 1; }
      # The flash-attention kernels are most of the build: only the grid (-fa) needs them. With
      # the grid, llama-bench comes from the same build (the plugin beside it, GGML_BACKEND_DL).
      local fa=OFF targets=(ggml-cuda)
      if [ "$grid" = 1 ]; then
        fa=ON
        [ -z "$lbench" ] && targets+=(ggml-cpu llama-bench)
      fi
      buildtree "$tree" "$out/build-cuda" "$threads" "${targets[*]}" -DGGML_CUDA=ON -DGGML_CUDA_FA="$fa" \
        -DCMAKE_CUDA_ARCHITECTURES="$arch"
      mkdir -p "$here/plugin"
      find "$out/build-cuda" \( -name 'libggml-cuda.so' -o -name 'libggml-base.so*' \) -exec cp -P {} "$here/plugin/" \;
      echo "$fa" >"$here/plugin/flash-attn"
      plugin="$here/plugin/libggml-cuda.so"
      if [ "$grid" = 1 ] && [ -z "$lbench" ]; then
        lbench="$out/build-cuda/bin/llama-bench"
      fi
      step "CUDA plugin (flash attention $fa)${lbench:+ and llama-bench} built for sm_$arch"
    fi
    gpu_flags=(--plugin "$plugin")
  fi
  if [ "$grid" = 1 ] && [ -z "$lbench" ] && [ "$build_bench" = 1 ]; then
    buildtree "$tree" "$out/build-cpu" "$threads" "ggml-cpu llama-bench"
    lbench="$out/build-cpu/bin/llama-bench"
    step "llama-bench built (CPU)"
  fi

  # 2. The model.
  local model="$out/synthetic-$shape-$wtype.gguf"
  if [ ! -f "$model" ]; then
    local pp="" 
    if ! python3 -c 'import numpy' 2>/dev/null; then
      local wheel
      wheel=$(ls "$here"/wheels/numpy-*-cp"$(python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')"-*.whl 2>/dev/null | head -1 || true)
      [ -n "$wheel" ] || { say "python3 has no numpy and the bundle no wheel for this python"; exit 1; }
      python3 -m pip install --quiet --no-index --target "$out/pylib" "$wheel" >&2
      pp="$out/pylib"
    fi
    PYTHONPATH="$pp${PYTHONPATH:+:$PYTHONPATH}" python3 "$synth" --shape "$shape" --type "$wtype" --llama-cpp "$tree" -o "$model"
    step "synthetic model ($shape, $wtype)"
  fi

  # 3. Rows shaped like the Banking77 decision rows, and the runs.
  python3 - "$rows" "$out" <<'PY'
import json, random, sys
n, out = int(sys.argv[1]), sys.argv[2]
rng = random.Random(77)
intents = ["card arrival", "card linking", "exchange rate", "top up failed", "pending transfer", "lost or stolen card",
           "declined card payment", "wrong amount of cash received", "cash withdrawal charge", "change pin",
           "verify my identity", "refund not showing up", "transfer not received by recipient", "beneficiary not allowed",
           "direct debit payment not recognised", "apple pay or google pay", "card payment fee charged", "balance not updated after bank transfer",
           "country support", "disposable card limits", "edit personal details", "exchange charge", "getting spare card",
           "terminate account", "unable to verify identity", "virtual card not working", "why verify identity", "automatic top up"]
words = ("i my the card account money transfer bank app yesterday still not why how can you please help payment "
         "charged twice week phone online shop atm cash euro pounds dollar rate fee").split()
for k in (8, 16):
    with open(f"{out}/rows-{k}opt.jsonl", "w") as f:
        for i in range(n):
            opts = rng.sample(intents, k)
            msg = " ".join(rng.choice(words) for _ in range(rng.randint(8, 30))).capitalize() + "?"
            f.write(json.dumps({"id": f"r{i}", "state": {"message": msg},
                                "question": "Which intent does this customer message express?",
                                "options": [{"id": o.replace(" ", "_"), "description": o} for o in opts],
                                "label": opts[0].replace(" ", "_")}) + "\n")
# Every intent an option (28): rows of more than 16 options, decided by the shortlist (the default).
with open(f"{out}/rows-28opt.jsonl", "w") as f:
    for i in range(n):
        opts = rng.sample(intents, len(intents))
        msg = " ".join(rng.choice(words) for _ in range(rng.randint(8, 30))).capitalize() + "?"
        f.write(json.dumps({"id": f"r{i}", "state": {"message": msg},
                            "question": "Which intent does this customer message express?",
                            "options": [{"id": o.replace(" ", "_"), "description": o} for o in opts],
                            "label": opts[0].replace(" ", "_")}) + "\n")
PY
  local nbin=$(( rows < 16 ? rows : 16 ))
  if [ "$basic" = 1 ]; then
  "$jev" bench -m "$model" -t "$threads" "${gpu_flags[@]}" -i "$out/rows-8opt.jsonl" --paths engine,packed,sequential -o "$out/direct-8opt.json" >"$out/direct-8opt.txt"
  step "jev bench, direct, 8 options, $rows rows"
  "$jev" bench -m "$model" -t "$threads" "${gpu_flags[@]}" -i "$out/rows-16opt.jsonl" --paths engine,packed,sequential -o "$out/direct-16opt.json" >"$out/direct-16opt.txt"
  step "jev bench, direct, 16 options, $rows rows"
  "$jev" bench -m "$model" -t "$threads" "${gpu_flags[@]}" --contract binary -n "$nbin" -i "$out/rows-16opt.jsonl" --paths engine,packed,sequential -o "$out/binary-16opt.json" >"$out/binary-16opt.txt"
  step "jev bench, binary, 16 candidates, $nbin rows"
  "$jev" bench -m "$model" -t "$threads" "${gpu_flags[@]}" -n "$nbin" -i "$out/rows-28opt.jsonl" --paths engine,packed,sequential -o "$out/shortlist-28opt.json" >"$out/shortlist-28opt.txt"
  step "jev bench, shortlist (the default above 16 options), 28 options, $nbin rows"
  cat "$out"/direct-8opt.txt "$out"/direct-16opt.txt "$out"/binary-16opt.txt "$out"/shortlist-28opt.txt
  fi
  if [ "$grid" = 1 ]; then
    local models=("$model")
    if [ "$quant" != none ]; then
      local qmodel="$out/synthetic-$shape-$quant.gguf"
      [ -f "$qmodel" ] || "$jev" quantize "$model" "$qmodel" --type "$quant" -t "$threads" >&2
      step "jev quantize $wtype -> $quant"
      models+=("$qmodel")
    fi
    for m in "${models[@]}"; do
      gridrun "$m" "$out" "$threads" "$lbench" "${gpu_flags[@]}"
    done
    python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
lines = ["| model | setting | decisions/s | prompt tokens/s | packed/engine | share of llama-bench |", "|---|---|---|---|---|---|"]
for path in sorted(glob.glob(f"{out}/grid-*.json"), key=os.path.getmtime):
    r = json.load(open(path))
    name = os.path.basename(path)[5:-5]
    model, _, setting = name.partition("--")
    hw = r.get("hardware_prompt_tokens_per_s") or 0
    for key in ("prepare", "engine", "packed"):
        p = r.get(key)
        if not p:
            continue
        share = f"{p['prompt_tokens_per_s'] / hw:.0%}" if hw and key != "prepare" else ""
        ratio = f"{r['ratios'].get('packed_vs_engine', 0):.2f}" if key == "packed" and r["ratios"].get("packed_vs_engine") else ""
        lines.append(f"| {model} | {setting} {key} | {p['decisions_per_s']:.1f} | {p['prompt_tokens_per_s']:.0f} | {ratio} | {share} |")
    if hw:
        lines.append(f"| {model} | llama-bench -p {r.get('hardware_prompt_tokens')} | | {hw:.0f} | | 100% |")
open(f"{out}/grid.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
  fi
  say "results in $out (JSON, SVG charts, text); total $(( $(date +%s) - t0 ))s"
}

# buildtree TREE BUILD THREADS "TARGETS" CMAKE_FLAGS...: configures the bundled llama.cpp tree
# as shared libraries with dynamically loaded backends (GGML_BACKEND_DL; the backends land in
# BUILD/bin beside llama-bench, which loads them from there) and builds TARGETS.
buildtree() {
  local tree=$1 build=$2 threads=$3 targets=$4
  shift 4
  cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_OPENSSL=OFF "$@" >"$build.configure.log" 2>&1 \
    || { tail -20 "$build.configure.log" >&2; say "cmake configure failed ($build.configure.log)"; exit 1; }
  # shellcheck disable=SC2086
  cmake --build "$build" --target $targets -j "$threads" >"$build.log" 2>&1 \
    || { tail -30 "$build.log" >&2; say "the build of $targets failed ($build.log)"; exit 1; }
}

# gridrun MODEL OUT THREADS LLAMA_BENCH GPU_FLAGS...: the batch grid on the 8-option rows, one
# jev bench each (grid-<model>--<setting>.json); the first adds the prepare and engine paths and,
# with a llama-bench, the hardware's prefill rate.
gridrun() {
  local model=$1 out=$2 threads=$3 lbench=$4
  shift 4
  local name
  name=$(basename "$model" .gguf)
  name=${name#synthetic-}
  # setting|flags: n_ctx grows with the sequences a decode packs (about 256 tokens each).
  local settings=(
    "s16-b512|--pack-seqs 16 -c 4096 -b 512"
    "s64-b2048|--pack-seqs 64 -c 16384 -b 2048"
    "s128-b4096-ub1024|--pack-seqs 128 -c 32768 -b 4096 -ub 1024"
    "s128-b8192-ub2048|--pack-seqs 128 -c 32768 -b 8192 -ub 2048"
    "s128-b4096-ub1024-fa|--pack-seqs 128 -c 32768 -b 4096 -ub 1024 -fa"
    "s128-b4096-ub1024-noprefix|--pack-seqs 128 -c 32768 -b 4096 -ub 1024 --no-shared-prefix"
    "s128-b4096-ub1024-split|--pack-seqs 128 -c 512 -b 4096 -ub 1024 --no-kv-unified"
    "s255-b8192-ub4096-fa|--pack-seqs 255 -c 65536 -b 8192 -ub 4096 -fa"
  )
  local first=1 s setting flags paths
  for s in "${settings[@]}"; do
    setting=${s%%|*} flags=${s#*|}
    paths=packed
    if [ "$first" = 1 ]; then
      paths=prepare,engine,packed
      [ -n "$lbench" ] && paths=$paths,hardware
    fi
    # shellcheck disable=SC2086
    "$jev_bin" bench -m "$model" -t "$threads" "$@" $flags ${lbench:+--llama-bench "$lbench"} -i "$out/rows-8opt.jsonl" \
      --paths "$paths" -o "$out/grid-$name--$setting.json" >"$out/grid-$name--$setting.txt" 2>"$out/grid-$name--$setting.log" \
      || { tail -5 "$out/grid-$name--$setting.log" >&2; say "grid $name $setting failed"; }
    step "grid, $name, $setting"
    first=0
  done
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
