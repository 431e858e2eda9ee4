"""The tiny book is ingested once per test session; API tests install it as the container's index."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from functions.common.storage import InMemoryBlobStore
from functions.rag.index import BuiltIndex, build_index, load_knowledge_base, write_index
from functions.rag.knowledge_base import KnowledgeBase
from tests.unit.rag.serving import serving
from tests.unit.rag.tiny_book import tiny_book


@pytest.fixture(scope="session")
def built_index() -> BuiltIndex:
    return build_index(tiny_book())


@pytest.fixture(scope="session")
def knowledge_base(built_index: BuiltIndex) -> KnowledgeBase:
    store = InMemoryBlobStore()
    write_index(store, built_index)
    return load_knowledge_base(store)


@pytest.fixture
def client(knowledge_base: KnowledgeBase) -> Iterator[TestClient]:
    with serving(knowledge_base) as test_client:
        yield test_client
