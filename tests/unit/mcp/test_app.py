"""`/mcp`'s transport answers that need no tool: the methods a stateless server refuses, and a body that
is not JSON-RPC, each a JSON-RPC error with its HTTP status (never a hang or a 500)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from functions.mcp.app import app

ACCEPT = {"Accept": "application/json, text/event-stream"}


def test_get_and_delete_are_refused_by_a_stateless_server() -> None:
    with TestClient(app) as client:
        stream = client.get("/mcp", headers={"Accept": "text/event-stream"})
        assert stream.status_code == 405 and stream.headers["allow"] == "POST, DELETE"
        assert stream.json()["error"]["code"] == -32600
        ended = client.delete("/mcp", headers=ACCEPT)
        assert ended.status_code == 405 and ended.json()["error"]["code"] == -32600


def test_a_body_that_is_not_json_rpc_is_a_400_with_a_json_rpc_error() -> None:
    with TestClient(app) as client:
        garbage = client.post(
            "/mcp", content=b"{not json", headers={**ACCEPT, "Content-Type": "application/json"}
        )
        assert garbage.status_code == 400 and garbage.json()["error"]["code"] == -32700
        shapeless = client.post("/mcp", json={"hello": "world"}, headers=ACCEPT)
        assert shapeless.status_code == 400 and shapeless.json()["error"]["code"] == -32602
