"""The local gateway caps request bodies as API Gateway does (10 MB: 413 in the route family's error
format, declared lengths refused unread, streamed bodies counted), and bounds the X-Request-Id it
echoes."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request

from functions.local_runtime.gateway import MAX_BODY_BYTES, Gateway

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
CHUNK = 64 * 1024

FAMILY_BODIES: dict[str, Any] = {
    "/v1/documents": lambda body: body["error"]["code"] == "payload_too_large",
    "/api/tools/extract": lambda body: body["error"] == "PAYLOAD_TOO_LARGE",
    "/api/tools/search": lambda body: body["error"] == "Payload too large",
    "/api/v1/ask": lambda body: body == {"detail": "Payload too large"},
    "/search/semantic": lambda body: body["error_code"] == "PAYLOAD_TOO_LARGE" and body["status_code"] == 413,
}


def _reading_app(seen: list[int]) -> FastAPI:
    app = FastAPI()

    async def read(request: Request) -> dict[str, int]:
        size = len(await request.body())
        seen.append(size)
        return {"size": size}

    for path in FAMILY_BODIES:
        app.add_api_route(path, read, methods=["POST"])
    return app


def _client(gateway: Gateway) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=gateway), base_url="http://local")


@pytest.mark.parametrize("path", FAMILY_BODIES)
def test_a_declared_length_over_the_cap_is_refused_unread(path: str) -> None:
    seen: list[int] = []
    gateway = Gateway({"app": _reading_app(seen)}, auth_required=False)
    reads = 0

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": b"x" * CHUNK, "more_body": True}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"content-length", str(MAX_BODY_BYTES + 1).encode())],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("local", 80),
    }
    asyncio.run(gateway(scope, receive, send))  # type: ignore[arg-type]

    assert reads == 0 and seen == []
    assert sent[0]["status"] == 413
    import json

    assert FAMILY_BODIES[path](json.loads(sent[1]["body"]))


@pytest.mark.parametrize("path", FAMILY_BODIES)
def test_a_streamed_body_over_the_cap_is_cut_off_with_a_413(path: str) -> None:
    seen: list[int] = []
    gateway = Gateway({"app": _reading_app(seen)}, auth_required=False)
    produced = 0

    async def hundred_megabytes() -> AsyncIterator[bytes]:
        nonlocal produced
        for _ in range(100 * 1024 * 1024 // CHUNK):
            produced += CHUNK
            yield b"x" * CHUNK

    async def scenario() -> httpx.Response:
        async with _client(gateway) as client:
            return await client.post(path, content=hundred_megabytes(), headers={"x-request-id": "big-1"})

    response = asyncio.run(scenario())
    assert response.status_code == 413
    assert FAMILY_BODIES[path](response.json())
    assert response.headers["x-request-id"] == "big-1"
    assert seen == []  # the app never got the body
    assert produced <= MAX_BODY_BYTES + CHUNK  # reading stopped at the cap


def test_a_body_within_the_cap_reaches_the_app() -> None:
    seen: list[int] = []
    gateway = Gateway({"app": _reading_app(seen)}, auth_required=False)

    async def scenario() -> httpx.Response:
        async with _client(gateway) as client:
            return await client.post("/v1/documents", content=b"y" * MAX_BODY_BYTES)

    response = asyncio.run(scenario())
    assert response.status_code == 200 and response.json() == {"size": MAX_BODY_BYTES}
    assert seen == [MAX_BODY_BYTES]


@pytest.mark.parametrize("request_id", ["r" * 100_000, "r" * 129, "tab\there", "id\u00e9", "\u2028"])
def test_an_unsafe_request_id_is_replaced_in_the_gateways_own_answers(request_id: str) -> None:
    gateway = Gateway({"app": _reading_app([])}, auth_required=True, lookup=lambda token: None)

    async def scenario() -> httpx.Response:
        async with _client(gateway) as client:
            headers = {b"x-request-id": request_id.encode("utf-8")}
            return await client.post("/v1/documents", content=b"{}", headers=headers)

    response = asyncio.run(scenario())
    assert response.status_code == 401
    assert UUID.match(response.headers["x-request-id"])


def test_a_safe_request_id_is_echoed() -> None:
    gateway = Gateway({"app": _reading_app([])}, auth_required=True, lookup=lambda token: None)

    async def scenario() -> httpx.Response:
        async with _client(gateway) as client:
            return await client.post(
                "/v1/documents", headers={"x-request-id": "req 01:(abc)-DEF.9" + "x" * 100}
            )

    assert asyncio.run(scenario()).headers["x-request-id"] == "req 01:(abc)-DEF.9" + "x" * 100
