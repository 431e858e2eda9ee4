"""Handler modules import only what serving a route needs (bench/cold_start.py measures the time).

Each handler is imported in a fresh interpreter, which then lists the heavy modules it finds loaded: the
numerical and document libraries are imported where a request first uses them (the knowledge base's
first load, an index built, a vector made), never by the import of a handler.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cold_start import handlers

REPO = Path(__file__).resolve().parents[3]
# pypdf: PDF parsing (ingest); numpy/scipy/bm25s/Stemmer/rapidfuzz: scoring; torch must never load at
# all; functions.common.minilm: the MiniLM weights reader; feedparser (arXiv's Atom), tenacity (HTTP
# retries) and bibtexparser (BibTeX outputs): what one kind of request needs.
HEAVY = (
    "pypdf",
    "numpy",
    "scipy",
    "bm25s",
    "Stemmer",
    "rapidfuzz",
    "torch",
    "functions.common.minilm",
    "feedparser",
    "tenacity",
    "bibtexparser",
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
