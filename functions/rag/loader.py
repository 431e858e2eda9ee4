"""The knowledge base of this container: loaded from the blob store on first use, then kept warm."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from functions.common.errors import DomainError
from functions.common.observability import get_logger
from functions.rag.config import get_rag_settings
from functions.rag.location import missing_index_advice, serving_store

if TYPE_CHECKING:
    from functions.rag.knowledge_base import KnowledgeBase

logger = get_logger("rag")
_lock = threading.Lock()
_loaded: KnowledgeBase | None = None


class KnowledgeBaseUnavailable(DomainError):
    code = "SERVICE_UNAVAILABLE"


def get_knowledge_base() -> KnowledgeBase:
    global _loaded
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is None:
            # The index reader (numpy, bm25s, and pypdf through the index builder) on the first request
            # that needs the knowledge base, not at import: the handler's cold start (bench/cold_start.py).
            from functions.rag.index import IndexNotFound, load_knowledge_base

            started = time.perf_counter()
            try:
                settings = get_rag_settings()
                _loaded = load_knowledge_base(
                    serving_store(),
                    settings.book_id,
                    dense=settings.dense,
                    query_encoder=settings.query_encoder,
                )
            except IndexNotFound as exc:
                # Not cached: the next request looks again, so an ingest is picked up without a restart.
                raise KnowledgeBaseUnavailable(missing_index_advice()) from exc
            logger.info(
                "knowledge base loaded",
                load_ms=round((time.perf_counter() - started) * 1000, 1),
                **_loaded.stats(),
            )
        return _loaded


def set_knowledge_base(knowledge_base: KnowledgeBase | None) -> None:
    """Install (or drop, with None) the container's knowledge base; used by tests and the bench."""
    global _loaded
    with _lock:
        _loaded = knowledge_base
