"""The providers' citation graphs over real HTTP on loopback, in their own formats (tests/support/citation_graph.py):
each connector's references and citing works, Semantic Scholar's paging and batch lookup, and chasing that
falls through to the next provider when one answers errors, reporting a seed none could answer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from functions.search.citations import GRAPH_REQUESTS, ChaseOutcome, CitationGraph, Seed
from functions.search.connectors.base import CitationDirection, GraphQuery, HttpConnector
from functions.search.models import FoundPaper
from functions.search.service import SearchService
from functions.search.turns import reset_process_turns
from tests.support.citation_graph import CitationGraphWeb
from tests.support.scholarly_fixtures import SamplePaper
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = pytest.mark.integration

PAPERS = [
    SamplePaper(
        title=f"Paper {n} on citation graphs",
        abstract=f"Study {n} of how papers cite each other.",
        year=2015 + n,
        doi=f"10.7777/graph.{n}",
        arxiv_id=f"2101.{10000 + n}" if n % 2 else None,
        citations=10 * n,
    )
    for n in range(8)
]
# 0 and 1 cite 5, 6 and 7; 2 cites 0; 3 cites 0 and 1
CITES = {0: [5, 6, 7], 1: [5, 6, 7], 2: [0], 3: [0, 1]}


@pytest.fixture
def graph_web(web: ScholarlyWeb, monkeypatch: pytest.MonkeyPatch) -> CitationGraphWeb:
    graph = CitationGraphWeb(PAPERS, CITES, searchable=5)
    graph.install(web)
    monkeypatch.setenv("SEARCH_STATE_BACKEND", "memory")
    reset_process_turns()
    web.reset_requests()
    return graph


def _connectors() -> dict[str, HttpConnector]:
    service = SearchService.from_settings()
    return {name: c for name, c in service.connectors.items() if isinstance(c, HttpConnector)}


def _query(index: int, direction: CitationDirection, limit: int = 10) -> GraphQuery:
    paper = PAPERS[index]
    return GraphQuery(paper.doi, paper.arxiv_id, direction, limit, "team-a", "job-a", time.time() + 10)


def _titles(papers: list[FoundPaper]) -> list[str]:
    return [paper.title for paper in papers]


@pytest.mark.usefixtures("graph_web")
@pytest.mark.parametrize("connector", ["semantic_scholar", "openalex", "crossref"])
def test_each_provider_gives_the_references_of_a_seed_in_its_own_format(connector: str) -> None:
    result = asyncio.run(_connectors()[connector].citation_graph(_query(0, "references")))
    assert result.ok, result.error
    assert sorted(_titles(result.papers)) == [PAPERS[i].title for i in (5, 6, 7)]
    assert all(p.doi for p in result.papers) and result.requests >= 1


@pytest.mark.usefixtures("graph_web")
@pytest.mark.parametrize("connector", ["semantic_scholar", "openalex"])
def test_citing_works_come_newest_first(connector: str) -> None:
    result = asyncio.run(_connectors()[connector].citation_graph(_query(0, "citations")))
    assert result.ok, result.error
    assert _titles(result.papers) == [PAPERS[3].title, PAPERS[2].title]  # 2018 before 2017


@pytest.mark.usefixtures("graph_web")
def test_crossref_has_no_forward_graph() -> None:
    result = asyncio.run(_connectors()["crossref"].citation_graph(_query(5, "citations")))
    assert not result.ok and "only the references" in (result.error or "")


def test_semantic_scholar_follows_next_until_the_limit(
    graph_web: CitationGraphWeb, web: ScholarlyWeb
) -> None:
    graph_web.page_size = 1
    result = asyncio.run(_connectors()["semantic_scholar"].citation_graph(_query(1, "references", limit=2)))
    assert result.ok and len(result.papers) == 2 and result.requests == 2
    offsets = [r.param("offset") for r in web.requests_to(web.SEMANTIC_SCHOLAR_BASE + "/paper/DOI:")]
    assert offsets == ["0", "1"]


def test_seeds_are_resolved_by_one_batch_post_and_an_unknown_seed_is_reported_not_chased(
    graph_web: CitationGraphWeb, web: ScholarlyWeb
) -> None:
    seeds = [Seed("src-0", PAPERS[0].doi, None), Seed("src-x", "10.7777/unknown", None)]
    graph = CitationGraph.of(_connectors(), None, 60)
    outcome = asyncio.run(
        graph.chase(
            seeds,
            ("references", "citations"),
            limits={"references": 10, "citations": 10},
            team_id="team-a",
            job_id="job-a",
            deadline=time.time() + 10,
        )
    )
    batch = web.requests_to(web.SEMANTIC_SCHOLAR_BASE + "/paper/batch")
    assert len(batch) == 1 and batch[0].method == "POST"
    assert batch[0].json() == {"ids": ["DOI:10.7777/graph.0", "DOI:10.7777/unknown"]}
    by_seed = {(c.seed.seed_id, c.direction): c for c in outcome.chases}
    assert by_seed[("src-0", "references")].connector == "semantic_scholar"
    citing = by_seed[("src-0", "citations")]
    assert citing.connector == "openalex" and len(citing.papers) == 2  # forward: OpenAlex first
    unknown = by_seed[("src-x", "references")]
    assert unknown.connector is None and unknown.papers == []
    assert unknown.errors["semantic_scholar"] == "does not know the seed"
    assert "HTTP 404 from openalex" in unknown.errors["openalex"]
    assert "HTTP 404 from crossref" in unknown.errors["crossref"]
    # Semantic Scholar: the batch and src-0's references; OpenAlex: src-0's citing works (the seed, then
    # the `cites:` list) and the unknown seed's both directions (one 404 each)
    assert outcome.requests == {"semantic_scholar": 2, "openalex": 4, "crossref": 1}


def test_a_provider_answering_errors_costs_only_that_seed(
    graph_web: CitationGraphWeb, web: ScholarlyWeb
) -> None:
    s2_id = graph_web._s2[1]["paperId"]
    web.fail(f"{web.SEMANTIC_SCHOLAR_BASE}/paper/{s2_id}/references", "500")
    web.fail(f"{web.OPENALEX_PATH}/doi:{PAPERS[1].doi}", "503")
    seeds = [Seed(f"src-{i}", PAPERS[i].doi, PAPERS[i].arxiv_id) for i in (0, 1, 3)]
    graph = CitationGraph.of(_connectors(), None, 60)
    outcome = asyncio.run(
        graph.chase(
            seeds,
            ("references",),
            limits={"references": 10, "citations": 10},
            team_id="team-a",
            job_id="job-a",
            deadline=time.time() + 10,
        )
    )
    by_seed = {c.seed.seed_id: c for c in outcome.chases}
    assert (
        by_seed["src-0"].connector == "semantic_scholar" and by_seed["src-3"].connector == "semantic_scholar"
    )
    failed = by_seed["src-1"]
    assert failed.connector == "crossref"  # Semantic Scholar 500, OpenAlex 503, Crossref answered
    assert "HTTP 500" in failed.errors["semantic_scholar"] and "HTTP 503" in failed.errors["openalex"]
    assert sorted(_titles(failed.papers)) == [PAPERS[i].title for i in (5, 6, 7)]


def test_two_jobs_chasing_the_same_seed_at_once_share_one_upstream_request(
    graph_web: CitationGraphWeb, web: ScholarlyWeb
) -> None:
    references = f"{web.SEMANTIC_SCHOLAR_BASE}/paper/{graph_web._s2[0]['paperId']}/references"
    hold = web.hold(references, limit=30)
    graph = CitationGraph.of(_connectors(), None, 60)
    seeds = [Seed("src-0", PAPERS[0].doi, None)]
    flight_key = f"graph:semantic_scholar:references:{PAPERS[0].doi}:10"

    def chase(job_id: str) -> Coroutine[Any, Any, ChaseOutcome]:
        return graph.chase(
            seeds,
            ("references",),
            limits={"references": 10, "citations": 10},
            team_id="team-a",
            job_id=job_id,
            deadline=time.time() + 20,
        )

    async def until(condition: Callable[[], bool]) -> None:
        deadline = asyncio.get_running_loop().time() + 30
        while not condition():
            assert asyncio.get_running_loop().time() < deadline, "condition never held"
            await asyncio.sleep(0.01)

    async def both() -> tuple[ChaseOutcome, ChaseOutcome]:
        first = asyncio.create_task(chase("job-a"))
        await until(lambda: web.count(references) == 1)  # job A's request is at the provider
        second = asyncio.create_task(chase("job-b"))
        await until(lambda: bool(GRAPH_REQUESTS.sponsors(flight_key)))  # job B waits for it
        hold.release()
        return await first, await second

    leader, follower = asyncio.run(both())
    assert not hold.outlasted
    assert web.count(references) == 1
    for outcome in (leader, follower):
        (chased,) = outcome.chases
        assert chased.connector == "semantic_scholar"
        assert sorted(_titles(chased.papers)) == [PAPERS[i].title for i in (5, 6, 7)]
    # each job's own seed lookup (the batch), and the one graph request counted for the job that sent it
    assert +leader.requests == {"semantic_scholar": 2} and +follower.requests == {"semantic_scholar": 1}
