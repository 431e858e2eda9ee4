"""Server-Sent Events read incrementally from byte chunks (the WHATWG event-stream format, client side).

`parse_sse` is pure: it takes the carried-over state and one chunk as it came off the socket, and returns
the events that chunk completed and the state to carry on. Chunks may split a line, a CRLF pair or a
UTF-8 character anywhere; an event is only emitted once its terminating blank line has arrived.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ServerSentEvent:
    event: str  # "message" when the stream names none
    data: str  # the data lines joined with "\n"

    def json(self) -> Any:
        return json.loads(self.data)


@dataclass(frozen=True)
class SseBuffer:
    pending: bytes = b""  # the unfinished event so far, line endings already normalised to "\n"
    after_cr: bool = False  # the last chunk ended in "\r": a "\n" opening the next chunk completes that CRLF


def parse_sse(buffer: SseBuffer, chunk: bytes) -> tuple[list[ServerSentEvent], SseBuffer]:
    if buffer.after_cr and chunk.startswith(b"\n"):
        chunk = chunk[1:]
    text = buffer.pending + chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    *blocks, rest = text.split(b"\n\n")
    events = [event for block in blocks if (event := _event(block)) is not None]
    return events, SseBuffer(rest, after_cr=chunk.endswith(b"\r"))


def iter_sse(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """Every complete event of a stream, as soon as its chunk arrives; an unterminated last event is dropped."""
    buffer = SseBuffer()
    for chunk in chunks:
        events, buffer = parse_sse(buffer, chunk)
        yield from events


def _event(block: bytes) -> ServerSentEvent | None:
    name, data = "message", []
    # Whole lines only reach here, and "\n" never occurs inside a UTF-8 sequence, so decoding is safe.
    for line in block.decode("utf-8", errors="replace").split("\n"):
        if not line or line.startswith(":"):  # a comment (keep-alive) or the blank line before the block
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value or "message"
        elif field == "data":
            data.append(value)
    return ServerSentEvent(name, "\n".join(data)) if data else None
