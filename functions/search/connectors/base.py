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
import logging
import math
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from functions.common.errors import FetchError, FetchTimeout
from functions.common.models import LookupKind, WorkMetadata
from functions.common.observability import get_logger
from functions.common.outbound.circuit_breaker import BreakerRegistry, CircuitBreaker, CircuitOpen
from functions.common.outbound.http import (
    TRANSIENT_STATUSES,
    FetchedResponse,
    HttpClient,
    retry_after_seconds,
)
from functions.common.outbound.upstream_turns import Sponsor, Turn, TurnNotGranted, UpstreamTurns
from functions.common.settings import Settings, get_settings
from functions.search.config import SearchSettings
from functions.search.models import ConnectorResult, FoundPaper, PaperQuery
from functions.search.team_keys import TeamKeys, process_team_keys, team_provider
from functions.search.turns import process_turns

logger = get_logger("search")
_KEY_IN_URL = re.compile(r"(\b(?:api_key|key)=)[^&\s\"']+", re.IGNORECASE)


class _KeysRedacted(logging.Filter):
    """httpx logs every request's URL at INFO: an API key sent as a query parameter (OpenAlex's
    `api_key`, the service's or a team's own) must not reach the logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if _KEY_IN_URL.search(message):
            record.msg, record.args = _KEY_IN_URL.sub(r"\1[redacted]", message), ()
        return True


_httpx_logger = logging.getLogger("httpx")
if not any(isinstance(f, _KeysRedacted) for f in _httpx_logger.filters):
    _httpx_logger.addFilter(_KeysRedacted())
# The longest pause a provider's Retry-After imposes on every waiter (a broken header must not stop it
# for hours); past it the breaker, which the 429 also opens, keeps requests away.
MAX_PAUSE_SECONDS = 60.0


@dataclass
class ConnectorContext:
    """What connectors receive instead of reaching for globals."""

    settings: Settings = field(default_factory=get_settings)
    search_settings: SearchSettings = field(default_factory=SearchSettings)
    http: Callable[[], HttpClient] | None = None  # the caller's (event-loop bound) shared client
    turns: UpstreamTurns | None = None  # None: the process's turns for `search_settings`
    breakers: BreakerRegistry = field(default_factory=BreakerRegistry)
    team_keys: TeamKeys | None = None  # None: the process's (functions/search/team_keys.py)

    def __post_init__(self) -> None:
        if self.turns is None:
            self.turns = process_turns(self.search_settings)
        if self.team_keys is None:
            self.team_keys = process_team_keys()

    @property
    def upstream_turns(self) -> UpstreamTurns:
        assert self.turns is not None
        return self.turns


# An identical request's answer that completed while this one waited for its turn, or None.
ServedMeanwhileCheck = Callable[[], Awaitable[ConnectorResult | None]]


@dataclass(frozen=True)
class SharedRequest:
    """What a search shares with identical ones of other jobs in this process: the check, once its turn
    is granted, whether one of them was answered meanwhile (the shared cache), and who else waits for it,
    whose places in line count for it (`upstream_turns.Sponsor`)."""

    served_meanwhile: ServedMeanwhileCheck
    sponsors: Callable[[], list[Sponsor]] = list


def _budget(provider: str, team_id: str | None, team_key: str | None) -> str | None:
    """Where a request's turns are taken: the team's own budget when it carries the team's key, else
    (None) the service's at the provider."""
    return team_provider(provider, team_id) if team_key and team_id else None


async def _nothing_meanwhile() -> None:
    """Graph answers are cached by the chase, not by the request: none is served meanwhile."""
    return None


@dataclass(frozen=True)
class Asker:
    """Whose request waits for a provider's turn: the team and job it is shared fairly between, its
    value within the job (0 first), and by when (epoch seconds) its turn must have come."""

    team: str
    job: str
    priority: int = 0
    turn_deadline: float | None = None
    # What it shares with identical requests of other jobs: once the turn is granted, one answered
    # meanwhile (the shared cache) is used instead and the turn goes back unused; those waiting for it
    # lend it their places in line.
    shared: SharedRequest | None = None
    # A search (not a lookup by id): it spends the provider's daily search allowance where it has one.
    search: bool = False
    # Where its turns and allowance are taken: the provider's own name (the service's budget), or a
    # team's own budget there (`team_keys.team_provider`) when the request carries the team's key.
    provider: str | None = None


class AllowanceSpent(Exception):
    """The provider's daily allowance of searches is spent: the request is not run."""


