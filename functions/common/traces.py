"""Agent traces: the ordered events of one answer (or one research job), readable by `GET /v1/traces/{id}`.

A trace belongs to a team: its key carries the team, so another team's trace id reads as unknown.
Several writers may add events to the same trace (a research job's step Lambdas, for instance), so the
store only ever appends. In DynamoDB a trace is one header item (sort key `#meta`: query, kind, the
event counter, expiry) plus one item per event (sort key: the zero-padded sequence number). An append
reserves its range of sequence numbers with one atomic `ADD` on the header, then writes its events, so
concurrent writers never collide and a read returns every event in the order the writers reserved them.
Items expire `trace_ttl_days` after the trace's last append (DynamoDB TTL on `expires_at`); reads
ignore expired traces before TTL deletes them.

`InMemoryTraceStore` implements the same interface for unit tests.
"""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from functions.common.aws import dynamodb_resource
from functions.common.settings import get_settings
from functions.common.storage import from_dynamo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

META = "#meta"  # sorts before every zero-padded sequence number
SEQUENCE_DIGITS = 8
# An event above this size (DynamoDB items stop at 400 KB) keeps its envelope; its payload is dropped.
MAX_EVENT_BYTES = 350_000
DAY_SECONDS = 86_400


def storable(event: dict[str, Any]) -> str:
    """The event as JSON; an oversized payload is replaced by a note of its size."""
    encoded = json.dumps(event, default=str, ensure_ascii=False)
    size = len(encoded.encode("utf-8"))
    if size <= MAX_EVENT_BYTES:
        return encoded
    trimmed = {**event, "payload": {"truncated": True, "payload_bytes": size}}
    return json.dumps(trimmed, default=str, ensure_ascii=False)


def sequence_key(number: int) -> str:
    return f"{number:0{SEQUENCE_DIGITS}d}"


def trace_key(team_id: str, trace_id: str) -> str:
    return f"{team_id}#{trace_id}"


class TraceStore(ABC):
    """`put` and `append` are one append under the team's key of the trace; each store appends and reads."""

    def put(
        self,
        team_id: str,
        trace_id: str,
        query: str,
        events: Sequence[dict[str, Any]],
        kind: str = "answer",
    ) -> None:
        """Name the trace's query and kind, and append `events` (a trace may be put by one writer and
        appended to by others, in any order)."""
        self._append(trace_key(team_id, trace_id), events, {"query": query, "kind": kind})

    def append(self, team_id: str, trace_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Add events after every event already reserved by any writer."""
        self._append(trace_key(team_id, trace_id), events, {})

    @abstractmethod
    def _append(self, key: str, events: Sequence[dict[str, Any]], fields: dict[str, str]) -> None: ...

    @abstractmethod
    def get(self, team_id: str, trace_id: str) -> dict[str, Any] | None:
        """`{"trace_id", "query", "kind", "events": [...]}` in append order, or None (unknown or expired)."""


class DynamoDbTraceStore(TraceStore):
    def __init__(
        self,
        table: Table | None = None,
        *,
        ttl_days: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        settings = get_settings()
        self._table = table or dynamodb_resource().Table(settings.traces_table)
        self._ttl_seconds = (ttl_days if ttl_days is not None else settings.trace_ttl_days) * DAY_SECONDS
        self._clock = clock

    def _append(self, key: str, events: Sequence[dict[str, Any]], fields: dict[str, str]) -> None:
        now = self._clock()
        expires_at = int(now + self._ttl_seconds)
        names = {"#next": "next_seq", "#expires": "expires_at", "#created": "created_at"}
        values: dict[str, Any] = {":n": len(events), ":e": expires_at, ":now": int(now)}
        assignments = ["#expires = :e", "#created = if_not_exists(#created, :now)"]
        for index, (name, value) in enumerate(sorted(fields.items())):
            names[f"#f{index}"] = name
            values[f":f{index}"] = value
            assignments.append(f"#f{index} = :f{index}")
        updated = self._table.update_item(
            Key={"trace_id": key, "seq": META},
            UpdateExpression="ADD #next :n SET " + ", ".join(assignments),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="UPDATED_NEW",
        )
        last = int(str(updated["Attributes"]["next_seq"]))
        first = last - len(events) + 1
        with self._table.batch_writer() as batch:
            for offset, event in enumerate(events):
                batch.put_item(
                    Item={
                        "trace_id": key,
                        "seq": sequence_key(first + offset),
                        "event": storable(event),
                        "expires_at": expires_at,
                    }
                )

    def get(self, team_id: str, trace_id: str) -> dict[str, Any] | None:
        items: list[dict[str, Any]] = []
        arguments: dict[str, Any] = {
            "KeyConditionExpression": "trace_id = :t",
            "ExpressionAttributeValues": {":t": trace_key(team_id, trace_id)},
            "ConsistentRead": True,
        }
        while True:
            page = self._table.query(**arguments)
            items += [from_dynamo(item) for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                break
            arguments["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        meta = next((item for item in items if item["seq"] == META), None)
        if meta is None or float(meta.get("expires_at", 0)) <= self._clock():
            return None
        events = [json.loads(str(item["event"])) for item in items if item["seq"] != META]
        return {
            "trace_id": trace_id,
            "query": str(meta.get("query", "")),
            "kind": str(meta.get("kind", "")),
            "events": events,
        }


class InMemoryTraceStore(TraceStore):
    def __init__(self, *, ttl_days: int = 30, clock: Callable[[], float] = time.time) -> None:
        self._traces: dict[str, dict[str, Any]] = {}
        self._ttl_seconds = ttl_days * DAY_SECONDS
        self._clock = clock
        self._lock = threading.Lock()

    def _append(self, key: str, events: Sequence[dict[str, Any]], fields: dict[str, str]) -> None:
        with self._lock:
            trace = self._traces.setdefault(key, {"query": "", "kind": "", "events": []})
            trace.update(fields)
            trace["expires_at"] = self._clock() + self._ttl_seconds
            trace["events"] += [storable(event) for event in events]

    def get(self, team_id: str, trace_id: str) -> dict[str, Any] | None:
        with self._lock:
            trace = self._traces.get(trace_key(team_id, trace_id))
            if trace is None or trace["expires_at"] <= self._clock():
                return None
            return {
                "trace_id": trace_id,
                "query": trace["query"],
                "kind": trace["kind"],
                "events": [json.loads(event) for event in trace["events"]],
            }
