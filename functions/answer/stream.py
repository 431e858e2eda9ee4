"""One answer as Server-Sent Events: `trace_event`, `answer_delta`, `citation`, then `final` (or `error`).

`answer_delta` carries verified text only (`"verified": true`): each sentence once the Verifier kept it,
never the writer's draft, and only from the moment the decision gate admits the answer, so a refused
answer streams nothing and a `final` refusal carries no draft either. The critique and Red-Team come
after the first deltas and never retract them: they may lower the confidence `final` reports
(functions/research/verified_stream.py). The deltas add up to `final.answer`.

The pipeline runs as its own task and its listeners put each event, already framed, on a queue; the
response body is that queue, so every event is written the moment it happens. The first event
(`request_received`) is emitted before any search starts. A quiet stretch (a slow PDF host) sends an SSE
comment now and then so proxies keep the connection open. When the client goes away, the response's
body iterator is closed, which cancels the pipeline task; the cancelled run still stores its trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import anyio

from functions.answer.service import AnswerService, Listeners, query_citation, to_query_response
from functions.answer.sse import KEEP_ALIVE, frame
from functions.common.faces import trust
from functions.research.pipeline import AnswerRequest

HEARTBEAT_SECONDS = 15.0
# How long a cancelled run may take to store its trace before the response is torn down.
CANCEL_GRACE_SECONDS = 5.0


async def answer_events(
    service: AnswerService,
    request: AnswerRequest,
    *,
    answer_id: str,
    trace_id: str,
    received: dict[str, Any] | None = None,
    heartbeat_seconds: float = HEARTBEAT_SECONDS,
) -> AsyncGenerator[bytes, None]:
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def on_trace(event: dict[str, Any]) -> None:
        queue.put_nowait(frame("trace_event", event))

    async def on_delta(text: str) -> None:
        # The pipeline sends only sentences the Verifier kept; the flag lets clients tell them from drafts.
        queue.put_nowait(frame("answer_delta", {"text": text, "verified": True}))

    async def on_citations(citations: list[dict[str, Any]]) -> None:
        queue.put_nowait(frame("citation", {"citations": [query_citation(c) for c in citations]}))

    async def run() -> None:
        try:
            result = await service.answer(
                request,
                trace_id=trace_id,
                listeners=Listeners(on_trace=on_trace, on_delta=on_delta, on_citations=on_citations),
                received=received,
            )
            queue.put_nowait(frame("final", to_query_response(answer_id, result)))
        except Exception as exc:
            queue.put_nowait(frame("error", trust.FACE.reply(exc).body))
        finally:
            queue.put_nowait(None)

    task = asyncio.create_task(run())
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), heartbeat_seconds)
            except TimeoutError:
                yield KEEP_ALIVE
                continue
            if item is None:
                return
            yield item
    finally:
        if not task.done():
            task.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait({task}, timeout=CANCEL_GRACE_SECONDS)