class ServedMeanwhile(Exception):
    def __init__(self, result: ConnectorResult) -> None:
        super().__init__("served by an identical request")
        self.result = result


class Connector(Protocol):
    name: str
    prefix: str  # of /api/v1/search source ids, e.g. "ax" -> "ax_1a2b3c4d"
    # Whether the service may answer a repeated request from its response cache: upstream APIs yes,
    # in-process sources (the uploaded-document library) no, since new documents must show at once.
    # A connector whose answer depends on `PaperQuery.team_id` must not be cacheable: the response
    # cache is shared by every team.
    cacheable: bool

    async def search(
        self, query: PaperQuery, limit: int, shared: SharedRequest | None = None
    ) -> ConnectorResult: ...


@dataclass(frozen=True)
class UpstreamRequest:
    url: str
    params: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    json_body: Any = None  # a body to POST (Semantic Scholar's `/paper/batch`); None: a GET


CitationDirection = Literal["references", "citations"]


@dataclass(frozen=True)
class GraphQuery:
    """One seed's references (backward) or citing works (forward) wanted from a provider's citation graph,
    for the job `job_id` of `team_id`, whose turns must come by `deadline` (epoch seconds)."""

    doi: str | None
    arxiv_id: str | None
    direction: CitationDirection
    limit: int
    team_id: str
    job_id: str
    deadline: float
    provider_id: str | None = None  # the provider's own id of the seed, where a batch lookup found it
    # Who else waits for this very request (other jobs' identical ones, coalesced in this process).
    sponsors: Callable[[], list[Sponsor]] | None = field(default=None, compare=False)


@dataclass
class GraphResult:
    """A provider's answer to a GraphQuery: the works, the requests it took, or why there are none."""

    connector: str
    papers: list[FoundPaper] = field(default_factory=list)
    error: str | None = None
    requests: int = 0
    from_cache: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def announced_interval(headers: Mapping[str, str]) -> float | None:
    """Seconds per request from `x-rate-limit-limit` and `x-rate-limit-interval`, when both are usable."""
    limit_text, window_text = headers.get("x-rate-limit-limit"), headers.get("x-rate-limit-interval")
    if not limit_text or not window_text:
        return None
    window = _DURATION.match(window_text)
    try:
        limit = float(limit_text)
    except ValueError:
        return None
    if window is None or not math.isfinite(limit) or limit <= 0:
        return None
    seconds = float(window.group(1)) * _UNIT_SECONDS[(window.group(2) or "s").lower()]
    return seconds / limit if seconds > 0 else None


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


@dataclass
class GraphPage:
    """One answer of a citation-graph endpoint: the works it holds (or only their ids, as OpenAlex's
    `referenced_works`), the offset of the next page when the provider has one, or why there is none."""

    papers: list[FoundPaper] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    next_offset: int | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


GraphParse = Callable[[int, str | bytes], GraphPage]


def works_page(connector: str, parse: ParseFunction) -> GraphParse:
    """A graph parser for answers in the provider's search format (lists of works looked up by id)."""

    @graph_guard(connector)
    def parse_works(status_code: int, body: str | bytes) -> GraphPage:
        result = parse(status_code, body)
        if not result.ok:
            raise UnusableAnswer(result.error or f"{connector} answer holds no works")
        return GraphPage(papers=result.papers)

    return parse_works


def newest_most_cited(papers: list[FoundPaper]) -> list[FoundPaper]:
    """Citing works newest first, the most cited first within a year (unknowns last)."""
    return sorted(papers, key=lambda p: (-(p.year or 0), -(p.citations or 0)))


def graph_guard(connector: str) -> Callable[[GraphParse], GraphParse]:
    """Graph parsers never raise: an error status or an unforeseen shape is the page's error."""

    def decorate(parse: GraphParse) -> GraphParse:
        @functools.wraps(parse)
        def guarded(status_code: int, body: str | bytes) -> GraphPage:
            if status_code >= 400:
                return GraphPage(error=f"HTTP {status_code} from {connector}: {error_message(body)}")
            try:
                return parse(status_code, body)
            except UnusableAnswer as exc:
                return GraphPage(error=str(exc))
            except Exception as exc:
                return GraphPage(error=f"unparseable {connector} answer: {exc.__class__.__name__}: {exc}")

        return guarded

    return decorate


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


def year_range_params(start: int | None, end: int | None, *, since: str, until: str) -> dict[str, str]:
    """The `filter` parameter `since:{start}-01-01,until:{end}-12-31` for the years given; none when
    neither is."""
    parts = []
    if start:
        parts.append(f"{since}:{start}-01-01")
    if end:
        parts.append(f"{until}:{end}-12-31")
    return {"filter": ",".join(parts)} if parts else {}


