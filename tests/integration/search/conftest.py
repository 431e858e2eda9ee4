"""A local scholarly web on 127.0.0.1 and the search app on the embedded (moto) AWS."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from functions.common.settings import reset_settings_cache
from functions.local_runtime.aws import EmbeddedAws
from functions.search.app import app
from tests.support import scholarly_fixtures as fx
from tests.support.scholarly_web import ScholarlyWeb

FAST_UPSTREAM_ENV = {
    "SEARCH_ARXIV_MIN_INTERVAL_SECONDS": "0.05",
    "SEARCH_SEMANTIC_SCHOLAR_MIN_INTERVAL_SECONDS": "0.02",
    "SEARCH_OPENALEX_MIN_INTERVAL_SECONDS": "0.01",
    "SEARCH_CROSSREF_MIN_INTERVAL_SECONDS": "0.01",
    "SEARCH_UPSTREAM_RETRIES": "1",
    "SEARCH_MAX_BACKOFF_SECONDS": "0.05",
    "SEARCH_CONNECTOR_TIMEOUT_SECONDS": "5",
    "SEARCH_BREAKER_FAILURE_THRESHOLD": "3",
    "SEARCH_STATE_BACKEND": "dynamodb",
}


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScholarlyWeb]:
    with ScholarlyWeb() as server:
        fx.install(server)
        server.apply_env(monkeypatch)
        for key, value in FAST_UPSTREAM_ENV.items():
            monkeypatch.setenv(key, value)
        reset_settings_cache()
        yield server


@pytest.fixture
def aws(web: ScholarlyWeb) -> Iterator[EmbeddedAws]:
    with EmbeddedAws(step_functions=(), state_machines=()) as embedded:
        yield embedded


@pytest.fixture
def client(aws: EmbeddedAws) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client
