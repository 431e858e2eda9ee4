"""A knowledge base served through the app for a test: installed as the container's, memo cleared."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi.testclient import TestClient

from functions.rag.app import app, memo
from functions.rag.knowledge_base import KnowledgeBase
from functions.rag.loader import set_knowledge_base


@contextmanager
def serving(knowledge_base: KnowledgeBase) -> Iterator[TestClient]:
    set_knowledge_base(knowledge_base)
    memo.clear()
    try:
        with TestClient(app) as client:
            yield client
    finally:
        set_knowledge_base(None)
        memo.clear()
