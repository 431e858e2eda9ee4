"""The research console on CloudFront reads the API's answers cross-origin: every app sends CORS headers
for the configured origins, on errors too, and none at all when no origin is configured (`make run`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

from functions.common.errors import NotFound
from functions.common.faces.face import ErrorReply, Face
from functions.common.observability import get_logger
from functions.common.settings import reset_settings_cache
from functions.common.web.api import create_app

CONSOLE = "https://d111111abcdef8.cloudfront.net"


def _app() -> FastAPI:
    router = APIRouter()

    @router.get("/thing")
    def thing() -> dict[str, str]:
        return {"ok": "yes"}

    @router.get("/missing")
    def missing() -> dict[str, str]:
        raise NotFound("no such thing")

    def not_found(exc: NotFound) -> ErrorReply:
        return ErrorReply(404, {"error": {"code": "not_found", "message": exc.message}})

    face = Face(name="cors-test", prefixes=(), rules=((NotFound, not_found),))
    return create_app(
        title="cors-test",
        description="",
        routers=[(face, router)],
        logger=get_logger("cors-test"),
    )


@pytest.fixture
def origins(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.setenv("USAGE_METERING", "false")
    yield monkeypatch
    reset_settings_cache()


def _client(monkeypatch: pytest.MonkeyPatch, value: str | None) -> TestClient:
    if value is None:
        monkeypatch.delenv("CORS_ORIGINS", raising=False)
    else:
        monkeypatch.setenv("CORS_ORIGINS", value)
    reset_settings_cache()
    return TestClient(_app())


def test_a_configured_origin_may_read_answers_and_errors(origins: pytest.MonkeyPatch) -> None:
    client = _client(origins, CONSOLE)
    ok = client.get("/thing", headers={"Origin": CONSOLE})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == CONSOLE
    assert "X-Request-Id" in ok.headers["access-control-expose-headers"]
    error = client.get("/missing", headers={"Origin": CONSOLE})
    assert error.status_code == 404 and error.headers["access-control-allow-origin"] == CONSOLE

    preflight = client.options(
        "/thing",
        headers={
            "Origin": CONSOLE,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 200
    assert "Authorization" in preflight.headers["access-control-allow-headers"]
    assert "access-control-allow-credentials" not in preflight.headers, "a token travels in a header only"


def test_another_origin_is_not_allowed(origins: pytest.MonkeyPatch) -> None:
    client = _client(origins, CONSOLE)
    answer = client.get("/thing", headers={"Origin": "https://elsewhere.example"})
    assert answer.status_code == 200 and "access-control-allow-origin" not in answer.headers


def test_any_origin_with_a_star(origins: pytest.MonkeyPatch) -> None:
    answer = _client(origins, "*").get("/thing", headers={"Origin": "https://elsewhere.example"})
    assert answer.headers["access-control-allow-origin"] == "*"


def test_no_cors_headers_without_origins(origins: pytest.MonkeyPatch) -> None:
    answer = _client(origins, None).get("/thing", headers={"Origin": CONSOLE})
    assert answer.status_code == 200 and "access-control-allow-origin" not in answer.headers
