"""Agent trace events: what every stage of the pipeline did, in order, with its payload.

The recorder hands each event to a listener as it happens (the streaming route forwards them) and keeps
them for the trace store, so a trace is readable after the answer by `GET /v1/traces/{trace_id}`.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

PLANNER, RETRIEVER, WRITER, CRITIC, VERIFIER, RED_TEAM, DECISION = (
    "Planner",
    "Retriever",
    "Writer",
    "Critic",
    "Verifier",
    "Red-Team",
    "Decision",
)


@dataclass(frozen=True)
class TraceEvent:
    event_id: str
    agent: str
    event_type: str  # plan, search, retrieve, rank, write, critique, verify, refuse, finalize
    name: str  # plan_created, search_started, search_completed, retrieval_completed, draft_written, ...
    timestamp: str
    payload: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Listener = Callable[[TraceEvent], Awaitable[None]]


def decision_event(
    refusal: bool, reason: str | None, confidence: float | None, **more: Any
) -> tuple[str, dict[str, Any]]:
    """The Decision agent's `decision` event, as the answer engine and the job both record it: its type
    ("refuse" or "finalize") and payload."""
    payload = {"refusal": refusal, "reason": reason, "confidence": confidence, **more}
    return ("refuse" if refusal else "finalize"), payload


def utc_timestamp(moment: datetime | None = None) -> str:
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class TraceRecorder:
    def __init__(self, trace_id: str, listener: Listener | None = None, *, id_prefix: str = "evt") -> None:
        """`id_prefix` keeps event ids unique when several recorders write one trace (a job's steps)."""
        self.trace_id = trace_id
        self._id_prefix = id_prefix
        self.events: list[TraceEvent] = []
        self._listener = listener
        self._counter = itertools.count(1)

    async def emit(self, agent: str, event_type: str, name: str, **payload: Any) -> TraceEvent:
        event = self.record(agent, event_type, name, **payload)
        if self._listener is not None:
            await self._listener(event)
        return event

    def record(self, agent: str, event_type: str, name: str, **payload: Any) -> TraceEvent:
        """The next event, kept without telling the listener (a caller that stores events itself)."""
        event = TraceEvent(
            event_id=f"{self._id_prefix}-{next(self._counter):03d}",
            agent=agent,
            event_type=event_type,
            name=name,
            timestamp=utc_timestamp(),
            payload=payload,
        )
        self.events.append(event)
        return event