class HttpConnector(ABC):
    name: str
    prefix: str
    cacheable = True
    # Whether a team may bring its own key here (its searches then send it: `with_api_key`).
    takes_team_keys = False

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

    def build_lookup_request(self, kind: LookupKind, value: str) -> UpstreamRequest | None:
        """The request that fetches one work by identifier ("doi", "arxiv") or by title; None when
        this upstream cannot answer that kind of lookup."""
        return None

    def parse_lookup(self, status_code: int, body: str | bytes) -> LookupResult:
        return LookupResult(connector=self.name, error=f"{self.name} has no lookup parser")

    def with_api_key(self, request: UpstreamRequest, api_key: str) -> UpstreamRequest:
        """`request` carrying `api_key` in place of the service's key (connectors that take team keys)."""
        return request

    async def _team_key(self, team_id: str | None) -> str | None:
        keys = self.context.team_keys
        if not self.takes_team_keys or not team_id or keys is None:
            return None
        return await asyncio.to_thread(keys.key, team_id, self.name)

    async def search(
        self, query: PaperQuery, limit: int, shared: SharedRequest | None = None
    ) -> ConnectorResult:
        started = time.perf_counter()
        try:
            result = await self._search(query, limit, shared)
        except ServedMeanwhile as served:
            result = served.result
            result.coalesced = True
        result.elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
        return result

    async def lookup(
        self, kind: LookupKind, value: str, budget: float, *, team: str | None = None
    ) -> LookupResult:
        """One work by identifier or title (a title is a search: it spends any daily search allowance)
        with a search's manners inside `budget` seconds, queued as `team`'s; failures become the error."""
        request = self.build_lookup_request(kind, value)
        if request is None:
            return LookupResult(connector=self.name, error=f"{self.name} cannot look up by {kind}")
        return await send_lookup(self, request, self.parse_lookup, budget, team=team, search=kind == "title")

    # The directions of the provider's citation graph (`citation_graph`); none: it has no graph.
    graph_directions: ClassVar[tuple[CitationDirection, ...]] = ()

    async def graph_ids(self, queries: list[GraphQuery]) -> tuple[list[str | None] | None, int]:
        """The provider's own ids of the seeds, in order (None for a seed it does not know), from a batch
        lookup, and the requests it took; no ids when the provider is asked by DOI or arXiv id directly
        (or the lookup failed)."""
        return None, 0

    async def citation_graph(self, query: GraphQuery) -> GraphResult:
        """The seed's references or citing works, in the provider's order; failures become the error."""
        return GraphResult(self.name, error=f"{self.name} has no citation graph")

    async def graph_exchange(
        self, query: GraphQuery, request: UpstreamRequest, parse: GraphParse
    ) -> GraphPage:
        """One citation-graph request with a search's manners (the job's fair share of the turns, breaker,
        retries, the team's own key), due by the query's deadline; it spends no daily search allowance."""
        cfg = self.context.search_settings
        budget = max(0.5, query.deadline - time.time()) + cfg.connector_timeout_seconds
        team_key = await self._team_key(query.team_id)
        return await self._exchange(
            lambda: request if team_key is None else self.with_api_key(request, team_key),
            budget,
            parse,
            lambda message, _not_run: GraphPage(error=message),
            retries=cfg.upstream_retries,
            asker=Asker(
                team=query.team_id,
                job=query.job_id,
                turn_deadline=query.deadline,
                shared=SharedRequest(_nothing_meanwhile, query.sponsors) if query.sponsors else None,
                provider=_budget(self.name, query.team_id, team_key),
            ),
        )

    async def _search(
        self, query: PaperQuery, limit: int, shared: SharedRequest | None = None
    ) -> ConnectorResult:
        cfg = self.context.search_settings
        budget = cfg.connector_timeout_seconds
        if query.deadline is not None:
            # a scheduled request waits for its turn up to its deadline; the exchange then has its budget
            budget = max(0.1, query.deadline - time.time()) + cfg.connector_timeout_seconds
        team_key = await self._team_key(query.team_id)

        def build() -> UpstreamRequest:
            request = self.build_request(query, limit)
            return request if team_key is None else self.with_api_key(request, team_key)

        return await self._exchange(
            build,
            budget,
            self.parse,
            lambda message, not_run: ConnectorResult(connector=self.name, error=message, not_run=not_run),
            retries=cfg.upstream_retries,
            asker=Asker(
                team=query.team_id or "public",
                job=query.job_id or "interactive",
                priority=query.priority,
                turn_deadline=query.deadline,
                shared=shared,
                search=True,
                provider=_budget(self.name, query.team_id, team_key),
            ),
        )

    def spend_search_allowance(self, provider: str) -> bool:
        """Take one search from the daily allowance at `provider` (the provider's name, or a team's own
        budget there); False when it is spent. Providers without a daily allowance always answer True."""
        return True

    def observe(self, response: FetchedResponse, turn: Turn) -> None:
        """What a provider's response headers say about its limits: Crossref states its pool's in every
        answer (`x-rate-limit-limit: 50`, `x-rate-limit-interval: 1s`); a stricter one than configured
        is then kept for every later turn."""
        interval = announced_interval(response.headers)
        if interval is not None and interval > turn.manners.interval:
            turn.announce(interval)

    async def _exchange(
        self,
        build: Callable[[], UpstreamRequest],
        budget: float,
        parse: Callable[[int, bytes], _AnswerT],
        error: Callable[[str, bool], _AnswerT],
        *,
        retries: int,
        asker: Asker,
    ) -> _AnswerT:
        """One request with upstream manners. Each attempt takes its own turn at the provider, so retries
        are spaced like any request; a 429/503 `Retry-After` pauses the provider for every waiter. Only
        the upstream's answers (5xx, 429, time-outs of the request itself, transport errors) count
        against its circuit breaker; our own waiting never does."""
        # a team's own key has its own breaker: its key's 429s do not stop the service's requests
        breaker = self.context.breakers.get(asker.provider or self.name)
        try:
            breaker.before_call()
        except CircuitOpen as exc:
            return error(str(exc), False)
        deadline = time.time() + budget
        turn_deadline = min(asker.turn_deadline or deadline, deadline - 0.5)
        try:
            request = build()
            client = self._client()  # built before the turn is taken: client set-up must not hold it
        except BaseException:
            breaker.release()
            raise
        response: FetchedResponse | None = None
        for attempt in range(retries + 1):
            try:
                response = await self._attempt(client, request, asker, turn_deadline, deadline)
            except (TurnNotGranted, AllowanceSpent) as exc:
                breaker.release()
                return error(f"not run: {exc}", True)
            except FetchTimeout:
                breaker.record_failure()
                return error(f"{self.name} timed out after {budget:g} s", False)
            except FetchError as exc:
                if attempt < retries and time.time() < turn_deadline:
                    continue
                breaker.record_failure()
                return error(f"{self.name} unreachable: {exc.message}", False)
            except BaseException:
                breaker.release()
                raise
            if (
                response.status_code in TRANSIENT_STATUSES
                and attempt < retries
                # a retry must be able to have its turn after the pause the upstream asked for
                and time.time() + (retry_after_seconds(response.headers) or 0.0) < turn_deadline
            ):
                continue
            break
        assert response is not None
        return self._answer(response, breaker, parse, error)

    def _answer(
        self,
        response: FetchedResponse,
        breaker: CircuitBreaker,
        parse: Callable[[int, bytes], _AnswerT],
        error: Callable[[str, bool], _AnswerT],
    ) -> _AnswerT:
        """The upstream's final answer, parsed, and what it tells the breaker."""
        if response.status_code == 429:
            hinted = retry_after_seconds(response.headers)
            breaker.record_failure(open_for=hinted)
            suffix = f" (retry after {hinted:g} s)" if hinted is not None else ""
            return error(f"HTTP 429 from {self.name}: rate limited by upstream{suffix}", False)
        if response.status_code >= 500:
            breaker.record_failure()
            return error(status_error(self.name, response.status_code, response.content).error or "", False)
        result = parse(response.status_code, response.content)
        if result.ok:
            breaker.record_success()
        else:
            breaker.release()
        return result

    async def _may_send(self, turn: Turn, asker: Asker, provider: str) -> None:
        """Hand the turn back and raise when the request need not or must not be sent: another request
        served it meanwhile (ServedMeanwhile), or the provider's daily allowance is spent."""
        turns = self.context.upstream_turns
        if asker.shared is not None:
            try:
                served = await asker.shared.served_meanwhile()
            except BaseException:
                turns.release(turn)
                raise
            if served is not None:
                turns.release(turn)  # never sent: the provider's spacing is kept
                raise ServedMeanwhile(served)
        if asker.search and not await asyncio.to_thread(self.spend_search_allowance, provider):
            turns.release(turn)
            raise AllowanceSpent(f"{self.name}'s daily search allowance is spent")

    async def _attempt(
        self,
        client: HttpClient,
        request: UpstreamRequest,
        asker: Asker,
        turn_deadline: float,
        deadline: float,
    ) -> FetchedResponse:
        """Wait for the provider's turn, send, and hand the turn back (as soon as the request is written,
        or after the whole exchange for a provider that allows one connection at a time)."""
        turns = self.context.upstream_turns
        provider = asker.provider or self.name
        turn = await turns.acquire_async(
            provider,
            team=asker.team,
            job=asker.job,
            priority=asker.priority,
            deadline=turn_deadline,
            sponsors=asker.shared.sponsors if asker.shared else None,
        )
        exclusive = turn.manners.exclusive
        await self._may_send(turn, asker, provider)

        async def on_sent() -> None:
            turn.sent()
            if not exclusive:
                turns.release(turn)

        try:
            # the exchange itself gets the connector's timeout once its turn has come; a scheduled
            # request's longer deadline is for waiting for that turn, never for a hanging upstream
            timeout = self.context.search_settings.connector_timeout_seconds
            remaining = max(0.1, min(deadline - time.time(), timeout))
            async with asyncio.timeout(remaining):
                response = await client.request(
                    "GET" if request.json_body is None else "POST",
                    request.url,
                    params=request.params,
                    headers=request.headers,
                    json=request.json_body,
                    timeout=remaining,
                    total_timeout=remaining,
                    retries=0,
                    max_bytes=20 * 1024 * 1024,
                    on_sent=on_sent,
                )
            hinted = retry_after_seconds(response.headers)
            if response.status_code in (429, 503) and hinted is not None:
                turn.pause(min(hinted, MAX_PAUSE_SECONDS))
            self.observe(response, turn)
            return response
        except TimeoutError as exc:
            raise FetchTimeout(f"{self.name} timed out") from exc
        finally:
            if turn.sent_at is None:
                turn.sent()  # a request that failed on the way may still have reached the provider
            turns.release(turn)


