"""The MCP function's app: `/mcp`, the MCP server (functions/mcp/server.py) on the streamable HTTP
transport, stateless (any instance serves any request: no session is kept between requests), answering
JSON or Server-Sent Events as the client's Accept header asks.

The SDK's session manager needs a task group that outlives each request; it is started by the first
request on the running event loop (and again on a new loop), so that the app needs no lifespan: the
local gateway does not run its apps' lifespans, and uvicorn under the Lambda Web Adapter need not.

Not metered and not rate limited here: each tool call is the REST route it mirrors, metered, budgeted
and limited there (functions/mcp/rest.py).
"""

from __future__ import annotations

import asyncio

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from functions.common.observability import get_logger
from functions.common.web.api import RequestContext
from functions.mcp.rest import RestClient
from functions.mcp.server import build_server
from functions.mcp.wiring import rest_client

logger = get_logger("mcp")

MCP_PATH = "/mcp"
MCP_METHODS = ["GET", "POST", "DELETE"]  # the streamable HTTP transport's


class RunningManager:
    """The session manager of the running event loop, started by its first request."""

    def __init__(self, app: FastAPI) -> None:
        self._app = app
        self._server = build_server(self.rest)
        self._manager: StreamableHTTPSessionManager | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def rest(self) -> RestClient:
        return rest_client(getattr(self._app.state, "gateway", None))

    async def manager(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        if self._manager is not None and self._loop is loop:
            return self._manager
        if self._loop is not loop:  # a new loop (a test client's): what ran on the old one is gone
            self._lock = asyncio.Lock()  # a lock belongs to the loop it was made on
            self._loop, self._manager, self._task = loop, None, None
        async with self._lock:
            if self._manager is None or self._task is None or self._task.done():
                manager = StreamableHTTPSessionManager(
                    self._server,
                    stateless=True,
                    # DNS-rebinding protection guards servers that trust whoever reaches them; /mcp
                    # opens nothing the REST routes beside it do not (the same tokens, the same gateway).
                    security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
                )
                started = asyncio.Event()
                self._task = loop.create_task(self._run(manager, started))
                await started.wait()
                self._manager = manager
        assert self._manager is not None
        return self._manager

    @staticmethod
    async def _run(manager: StreamableHTTPSessionManager, started: asyncio.Event) -> None:
        async with manager.run():
            started.set()
            await asyncio.Event().wait()  # until the loop ends


NO_STANDALONE_STREAM = JSONResponse(
    {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Method Not Allowed: no server stream"},
    },
    status_code=405,
    headers={"Allow": "POST, DELETE"},
)


class _Delegated(Response):
    """A response that hands the request to the MCP transport (which writes the answer itself)."""

    def __init__(self, running: RunningManager) -> None:
        super().__init__()
        self._running = running

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "GET":
            # A stateless server has nothing to send on a stream of its own: the transport's GET would
            # hold the connection open with nothing on it (and a Lambda with it). The spec's answer is 405.
            await NO_STANDALONE_STREAM(scope, receive, send)
            return
        manager = await self._running.manager()
        await manager.handle_request(scope, receive, send)


def create_mcp_app() -> FastAPI:
    app = FastAPI(
        title="mcp",
        description="The MCP server (streamable HTTP): the REST routes as tools for assistants.",
        version="0.1.0",
    )
    running = RunningManager(app)

    async def mcp() -> Response:
        return _Delegated(running)

    for method in MCP_METHODS:  # one route each, so that each has an operation id of its own
        app.add_api_route(
            MCP_PATH,
            mcp,
            methods=[method],
            name=f"mcp_{method.lower()}",
            summary="The MCP server (streamable HTTP transport, JSON-RPC): docs/mcp.md",
            response_class=Response,
            include_in_schema=False,  # JSON-RPC, not a REST operation: docs/mcp.md describes it
        )
    app.add_middleware(RequestContext, owner=app, logger=logger)
    return app


app = create_mcp_app()
