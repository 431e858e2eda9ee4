"""Requests by route per team and month, recorded by every app's middleware after the response."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

from functions.common.faces.face import Face
from functions.common.observability import get_logger
from functions.common.settings import reset_settings_cache
from functions.common.web.api import create_app
from functions.metering import wiring
from functions.metering.middleware import UsageMiddleware
from functions.metering.store import UsageKey, route_dimension
from tests.support.fakes.usage_store import InMemoryUsageStore

router = APIRouter()


@router.get("/things/{thing_id}")
def thing(thing_id: str) -> dict[str, str]:
    return {"thing_id": thing_id}


@router.get("/admin/teams")
def admin() -> dict[str, str]:
    return {}


@router.get("/boom")
def boom() -> dict[str, str]:
    raise RuntimeError("boom")


def _app() -> FastAPI:
    return create_app(
        title="t",
        description="d",
        routers=[(Face(name="test", prefixes=(), rules=()), router)],
        logger=get_logger("test"),
        middlewares=[UsageMiddleware],
    )


def _month() -> str:
    return datetime.now(UTC).strftime("%Y-%m")


class SpyStore(InMemoryUsageStore):
    def __init__(self) -> None:
        super().__init__()
        self.sent_before_add: list[int] = []
        self.messages: list[dict[str, Any]] = []

    def add(
        self, key: UsageKey, counters: Mapping[str, float], labels: Mapping[str, str] | None = None
    ) -> None:
        self.sent_before_add.append(len(self.messages))
        super().add(key, counters, labels)


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[SpyStore]:
    spy = SpyStore()
    monkeypatch.setattr(wiring, "request_usage_store", lambda: spy)
    yield spy


def test_requests_count_under_their_route_template_per_team(store: SpyStore) -> None:
    with TestClient(_app(), raise_server_exceptions=False) as client:
        assert client.get("/things/a", headers={"x-team-id": "team-alpha"}).status_code == 200
        client.get("/things/b", headers={"x-team-id": "team-alpha"})
        client.get("/things/c")  # no header locally: the default team
        client.get("/no-such-route", headers={"x-team-id": "team-alpha"})  # no route: not counted
        client.get("/admin/teams", headers={"x-team-id": "team-alpha"})  # the platform's: not counted
        client.get("/openapi.json", headers={"x-team-id": "team-alpha"})  # the docs: not counted
        assert client.get("/boom", headers={"x-team-id": "team-alpha"}).status_code == 500
    alpha = {item.dimension: item.counters for item in store.month("team-alpha", _month())}
    assert alpha == {
        route_dimension("GET", "/things/{thing_id}"): {"requests": 2.0},
        route_dimension("GET", "/boom"): {"requests": 1.0, "server_errors": 1.0},
    }
    default = store.get(UsageKey("team-default", _month(), route_dimension("GET", "/things/{thing_id}")))
    assert default is not None and default.count("requests") == 1


def test_the_usage_is_written_after_the_response_was_sent(store: SpyStore) -> None:
    app = _app()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/things/x",
        "raw_path": b"/things/x",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"x-team-id", b"team-alpha"), (b"host", b"test")],
        "client": ("127.0.0.1", 1),
        "server": ("test", 80),
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        store.messages.append(dict(message))

    asyncio.run(app(scope, receive, send))
    final = [
        i
        for i, m in enumerate(store.messages)
        if m["type"] == "http.response.body" and not m.get("more_body")
    ]
    assert final and store.sent_before_add == [final[-1] + 1]  # written once the last body chunk was out


def test_a_failing_usage_store_never_fails_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Any:
        raise RuntimeError("usage table unreachable")

    monkeypatch.setattr(wiring, "request_usage_store", broken)
    with TestClient(_app()) as client:
        assert client.get("/things/a", headers={"x-team-id": "team-alpha"}).json() == {"thing_id": "a"}


def test_without_a_known_team_nothing_is_recorded(store: SpyStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_SOURCE", "authorizer")  # on AWS, and no authorizer context on the request
    reset_settings_cache()
    with TestClient(_app()) as client:
        assert client.get("/things/a").status_code == 200
    assert store.items == {}
