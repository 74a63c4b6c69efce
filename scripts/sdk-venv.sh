#!/usr/bin/env bash
# Make the Python venv that holds TypeSafe's official System One client (typesafe-sdk, MIT,
# from PyPI) and print its python's path: systemone's TestOfficialSDK points that client at a
# gojev server. The versions are pinned, every dependency too, in
# systemone/testdata/sdk-requirements.txt (with the zstd extra, so the client compresses bodies
# as it does on Python 3.14+). The venv lives in the cache, ${GOJEV_CACHE:-~/.cache/gojev}/venv/
# typesafe-sdk-<sha of the requirements>, so a second run only prints the path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
req="$root/systemone/testdata/sdk-requirements.txt"
sum="$(sha256sum "$req" | cut -c1-12)"
venv="${GOJEV_CACHE:-$HOME/.cache/gojev}/venv/typesafe-sdk-$sum"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$req" >&2
  "$venv/bin/python" -c 'import typesafe_sdk, backports.zstd' >&2
  touch "$venv/.complete"
fi
echo "$venv/bin/python"
