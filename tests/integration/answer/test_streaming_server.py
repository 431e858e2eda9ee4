"""`/v1/query/stream` through the local gateway under uvicorn on a real socket: each event is written as it
happens (nothing buffers the stream), and a client that goes away cancels the run, whose trace is kept."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from functions.cli.sse import iter_sse
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.gateway import Gateway, load_function_apps
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

QUESTION = "How does sparse attention reduce the memory use of transformer architectures?"
SEARCH_LATENCY = 1.0


@pytest.fixture
def base_url(aws: EmbeddedAws) -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(Gateway(load_function_apps()), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    listener.close()


def _slow_search(web: ScholarlyWeb) -> None:
    for path in (web.ARXIV_PATH, web.SEMANTIC_SCHOLAR_BASE, web.OPENALEX_BASE, web.CROSSREF_BASE):
        web.set_latency(path, SEARCH_LATENCY)


def test_events_arrive_as_they_happen(base_url: str, web: ScholarlyWeb) -> None:
    _slow_search(web)
    arrivals: list[tuple[float, str, str]] = []
    with httpx.Client(base_url=base_url, timeout=60) as http:
        started = time.monotonic()
        with http.stream(
            "POST",
            "/v1/query/stream",
            json={"query": QUESTION, "options": {"preset": "fast"}},
            headers={"x-request-id": "stream-1"},
        ) as response:
            assert response.status_code == 200
            assert response.headers["x-request-id"] == "stream-1"
            assert response.headers["cache-control"] == "no-cache"
            assert response.headers["x-accel-buffering"] == "no"
            for event in iter_sse(response.iter_bytes()):
                name = event.json().get("name", "") if event.event == "trace_event" else ""
                arrivals.append((time.monotonic() - started, event.event, name))
    first_at, first_kind, first_name = arrivals[0]
    assert (first_kind, first_name) == ("trace_event", "request_received")
    searched_at = next(at for at, _, name in arrivals if name == "search_completed")
    final_at, final_kind, _ = arrivals[-1]
    assert final_kind == "final"
    # the first event was on the wire while the searches were still waiting on their upstreams
    assert searched_at - first_at >= SEARCH_LATENCY * 0.8, arrivals
    assert first_at < final_at - SEARCH_LATENCY * 0.8, arrivals


def test_a_client_that_goes_away_cancels_the_run(base_url: str, web: ScholarlyWeb) -> None:
    _slow_search(web)
    web.set_latency(web.OPENALEX_BASE, 10.0)
    with httpx.Client(base_url=base_url, timeout=60) as http:
        with http.stream("POST", "/v1/query/stream", json={"query": QUESTION}) as response:
            first = next(iter_sse(response.iter_bytes())).json()
        trace_id = first["payload"]["trace_id"]
        deadline = time.monotonic() + 8  # well before the slowest upstream would have answered
        events: list[dict[str, object]] = []
        while time.monotonic() < deadline:
            found = http.get(f"/v1/traces/{trace_id}")
            events = found.json().get("events", []) if found.status_code == 200 else []
            if events and events[-1]["name"] == "error":
                break
            time.sleep(0.1)
    assert events, "the cancelled run's trace was not stored"
    assert events[-1]["name"] == "error"
    assert events[-1]["payload"] == {
        "code": "cancelled",
        "message": "the client went away before the answer was finished",
    }
    assert "decision" not in [event["name"] for event in events]
