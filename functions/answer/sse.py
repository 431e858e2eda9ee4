"""Server-Sent Events: the framing (the WHATWG event-stream format, server side) and the response."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import anyio
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

HEADERS = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # proxies (nginx and the like) must pass each event on at once
}
MEDIA_TYPE = "text/event-stream"
KEEP_ALIVE = b": keep-alive\n\n"


def frame(event: str, data: Any) -> bytes:
    """`event: <name>\\ndata: <json>\\n\\n`. JSON never contains a raw newline (json.dumps escapes them
    inside strings), so one `data:` line always holds the whole payload."""
    if "\n" in event or "\r" in event:
        raise ValueError("an event name cannot contain a line break")
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"event: {event}\ndata: {payload}\n\n".encode()


class EventStreamResponse(StreamingResponse):
    """A `text/event-stream` response that always closes its event generator when it ends.

    Starlette stops iterating a body when the client disconnects but leaves the generator suspended
    until the garbage collector finalises it, maybe seconds later; closing it at once runs its
    `finally` (which cancels the work feeding the stream) as soon as the client is gone.
    """

    def __init__(self, events: AsyncGenerator[bytes, None]) -> None:
        super().__init__(events, media_type=MEDIA_TYPE, headers=HEADERS)
        self._events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self._events.aclose()
