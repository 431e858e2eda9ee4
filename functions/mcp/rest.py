"""The REST routes the MCP tools mirror, called with the caller's own credentials.

Two clients with one interface, `RestClient`:
- `InProcessRest`: the local runtime's gateway (an ASGI app) called in the same process, exactly as a
  request from outside would reach it (the gateway checks the token and sets the team), with the body
  streamed back as the app writes it;
- `HttpRest`: the deployed API's base URL over HTTPS through the guarded outbound client (API Gateway's
  authorizer checks the token again, the usage plan counts the call).

Either way a tool's call is the REST route's call: its metering, budget, rate limit, team isolation and
error messages are the route's own. Only the credential headers of the MCP request are passed on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote, urlencode

from functions.common.outbound.http import HttpClient

# The request headers a tool call passes on to its REST route: the credentials, the request id, and who
# the caller is for the routes' per-client limits (functions/common/web/api.py `client_identity`).
FORWARDED_HEADERS = ("authorization", "x-api-key", "x-request-id", "x-forwarded-for")

AsgiMessage = MutableMapping[str, Any]
AsgiApp = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[AsgiMessage]],
        Callable[[AsgiMessage], Awaitable[None]],
    ],
    Awaitable[None],
]


@dataclass(frozen=True)
class RestCall:
    """One request to a REST route: `path` already has its parameters filled in."""

    method: str
    path: str
    json: Any = None
    query: Mapping[str, str] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return self.path + (f"?{urlencode(self.query)}" if self.query else "")


@dataclass(frozen=True)
class RestReply:
    status: int
    content_type: str
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class ServerEvent:
    """One Server-Sent Event of a streamed route (`event:` name, parsed `data:` JSON)."""

    event: str
    data: Any


class StreamedReply(Protocol):
    """A reply whose body is read as it arrives: its status and type first, then its events."""

    status: int
    content_type: str

    def events(self) -> AsyncIterator[ServerEvent]: ...

    async def read(self) -> bytes: ...


class RestClient(Protocol):
    async def send(self, call: RestCall, headers: Mapping[str, str]) -> RestReply: ...

    def stream(
        self, call: RestCall, headers: Mapping[str, str]
    ) -> contextlib.AbstractAsyncContextManager[StreamedReply]: ...


def forwarded(headers: Mapping[str, str], client_host: str | None = None) -> dict[str, str]:
    """The headers of the MCP request that its REST calls carry (lower-cased names). Without an
    `X-Forwarded-For`, the MCP caller's address (`client_host`) becomes one, so that a route limits
    each MCP caller as its own client, not every one of them as this server."""
    lowered = {name.lower(): value for name, value in headers.items()}
    passed = {name: lowered[name] for name in FORWARDED_HEADERS if name in lowered}
    if "x-forwarded-for" not in passed and client_host:
        passed["x-forwarded-for"] = client_host
    return passed


async def parse_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[ServerEvent]:
    """The events of a `text/event-stream` body (the WHATWG format: comments and retries skipped, one
    `data:` line per event as functions/answer/sse.py writes them)."""
    pending = b""
    name = "message"
    async for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.removesuffix(b"\r").decode("utf-8", errors="replace")
            if line.startswith("event:"):
                name = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                yield ServerEvent(name, json.loads(line.removeprefix("data:").strip()))
                name = "message"


class _AsgiReply:
    """The response of an in-process ASGI call, its body chunks read from a queue as the app sends them."""

    def __init__(self, status: int, content_type: str, chunks: asyncio.Queue[bytes | None]) -> None:
        self.status = status
        self.content_type = content_type
        self._chunks = chunks

    async def _body(self) -> AsyncIterator[bytes]:
        while (chunk := await self._chunks.get()) is not None:
            yield chunk

    def events(self) -> AsyncIterator[ServerEvent]:
        return parse_events(self._body())

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self._body()])


def _http_scope(call: RestCall, headers: Mapping[str, str]) -> tuple[MutableMapping[str, Any], bytes]:
    """The ASGI HTTP scope uvicorn would build for `call` from loopback, and its body."""
    body = b"" if call.json is None else json.dumps(call.json).encode()
    sent = dict(headers)
    if call.json is not None:
        sent["content-type"] = "application/json"
    sent["content-length"] = str(len(body))
    path, _, query = call.target.partition("?")
    scope: MutableMapping[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": call.method,
        "scheme": "http",
        "path": unquote(path),  # ASGI's `path` is decoded, `raw_path` as sent
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in sent.items()
        ],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    return scope, body


class InProcessRest:
    """The gateway's ASGI app called in this process, with an HTTP scope as uvicorn would build it."""

    def __init__(self, app: AsgiApp) -> None:
        self._app = app

    async def send(self, call: RestCall, headers: Mapping[str, str]) -> RestReply:
        async with self.stream(call, headers) as reply:
            return RestReply(reply.status, reply.content_type, await reply.read())

    @contextlib.asynccontextmanager
    async def stream(self, call: RestCall, headers: Mapping[str, str]) -> AsyncIterator[StreamedReply]:
        scope, body = _http_scope(call, headers)
        started: asyncio.Future[tuple[int, str]] = asyncio.get_running_loop().create_future()
        chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        done = asyncio.Event()
        body_sent = False

        async def receive() -> AsgiMessage:
            nonlocal body_sent
            if not body_sent:
                body_sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()  # the reply is finished (or abandoned): the client is gone
            return {"type": "http.disconnect"}

        async def send(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start":
                names = {bytes(k).lower(): bytes(v) for k, v in message.get("headers", [])}
                content_type = names.get(b"content-type", b"").decode("latin-1").split(";")[0].strip()
                started.set_result((int(message["status"]), content_type))
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    chunks.put_nowait(bytes(message["body"]))
                if not message.get("more_body", False):
                    chunks.put_nowait(None)

        async def run() -> None:
            try:
                await self._app(scope, receive, send)
            finally:
                chunks.put_nowait(None)
                if not started.done():
                    started.set_exception(RuntimeError(f"{call.method} {call.path} sent no response"))

        task = asyncio.create_task(run())
        try:
            status, content_type = await started
            yield _AsgiReply(status, content_type, chunks)
        finally:
            done.set()
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class _HttpReply:
    def __init__(self, status: int, content_type: str, chunks: AsyncIterator[bytes]) -> None:
        self.status = status
        self.content_type = content_type
        self._chunks = chunks

    def events(self) -> AsyncIterator[ServerEvent]:
        return parse_events(self._chunks)

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self._chunks])


class HttpRest:
    """The deployed API at `base_url` (`https://<api>.execute-api.<region>.amazonaws.com/prod`), called
    through the guarded outbound client, within `timeout_seconds` for a whole call."""

    def __init__(self, base_url: str, http: HttpClient, timeout_seconds: float) -> None:
        self._base = base_url.rstrip("/")
        self._http = http
        self._timeout = timeout_seconds

    async def send(self, call: RestCall, headers: Mapping[str, str]) -> RestReply:
        response = await self._http.request(
            call.method,
            self._base + call.target,
            json=call.json,
            headers=dict(headers),
            retries=0,  # a retried POST could start a second job or answer twice
            total_timeout=self._timeout,
        )
        return RestReply(response.status_code, response.content_type, response.content)

    @contextlib.asynccontextmanager
    async def stream(self, call: RestCall, headers: Mapping[str, str]) -> AsyncIterator[StreamedReply]:
        async with self._http.stream(
            call.method,
            self._base + call.target,
            json=call.json,
            headers=dict(headers),
            total_timeout=self._timeout,
        ) as response:
            content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
            yield _HttpReply(response.status_code, content_type, response.aiter_bytes())
