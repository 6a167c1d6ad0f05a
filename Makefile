# Two entry points for a fresh machine: `make run` (the app on the shipped model, the light install: no PyTorch) and
# `make test` (with PyTorch, the `train` extra, for the tests).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt

.PHONY: run test test-system test-client test-bcipy install install-dev check-system lint clean bundle bundle-test

# dasher-rnn depends on the API's client, dasher-rnn-client (clients/python), installed from the checkout with it
CLIENT := clients/python
CLIENT_SOURCES := $(CLIENT)/pyproject.toml $(wildcard $(CLIENT)/src/dasher_rnn_client/*.py)

$(VENV)/.installed: pyproject.toml constraints.txt $(CLIENT_SOURCES)
	$(PYTHON) -m venv $(VENV)
	$(PIP) ./$(CLIENT) -e .
	rm -rf $(CLIENT)/build $(CLIENT)/src/*.egg-info
	touch $@

# the tests need PyTorch too (the train extra; constraints.txt pins it), and the input extras whose protocols and
# head pointer they drive (webcam: OpenCV; pupil: ZeroMQ and msgpack)
$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) ./$(CLIENT) -e '.[dev,train,webcam,pupil]'
	rm -rf $(CLIENT)/build $(CLIENT)/src/*.egg-info
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: check-system install
	$(VENV)/bin/dasher-rnn

# A display, and the system libraries Qt's X11 plugin needs: checked with the system Python before anything is
# installed; prints the one apt-get command that installs what is missing (README: "System packages").
check-system:
	@$(PYTHON) -m dasher_rnn.ui.preflight

# What the direct-output, docking and speech tests run on a virtual X screen: Xvfb, openbox (a window manager),
# espeak-ng (the voice `make run`'s check names), and the libraries Qt's X11 plugin needs for the program that
# receives the text. Installed quietly as root where apt-get exists; elsewhere those tests skip.
TEST_DEBS := xvfb openbox espeak-ng libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-randr0 \
	libxcb-shape0 libxcb-xkb1 libxkbcommon-x11-0 libegl1 libgl1 libfontconfig1 libdbus-1-3
test-system:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! dpkg -s $(TEST_DEBS) >/dev/null 2>&1; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$(TEST_DEBS)) >/dev/null 2>&1 || echo "test-system: could not install $(TEST_DEBS); the X tests will skip"; \
	fi

# mypy type-checks the core packages named in pyproject.toml ([tool.mypy]); its cache makes a second run quick
test: install-dev test-system
	$(VENV)/bin/ruff check dasher_rnn tests bench packaging tools $(CLIENT)
	$(VENV)/bin/mypy
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q
	$(CLIENT)/check.sh $(PY)
	$(CLIENT)/bcipy_check.sh $(PY)

# The client as a BciPy user gets it: vermin's minimum Python, its wheel in a fresh venv of Python 3.9 (or the
# oldest here) without torch or numpy, its own tests against a real `dasher-rnn serve`
test-client: install-dev
	$(CLIENT)/check.sh $(PY)

# BciPy's own language-model tests (test_ngram.py, test_uniform.py from its wheel) with only the class they construct
# swapped for the client's adapter, on Python 3.9 against a real `dasher-rnn serve`; says why and skips where Python
# 3.9/3.10 or BciPy's wheel cannot be had
test-bcipy: install-dev
	$(CLIENT)/bcipy_check.sh $(PY)

# The self-contained build (README: "Without Python"): PyInstaller freezes the light install (a venv of its own, no
# PyTorch) into dist/dasher-rnn, a folder that runs without Python, and packs it as dist/dasher-rnn-VERSION-linux-ARCH.tar.gz
BUNDLE_VENV := .bundle-venv
BUNDLE_PIP := $(BUNDLE_VENV)/bin/python -m pip install --disable-pip-version-check -q -c constraints.txt
$(BUNDLE_VENV)/.installed: pyproject.toml constraints.txt $(CLIENT_SOURCES)
	$(PYTHON) -m venv $(BUNDLE_VENV)
	$(BUNDLE_PIP) ./$(CLIENT) . pyinstaller
	rm -rf $(CLIENT)/build $(CLIENT)/src/*.egg-info build/lib build/bdist.*
	touch $@

bundle: $(BUNDLE_VENV)/.installed
	$(BUNDLE_PIP) --no-deps --force-reinstall .  # this checkout's dasher_rnn, as it is now
	rm -rf build/lib build/bdist.* dasher_rnn.egg-info
	$(BUNDLE_VENV)/bin/pyinstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller \
		packaging/dasher-rnn.spec
	tar -czf dist/dasher-rnn-$$($(BUNDLE_VENV)/bin/python -c 'import dasher_rnn; print(dasher_rnn.__version__)')-linux-$$(uname -m).tar.gz \
		-C dist dasher-rnn

# what a person without Python runs, from a clean environment: eval, simulate, serve, and the window under Xvfb
bundle-test: bundle
	$(PYTHON) packaging/smoke_test.py dist/dasher-rnn

clean:
	rm -rf $(VENV) $(BUNDLE_VENV) .pytest_cache .ruff_cache .mypy_cache build dist
