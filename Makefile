# Two entry points for a fresh machine: `make run` (the app on the shipped model) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt

.PHONY: run test install install-dev check-system lint clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) -e '.[dev]'
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: check-system install
	$(VENV)/bin/dasher-rnn

# A display, and the system libraries Qt's X11 plugin needs: checked with the system Python before anything is
# installed; prints the one apt-get command that installs what is missing (README: "System packages").
check-system:
	@$(PYTHON) -m dasher_rnn.ui.preflight

test: install-dev
	$(VENV)/bin/ruff check dasher_rnn tests bench
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
