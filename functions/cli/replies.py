"""What the commands do with the API's answer: use it, or write one line on stderr that says what the API
refused and why (no traceback), for the command to exit 1."""

from __future__ import annotations

import json
from typing import Any, TextIO

import httpx


def error_line(response: httpx.Response) -> str:
    """`<status> <code>: <message>` from either error body the APIs use (the agent API's `{"error": CODE,
    "message": ..., <more>}`, whose other fields follow; §8.4's `{"error": {"code", "message"}}`), else
    the status and the start of the text."""
    try:
        body = response.json()
    except ValueError:
        return f"{response.status_code} {response.text[:200]}"
    if not isinstance(body, dict):
        return f"{response.status_code} {json.dumps(body)[:200]}"
    error = body.get("error")
    if isinstance(error, dict):
        return f"{response.status_code} {error.get('code')}: {error.get('message')}"
    if error is not None:
        more = "".join(f"; {k}: {json.dumps(v)}" for k, v in body.items() if k not in ("error", "message"))
        return f"{response.status_code} {error}: {body.get('message')}{more}"
    if body.get("detail") is not None:
        return f"{response.status_code} {body['detail']}"
    return f"{response.status_code} {response.text[:200]}"


def send(http: httpx.Client, err: TextIO, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
    """The API's successful answer; None, with the error on one line of `err`, when there is none."""
    try:
        response = http.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        err.write(f"error: {type(exc).__name__}: {exc}\n")
        return None
    if response.is_error:
        err.write(f"error: {error_line(response)}\n")
        return None
    return response
