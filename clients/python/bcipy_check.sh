#!/usr/bin/env bash
# BciPy's own language-model tests, run as BciPy runs them: bcipy/language/tests/test_ngram.py and test_uniform.py,
# taken from BciPy's wheel, with only the class each constructs swapped for our client's adapter
# (NGramLanguageModelAdapter(lm_path) -> DasherRNNLanguageModel.from_server: their test's model is the server, another
# lm_path is where a server should be;
# UniformLanguageModel() -> the same on the server's "uniform" model), under Python 3.9 (BciPy needs 3.9 or 3.10)
# in a fresh virtual environment with the client's wheel, against a real `dasher-rnn serve` of this checkout.
#
# BciPy's wheel is installed without its dependencies (PsychoPy, torch 2.2, Qt...; its language tests need none of
# them: textslinger's exceptions, numpy and pytest are installed beside it). Where Python 3.9 or 3.10, or BciPy's or
# textslinger's wheel, cannot be had (no network, no such Python), it says why and skips (exit 0).
#
#   clients/python/bcipy_check.sh PYTHON_OF_THE_MAIN_VENV      (`make test-bcipy` passes .venv/bin/python)
set -euo pipefail
MAIN_PY=${1:?give the python of the main virtual environment}
MAIN_PY=$(cd "$(dirname "$MAIN_PY")" && pwd)/$(basename "$MAIN_PY")
HERE=$(cd "$(dirname "$0")" && pwd)
BCIPY=bcipy==2.0.1
TEXTSLINGER=textslinger==0.1.1
WORK=$(mktemp -d)
SERVER=
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
skip() { echo "test-bcipy: skipped: $*"; exit 0; }

BCIPY_PY=
for v in 3.9 3.10; do
	for candidate in "python$v" "$(pyenv root 2>/dev/null)"/versions/$v.*/bin/python$v; do
		if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "" 2>/dev/null; then BCIPY_PY=$candidate; break 2; fi
	done
done
[ -n "$BCIPY_PY" ] || skip "no Python 3.9 or 3.10 here (BciPy $BCIPY needs one); pyenv install 3.9 gives one"

"$MAIN_PY" -m pip wheel -q --no-deps --no-build-isolation --disable-pip-version-check -w "$WORK/dist" "$HERE"
rm -rf "$HERE/build" "$HERE"/src/*.egg-info
cd "$WORK"  # not the checkout: nothing of dasher-rnn on the path
"$BCIPY_PY" -m venv "$WORK/venv"
PIP=("$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check)
"${PIP[@]}" "$(ls "$WORK"/dist/dasher_rnn_client-*.whl)" numpy pytest 2>"$WORK/pip.log" \
	|| skip "could not install the client's wheel, numpy and pytest on $("$BCIPY_PY" -V): $(grep -v '^WARNING' "$WORK/pip.log" | tail -1)"
"${PIP[@]}" --no-deps "$BCIPY" "$TEXTSLINGER" 2>"$WORK/pip.log" \
	|| skip "BciPy's wheel cannot be had ($BCIPY, $TEXTSLINGER: $(grep -v '^WARNING' "$WORK/pip.log" | tail -1))"

# their tests, as they ship, with only the constructed class swapped
TESTS=$("$WORK/venv/bin/python" -c "import bcipy.language, os; print(os.path.join(os.path.dirname(bcipy.language.__file__), 'tests'))")
mkdir "$WORK/tests"
swap() {  # FILE, the import line as BciPy ships it, the lines that replace it
	grep -qxF "$2" "$TESTS/$1" || { echo "test-bcipy: BciPy's $1 no longer has the line '$2': the swap needs a look"; exit 1; }
	F="$TESTS/$1" OLD="$2" NEW="$3" "$WORK/venv/bin/python" -c '
import os
text = open(os.environ["F"], encoding="utf-8").read()
print(text.replace(os.environ["OLD"] + "\n", os.environ["NEW"] + "\n", 1), end="")' >"$WORK/tests/$1"
}
swap test_ngram.py "from bcipy.language.model.ngram import NGramLanguageModelAdapter" \
	"from dasher_rnn_swap import NGramLanguageModelAdapter"
swap test_uniform.py "from bcipy.language.model.uniform import UniformLanguageModel, equally_probable" \
	"from bcipy.language.model.uniform import equally_probable
from dasher_rnn_swap import UniformLanguageModel"
cat >"$WORK/tests/dasher_rnn_swap.py" <<'PY'
"""The classes BciPy's tests construct, as our client's adapter over the server at $DASHER_RNN_URL."""
import os

from dasher_rnn_client.bcipy import DasherRNNLanguageModel

URL = os.environ["DASHER_RNN_URL"]


THEIR_MODEL = "lm_dec19_char_tiny_12gram.kenlm"  # the n-gram model their tests load


def NGramLanguageModelAdapter(lm_path=None):
    """BciPy's n-gram adapter loads the model at lm_path; ours predicts with a server. The model their tests load
    (or none given) is the server at $DASHER_RNN_URL; any other lm_path is where a server should be, and a path
    such as phonymodel.txt is none."""
    if lm_path is None or os.path.basename(lm_path) == THEIR_MODEL:
        return DasherRNNLanguageModel.from_server(URL)
    return DasherRNNLanguageModel.from_server(lm_path)


def UniformLanguageModel():
    """BciPy's uniform model: the server's, every symbol as it is (a capital is not the sum of its two cases)."""
    return DasherRNNLanguageModel.from_server(URL, model="uniform", case="exact")
PY

# a real server of this checkout on a free port
. "$HERE/serve.sh"
start_server test-bcipy
echo "test-bcipy: BciPy $BCIPY's test_ngram.py and test_uniform.py on $("$WORK/venv/bin/python" -V) against $URL"
cd "$WORK/tests"
DASHER_RNN_URL=$URL "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider -W ignore::pytest.PytestUnknownMarkWarning \
	test_ngram.py test_uniform.py
