"""A local scholarly web (real HTTP on 127.0.0.1) and an extraction service wired to in-memory storage."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from fastapi.testclient import TestClient

from functions.common.documents import InMemoryDocumentRepository
from functions.common.outbound.http import HttpClient, Resolver
from functions.common.settings import get_settings, reset_settings_cache
from functions.common.storage import InMemoryBlobStore
from functions.extract.service import ExtractionService
from tests.support.scholarly_web import ScholarlyWeb, serving

T = TypeVar("T")


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScholarlyWeb]:
    scholarly = ScholarlyWeb()
    for value in serving(scholarly):
        scholarly.apply_env(monkeypatch)
        monkeypatch.setenv("ARXIV_PDF_BASE_URL", scholarly.url("/arxiv-site"))
        monkeypatch.setenv("DOI_RESOLVER_URL", scholarly.url("/doi"))
        monkeypatch.delenv("CONTACT_EMAIL", raising=False)
        reset_settings_cache()
        yield value


@pytest.fixture
def blobs() -> InMemoryBlobStore:
    return InMemoryBlobStore()


@pytest.fixture
def documents() -> InMemoryDocumentRepository:
    return InMemoryDocumentRepository()


class Harness:
    """Runs a coroutine against a fresh service (HTTP clients are bound to one event loop)."""

    def __init__(self, blobs: InMemoryBlobStore, documents: InMemoryDocumentRepository) -> None:
        self.blobs = blobs
        self.documents = documents
        self.last: ExtractionService | None = None

    def run(
        self, work: Callable[[ExtractionService], Awaitable[T]], *, resolver: Resolver | None = None
    ) -> T:
        async def go() -> T:
            client = HttpClient(get_settings(), resolver=resolver, max_backoff_seconds=0.2)
            service = ExtractionService(
                http=client, blobs=self.blobs, documents=self.documents, settings=get_settings()
            )
            self.last = service
            try:
                return await work(service)
            finally:
                await client.aclose()

        return asyncio.run(go())


@pytest.fixture
def harness(web: ScholarlyWeb, blobs: InMemoryBlobStore, documents: InMemoryDocumentRepository) -> Harness:
    return Harness(blobs, documents)


@pytest.fixture
def api(
    web: ScholarlyWeb, blobs: InMemoryBlobStore, documents: InMemoryDocumentRepository
) -> Iterator[TestClient]:
    from functions.extract.api import get_service
    from functions.extract.app import app

    async def wired() -> AsyncIterator[ExtractionService]:
        client = HttpClient(get_settings(), max_backoff_seconds=0.2)
        try:
            yield ExtractionService(http=client, blobs=blobs, documents=documents, settings=get_settings())
        finally:
            await client.aclose()

    app.dependency_overrides[get_service] = wired
    with TestClient(app) as client:
        yield client
    app.dependency_overrides.clear()


def json_of(response: Any) -> Any:
    return response.json()
