# devportal: every target sets up its own virtual environment from requirements.lock first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO_WAREHOUSE ?= warehouse/demo.duckdb
# `make models` and `make report` read the synced warehouse; before any sync, the demo's (so
# `make report` after `make demo` reads what the demo made). `make sync` always writes this one.
SYNC_WAREHOUSE := warehouse/warehouse.duckdb
WAREHOUSE ?= $(if $(wildcard $(SYNC_WAREHOUSE)),$(SYNC_WAREHOUSE),$(if $(wildcard $(DEMO_WAREHOUSE)),$(DEMO_WAREHOUSE),$(SYNC_WAREHOUSE)))
ARGS ?=
# the browser of the HTML report's browser test and the WebDriver that drives it (selenium;
# tests/models/browser.py reads $CHROMIUM and $CHROMEDRIVER): Debian's, of one version
export CHROMIUM ?= chromium
export CHROMEDRIVER ?= chromedriver

.DEFAULT_GOAL := help
.PHONY: help setup chromium demo demo-postgres sync models report sandbox test soak lint bench notebook lock clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

$(STAMP): requirements.lock pyproject.toml
	@echo "setting up $(VENV) from requirements.lock (once)" >&2
	@$(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock >&2
	@$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . >&2
	@touch $(STAMP)

setup: $(STAMP)  ## create .venv and install the locked dependencies

demo: $(STAMP)  ## sandbox -> sync -> clock advance -> sync -> models -> report
	@$(BIN)/devportal demo --warehouse $(DEMO_WAREHOUSE) $(ARGS)

demo-postgres: $(STAMP)  ## the demo on PostgreSQL (a throwaway local server unless DESTINATION__POSTGRES__CREDENTIALS is set)
	@$(BIN)/devportal demo --destination postgres --warehouse warehouse/demo-postgres.duckdb $(ARGS)

sync: $(STAMP)  ## sync the configured API (.dlt/config.toml, secrets) into the warehouse
	@$(BIN)/devportal sync --warehouse $(if $(filter command line environment,$(origin WAREHOUSE)),$(WAREHOUSE),$(SYNC_WAREHOUSE)) $(ARGS)

models: $(STAMP)  ## build the SQL models (analytics schema) and run their data tests
	@$(BIN)/devportal models --warehouse $(WAREHOUSE) --check $(ARGS)

report: $(STAMP)  ## print the business report from the warehouse
	@$(BIN)/devportal report --warehouse $(WAREHOUSE) $(ARGS)

sandbox: $(STAMP)  ## run the Developer API sandbox in the foreground
	@$(BIN)/devportal sandbox $(ARGS)

chromium:  ## Debian's chromium and chromium-driver for the browser test (apt-get, as root, when missing)
	@if command -v "$(CHROMIUM)" >/dev/null 2>&1 && command -v "$(CHROMEDRIVER)" >/dev/null 2>&1; then :; \
	elif [ "$(CHROMIUM)" = chromium ] && [ "$(CHROMEDRIVER)" = chromedriver ] \
	    && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's chromium and chromium-driver for the HTML report's browser test (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null; \
	else \
	  echo "make test checks the HTML report in a real browser driven by selenium and found no" \
	    "'$(CHROMIUM)' or no '$(CHROMEDRIVER)': install both (as root: apt-get install chromium" \
	    "chromium-driver) or set CHROMIUM=/path/to/chromium CHROMEDRIVER=/path/to/chromedriver" >&2; \
	  exit 1; \
	fi

# three workers (pytest-xdist) on the 2 cores CI has: with two, the tests left a fifth of the CPU
# idle waiting on servers, subprocesses and disks (quiet machine, fresh clone: 10:10 with two,
# 9:18 with three, CPU 156% -> 181%); TEST_WORKERS=2 make test for the old split
TEST_WORKERS ?= 3

test: $(STAMP) chromium  ## run the test suite (sandbox over real HTTP, real DuckDB files, Chromium)
	$(BIN)/pytest -q -n $(TEST_WORKERS) -m "not soak and not lint" $(ARGS)

soak: $(STAMP)  ## the long reliability suite: 12 random kill points, 200 fuzz examples
	DEVPORTAL_FUZZ_EXAMPLES=200 $(BIN)/pytest -q -m "soak or fuzz" $(ARGS)

lint: $(STAMP)  ## ruff, mypy, deptry (every import declared), the layers and the exports
	$(BIN)/ruff check pipelines tests benchmarks
	$(BIN)/ruff format --check pipelines tests benchmarks
	$(BIN)/mypy
	$(BIN)/deptry pipelines
	$(BIN)/deptry tests benchmarks --known-first-party devportal --known-first-party tests \
	    --known-first-party benchmarks --exclude '(^|/)(\.venv|__pycache__)/' --ignore DEP002,DEP004
	$(BIN)/pytest -q -p no:cacheprovider -p no:xdist tests/test_import_layers.py tests/test_exports.py tests/test_style_rules.py  # the layers, each package's exports, the style rules

bench: $(STAMP)  ## benchmarks: devportal vs dlt rest_api vs the HTTP floor (writes benchmarks/results/)
	$(BIN)/python -m benchmarks.run $(ARGS)

notebook: $(STAMP)  ## open Jupyter on notebooks/, reading the warehouse make report reads (installs the pinned jupyterlab on first use)
	@$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-notebook.lock >&2
	@DEVPORTAL_WAREHOUSE="$(abspath $(WAREHOUSE))" $(BIN)/jupyter lab notebooks/ \
	    $$(if [ "$$(id -u)" = 0 ]; then echo --allow-root; fi)

lock:  ## regenerate requirements.lock from pyproject.toml in a scratch venv
	rm -rf .lockvenv && $(PYTHON) -m venv .lockvenv
	.lockvenv/bin/pip install --quiet -e ".[dev]" setuptools wheel
	echo '# Exact set installed by `make setup` (python 3.11). Regenerate with `make lock`.' > requirements.lock
	.lockvenv/bin/pip freeze --all --exclude-editable | grep -v '^pip==' >> requirements.lock
	rm -rf .lockvenv

clean:  ## remove the venv, warehouses and caches
	rm -rf $(VENV) warehouse .pytest_cache .mypy_cache .ruff_cache
