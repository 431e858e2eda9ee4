"""Every app bounds the X-Request-Id it echoes, logs and stores (request.state.request_id)."""

from __future__ import annotations

import re

import pytest
from aws_lambda_powertools import Logger
from fastapi import APIRouter, FastAPI, Request
from fastapi.testclient import TestClient

from functions.common.api import create_app
from functions.common.faces.face import Face

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _app() -> FastAPI:
    router = APIRouter()

    @router.get("/v1/probe")
    def probe(request: Request) -> dict[str, str]:
        return {"stored": request.state.request_id}

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
