# The two commands:  `make serve` runs toolwire, `make test` runs every check.
# Each installs what it needs into .venv (PyPI) and node_modules (npm), pinned
# by constraints.txt and package-lock.json.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
ARGS ?=

.PHONY: serve test install lint typecheck generate bench baseline clean

$(BIN)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(BIN)/.installed node_modules/.installed

serve: $(BIN)/.installed
	$(BIN)/toolwire serve $(ARGS)

lint: $(BIN)/.installed
	$(BIN)/ruff check service clients tests scripts bench
	$(BIN)/ruff format --check service clients tests scripts bench

typecheck: $(BIN)/.installed
	$(BIN)/mypy service clients/python

test: install lint typecheck
	$(BIN)/pytest $(ARGS)

generate: install
	$(BIN)/python scripts/generate.py

baseline: install
	$(BIN)/python scripts/release_contract.py

bench: install
	$(BIN)/python bench/bench_dispatch.py $(ARGS)
	$(BIN)/python bench/bench_code_mode.py
	$(BIN)/python bench/bench_mcp.py

clean:
	rm -rf $(VENV) node_modules .pytest_cache .mypy_cache .ruff_cache
