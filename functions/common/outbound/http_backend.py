"""The SSRF guard of functions/common/outbound/http.py in httpcore's connection layer: resolve, check, connect.

A module of its own so that importing functions.common.outbound.http does not import httpcore (h11, h2): the
client imports this when it is built (bench/cold_start.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpcore

from functions.common.outbound.http import Resolver, system_resolver, vet_destination


class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """Resolves, checks and connects to one vetted address."""

    def __init__(
        self,
        allowlist: frozenset[str],
        resolver: Resolver | None = None,
        inner: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        """`inner`: what opens the vetted connection (anyio's sockets; tests count attempts)."""
        self._inner = inner or httpcore.AnyIOBackend()
        self._allowlist = allowlist
        self._resolve = resolver or system_resolver

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        address = await vet_destination(host, port, self._allowlist, self._resolve)
        return await self._inner.connect_tcp(
            address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)
