"""Outbound HTTP on httpx: bounded in time and size, retried with jittered backoff, guarded against SSRF.

The SSRF guard sits in the connection layer (an httpcore network backend, `GuardedNetworkBackend` in
functions/common/outbound/http_backend.py), so the address that is checked is the address that is connected to: a
name is resolved once, every address it resolves to must be public, and the socket is opened to that
checked address (TLS still verifies the name). Redirects are followed by hand so that every hop passes
through the same guard.

httpcore (with h11 and h2) is imported when the first client is built, not with this module: handlers
import this module for its types and build their client on a request's first call
(bench/cold_start.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import ipaddress
import math
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict, Unpack
from urllib.parse import urljoin

import httpx

from functions.common.errors import FetchBlocked, FetchError, FetchTimeout, FetchTooLarge
from functions.common.outbound.invocation_time import waiting
from functions.common.settings import FetchPurpose, Settings, get_settings

if TYPE_CHECKING:  # tenacity is imported by the first request that retries (bench/cold_start.py)
    from tenacity import RetryCallState

Resolver = Callable[[str, int], Awaitable[list[str]]]

USER_AGENT = "evidence-research-api/0.1 (+https://github.com/; scholarly research agent)"
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
# Addresses that are "global" by the IANA registries but still reach cloud metadata services.
_METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
# IPv6 prefixes whose last 32 bits are an IPv4 address the packet ends up at (RFC 4291 IPv4-compatible,
# RFC 2765 IPv4-translated, RFC 6052 NAT64 well-known prefix).
_LOW_32_EMBEDDING = (
    ipaddress.IPv6Network("::/96"),
    ipaddress.IPv6Network("::ffff:0:0:0/96"),
    ipaddress.IPv6Network("64:ff9b::/96"),
)
# RFC 8215 local-use NAT64: the operator picks where the IPv4 address sits, so no position can be trusted.
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, translated, NAT64, 6to4, Teredo)."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)  # the relay server and the (de-obfuscated) client
    if any(ip in network for network in _LOW_32_EMBEDDING):
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    return []


def is_public_address(address: str) -> bool:
    """True only for globally routable unicast addresses (no private, loopback, link-local, metadata); an
    IPv6 address that embeds IPv4 addresses is public only when each of them is."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _LOCAL_NAT64:
            return False
        embedded = embedded_ipv4(ip)
        if embedded:
            return all(_is_public(inner) for inner in embedded)
    return _is_public(ip)


def _is_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if ip in _METADATA_ADDRESSES:
        return False
    return ip.is_global and not ip.is_multicast


async def system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _host_allowed(host: str, port: int, allowlist: frozenset[str]) -> bool:
    host = host.lower().strip("[]")
    return host in allowlist or f"{host}:{port}" in allowlist


async def vet_destination(host: str, port: int, allowlist: frozenset[str], resolver: Resolver) -> str:
    """Return the address to connect to, or raise FetchBlocked."""
    bare = host.strip("[]")
    try:
        addresses = [str(ipaddress.ip_address(bare))]
    except ValueError:
        try:
            addresses = await resolver(bare, port)
        except OSError as exc:
            raise FetchError(f"could not resolve host {bare!r}: {exc}") from exc
    if not addresses:
        raise FetchError(f"host {bare!r} has no address")
    if _host_allowed(bare, port, allowlist):
        return addresses[0]
    if not all(is_public_address(address) for address in addresses):
        # which address it was is not said: a caller must not learn how internal names resolve
        raise FetchBlocked(f"refusing to fetch from {bare!r}: it resolves to a private or reserved address")
    return addresses[0]


def check_url_shape(url: str) -> httpx.URL:
    """Cheap checks before any network activity: scheme, host, no credentials."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise FetchBlocked(f"invalid URL: {exc}") from exc
    if parsed.scheme not in ("http", "https"):
        raise FetchBlocked(f"only http and https URLs can be fetched, not {parsed.scheme or 'none'!r}")
    if not parsed.host:
        raise FetchBlocked("URL has no host")
    if parsed.userinfo:
        raise FetchBlocked("URLs with embedded credentials are not fetched")
    return parsed


@dataclass(slots=True)
class FetchedResponse:
    url: str
    status_code: int
    headers: httpx.Headers
    content: bytes
    elapsed_ms: float
    redirects: list[str] = field(default_factory=list)

    @property
    def content_type(self) -> str:
        value: str = self.headers.get("content-type", "")
        return value.split(";", 1)[0].strip().lower()

    @property
    def text(self) -> str:
        text: str = httpx.Response(self.status_code, headers=self.headers, content=self.content).text
        return text

    def json(self) -> Any:
        return httpx.Response(self.status_code, headers=self.headers, content=self.content).json()

    @property
    def ok(self) -> bool:
        return 200 <= self.status_code < 300


class ExchangeOptions(TypedDict, total=False):
    """What a request is sent with beside its method and URL (`HttpClient.stream` takes these)."""

    params: Mapping[str, Any] | None
    headers: Mapping[str, str] | None
    json: Any
    timeout: float | None
    total_timeout: float | None
    max_bytes: int | None


class RequestOptions(ExchangeOptions, total=False):
    """`HttpClient.request` takes these as well: its retries, redirects, exact body and sent hook."""

    retries: int
    max_redirects: int | None
    content: bytes | None
    on_sent: Callable[[], Awaitable[None]] | None


class _TransientStatus(Exception):
    def __init__(self, response: FetchedResponse) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Parse Retry-After (seconds or HTTP date); None when absent or not a usable value, since an
    upstream's malformed header must not break the retry or open a breaker for ever."""
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if parsed.tzinfo is None:  # "-0000" means UTC with no zone information
            parsed = parsed.replace(tzinfo=UTC)
        seconds = parsed.timestamp() - (now if now is not None else time.time())
    return max(0.0, seconds) if math.isfinite(seconds) else None


