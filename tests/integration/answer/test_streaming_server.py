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
from tests.support.scholarly_web import Hold, ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

QUESTION = "How does sparse attention reduce the memory use of transformer architectures?"


@pytest.fixture
def base_url(aws: EmbeddedAws) -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(Gateway(load_function_apps()), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    listener.close()


def _hold_searches(web: ScholarlyWeb) -> list[Hold]:
    """No search is answered until the test releases it (the web releases whatever is left as it stops)."""
    return [
        web.hold(path)
        for path in (web.ARXIV_PATH, web.SEMANTIC_SCHOLAR_BASE, web.OPENALEX_BASE, web.CROSSREF_BASE)
    ]


def test_events_arrive_as_they_happen(base_url: str, web: ScholarlyWeb) -> None:
    holds = _hold_searches(web)
    arrivals: list[tuple[bool, str, str]] = []  # (the searches released when it arrived, event, name)
    with (
        httpx.Client(base_url=base_url, timeout=60) as http,
        http.stream(
            "POST",
            "/v1/query/stream",
            json={"query": QUESTION, "options": {"preset": "fast"}},
            headers={"x-request-id": "stream-1"},
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["x-request-id"] == "stream-1"
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        for event in iter_sse(response.iter_bytes()):
            name = event.json().get("name", "") if event.event == "trace_event" else ""
            arrivals.append((all(hold.released.is_set() for hold in holds), event.event, name))
            for hold in holds:  # the first event read lets the searches answer
                hold.release()
    first_released, first_kind, first_name = arrivals[0]
    assert (first_kind, first_name) == ("trace_event", "request_received")
    # the first event was on the wire while the searches were still waiting on their upstreams
    assert not first_released and not any(hold.outlasted for hold in holds), arrivals
    searched = [released for released, _, name in arrivals if name == "search_completed"]
    final_released, final_kind, _ = arrivals[-1]
    assert final_kind == "final" and final_released, arrivals
    assert searched and all(searched), arrivals


def test_a_client_that_goes_away_cancels_the_run(base_url: str, web: ScholarlyWeb) -> None:
    # no search is answered: a run that was not cancelled would go on, past its connectors' time-out, to
    # a decision, and its trace would not end with the cancellation
    _hold_searches(web)
    with httpx.Client(base_url=base_url, timeout=60) as http:
        with http.stream("POST", "/v1/query/stream", json={"query": QUESTION}) as response:
            first = next(iter_sse(response.iter_bytes())).json()
        trace_id = first["payload"]["trace_id"]
        deadline = time.monotonic() + 60
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
