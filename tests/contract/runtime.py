"""The local runtime as `make run` serves it, for the contract run: every function app behind the
Gateway on an embedded AWS, a scholarly web on loopback answering instantly, the knowledge base serving
the tiny test book, no LLM (the extractive paths), an admin token, and short budgets so the background
work that execute and schedules start ends fast.

`python -m tests.contract.runtime [PORT]` serves the same on loopback, for a manual `st run` against it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from functions.common.storage import InMemoryBlobStore
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.gateway import Gateway, load_function_apps
from functions.rag.index import build_index, load_knowledge_base, write_index
from functions.rag.loader import set_knowledge_base
from tests.e2e.scholarly_topic import environment, serve, topic_papers
from tests.support.scholarly_web import ScholarlyWeb
from tests.unit.rag.tiny_book import tiny_book

ADMIN_TOKEN = "contract-admin-token"


@dataclass(frozen=True)
class ContractRuntime:
    gateway: Gateway
    web: ScholarlyWeb
    arxiv_id: str  # a paper the loopback web serves as a PDF (a valid `source_url` to extract)
    pdf: bytes  # a readable PDF (a valid upload)


@contextmanager
def contract_runtime(gateway: Gateway | None = None) -> Iterator[ContractRuntime]:
    """The environment for `gateway` (a new one over every function app when None)."""
    with ExitStack() as stack:
        web = stack.enter_context(ScholarlyWeb())
        papers = topic_papers(4, off_topic=1)
        serve(web, papers)
        env = environment(
            web,
            AUTH="",
            ADMIN_TOKEN=ADMIN_TOKEN,
            CLIENT_RATE_LIMIT_PER_MINUTE="100000",
            RESEARCH_EXTRACT_MAX_CONCURRENCY="4",
        )
        stack.enter_context(EmbeddedAws(extra_environment=env))
        store = InMemoryBlobStore()
        write_index(store, build_index(tiny_book()))
        set_knowledge_base(load_knowledge_base(store))
        stack.callback(set_knowledge_base, None)
        arxiv_id = next(paper.sample.arxiv_id for paper in papers if paper.sample.arxiv_id)
        if gateway is None:
            gateway = Gateway(load_function_apps(), auth_required=False)
        yield ContractRuntime(gateway, web, arxiv_id, papers[0].pdf)


if __name__ == "__main__":
    import uvicorn

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    with contract_runtime() as running:
        uvicorn.run(running.gateway, host="127.0.0.1", port=port, log_level="warning")