class HttpClient:
    """Bounded, retried, SSRF-guarded HTTP. One per container and purpose; safe to share across tasks."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        purpose: FetchPurpose = "fetch",
        resolver: Resolver | None = None,
        max_backoff_seconds: float = 8.0,
    ) -> None:
        """`purpose` picks the private hosts this client may reach (`Settings.private_hosts_for`): one
        client per purpose, so that a pooled connection never carries one purpose's allowance to another."""
        import httpcore  # with h11 and h2: imported by the first client built, not by this module

        from functions.common.outbound.http_backend import GuardedNetworkBackend

        self._settings = settings or get_settings()
        self._max_backoff = max_backoff_seconds
        backend = GuardedNetworkBackend(self._settings.private_hosts_for(purpose), resolver)
        transport = httpx.AsyncHTTPTransport(trust_env=False)
        # httpx does not expose the network backend; swap in a pool that uses the guarded one.
        transport._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(), max_connections=100, network_backend=backend
        )
        self._client = httpx.AsyncClient(
            transport=transport,
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": USER_AGENT},
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def request(self, method: str, url: str, **options: Unpack[RequestOptions]) -> FetchedResponse:
        """Send a request; transient failures of idempotent requests are retried with full jitter.

        Returns the final response whatever its status; raises FetchError subclasses for transport
        failures, refusals, oversized bodies and time-outs. `content` sends these exact bytes as the body
        (e.g. a signed webhook payload); `json` serialises a value. `on_sent` is awaited each time a
        request has been written to its connection (upstream politeness counts from then).
        """
        method = method.upper()
        attempts = options.get("retries", 2) + 1 if method in IDEMPOTENT_METHODS else 1
        total = options.get("total_timeout") or self._settings.fetch_timeout_seconds * 2

        async def once() -> FetchedResponse:
            response = await self._follow(method, url, options)
            if response.status_code in TRANSIENT_STATUSES and attempts > 1:
                raise _TransientStatus(response)
            return response

        from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

        retrying = AsyncRetrying(
            stop=stop_after_attempt(attempts),
            wait=self._wait,
            retry=retry_if_exception_type((_TransientStatus, httpx.TransportError)),
            reraise=True,
        )
        try:
            async with asyncio.timeout(total):
                try:
                    with waiting():  # on the upstream (billed as Lambda would: invocation_time)
                        return await retrying(once)
                except _TransientStatus as exc:
                    return exc.response
        except TimeoutError as exc:
            raise FetchTimeout(f"{method} {url} exceeded its {total:.0f} s budget") from exc
        except httpx.TransportError as exc:
            _raise_fetch_error(method, url, exc)

    async def get(self, url: str, **options: Unpack[RequestOptions]) -> FetchedResponse:
        return await self.request("GET", url, **options)

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, url: str, **options: Unpack[ExchangeOptions]
    ) -> AsyncIterator[StreamedResponse]:
        """Send one request and read its body as it arrives (server-sent events, long generations).

        Same SSRF guard and byte cap as `request`; `timeout` bounds connecting and each read, and
        `total_timeout` the whole exchange up to the last byte read. No retries, and redirects are not
        followed (a 3xx is handed back as it is). Raises FetchError subclasses, on opening and while
        reading, like `request`.
        """
        method = method.upper()
        check_url_shape(url)
        total = options.get("total_timeout") or self._settings.fetch_timeout_seconds * 2
        deadline = asyncio.get_running_loop().time() + total
        request = self._client.build_request(
            method,
            url,
            params=options.get("params"),
            headers=options.get("headers"),
            json=options.get("json"),
            timeout=self._per_request_timeout(options),
        )
        with waiting():  # the exchange, up to its last byte read, is a wait on the upstream
            try:
                async with asyncio.timeout_at(deadline):
                    response = await self._client.send(request, stream=True)
            except TimeoutError as exc:
                raise FetchTimeout(f"{method} {url} exceeded its {total:g} s budget") from exc
            except httpx.TransportError as exc:
                _raise_fetch_error(method, url, exc)
            try:
                cap = options.get("max_bytes") or self._settings.fetch_max_bytes
                yield StreamedResponse(response, method, url, deadline, total, cap)
            finally:
                await response.aclose()

    def _per_request_timeout(self, options: ExchangeOptions) -> httpx.Timeout:
        """Connecting within 5 s, each read within `timeout` (by default the settings' fetch time-out)."""
        return httpx.Timeout(options.get("timeout") or self._settings.fetch_timeout_seconds, connect=5.0)

    def _wait(self, state: RetryCallState) -> float:
        from tenacity.wait import wait_random_exponential

        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _TransientStatus):
            hinted = retry_after_seconds(exc.response.headers)
            if hinted is not None:
                return min(hinted, self._max_backoff)
        return float(wait_random_exponential(multiplier=0.25, max=self._max_backoff)(state))

    async def _follow(self, method: str, url: str, options: RequestOptions) -> FetchedResponse:
        max_redirects, on_sent = options.get("max_redirects"), options.get("on_sent")
        limit = self._settings.fetch_max_redirects if max_redirects is None else max_redirects
        extensions = {"trace": _sent_hook(on_sent)} if on_sent is not None else None
        cap = options.get("max_bytes") or self._settings.fetch_max_bytes
        per_request = self._per_request_timeout(options)
        params, json, content = options.get("params"), options.get("json"), options.get("content")
        started = time.perf_counter()
        hops: list[str] = []
        current = url
        for _ in range(limit + 1):
            check_url_shape(current)
            request = self._client.build_request(
                method,
                current,
                params=params,
                headers=options.get("headers"),
                json=json,
                content=content,
                timeout=per_request,
                extensions=extensions,
            )
            response = await self._client.send(request, stream=True)
            try:
                if response.status_code in REDIRECT_STATUSES and "location" in response.headers:
                    hops.append(current)
                    current = urljoin(str(response.url), response.headers["location"])
                    params = None
                    if response.status_code == 303 or (
                        response.status_code in (301, 302) and method == "POST"
                    ):
                        method, json, content = "GET", None, None
                    continue
                body = await _read_capped(response, cap)
            finally:
                await response.aclose()
            return FetchedResponse(
                url=str(response.url),
                status_code=response.status_code,
                headers=response.headers,
                content=body,
                elapsed_ms=(time.perf_counter() - started) * 1000,
                redirects=hops,
            )
        raise FetchError(f"too many redirects (more than {limit}) starting at {url}")


