"""Handler modules import only what serving a route needs (bench/cold_start.py measures the time).

Each handler is imported in a fresh interpreter, which then lists the heavy modules it finds loaded: the
numerical and document libraries are imported where a request first uses them (the knowledge base's
first load, an index built, a vector made), never by the import of a handler.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cold_start import handlers

REPO = Path(__file__).resolve().parents[3]
# pypdf, pypdfium2: PDF parsing; numpy/scipy/bm25s/Stemmer/rapidfuzz: scoring; torch must never load at
# all; functions.common.ml.minilm: the MiniLM weights reader; feedparser (arXiv's Atom), tenacity (HTTP
# retries) and bibtexparser (BibTeX outputs): what one kind of request needs; httpcore, h11, h2: the
# guarded HTTP client's transport, built by a request's first fetch; our own services and the answer
# pipeline: built by the first request that uses them (the dependency providers); boto3 and botocore's
# client machinery: loaded with the first AWS client (functions/common/aws.py).
HEAVY = (
    "boto3",
    "botocore.config",
    "botocore.session",
    "pypdf",
    "pypdfium2",
    "numpy",
    "scipy",
    "bm25s",
    "Stemmer",
    "rapidfuzz",
    "torch",
    "functions.common.ml.minilm",
    "feedparser",
    "tenacity",
    "bibtexparser",
    "httpcore",
    "h11",
    "h2",
    "functions.common.outbound.http_backend",
    "functions.search.service",
    "functions.search.connectors",
    "functions.extract.service",
    "functions.answer.service",
    "functions.answer.stream",
    "functions.research.pipeline",
)
# The ingest parses PDFs on every invocation: its module may load what parsing needs.
NEEDS_ALL = {"RagIngestFunction"}

_PROBE = (
    "import importlib, json, sys\n"
    "importlib.import_module(sys.argv[1])\n"
    "print(json.dumps(sorted(m for m in sys.argv[2:] if m in sys.modules)))\n"
)


def _loaded_after_import(module: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, module, *HEAVY],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


_MODULES = sorted({handler.module for handler in handlers() if handler.name not in NEEDS_ALL})


@pytest.mark.parametrize("module", _MODULES)
def test_importing_a_handler_loads_no_heavy_library(module: str) -> None:
    assert _loaded_after_import(module) == []


def test_the_knowledge_base_loads_numpy_on_first_use_and_never_pypdf() -> None:
    probe = (
        "import sys\n"
        "import functions.rag.handler\n"
        "assert 'pypdf' not in sys.modules and 'numpy' not in sys.modules\n"
        "from functions.rag.index import load_knowledge_base\n"  # what the first request's load imports
        "assert 'numpy' in sys.modules\n"
        "assert 'pypdf' not in sys.modules, 'serving the knowledge base parses no PDF'\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "ok"


def test_a_snapstart_init_without_the_runtime_library_imports_what_the_answer_needs() -> None:
    """Under the Lambda Web Adapter no before-snapshot hook runs: a SnapStart init (Lambda says so in
    AWS_LAMBDA_INITIALIZATION_TYPE) imports the pipeline at once, so that it is in the snapshot."""
    probe = (
        "import importlib, json, sys\n"
        "importlib.import_module(sys.argv[1])\n"
        "print(json.dumps(sorted(m for m in sys.argv[2:] if m in sys.modules)))\n"
    )
    wanted = ("functions.research.pipeline", "functions.extract.service", "httpcore")
    module = next(handler.module for handler in handlers() if handler.name == "AnswerFunction")
    loaded: dict[str, list[str]] = {}
    for init in ("snap-start", "on-demand"):
        out = subprocess.run(
            [sys.executable, "-c", probe, module, *wanted],
            cwd=REPO,
            env={**os.environ, "AWS_LAMBDA_INITIALIZATION_TYPE": init},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        loaded[init] = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded == {"snap-start": sorted(wanted), "on-demand": []}
