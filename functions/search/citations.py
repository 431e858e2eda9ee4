"""Citation chasing through the providers' citation graphs: each seed's references (backward) and the works
citing it (forward), from the first provider in GRAPH_ORDER that knows the seed and answers.

Every request goes through the connector's manners (the job's fair share of the provider's turns, its
breaker, retries, the team's own key and budget where it registered one), and an answer is cached and
coalesced like a search's: two jobs asking for the same seed's graph at once share one upstream request. A seed a provider does not know, or whose
provider answered an error, is asked of the next; one that none answered before the deadline is reported
with each provider's reason, never raised.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from functions.common.observability import get_logger
from functions.common.storage import TtlCache, cache_read, cache_write
from functions.search.connectors.base import CitationDirection, GraphQuery, GraphResult, HttpConnector
from functions.search.in_flight import InFlight, SponsorsOf
from functions.search.models import FoundPaper

logger = get_logger("search")
# Semantic Scholar gives both directions with every field in one request per page; OpenAlex both in two
# or more (the seed, then its works); Crossref only the references deposited with a DOI.
GRAPH_ORDER = ("semantic_scholar", "openalex", "crossref")
# Whom each direction asks first: references at Semantic Scholar (one request a seed), citing works at
# OpenAlex (sorted newest first by the provider, a tenth of Semantic Scholar's interval), so that a job's
# two directions wait for two providers' turns at once rather than for one's in a row.
ORDER_BY_DIRECTION: dict[CitationDirection, tuple[str, ...]] = {
    "references": GRAPH_ORDER,
    "citations": ("openalex", "semantic_scholar"),
}
# Graph requests in flight in this process, by cache key: two jobs chasing the same seed share one.
GRAPH_REQUESTS: InFlight[GraphResult] = InFlight()


@dataclass(frozen=True)
class Seed:
    seed_id: str  # the job's id of the source
    doi: str | None
    arxiv_id: str | None


@dataclass
class SeedChase:
    """One seed in one direction: the works found and the provider that gave them, or, when none did
    (`connector` None), each provider's reason."""

    seed: Seed
    direction: CitationDirection
    connector: str | None = None
    papers: list[FoundPaper] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        return "; ".join(f"{name}: {why}" for name, why in self.errors.items())


@dataclass
class ChaseOutcome:
    chases: list[SeedChase]
    requests: Counter[str]  # graph requests sent, by provider


@dataclass
class CitationGraph:
    connectors: Mapping[str, HttpConnector]  # those with a citation graph, in GRAPH_ORDER
    cache: TtlCache | None = None
    cache_ttl_seconds: int = 86400

    @classmethod
    def of(cls, connectors: Mapping[str, object], cache: TtlCache | None, ttl: int) -> CitationGraph:
        graphs = {
            name: connector
            for name in GRAPH_ORDER
            if isinstance(connector := connectors.get(name), HttpConnector) and connector.graph_directions
        }
        return cls(graphs, cache, ttl)

    async def chase(
        self,
        seeds: list[Seed],
        directions: tuple[CitationDirection, ...],
        *,
        limits: Mapping[CitationDirection, int],
        team_id: str,
        job_id: str,
        deadline: float,
    ) -> ChaseOutcome:
        requests: Counter[str] = Counter()

        def query(seed: Seed, direction: CitationDirection) -> GraphQuery:
            return GraphQuery(
                seed.doi, seed.arxiv_id, direction, limits[direction], team_id, job_id, deadline
            )

        known: dict[str, list[str | None] | None] = {}
        findable = [seed for seed in seeds if seed.doi or seed.arxiv_id]
        for name, connector in self.connectors.items():
            known[name], sent = await connector.graph_ids([query(seed, directions[0]) for seed in findable])
            requests[name] += sent
        provider_ids = {
            seed.seed_id: {name: ids[index] if ids is not None else "" for name, ids in known.items()}
            for index, seed in enumerate(findable)
        }

        async def one(seed: Seed, direction: CitationDirection) -> SeedChase:
            chase = SeedChase(seed, direction)
            if seed.seed_id not in provider_ids:
                chase.errors["seed"] = "no DOI or arXiv id to find it by in a citation graph"
                return chase
            for name in ORDER_BY_DIRECTION[direction]:
                connector = self.connectors.get(name)
                if connector is None or direction not in connector.graph_directions:
                    continue
                found = provider_ids[seed.seed_id][name]
                if found is None:
                    chase.errors[name] = "does not know the seed"
                    continue
                if time.time() >= deadline:
                    chase.errors[name] = "no time left in the chasing step"
                    continue
                answer = await self._graph(connector, query(seed, direction), found or None)
                requests[name] += answer.requests
                if answer.ok:
                    chase.connector, chase.papers = name, answer.papers
                    return chase
                chase.errors[name] = answer.error or "no answer"
            return chase

        chases = await asyncio.gather(*(one(seed, direction) for seed in seeds for direction in directions))
        return ChaseOutcome(list(chases), requests)

    async def _graph(
        self, connector: HttpConnector, query: GraphQuery, provider_id: str | None
    ) -> GraphResult:
        """The provider's answer, from the cache when an identical graph request was answered lately."""
        key = f"graph:{connector.name}:{query.direction}:{query.doi or 'arxiv:' + str(query.arxiv_id)}:{query.limit}"
        if self.cache is not None:
            cached = await cache_read(self.cache, key, logger, "graph cache")
            if isinstance(cached, list):
                try:
                    papers = [FoundPaper.model_validate(item) for item in cached]
                except ValueError:
                    logger.warning("ignoring unreadable graph cache entry", key=key)
                else:
                    return GraphResult(connector.name, papers=papers, from_cache=True)
        asked = replace(query, provider_id=provider_id)

        async def ask(sponsors: SponsorsOf) -> GraphResult:
            return await self._fetch(connector, replace(asked, sponsors=sponsors), key)

        def not_run() -> GraphResult:
            return GraphResult(connector.name, error=f"{connector.name}: not run")

        answer, joined = await GRAPH_REQUESTS.share(key, (query.team_id, query.job_id, 0), ask, not_run)
        if joined:  # another job's identical request answered it: this one sent none
            return replace(answer, papers=[paper.model_copy() for paper in answer.papers], requests=0)
        return answer

    async def _fetch(self, connector: HttpConnector, query: GraphQuery, key: str) -> GraphResult:
        try:
            answer = await connector.citation_graph(query)
        except Exception as exc:  # a connector bug costs this seed's chase, not the job
            logger.exception("citation graph raised", connector=connector.name)
            return GraphResult(connector.name, error=f"{connector.name} failed: {exc.__class__.__name__}")
        if answer.ok and self.cache is not None:
            value = [paper.model_dump(mode="json") for paper in answer.papers]
            await cache_write(self.cache, key, value, self.cache_ttl_seconds, logger, "graph cache")
        return answer