async def send_lookup(
    connector: HttpConnector,
    request: UpstreamRequest,
    parse: LookupParse,
    budget: float,
    *,
    team: str | None = None,
    search: bool = False,
) -> LookupResult:
    """A lookup whose request the caller built (a batch of ids, say), with `HttpConnector.lookup`'s
    manners."""

    def error(message: str, _not_run: bool) -> LookupResult:
        return LookupResult(connector=connector.name, error=message)

    asker = Asker(team=team or "lookups", job="lookups", priority=5, search=search)
    retries = min(1, connector.context.search_settings.upstream_retries)
    return await connector._exchange(lambda: request, budget, parse, error, retries=retries, asker=asker)


async def graph_batches(
    connector: HttpConnector,
    query: GraphQuery,
    requests: Iterable[UpstreamRequest],
    parse: GraphParse,
    result: GraphResult,
) -> None:
    """Each request in turn while the query's deadline lasts (`connector.graph_exchange`), its works added
    to `result`; the first that fails ends them (its error kept only when no works were found before it)."""
    for request in requests:
        if time.time() >= query.deadline:
            break
        page = await connector.graph_exchange(query, request, parse)
        result.requests += 1
        if not page.ok:
            result.error = None if result.papers else page.error
            break
        result.papers.extend(page.papers)


@dataclass(frozen=True, slots=True)
class UpstreamFormat:
    """How one upstream's answers are read and its works looked up: functions of its module."""

    parse: Callable[[int, str | bytes], ConnectorResult]
    lookup_request: Callable[[Settings, LookupKind, str], UpstreamRequest | None]
    parse_lookup: Callable[[int, str | bytes], LookupResult]


class FormatConnector(HttpConnector):
    """An HTTP connector whose searches and lookups are read by its `upstream` format."""

    upstream: ClassVar[UpstreamFormat]

    @functools.cached_property
    def parse_works(self) -> GraphParse:
        """The graph parser of answers in the provider's search format (works looked up by id)."""
        return works_page(self.name, self.upstream.parse)

    def parse(self, status_code: int, body: str | bytes) -> ConnectorResult:
        return self.upstream.parse(status_code, body)

    def build_lookup_request(self, kind: LookupKind, value: str) -> UpstreamRequest | None:
        return self.upstream.lookup_request(self.context.settings, kind, value)

    def parse_lookup(self, status_code: int, body: str | bytes) -> LookupResult:
        return self.upstream.parse_lookup(status_code, body)
