"""The official MCP SDK's client over real HTTP (streamable HTTP) against a served `/mcp`, with a team's
bearer token, for the end-to-end tests and bench/mcp_latency.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import jsonschema
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


def create_team(base_url: str, admin_token: str, name: str) -> tuple[str, str]:
    """A new team through the admin API of a served gateway: its `(team_id, token)`."""
    created = httpx2.post(
        f"{base_url}/admin/teams",
        json={"name": name, "tier": "premium"},
        headers={"Authorization": f"Bearer {admin_token}"},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    return str(created.json()["team_id"]), str(created.json()["token"])


async def output_schemas(client: Client) -> dict[str, dict[str, Any]]:
    """Each listed tool's `outputSchema`, by name, as a client checks its results against them."""
    listed = await client.list_tools()
    return {tool.name: tool.output_schema or {} for tool in listed.tools}


def structured(result: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """A successful tool result's structured content, checked against the tool's output schema and
    given with its summary line."""
    assert not result.is_error, result.content
    body = result.structured_content
    assert isinstance(body, dict)
    jsonschema.validate(body, schema)
    assert result.content[0].text  # the summary line
    return body
