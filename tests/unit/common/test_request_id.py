"""Every app bounds the X-Request-Id it echoes, logs and stores (request.state.request_id)."""

from __future__ import annotations

import re

import pytest
from aws_lambda_powertools import Logger
from fastapi import APIRouter, FastAPI, Request
from fastapi.testclient import TestClient

from functions.common.faces.face import Face
from functions.common.web.api import create_app

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _app() -> FastAPI:
    router = APIRouter()

    @router.get("/v1/probe")
    def probe(request: Request) -> dict[str, str]:
        return {"stored": request.state.request_id}

    @router.post("/v1/echo")
    def echo(body: dict[str, str]) -> dict[str, str]:
        return body

    return create_app(
        title="probe",
        description="",
        routers=[(Face(name="probe", prefixes=(), rules=()), router)],
        logger=Logger("probe"),
    )


@pytest.mark.parametrize("sent", ["a" * 100_000, "a" * 129, "line\tbreak", "caf\u00e9", "\u0085next"])
def test_an_unsafe_request_id_is_neither_echoed_nor_stored(sent: str) -> None:
    response = TestClient(_app()).get("/v1/probe", headers={b"X-Request-Id": sent.encode("utf-8")})
    echoed = response.headers["x-request-id"]
    assert UUID.match(echoed) and response.json() == {"stored": echoed}


def test_a_safe_request_id_is_kept() -> None:
    sent = "0f8fad5b-d9cb-469f-a165-70867728950e:retry.2_" + "x" * 80
    response = TestClient(_app()).get("/v1/probe", headers={"X-Request-Id": sent})
    assert response.headers["x-request-id"] == sent and response.json() == {"stored": sent}


def test_a_json_body_read_by_the_check_reaches_the_route_and_one_access_line_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    response = TestClient(_app()).post(
        "/v1/echo", json={"query": "value iteration"}, headers={"X-Request-Id": "r-1"}
    )
    assert response.json() == {"query": "value iteration"} and response.headers["x-request-id"] == "r-1"
    access = [record.__dict__ for record in caplog.records if record.getMessage() == "request"]
    assert [(line["method"], line["path"], line["status"]) for line in access] == [("POST", "/v1/echo", 200)]


def test_a_refused_body_still_carries_the_request_id() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    response = TestClient(_app()).post(
        "/v1/echo", content=deep.encode(), headers={"content-type": "application/json", "X-Request-Id": "r-2"}
    )
    assert response.status_code == 422 and response.headers["x-request-id"] == "r-2"
