"""The deployed `ScholarlyMetadata` adapter: lookups through the search connectors, so that they share
the search service's manners — the guarded HTTP client, the per-provider rate-limit buckets, circuit
breakers per provider, and the response cache table (keys `lookup:v1:<source>:<kind>:<hash>`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict
from functools import lru_cache
from typing import Any

from functions.common.models import LookupKind, WorkMetadata
from functions.common.observability import get_logger
from functions.common.outbound.circuit_breaker import BreakerRegistry
from functions.common.outbound.http import HttpClient
from functions.common.settings import Settings, built_from_settings
from functions.common.storage import (
    DynamoDbTtlCache,
    InMemoryTtlCache,
    TtlCache,
    cache_read,
    cache_write,
)
from functions.search.config import SearchSettings
from functions.search.connectors import REGISTRY
from functions.search.connectors.base import (
    ConnectorContext,
    HttpConnector,
    LookupResult,
    send_lookup,
)
from functions.search.sources import metadata_preference

logger = get_logger("extract")
CACHE_VERSION = "v1"
SOURCES = metadata_preference()

_breakers: BreakerRegistry | None = None


def _process_breakers(cfg: SearchSettings) -> BreakerRegistry:
    """One breaker per provider for the whole container, so that an upstream that is down stops
    being asked after a few failures instead of costing every extraction its budget."""
    global _breakers
    if _breakers is None:
        _breakers = BreakerRegistry(cfg.breaker_failure_threshold, cfg.breaker_cooldown_seconds)
    return _breakers


@built_from_settings
@lru_cache(maxsize=1)
def lookup_cache() -> TtlCache:
    """The process's lookup cache: in memory with the memory state backend, else the cache table."""
    return InMemoryTtlCache() if SearchSettings().state_backend == "memory" else DynamoDbTtlCache()


def lookup_cache_key(source: str, kind: str, value: str) -> str:
    digest = hashlib.sha256(value.strip().lower().encode()).hexdigest()[:32]
    return f"lookup:{CACHE_VERSION}:{source}:{kind}:{digest}"


class ConnectorMetadata:
    """Implements `functions.extract.metadata.ScholarlyMetadata` (and `AnswerMemory`) over the search
    connectors."""

    def __init__(
        self, connectors: Mapping[str, HttpConnector], cache: TtlCache, cache_ttl_seconds: int
    ) -> None:
        self._connectors = dict(connectors)
        self._cache = cache
        self._ttl = cache_ttl_seconds

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        http: HttpClient,
        *,
        search_settings: SearchSettings | None = None,
        cache: TtlCache | None = None,
    ) -> ConnectorMetadata:
        cfg = search_settings or SearchSettings()
        memory = cfg.state_backend == "memory"
        if cache is None:
            cache = InMemoryTtlCache() if memory else DynamoDbTtlCache()
        context = ConnectorContext(
            settings=settings,
            search_settings=cfg,
            http=lambda: http,
            breakers=_process_breakers(cfg),
        )
        connectors: dict[str, HttpConnector] = {}
        for name in SOURCES:
            connector = REGISTRY[name](context) if name in REGISTRY else None
            if isinstance(connector, HttpConnector):
                connectors[name] = connector
        return cls(connectors, cache, cfg.cache_ttl_seconds)

    async def lookup(self, source: str, kind: LookupKind, value: str, timeout: float) -> list[WorkMetadata]:
        result = await self.answer(source, kind, value, timeout)
        return result.works

    async def answer(
        self, source: str, kind: LookupKind, value: str, timeout: float, *, team: str | None = None
    ) -> LookupResult:
        """`lookup`'s answer with its error (an upstream that failed is not one that knows no such work),
        the request queued as `team`'s at the provider when given."""
        connector = self.connector(source)
        request = connector.build_lookup_request(kind, value) if connector else None
        if connector is None or request is None:
            return LookupResult(connector=source, error=f"{source} cannot look up by {kind}")
        key = lookup_cache_key(source, kind, value)
        search = kind == "title"
        return await self.cached(
            key,
            source,
            lambda: send_lookup(
                connector, request, connector.parse_lookup, timeout, team=team, search=search
            ),
        )

    def connector(self, source: str) -> HttpConnector | None:
        return self._connectors.get(source)

    async def cached(self, key: str, source: str, ask: Callable[[], Awaitable[LookupResult]]) -> LookupResult:
        """The answer cached under `key`, else `ask`'s (then cached when it is not an error)."""
        cached = await self._cache_get(key)
        if isinstance(cached, dict) and isinstance(cached.get("works"), list):
            try:
                return LookupResult(source, [WorkMetadata(**_tupled(w)) for w in cached["works"]])
            except TypeError:
                logger.warning("ignoring unreadable lookup cache entry", key=key)
        result = await ask()
        if not result.ok:
            logger.info("metadata lookup failed", source=source, key=key, error=result.error)
            return result
        await self._cache_put(key, {"works": [asdict(w) for w in result.works]})
        return result

    async def remember(
        self, source: str, kind: LookupKind, value: str, status_code: int, body: bytes
    ) -> None:
        """Implements `functions.extract.metadata.AnswerMemory`: the answer is read by the connector's
        lookup parser and cached as `lookup` would have cached it."""
        connector = self._connectors.get(source)
        if connector is None:
            return
        result = connector.parse_lookup(status_code, body)
        if result.ok:
            key = lookup_cache_key(source, kind, value)
            await self._cache_put(key, {"works": [asdict(w) for w in result.works]})

    async def _cache_get(self, key: str) -> Any | None:
        return await cache_read(self._cache, key, logger, "lookup cache")

    async def _cache_put(self, key: str, value: dict[str, Any]) -> None:
        await cache_write(self._cache, key, value, self._ttl, logger, "lookup cache")


def _tupled(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "authors": tuple(record.get("authors") or ())}
