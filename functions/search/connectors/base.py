"""The connector protocol, and the HTTP plumbing every upstream connector shares.

A connector module provides a pure `parse_response(status_code, body) -> ConnectorResult` (used by the
corpus tests on recorded responses) and a class that builds the request in the upstream's own syntax.
`HttpConnector.search` wraps the call in upstream manners: the shared per-provider rate limit, the
per-connector time budget, HTTP retries with backoff honouring Retry-After (in HttpClient), and the
provider's circuit breaker. Every failure becomes `ConnectorResult.error`, never an exception.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from functions.common.circuit_breaker import BreakerRegistry, CircuitOpen
from functions.common.errors import FetchError, FetchTimeout, RateLimited
from functions.common.http import HttpClient, retry_after_seconds
from functions.common.models import LookupKind, WorkMetadata
from functions.common.observability import get_logger
from functions.common.rate_limit import InMemoryRateLimiter, RateLimit, RateLimiter
from functions.common.settings import Settings, get_settings
from functions.search.config import SearchSettings
from functions.search.models import ConnectorResult, FoundPaper, PaperQuery

logger = get_logger("search")


@dataclass
class ConnectorContext:
    """What connectors receive instead of reaching for globals."""

    settings: Settings = field(default_factory=get_settings)
    search_settings: SearchSettings = field(default_factory=SearchSettings)
    http: Callable[[], HttpClient] | None = None  # the caller's (event-loop bound) shared client
    limiter: RateLimiter = field(default_factory=InMemoryRateLimiter)
    breakers: BreakerRegistry = field(default_factory=BreakerRegistry)


class Connector(Protocol):
    name: str
    prefix: str  # of /api/v1/search source ids, e.g. "ax" -> "ax_1a2b3c4d"
    # Whether the service may answer a repeated request from its response cache: upstream APIs yes,
    # in-process sources (the uploaded-document library) no, since new documents must show at once.
    # A connector whose answer depends on `PaperQuery.team_id` must not be cacheable: the response
    # cache is shared by every team.
    cacheable: bool

    async def search(self, query: PaperQuery, limit: int) -> ConnectorResult: ...


@dataclass(frozen=True)
class UpstreamRequest:
    url: str
    params: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)


def error_message(body: str | bytes, limit: int = 200) -> str:
    """The human part of an upstream error body (JSON `message`/`error`, Atom summary, or text)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("message", "error", "detail", "description"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return value[:limit]
            if isinstance(value, list) and value and isinstance(value[0], dict):
                inner = value[0].get("message")
                if isinstance(inner, str):
                    return inner[:limit]
    summary_start = text.find("<summary>")
    if summary_start >= 0:
        end = text.find("</summary>", summary_start)
        return text[summary_start + 9 : end if end > 0 else None][:limit].strip()
    return " ".join(text.split())[:limit]


ParseFunction = Callable[[int, str | bytes], ConnectorResult]


@dataclass
class LookupResult:
    """An upstream's answer to a lookup: the works it returned (empty: it does not know the work)."""

    connector: str
    works: list[WorkMetadata] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class _Answer(Protocol):
    @property
    def ok(self) -> bool: ...


_AnswerT = TypeVar("_AnswerT", bound=_Answer)


def lookup_guard(connector: str) -> Callable[[LookupParse], LookupParse]:
    """Lookup parsers never raise: a 404 is "unknown work" (not an error), an unforeseen shape is."""

    def decorate(parse: LookupParse) -> LookupParse:
        @functools.wraps(parse)
        def guarded(status_code: int, body: str | bytes) -> LookupResult:
            if status_code in (400, 404, 410):
                return LookupResult(connector=connector)
            if status_code >= 400:
                return LookupResult(
                    connector=connector, error=f"HTTP {status_code} from {connector}: {error_message(body)}"
                )
            try:
                return parse(status_code, body)
            except Exception as exc:
                return LookupResult(
                    connector=connector,
                    error=f"unparseable {connector} answer: {exc.__class__.__name__}: {exc}",
                )

        return guarded

    return decorate


LookupParse = Callable[[int, str | bytes], "LookupResult"]


class UnusableAnswer(Exception):
    """Raised inside a parser for an answer it cannot read; the message is the result's error as is."""


def load_json(body: str | bytes, upstream: str) -> Any:
    try:
        return json.loads(body)
    except ValueError as exc:
        raise UnusableAnswer(f"unparseable {upstream} answer: {exc}") from exc


def ranked_result(
    connector: str,
    records: Iterable[Any],
    to_paper: Callable[[Any, int], FoundPaper | None],
    total: object = None,
) -> ConnectorResult:
    """Records in the upstream's order -> papers ranked from 1 (records that are no paper are skipped);
    `total` is the upstream's own count when it gave an integer one."""
    papers = [p for rank, record in enumerate(records, start=1) if (p := to_paper(record, rank)) is not None]
    return ConnectorResult(
        connector=connector, papers=papers, total=total if isinstance(total, int) else len(papers)
    )


def never_raises(connector: str) -> Callable[[ParseFunction], ParseFunction]:
    """Parsers turn any answer into a ConnectorResult; a shape they did not foresee is an error result."""

    def decorate(parse: ParseFunction) -> ParseFunction:
        @functools.wraps(parse)
        def guarded(status_code: int, body: str | bytes) -> ConnectorResult:
            try:
                return parse(status_code, body)
            except UnusableAnswer as exc:
                return ConnectorResult(connector=connector, error=str(exc))
            except Exception as exc:
                return ConnectorResult(
                    connector=connector,
                    error=f"unparseable {connector} answer: {exc.__class__.__name__}: {exc}",
                )

        return guarded

    return decorate


def status_error(connector: str, status_code: int, body: str | bytes) -> ConnectorResult:
    return ConnectorResult(
        connector=connector, error=f"HTTP {status_code} from {connector}: {error_message(body)}"
    )


class HttpConnector(ABC):
    name: str
    prefix: str
    cacheable = True

    def __init__(self, context: ConnectorContext) -> None:
        self.context = context

    @abstractmethod
    def build_request(self, query: PaperQuery, limit: int) -> UpstreamRequest: ...

    @abstractmethod
    def parse(self, status_code: int, body: str | bytes) -> ConnectorResult: ...

    def _client(self) -> HttpClient:
        if self.context.http is None:
            raise RuntimeError("ConnectorContext.http is not set")
        return self.context.http()

    async def _wait_for_slot(self, interval: float, budget: float) -> None:
        """Book this provider's next slot in the shared bucket and sleep until it comes."""
        if interval <= 0:
            return
        try:
            wait = await asyncio.to_thread(
                self.context.limiter.reserve,
                f"upstream:{self.name}",
                RateLimit.every(interval),
                max(0.0, budget - 0.5),
            )
        except RateLimited:
            raise
        except Exception:
            # The bucket table is unreachable: go on unthrottled (the breaker and retries still hold)
            # rather than fail every search because of a bookkeeping table.
            logger.warning("rate-limit bucket unavailable", connector=self.name, exc_info=True)
            return
        if wait > 0:
            await asyncio.sleep(wait)

    def build_lookup_request(self, kind: LookupKind, value: str) -> UpstreamRequest | None:
        """The request that fetches one work by identifier ("doi", "arxiv") or by title; None when
        this upstream cannot answer that kind of lookup."""
        return None

    def parse_lookup(self, status_code: int, body: str | bytes) -> LookupResult:
        return LookupResult(connector=self.name, error=f"{self.name} has no lookup parser")

    async def search(self, query: PaperQuery, limit: int) -> ConnectorResult:
        started = time.perf_counter()
        result = await self._search(query, limit)
        result.elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
        return result

    async def lookup(self, kind: LookupKind, value: str, budget: float) -> LookupResult:
        """One work by identifier or title, with the same manners as a search (shared rate limit,
        breaker, retries) inside `budget` seconds. Failures become `LookupResult.error`."""
        request = self.build_lookup_request(kind, value)
        if request is None:
            return LookupResult(connector=self.name, error=f"{self.name} cannot look up by {kind}")
        return await self._exchange(
            lambda: request,
            budget,
            self.parse_lookup,
            lambda message: LookupResult(connector=self.name, error=message),
            retries=min(1, self.context.search_settings.upstream_retries),
        )

    async def _search(self, query: PaperQuery, limit: int) -> ConnectorResult:
        cfg = self.context.search_settings
        return await self._exchange(
            lambda: self.build_request(query, limit),
            cfg.connector_timeout_seconds,
            self.parse,
            lambda message: ConnectorResult(connector=self.name, error=message),
            retries=cfg.upstream_retries,
        )

    async def _exchange(
        self,
        build: Callable[[], UpstreamRequest],
        budget: float,
        parse: Callable[[int, bytes], _AnswerT],
        error: Callable[[str], _AnswerT],
        *,
        retries: int,
    ) -> _AnswerT:
        cfg = self.context.search_settings
        deadline = time.monotonic() + budget
        breaker = self.context.breakers.get(self.name)
        try:
            breaker.before_call()
        except CircuitOpen as exc:
            return error(str(exc))
        try:
            request = build()
            client = self._client()  # built before the slot is taken: client set-up must not eat the spacing
            async with asyncio.timeout(budget):
                await self._wait_for_slot(cfg.min_interval(self.name), budget)
                remaining = max(0.1, deadline - time.monotonic())
                response = await client.get(
                    request.url,
                    params=request.params,
                    headers=request.headers,
                    timeout=remaining,
                    total_timeout=remaining,
                    retries=retries,
                    max_bytes=20 * 1024 * 1024,
                )
        except RateLimited as exc:
            breaker.release()
            return error(
                f"{self.name} request budget exhausted waiting for the provider rate limit "
                f"(next slot in {exc.retry_after:.1f} s)"
            )
        except (TimeoutError, FetchTimeout):
            breaker.record_failure()
            return error(f"{self.name} timed out after {budget:g} s")
        except FetchError as exc:
            breaker.record_failure()
            return error(f"{self.name} unreachable: {exc.message}")
        except BaseException:
            breaker.release()
            raise
        if response.status_code == 429:
            hinted = retry_after_seconds(response.headers)
            breaker.record_failure(open_for=hinted)
            suffix = f" (retry after {hinted:g} s)" if hinted is not None else ""
            return error(f"HTTP 429 from {self.name}: rate limited by upstream{suffix}")
        if response.status_code >= 500:
            breaker.record_failure()
            return error(status_error(self.name, response.status_code, response.content).error or "")
        result = parse(response.status_code, response.content)
        if result.ok:
            breaker.record_success()
        else:
            breaker.release()
        return result
