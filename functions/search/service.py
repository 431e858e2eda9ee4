"""The search service: fan out to connectors concurrently, cache, merge, score, filter.

Used by the search API routers and directly by the orchestrator's step handlers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aws_lambda_powertools.metrics import MetricUnit

from functions.common.errors import InvalidInput, RateLimited, UpstreamError
from functions.common.observability import get_logger, record_metric
from functions.common.outbound.circuit_breaker import BreakerRegistry
from functions.common.outbound.http import HttpClient
from functions.common.outbound.rate_limit import (
    DynamoDbRateLimiter,
    InMemoryRateLimiter,
    RateLimit,
    RateLimiter,
)
from functions.common.settings import Settings, get_settings
from functions.common.storage import (
    DynamoDbTtlCache,
    InMemoryTtlCache,
    TtlCache,
    cache_read,
    cache_write,
)
from functions.common.text import fold
from functions.search.config import SearchSettings
from functions.search.connectors import REGISTRY, Connector, ConnectorContext, ConnectorFactory
from functions.search.connectors.base import SharedRequest
from functions.search.in_flight import InFlight, SponsorsOf
from functions.search.merge import merge_results, rrf_score
from functions.search.models import SOURCE_TYPES, ConnectorResult, FoundPaper, PaperQuery, SearchOutcome
from functions.search.scoring import quality_score, relevance_score

logger = get_logger("search")
CACHE_VERSION = "v1"


class LoopLocalHttp:
    """One HttpClient per running event loop (Mangum keeps one loop; step handlers may start new ones)."""

    def __init__(self, factory: Callable[[], HttpClient]) -> None:
        self._factory = factory
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HttpClient] = (
            weakref.WeakKeyDictionary()
        )

    def __call__(self) -> HttpClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._factory()
            self._clients[loop] = client
        return client


def cache_key(connector: str, query: PaperQuery, limit: int) -> str:
    """Keyed by the normalised request: case, accents and spacing of the query do not matter.

    Only cacheable connectors' answers are cached, and those are public upstream results that do not
    depend on the caller: the key leaves `query.team_id` out on purpose, so teams share them. A connector
    whose answer depends on the team (the `library`) is not cacheable and never reaches this cache, and
    merged outcomes are never cached, so no cached answer mixes teams."""
    normalised = {
        "q": " ".join(fold(query.query).split()),
        "from": query.year_start,
        "to": query.year_end,
        "n": limit,
        "concepts": query.concepts,
    }
    digest = hashlib.sha256(json.dumps(normalised, sort_keys=True).encode()).hexdigest()[:32]
    return f"search:{CACHE_VERSION}:{connector}:{digest}"


_SEARCHES: InFlight[ConnectorResult] = InFlight()


@dataclass
class SearchService:
    connectors: dict[str, Connector]
    cache: TtlCache
    limiter: RateLimiter
    search_settings: SearchSettings = field(default_factory=SearchSettings)
    settings: Settings = field(default_factory=get_settings)
    breakers: BreakerRegistry = field(default_factory=BreakerRegistry)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @classmethod
    def from_settings(
        cls,
        settings: Settings | None = None,
        *,
        search_settings: SearchSettings | None = None,
        http_client: HttpClient | None = None,
        cache: TtlCache | None = None,
        limiter: RateLimiter | None = None,
        registry: dict[str, ConnectorFactory] | None = None,
    ) -> SearchService:
        settings = settings or get_settings()
        cfg = search_settings or SearchSettings()
        if cache is None:
            cache = InMemoryTtlCache() if cfg.state_backend == "memory" else DynamoDbTtlCache()
        if limiter is None:
            limiter = InMemoryRateLimiter() if cfg.state_backend == "memory" else DynamoDbRateLimiter()
        breakers = BreakerRegistry(cfg.breaker_failure_threshold, cfg.breaker_cooldown_seconds)
        if http_client is not None:
            shared = http_client
            http: Callable[[], HttpClient] = lambda: shared  # noqa: E731
        else:
            http = LoopLocalHttp(
                lambda: HttpClient(settings, purpose="fetch", max_backoff_seconds=cfg.max_backoff_seconds)
            )
        context = ConnectorContext(settings=settings, search_settings=cfg, http=http, breakers=breakers)
        registry = registry if registry is not None else REGISTRY
        enabled = cfg.connector_names or list(registry)
        unknown = [name for name in enabled if name not in registry]
        if unknown:
            raise ValueError(f"SEARCH_CONNECTORS names unknown connectors: {', '.join(unknown)}")
        return cls(
            connectors={name: registry[name](context) for name in enabled},
            cache=cache,
            limiter=limiter,
            search_settings=cfg,
            settings=settings,
            breakers=breakers,
        )

    @property
    def connector_names(self) -> list[str]:
        return list(self.connectors)

    def connector_prefix(self, name: str) -> str:
        connector = self.connectors.get(name)
        return connector.prefix if connector else name[:2]

    def admit_client(self, client_id: str) -> None:
        """Our own per-client limit; raises RateLimited(retry_after) when the client must wait."""
        limit = RateLimit.per_minute(self.settings.client_rate_limit_per_minute)
        try:
            self.limiter.reserve(f"client:{client_id}", limit, 0.0)
        except RateLimited:
            raise
        except Exception:  # an unreachable bucket table must not take the API down: admit
            logger.warning("client rate-limit bucket unavailable", exc_info=True)

    async def admit_client_async(self, client_id: str) -> None:
        await asyncio.to_thread(self.admit_client, client_id)

    def _validate(self, query: PaperQuery) -> list[str]:
        if not query.query.strip():
            raise InvalidInput("query: must not be empty", field="query")
        if query.max_results < 1:
            raise InvalidInput("max_results: must be at least 1", field="max_results")
        if not 1 <= query.per_connector <= 100:
            raise InvalidInput("per_connector: must be between 1 and 100", field="per_connector")
        if query.year_start and query.year_end and query.year_start > query.year_end:
            raise InvalidInput("year_range: start must not be after end", field="year_range")
        unknown_types = [t for t in query.source_types or [] if t not in SOURCE_TYPES]
        if unknown_types:
            raise InvalidInput(
                f"source_types: unknown type {unknown_types[0]!r} (allowed: {', '.join(SOURCE_TYPES)})",
                field="source_types",
            )
        if query.connectors is None:
            return self.connector_names
        if not query.connectors:
            raise InvalidInput("connectors: must name at least one connector", field="connectors")
        unknown = [name for name in query.connectors if name not in self.connectors]
        if unknown:
            raise InvalidInput(
                f"connectors: unknown connector {unknown[0]!r} (available: {', '.join(self.connectors)})",
                field="connectors",
            )
        return list(dict.fromkeys(query.connectors))

    async def search(self, query: PaperQuery) -> SearchOutcome:
        """Raises InvalidInput for a bad query, UpstreamError only when every selected connector failed."""
        started = time.perf_counter()
        selected = self._validate(query)
        results = await asyncio.gather(*(self._run_connector(name, query) for name in selected))
        failed = {r.connector: r.error or "failed" for r in results if not r.ok}
        used = [r.connector for r in results if r.ok]
        for result in results:
            logger.info(
                "connector finished",
                connector=result.connector,
                ok=result.ok,
                papers=len(result.papers),
                from_cache=result.from_cache,
                elapsed_ms=result.elapsed_ms,
                error=result.error,
            )
            record_metric(
                "search",
                "ConnectorLatency",
                result.elapsed_ms,
                MetricUnit.Milliseconds,
                connector=result.connector,
            )
            if not result.ok:
                record_metric("search", "ConnectorFailures", 1, connector=result.connector)
        if self._unavailable(selected, results):
            raise UpstreamError(
                "; ".join(f"{name}: {reason}" for name, reason in failed.items()),
                not_run=all(r.not_run for r in results if not r.ok),
            )
        papers = self._rank(query, merge_results(results))
        return SearchOutcome(
            papers=list(papers[: query.max_results]),
            total_found=len(papers),
            connectors_used=used,
            failed_connectors=failed,
            query_time_ms=round((time.perf_counter() - started) * 1000, 1),
            from_cache=all(
                r.from_cache
                for name, r in zip(selected, results, strict=True)
                if r.ok and self.connectors[name].cacheable
            ),
            rrf_scores={p.canonical_id: rrf_score(p) for p in papers},
            not_run={r.connector: r.error or "not run" for r in results if r.not_run},
            cache_hits=sum(1 for r in results if r.from_cache),
            coalesced=sum(1 for r in results if r.coalesced),
        )

    def _unavailable(self, selected: Sequence[str], results: Sequence[ConnectorResult]) -> bool:
        """The seed's "search service unavailable": nothing answered, or every upstream API (the cached,
        networked sources) failed and the in-process ones (the team's library) found nothing either."""
        if not any(r.ok for r in results):
            return True
        upstream = [r for name, r in zip(selected, results, strict=True) if self.connectors[name].cacheable]
        local_found = any(r.ok and r.papers for r in results if r not in upstream)
        return bool(upstream) and not any(r.ok for r in upstream) and not local_found

    def _rank(self, query: PaperQuery, papers: Sequence[FoundPaper]) -> list[FoundPaper]:
        now = self.clock()
        kept = []
        for paper in papers:
            paper.relevance_score = relevance_score(query.query, paper)
            paper.quality_score = quality_score(paper, now)
            if query.require_year and paper.year is None:
                continue
            if paper.year is not None and (
                (query.year_start and paper.year < query.year_start)
                or (query.year_end and paper.year > query.year_end)
            ):
                continue
            if query.source_types and paper.source_type not in query.source_types:
                continue
            if query.min_quality_score is not None and paper.quality_score < query.min_quality_score:
                continue
            kept.append(paper)
        kept.sort(key=lambda p: (p.relevance_score, rrf_score(p)), reverse=True)
        return kept

    async def _run_connector(self, name: str, query: PaperQuery) -> ConnectorResult:
        """A cacheable connector's answer comes from the shared cache, else from an identical request
        in flight in this process (coalesced), else from the upstream; an identical request of another
        process that completes while this one waits for its turn is taken from the cache then."""
        limit = query.per_connector
        if not self.connectors[name].cacheable:
            return await self._call(name, query, limit)
        key = cache_key(name, query, limit)
        cached = await self._cached(key)
        if cached is not None:
            return cached
        asking = (query.team_id or "public", query.job_id or "interactive", query.priority)

        async def ask(sponsors: SponsorsOf) -> ConnectorResult:
            result = await self._call(name, query, limit, SharedRequest(lambda: self._cached(key), sponsors))
            if result.ok and not result.coalesced:
                await self._cache_put(key, result)
            return result

        def not_run() -> ConnectorResult:
            return ConnectorResult(connector=name, error=f"{name}: not run", not_run=True)

        result, joined = await _SEARCHES.share(key, asking, ask, not_run)
        if joined:
            result = result.model_copy(deep=True)
            result.coalesced = True
            result.elapsed_ms = 0.0
        return result

    async def _cached(self, key: str) -> ConnectorResult | None:
        cached = await self._cache_get(key)
        if cached is None:
            return None
        try:
            result = ConnectorResult.model_validate(cached)
        except ValueError:
            logger.warning("ignoring unreadable cache entry", key=key)
            return None
        result.from_cache = True
        result.elapsed_ms = 0.0
        return result

    async def _call(
        self,
        name: str,
        query: PaperQuery,
        limit: int,
        shared: SharedRequest | None = None,
    ) -> ConnectorResult:
        try:
            return await self.connectors[name].search(query, limit, shared)
        except Exception as exc:  # a connector bug must not take the other sources down
            logger.exception("connector raised", connector=name)
            return ConnectorResult(connector=name, error=f"{name} failed: {exc.__class__.__name__}")

    async def _cache_get(self, key: str) -> object | None:
        return await cache_read(self.cache, key, logger, "cache")

    async def _cache_put(self, key: str, result: ConnectorResult) -> None:
        value = result.model_dump(mode="json", exclude={"from_cache", "elapsed_ms"})
        await cache_write(self.cache, key, value, self.search_settings.cache_ttl_seconds, logger, "cache")