def _sent_hook(on_sent: Callable[[], Awaitable[None]]) -> Callable[[str, Any], Awaitable[None]]:
    """httpcore's trace extension: `on_sent` once the request (headers and body) is on the wire."""

    async def trace(event: str, info: Any) -> None:
        if event.endswith("send_request_body.complete"):
            await on_sent()

    return trace


def _raise_fetch_error(method: str, url: str, exc: httpx.TransportError) -> NoReturn:
    if isinstance(exc, httpx.TimeoutException):
        raise FetchTimeout(f"{method} {url} timed out: {exc.__class__.__name__}") from exc
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, FetchError):  # the SSRF guard's refusal, raised inside the connection pool
        raise cause from None
    raise FetchError(f"{method} {url} failed: {exc}") from exc


class StreamedResponse:
    """A response whose body is read incrementally, within the byte cap and the exchange's deadline."""

    def __init__(
        self, response: httpx.Response, method: str, url: str, deadline: float, total: float, cap: int
    ) -> None:
        self._response = response
        self._method = method
        self._url = url
        self._deadline = deadline
        self._total = total
        self._cap = cap
        self._size = 0

    @property
    def url(self) -> str:
        return str(self._response.url)

    @property
    def status_code(self) -> int:
        return self._response.status_code

    @property
    def headers(self) -> httpx.Headers:
        return self._response.headers

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's chunks as they arrive; raises FetchTooLarge past the cap, FetchTimeout past the
        deadline or when one read waits longer than the per-read timeout."""
        declared = self._response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self._cap:
            raise FetchTooLarge(f"response of {int(declared)} bytes exceeds the {self._cap} byte limit")
        chunks = self._response.aiter_bytes()
        while True:
            # The deadline covers each read on its own, never a `yield`: a time-out scope left open
            # across a yield would cancel whatever the consumer happens to be awaiting.
            try:
                async with asyncio.timeout_at(self._deadline):
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                return
            except TimeoutError as exc:
                raise FetchTimeout(
                    f"{self._method} {self._url} exceeded its {self._total:g} s budget"
                ) from exc
            except httpx.TransportError as exc:
                _raise_fetch_error(self._method, self._url, exc)
            self._size += len(chunk)
            if self._size > self._cap:
                raise FetchTooLarge(f"response exceeds the {self._cap} byte limit")
            yield chunk

    async def aiter_lines(self) -> AsyncIterator[str]:
        """The body's lines (UTF-8, without their line ending) as each one completes."""
        pending = b""
        async for chunk in self.aiter_bytes():
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line.removesuffix(b"\r").decode("utf-8", errors="replace")
        if pending:
            yield pending.removesuffix(b"\r").decode("utf-8", errors="replace")

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.aiter_bytes()])


async def _read_capped(response: httpx.Response, cap: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise FetchTooLarge(f"response of {int(declared)} bytes exceeds the {cap} byte limit")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap:
            raise FetchTooLarge(f"response exceeds the {cap} byte limit")
        chunks.append(chunk)
    return b"".join(chunks)
