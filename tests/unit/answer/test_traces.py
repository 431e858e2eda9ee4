"""The trace store, the same tests against DynamoDB (moto) and the in-memory twin."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from moto import mock_aws

from functions.common.traces import (
    DAY_SECONDS,
    MAX_EVENT_BYTES,
    DynamoDbTraceStore,
    InMemoryTraceStore,
    TraceStore,
)
from functions.local_runtime import dynamodb_atomic
from tests.support.tables import create_table


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


StoreFactory = Callable[[Clock], TraceStore]


@pytest.fixture(params=["dynamodb", "memory"])
def make_store(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    if request.param == "memory":
        yield lambda clock: InMemoryTraceStore(ttl_days=30, clock=clock)
        return
    # moto applies an update without a lock; the embedded runtime's patch makes each request atomic, as
    # on AWS, which the concurrent-append test relies on (without it, two ADDs can read the same counter).
    dynamodb_atomic.install()
    with mock_aws():
        table = create_table("traces_table", "traces")
        try:
            yield lambda clock: DynamoDbTraceStore(table, ttl_days=30, clock=clock)
        finally:
            dynamodb_atomic.uninstall()


def event(number: int, writer: str = "answer", **payload: Any) -> dict[str, Any]:
    return {
        "event_id": f"evt-{number:03d}",
        "agent": "Retriever",
        "event_type": "search",
        "name": "search_completed",
        "timestamp": "2026-05-01T12:00:00.000000Z",
        "payload": {"writer": writer, "number": number, "score": 0.82, **payload},
    }


def test_put_then_get_returns_the_events_in_order(make_store: StoreFactory) -> None:
    store = make_store(Clock())
    events = [event(n) for n in range(1, 31)]
    store.put("team-a", "trace-1", "What is RAG?", events)
    found = store.get("team-a", "trace-1")
    assert found == {"trace_id": "trace-1", "query": "What is RAG?", "kind": "answer", "events": events}
    assert store.get("team-a", "trace-2") is None


def test_writers_append_without_losing_or_reordering_their_events(make_store: StoreFactory) -> None:
    store = make_store(Clock())
    store.put("team-a", "job-1", "sleep and memory", [event(0, "job")], kind="job")

    def write(writer: str) -> None:
        for number in range(1, 6):
            store.append("team-a", "job-1", [event(number, writer), event(number, writer, second=True)])

    threads = [threading.Thread(target=write, args=(f"step-{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found = store.get("team-a", "job-1")
    assert found is not None and found["kind"] == "job" and found["query"] == "sleep and memory"
    events = found["events"]
    assert len(events) == 1 + 4 * 5 * 2
    assert events[0]["payload"]["writer"] == "job"
    for writer in (f"step-{i}" for i in range(4)):
        own = [e["payload"] for e in events if e["payload"]["writer"] == writer]
        assert [p["number"] for p in own] == [n for n in range(1, 6) for _ in range(2)]
        # each append's events stay together and in order
        assert all(own[i].get("second") is None and own[i + 1]["second"] for i in range(0, len(own), 2))


def test_an_append_before_the_put_keeps_its_events(make_store: StoreFactory) -> None:
    store = make_store(Clock())
    store.append("team-a", "job-2", [event(1, "step")])
    store.put("team-a", "job-2", "goal", [event(2, "api")], kind="job")
    found = store.get("team-a", "job-2")
    assert found is not None
    assert [e["payload"]["number"] for e in found["events"]] == [1, 2]
    assert found["query"] == "goal"


def test_a_trace_expires_after_its_ttl_from_the_last_append(make_store: StoreFactory) -> None:
    clock = Clock()
    store = make_store(clock)
    store.put("team-a", "trace-3", "q", [event(1)])
    clock.now += 29 * DAY_SECONDS
    store.append("team-a", "trace-3", [event(2)])
    clock.now += 29 * DAY_SECONDS
    found = store.get("team-a", "trace-3")
    assert found is not None and len(found["events"]) == 2
    clock.now += 2 * DAY_SECONDS
    assert store.get("team-a", "trace-3") is None


def test_an_oversized_payload_is_replaced_by_its_size(make_store: StoreFactory) -> None:
    store = make_store(Clock())
    store.put("team-a", "trace-4", "q", [event(1, blob="x" * (MAX_EVENT_BYTES + 10)), event(2)])
    found = store.get("team-a", "trace-4")
    assert found is not None
    big, small = found["events"]
    assert big["event_id"] == "evt-001" and big["payload"]["truncated"] is True
    assert big["payload"]["payload_bytes"] > MAX_EVENT_BYTES
    assert small == event(2)


def test_a_trace_belongs_to_its_team(make_store: StoreFactory) -> None:
    store = make_store(Clock())
    store.put("team-a", "trace-7", "q", [event(1, "a")])
    store.append("team-b", "trace-7", [event(2, "b")])  # the same id in another team is another trace
    own = store.get("team-a", "trace-7")
    assert own is not None and [e["payload"]["writer"] for e in own["events"]] == ["a"]
    other = store.get("team-b", "trace-7")
    assert other is not None and [e["payload"]["writer"] for e in other["events"]] == ["b"]
    assert store.get("team-c", "trace-7") is None
