#!/usr/bin/env bash
# dasher-rnn-client as a BciPy user gets it: its minimum Python computed from the code (vermin), its wheel built and
# installed into a fresh virtual environment of the oldest Python here from 3.9 on (no torch, no numpy, no
# dasher-rnn; with the WebSocket extra), and its own tests run there against a real `dasher-rnn serve` of this checkout.
#
#   clients/python/check.sh PYTHON_OF_THE_MAIN_VENV      (`make test-client` passes .venv/bin/python)
set -euo pipefail
MAIN_PY=${1:?give the python of the main virtual environment}
MAIN_PY=$(cd "$(dirname "$MAIN_PY")" && pwd)/$(basename "$MAIN_PY")
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
SERVER=
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

"$(dirname "$MAIN_PY")/vermin" --no-tips --violations -t=3.9- "$HERE/src" "$HERE/tests" >/dev/null \
	|| { echo "test-client: vermin finds code that needs a Python newer than 3.9:"; \
	     "$(dirname "$MAIN_PY")/vermin" --no-tips --violations -t=3.9- "$HERE/src" "$HERE/tests"; exit 1; }

CLIENT_PY=
for v in 3.9 3.10; do
	for candidate in "python$v" "$(pyenv root 2>/dev/null)"/versions/$v.*/bin/python$v; do
		if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "" 2>/dev/null; then CLIENT_PY=$candidate; break 2; fi
	done
done
if [ -z "$CLIENT_PY" ]; then
	CLIENT_PY=$MAIN_PY
	echo "test-client: no Python 3.9 or 3.10 here; testing the client on $("$MAIN_PY" -V)"
fi

"$MAIN_PY" -m pip wheel -q --no-deps --no-build-isolation --disable-pip-version-check -w "$WORK/dist" "$HERE"
rm -rf "$HERE/build" "$HERE"/src/*.egg-info
cd "$WORK"  # not the checkout: nothing of dasher-rnn on the path
"$CLIENT_PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check "$(ls "$WORK"/dist/dasher_rnn_client-*.whl)[websocket]" pytest \
	2> >(grep -v "^WARNING: Location" >&2)
"$WORK/venv/bin/python" - <<'PY'
import importlib.util, sys
present = [m for m in ("torch", "numpy", "dasher_rnn") if importlib.util.find_spec(m)]
sys.exit(f"the client's environment has {present}" if present else 0)
PY

# a real server of this checkout on a free port
. "$HERE/serve.sh"
start_server test-client
echo "test-client: $("$WORK/venv/bin/python" -V) against $URL"
DASHER_RNN_URL=$URL "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider "$HERE/tests"
