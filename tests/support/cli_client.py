"""The CLI's HTTP client over an app in-process, for the CLI's tests.

Starlette's `TestClient` is an `httpx2.Client` once httpx2 is installed (the MCP SDK brings it): the same
interface as the `httpx.Client` the CLI is typed for, another class. `cli_client` says so once.
"""

from __future__ import annotations

from typing import Any, cast

import httpx
from fastapi.testclient import TestClient


def cli_client(app: Any, **options: Any) -> httpx.Client:
    return cast(httpx.Client, TestClient(app, **options))
