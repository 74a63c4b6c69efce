#!/usr/bin/env bash
# Make the Python venv that holds the Python clients people point at a System One server, and
# print its python's path: systemone's tests run them, unmodified, against a gojev server.
#   typesafe-sdk 0.7.5 (MIT): TypeSafe's official client (TestOfficialSDK), with the zstd extra
#     (backports.zstd), so it compresses bodies as it does on Python 3.14+;
#   jev-eval 1.2.0: `jev-eval run` posts to $TYPESAFE_AI_BASE_URL/systemone (stdlib urllib);
#   jev-grep 0.6.0 (`jgrep`) on jevkit-runtime 0.4.3 (httpx); see systemone/testdata/clients/.
# All come from PyPI, pinned with every dependency in systemone/testdata/sdk-requirements.txt
# (installed with --no-deps, so that list is complete; `pip check` passes on it). The venv lives
# in the cache, ${GOJEV_CACHE:-~/.cache/gojev}/venv/typesafe-sdk-<sha of the requirements>, so a
# second run only prints the path.
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
  "$venv/bin/python" -m pip check --disable-pip-version-check >&2
  "$venv/bin/python" -c 'import typesafe_sdk, backports.zstd, jev_eval, jgrep, jevkit_runtime' >&2
  for tool in jgrep jev-eval; do
    [ -x "$venv/bin/$tool" ] || { echo "sdk-venv: $venv/bin/$tool is missing" >&2; exit 1; }
  done
  touch "$venv/.complete"
fi
echo "$venv/bin/python"
