"""The answer app on the embedded (moto) AWS, searching a loopback scholarly web of topic papers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from functions.local_runtime.aws import EmbeddedAws
from tests.e2e.scholarly_topic import TopicPaper, environment, serve, topic_papers
from tests.support.scholarly_web import ScholarlyWeb

FAST_UPSTREAM = {
    "SEARCH_UPSTREAM_RETRIES": "1",
    "SEARCH_MAX_BACKOFF_SECONDS": "0.05",
    "SEARCH_CONNECTOR_TIMEOUT_SECONDS": "5",
    "SEARCH_BREAKER_FAILURE_THRESHOLD": "3",
}


@pytest.fixture(scope="session")
def papers() -> list[TopicPaper]:
    return topic_papers(8, off_topic=2)


@pytest.fixture
def web(papers: list[TopicPaper]) -> Iterator[ScholarlyWeb]:
    with ScholarlyWeb() as server:
        serve(server, papers)
        yield server


@pytest.fixture
def aws(web: ScholarlyWeb) -> Iterator[EmbeddedAws]:
    with EmbeddedAws(
        step_functions=(), state_machines=(), extra_environment=environment(web, **FAST_UPSTREAM)
    ) as embedded:
        yield embedded


@pytest.fixture
def client(aws: EmbeddedAws) -> Iterator[TestClient]:
    from functions.answer.app import app

    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client
