#!/usr/bin/env python3
"""Write a GGUF model of a real shape with random weights, for throughput runs where a real
model's hundreds of MB cannot travel (scripts/gpu-bench.sh).

    synthetic-model.py --shape qwen2.5-1.5b -o model.gguf [--type f16|q8_0] [--seed 1]
    synthetic-model.py --shape tiny -o tiny.gguf            (2 layers, 64 wide: tests)

The vocabulary, merges, special tokens and chat template are copied from a vocab-only GGUF,
by default the Qwen2 one in the pinned llama.cpp tree (models/ggml-vocab-qwen2.gguf), so
gojev's start-up checks (16 single-token letters, the boundary) pass exactly as on the real
model. The architecture is llama.cpp's qwen2 (biases on q/k/v, tied embeddings). Throughput
depends on the shape and the weight type, not on the weights' values; the decisions of such a
model mean nothing.

Needs numpy and gguf-py (the pinned tree's gguf-py/ is put on sys.path when --llama-cpp or
third_party/llama.cpp is there).
"""
import argparse
import os
import sys
import time

SHAPES = {
    # Qwen2.5-1.5B(-Instruct, and -Coder): config.json of the Hugging Face release.
    "qwen2.5-1.5b": dict(n_embd=1536, n_layer=28, n_head=12, n_head_kv=2, n_ff=8960),
    # Small enough to decide in a test, even on a software Vulkan device.
    "tiny": dict(n_embd=64, n_layer=2, n_head=4, n_head_kv=2, n_ff=128),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="qwen2.5-1.5b")
    ap.add_argument("-o", "--output", required=True, help="the GGUF file to write")
    ap.add_argument("--type", choices=["f16", "f32", "q8_0"], default="f16", help="weight type of the matrices")
    ap.add_argument("--llama-cpp", default=os.path.join(here, "..", "third_party", "llama.cpp"),
                    help="the llama.cpp tree (for gguf-py and the vocab)")
    ap.add_argument("--vocab", help="vocab-only GGUF to copy the tokenizer and chat template from "
                    "(default <llama-cpp>/models/ggml-vocab-qwen2.gguf)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.llama_cpp, "gguf-py"))
    try:
        import numpy as np
        import gguf
    except ImportError as e:
        sys.exit(f"synthetic-model: {e} (needs numpy, and gguf-py from the llama.cpp tree: --llama-cpp)")
    vocab_path = a.vocab or os.path.join(a.llama_cpp, "models", "ggml-vocab-qwen2.gguf")
    reader = gguf.GGUFReader(vocab_path)
    s = SHAPES[a.shape]
    t0 = time.time()

    w = gguf.GGUFWriter(a.output, "qwen2")
    w.add_name(f"synthetic {a.shape} (random weights)")
    w.add_context_length(32768)
    w.add_embedding_length(s["n_embd"])
    w.add_block_count(s["n_layer"])
    w.add_feed_forward_length(s["n_ff"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type({"f32": 0, "f16": 1, "q8_0": 7}[a.type])
    n_vocab = 0
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            items = field.contents()
            if key == "tokenizer.ggml.tokens":
                n_vocab = len(items)
            w.add_key_value(key, items, vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(key, field.contents(), vtype)
    if n_vocab == 0:
        sys.exit(f"synthetic-model: {vocab_path} has no tokenizer.ggml.tokens")

    rng = np.random.default_rng(a.seed)
    qtype = {"f32": gguf.GGMLQuantizationType.F32, "f16": gguf.GGMLQuantizationType.F16,
             "q8_0": gguf.GGMLQuantizationType.Q8_0}[a.type]

    def matrix(name, rows, cols):
        # numpy shape (rows, cols) is ggml's ne = [cols, rows]: cols inputs, rows outputs.
        m = (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02)
        if a.type == "f16":
            w.add_tensor(name, m.astype(np.float16))
        elif a.type == "q8_0":
            w.add_tensor(name, gguf.quants.quantize(m, qtype), raw_shape=m.shape, raw_dtype=qtype)
        else:
            w.add_tensor(name, m)

    def vector(name, n, value=None):
        v = np.full(n, value, dtype=np.float32) if value is not None else (rng.standard_normal(n, dtype=np.float32) * 0.02)
        w.add_tensor(name, v)

    e, kv = s["n_embd"], s["n_embd"] // s["n_head"] * s["n_head_kv"]
    matrix("token_embd.weight", n_vocab, e)
    vector("output_norm.weight", e, 1.0)
    for i in range(s["n_layer"]):
        p = f"blk.{i}."
        vector(p + "attn_norm.weight", e, 1.0)
        matrix(p + "attn_q.weight", e, e)
        vector(p + "attn_q.bias", e)
        matrix(p + "attn_k.weight", kv, e)
        vector(p + "attn_k.bias", kv)
        matrix(p + "attn_v.weight", kv, e)
        vector(p + "attn_v.bias", kv)
        matrix(p + "attn_output.weight", e, e)
        vector(p + "ffn_norm.weight", e, 1.0)
        matrix(p + "ffn_gate.weight", s["n_ff"], e)
        matrix(p + "ffn_up.weight", s["n_ff"], e)
        matrix(p + "ffn_down.weight", e, s["n_ff"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    size = os.path.getsize(a.output)
    print(f"synthetic-model: {a.output}: {a.shape}, {a.type}, vocab {n_vocab} from {os.path.basename(vocab_path)}, "
          f"{size / 2**20:.1f} MiB in {time.time() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
