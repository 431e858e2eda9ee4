from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any

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


async def _until(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.01)


def _arrived_at_least(admission: Admission, count: int) -> bool:
    """Whether `count` requests hold a slot or wait for one."""
    waiting = admission._slots.waiting if admission._slots is not None else 0
    return admission.in_flight + waiting >= count


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
                # a known arrival order: each one is in (running or queued) before the next is sent
                await _until(partial(_arrived_at_least, admission, index + 1))
            await _until(lambda: len(started) == 2)
            assert started == ["r0", "r1"]  # the other four wait for a slot
            assert admission.in_flight == 2

            health = await asyncio.wait_for(client.get("/v1/health"), 30)  # a probe skips the queue
            assert health.status_code == 200
            page = await asyncio.wait_for(client.get("/console/app.js"), 30)  # so do the console's files
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
                answer = await asyncio.wait_for(client.get("/broken"), 30)
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


def _team_app(release: asyncio.Event, started: list[str]) -> Starlette:
    async def work(request: Request) -> JSONResponse:
        started.append(request.path_params["name"])
        await release.wait()
        return JSONResponse({"name": request.path_params["name"]})

    return Starlette(routes=[Route("/v1/documents/{name}", work)])


async def _burst_then_one(
    admission: Admission,
    release: asyncio.Event,
    started: list[str],
    burst: dict[str, str],
    one: dict[str, str],
) -> list[str]:
    """Team A holds the only slot, queues 40 more, then team B asks once; the order they are served in."""
    transport = httpx.ASGITransport(app=admission)
    async with httpx.AsyncClient(transport=transport, base_url="http://local") as client:
        calls = [asyncio.create_task(client.get("/v1/documents/a0", headers=burst))]
        await _until(lambda: started == ["a0"])
        for index in range(1, 41):
            calls.append(asyncio.create_task(client.get(f"/v1/documents/a{index}", headers=burst)))
        await _until(lambda: admission._slots is not None and admission._slots.waiting == 40)
        calls.append(asyncio.create_task(client.get("/v1/documents/b0", headers=one)))
        await _until(lambda: admission._slots is not None and admission._slots.waiting == 41)
        release.set()
        answers = await asyncio.gather(*calls)
    assert all(answer.status_code == 200 for answer in answers)
    assert admission.in_flight == 0
    return started


def test_one_teams_burst_does_not_make_another_teams_request_wait_behind_it() -> None:
    async def scenario() -> list[str]:
        release, started = asyncio.Event(), list[str]()
        admission = Admission(_team_app(release, started), limit=1)
        return await _burst_then_one(
            admission, release, started, {"x-team-id": "team-a"}, {"x-team-id": "team-b"}
        )

    started = asyncio.run(scenario())
    # a0 held the slot; a1 was already next in turn; then team B's turn, before a2..a40
    assert started.index("b0") == 2
    assert [name for name in started if name != "b0"] == [f"a{index}" for index in range(41)]


def test_teams_are_told_apart_by_their_tokens_as_the_gateway_resolves_them() -> None:
    from functions.local_runtime.gateway import Gateway

    tokens = {
        "token-of-a": "team-aaaaaaaaaaaa",
        "token-of-a-again": "team-aaaaaaaaaaaa",
        "token-of-b": "team-bbbbbbbbbbbb",
    }

    async def scenario() -> list[str]:
        release, started = asyncio.Event(), list[str]()
        gateway = Gateway(
            {"docs": _fastapi_of(_team_app(release, started))}, auth_required=True, lookup=tokens.get
        )
        admission = Admission(gateway, limit=1, team_of=gateway.admission_team)
        # team A's burst carries a forged x-team-id naming team B: the token decides
        burst = {"authorization": "Bearer token-of-a", "x-team-id": "team-bbbbbbbbbbbb"}
        return await _burst_then_one(
            admission, release, started, burst, {"authorization": "Bearer token-of-b"}
        )

    started = asyncio.run(scenario())
    assert started.index("b0") == 2


def _fastapi_of(app: Starlette) -> Any:
    from fastapi import FastAPI

    wrapped = FastAPI()
    wrapped.router.routes.extend(app.routes)
    return wrapped


def test_a_cancelled_waiter_leaves_no_slot_behind() -> None:
    async def scenario() -> None:
        from functions.local_runtime.admission import TeamQueues

        slots = TeamQueues(1)
        await slots.acquire("a")
        waiting = asyncio.create_task(slots.acquire("b"))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        slots.release()
        assert slots.in_flight == 0 and slots.waiting == 0
        await asyncio.wait_for(slots.acquire("c"), 1)  # the slot is free again
        assert slots.in_flight == 1

    asyncio.run(scenario())
