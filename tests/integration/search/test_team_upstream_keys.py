"""A team's own Semantic Scholar and OpenAlex keys, end to end on the embedded AWS and the loopback web:
its searches and its citation chasing send its key and queue at its own provider key (its own daily
OpenAlex allowance), another team's send the service's key and queue at the shared one; answers stay
shared in the response cache."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest

from functions.local_runtime.aws import EmbeddedAws
from functions.search.citations import ChaseOutcome, CitationGraph, Seed
from functions.search.config import SearchSettings
from functions.search.connectors.base import HttpConnector
from functions.search.models import PaperQuery, SearchOutcome
from functions.search.service import SearchService
from functions.search.team_keys import reset_process_team_keys, team_provider
from functions.search.turns import process_turns, reset_process_turns
from functions.teams.service import TeamService
from functions.teams.store import DynamoDbTeamStore
from tests.support.citation_graph import CitationGraphWeb
from tests.support.scholarly_fixtures import SamplePaper
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = pytest.mark.integration
SERVICE_S2_KEY, SERVICE_OA_KEY = "service-s2-key", "service-oa-key"
TEAM_S2_KEY, TEAM_OA_KEY = "own-s2-key-of-the-team", "own-oa-key-of-the-team"
CONNECTORS = ["semantic_scholar", "openalex"]


@pytest.fixture
def teams(monkeypatch: pytest.MonkeyPatch, web: ScholarlyWeb) -> Iterator[tuple[str, str]]:
    monkeypatch.setenv("SEMANTIC_SCHOLAR_API_KEY", SERVICE_S2_KEY)
    monkeypatch.setenv("OPENALEX_API_KEY", SERVICE_OA_KEY)
    monkeypatch.setenv("SEARCH_OPENALEX_SEARCHES_PER_DAY", "1")
    with EmbeddedAws(step_functions=(), state_machines=()):
        reset_process_team_keys()
        reset_process_turns()
        service = TeamService(DynamoDbTeamStore())
        own = service.onboard("Brings its keys", "basic").team.team_id
        other = service.onboard("Uses the service's", "basic").team.team_id
        service.set_upstream_key(own, "semantic_scholar", TEAM_S2_KEY)
        service.set_upstream_key(own, "openalex", TEAM_OA_KEY)
        yield own, other
        reset_process_team_keys()
        reset_process_turns()


def _search(service: SearchService, query: str, team_id: str) -> SearchOutcome:
    return asyncio.run(service.search(PaperQuery(query=query, team_id=team_id, connectors=CONNECTORS)))


def test_a_team_with_its_own_keys_sends_them_and_queues_on_its_own_budget(
    web: ScholarlyWeb, teams: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    own, other = teams
    search = SearchService.from_settings()
    turns = process_turns(SearchSettings())
    caplog.set_level(logging.INFO)

    mine = _search(search, "sparse attention for long documents", own)
    theirs = _search(search, "graph neural networks for molecules", other)
    assert not mine.failed_connectors and not theirs.failed_connectors

    s2 = web.requests_to(web.SEMANTIC_SCHOLAR_PATH)
    assert [(r.param("query"), r.headers.get("x-api-key")) for r in s2] == [
        ("sparse attention for long documents", TEAM_S2_KEY),
        ("graph neural networks for molecules", SERVICE_S2_KEY),
    ]
    oa = web.requests_to(web.OPENALEX_PATH)
    assert [(r.param("search"), r.param("api_key")) for r in oa] == [
        ("sparse attention for long documents", TEAM_OA_KEY),
        ("graph neural networks for molecules", SERVICE_OA_KEY),
    ]
    for provider in CONNECTORS:
        assert turns.granted(team_provider(provider, own)) == 1, provider
        assert turns.granted(provider) == 1, provider  # the other team's only
        assert turns.granted(team_provider(provider, other)) == 0, provider

    # One OpenAlex search a day on each key: the team's second is refused at its own allowance, while
    # the service's, which the team did not touch, was spent by the other team alone.
    assert turns.allowance_left(team_provider("openalex", own), "search", 1) == 0
    again = _search(search, "retrieval augmented generation", own)
    assert "openalex" in again.not_run and "daily search allowance" in again.not_run["openalex"]
    assert len(web.requests_to(web.OPENALEX_PATH)) == 2

    # Answers do not depend on the key: the other team's identical query is served from the cache.
    asked = web.count("/")
    repeat = _search(search, "sparse attention for long documents", other)
    assert web.count("/") == asked and repeat.cache_hits == len(CONNECTORS)

    shown = repr([mine, theirs, again, repeat]) + caplog.text
    for key in (TEAM_S2_KEY, TEAM_OA_KEY):
        assert key not in shown


def test_a_key_removed_stops_being_sent_after_the_cache_lapses(
    web: ScholarlyWeb, teams: tuple[str, str]
) -> None:
    own, _ = teams
    TeamService(DynamoDbTeamStore()).remove_upstream_key(own, "semantic_scholar")
    reset_process_team_keys()  # what a minute does in a running process
    _search(SearchService.from_settings(), "a query after removal", own)
    (request,) = web.requests_to(web.SEMANTIC_SCHOLAR_PATH)
    assert request.headers.get("x-api-key") == SERVICE_S2_KEY
    (openalex,) = web.requests_to(web.OPENALEX_PATH)
    assert openalex.param("api_key") == TEAM_OA_KEY


def test_a_teams_citation_chasing_sends_its_keys_and_queues_on_its_own_budget(
    web: ScholarlyWeb, teams: tuple[str, str]
) -> None:
    own, other = teams
    papers = [
        SamplePaper(title=f"Graph paper {n}", abstract="", year=2020 + n, doi=f"10.7777/k.{n}")
        for n in range(3)
    ]
    CitationGraphWeb(papers, {0: [1], 2: [0]}).install(web)
    connectors = {
        name: c
        for name, c in SearchService.from_settings().connectors.items()
        if isinstance(c, HttpConnector)
    }
    graph = CitationGraph.of(connectors, None, 60)
    turns = process_turns(SearchSettings())

    def chase(team_id: str, job_id: str) -> ChaseOutcome:
        return asyncio.run(
            graph.chase(
                [Seed("src-0", papers[0].doi, None)],
                ("references", "citations"),
                limits={"references": 5, "citations": 5},
                team_id=team_id,
                job_id=job_id,
                deadline=time.time() + 20,
            )
        )

    mine, theirs = chase(own, "job-own"), chase(other, "job-other")
    for outcome in (mine, theirs):
        assert {(c.direction, c.connector) for c in outcome.chases} == {
            ("references", "semantic_scholar"),
            ("citations", "openalex"),
        }
    s2 = [r for r in web.requests_to(web.SEMANTIC_SCHOLAR_BASE + "/paper/") if "/search" not in r.path]
    assert [r.headers.get("x-api-key") for r in s2] == [TEAM_S2_KEY] * 2 + [SERVICE_S2_KEY] * 2
    oa = web.requests_to(web.OPENALEX_PATH)
    sent = len(oa) // 2
    assert [r.param("api_key") for r in oa] == [TEAM_OA_KEY] * sent + [SERVICE_OA_KEY] * sent
    for provider in CONNECTORS:
        assert turns.granted(team_provider(provider, own)) == turns.granted(provider) > 0, provider
        assert turns.granted(team_provider(provider, other)) == 0, provider
