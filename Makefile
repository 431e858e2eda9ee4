# Two commands do all the set-up on a fresh machine (Python 3.11+, Node.js, package registries):
#   make run   installs what is needed and serves every API on the embedded local runtime
#   make test  installs what is needed and runs lint, type checks and the tests
PYTHON ?= python3
PORT ?= 8000
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: install run test lint typecheck unit integration bench clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --python $(PYTHON)
	touch $@

install: $(VENV)/.synced

run: install
	PORT=$(PORT) $(PY) -m functions.local_runtime --port $(PORT)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy functions tests bench

test: install lint typecheck
	$(VENV)/bin/pytest

bench: install
	$(PY) bench/search.py

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache cdk.out
