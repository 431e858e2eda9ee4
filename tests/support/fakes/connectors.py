"""Connectors that implement the protocol over in-memory answers, for service-level tests."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from functions.common.outbound.rate_limit import InMemoryRateLimiter
from functions.common.storage import InMemoryTtlCache
from functions.search.config import SearchSettings
from functions.search.connectors import crossref, semantic_scholar
from functions.search.connectors.base import SharedRequest
from functions.search.models import ConnectorResult, PaperQuery
from functions.search.service import SearchService
from tests.support import scholarly_fixtures as fx


@dataclass
class StubConnector:
    name: str
    prefix: str
    answer: ConnectorResult
    delay: float = 0.0
    cacheable: bool = True
    raises: Exception | None = None
    meet: asyncio.Barrier | None = None  # answers only once every connector sharing it is searching too
    calls: list[PaperQuery] = field(default_factory=list)
    shared: list[SharedRequest | None] = field(default_factory=list)

    async def search(
        self,
        query: PaperQuery,
        limit: int,
        shared: SharedRequest | None = None,
    ) -> ConnectorResult:
        self.calls.append(query)
        self.shared.append(shared)
        await asyncio.sleep(self.delay)
        if self.meet is not None:
            async with asyncio.timeout(30):  # never met: the search ran the connectors one after another
                await self.meet.wait()
        if self.raises is not None:
            raise self.raises
        return self.answer.model_copy(deep=True)


def s2_stub(delay: float = 0.0) -> StubConnector:
    answer = semantic_scholar.parse_response(
        200, json.dumps(fx.semantic_scholar_search(fx.TRANSFORMER_PAPERS))
    )
    return StubConnector("semantic_scholar", "ss", answer, delay)


def crossref_stub(delay: float = 0.0) -> StubConnector:
    answer = crossref.parse_response(200, json.dumps(fx.crossref_works(fx.TRANSFORMER_PAPERS)))
    return StubConnector("crossref", "cr", answer, delay)


def failing_stub(name: str, reason: str = "HTTP 503 from upstream") -> StubConnector:
    return StubConnector(name, name[:2], ConnectorResult(connector=name, error=reason))


def service_with(*connectors: StubConnector, per_minute: int = 100) -> SearchService:
    service = SearchService(
        connectors={c.name: c for c in connectors},
        cache=InMemoryTtlCache(),
        limiter=InMemoryRateLimiter(),
        search_settings=SearchSettings(state_backend="memory"),
    )
    service.settings = service.settings.model_copy(update={"client_rate_limit_per_minute": per_minute})
    return service
