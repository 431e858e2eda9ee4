from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from functions.local_runtime.admission import Admission, limit_from_env


def _app(release: asyncio.Event, started: list[str]) -> Starlette:
    async def slow(request: Request) -> JSONResponse:
        started.append(request.path_params["name"])
        await release.wait()
        return JSONResponse({"name": request.path_params["name"]})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[Route("/slow/{name}", slow), Route("/v1/health", health), Route("/console/app.js", health)]
    )


async def _until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.01)


def test_requests_beyond_the_limit_wait_in_arrival_order_and_all_are_answered() -> None:
    async def scenario() -> None:
        release = asyncio.Event()
        started: list[str] = []
        admission = Admission(_app(release, started), limit=2)
        transport = httpx.ASGITransport(app=admission)
        async with httpx.AsyncClient(transport=transport, base_url="http://local") as client:
            calls = []
            for index in range(6):
                calls.append(asyncio.create_task(client.get(f"/slow/r{index}")))
                await asyncio.sleep(0.01)  # a known arrival order
            await _until(lambda: len(started) == 2)
            await asyncio.sleep(0.05)
            assert started == ["r0", "r1"]  # the other four wait for a slot
            assert admission.in_flight == 2

            health = await asyncio.wait_for(client.get("/v1/health"), 2)  # a probe skips the queue
            assert health.status_code == 200
            page = await asyncio.wait_for(client.get("/console/app.js"), 2)  # so do the console's files
            assert page.status_code == 200

            release.set()
            answers = await asyncio.gather(*calls)
        assert [answer.json()["name"] for answer in answers] == [f"r{index}" for index in range(6)]
        assert started == [f"r{index}" for index in range(6)]
        assert admission.peak_in_flight == 2
        assert admission.in_flight == 0

    asyncio.run(scenario())


def test_a_failing_request_gives_its_slot_back() -> None:
    async def broken(request: Request) -> JSONResponse:
        raise RuntimeError("boom")

    admission = Admission(Starlette(routes=[Route("/broken", broken)]), limit=1)

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=admission, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://local") as client:
            for _ in range(3):  # with a leaked slot the second call would wait forever
                answer = await asyncio.wait_for(client.get("/broken"), 2)
                assert answer.status_code == 500
        assert admission.in_flight == 0

    asyncio.run(scenario())


@pytest.mark.parametrize(("raw", "expected"), [("", 8), ("3", 3), ("0", None), ("-1", None)])
def test_limit_from_the_environment(monkeypatch: pytest.MonkeyPatch, raw: str, expected: int | None) -> None:
    monkeypatch.setenv("LOCAL_MAX_CONCURRENT_REQUESTS", raw)
    assert limit_from_env() == expected


def test_a_malformed_limit_stops_the_runtime_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_MAX_CONCURRENT_REQUESTS", "many")
    with pytest.raises(SystemExit, match="must be an integer"):
        limit_from_env()
