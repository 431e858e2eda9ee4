"""The official MCP SDK's client over real HTTP (streamable HTTP) against a served `/mcp`, with a team's
bearer token, for the end-to-end tests and bench/mcp_latency.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

CURRENT = "2026-07-28"  # the current revision (server/discover, no initialize)
HANDSHAKE = "legacy"  # the initialize handshake (the SDK's latest handshake revision)
TIMEOUT = httpx2.Timeout(240.0, connect=10.0)


@asynccontextmanager
async def mcp_client(base_url: str, token: str | None = None, mode: str = CURRENT) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


def jsonrpc(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
