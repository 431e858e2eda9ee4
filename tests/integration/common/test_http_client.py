"""HttpClient against a real loopback server: retries, size cap, redirects, time-outs, SSRF on hops."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from functions.common.errors import FetchBlocked, FetchTimeout, FetchTooLarge
from functions.common.outbound.http import FetchedResponse, HttpClient
from functions.common.settings import Settings

hits: dict[str, int] = {}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        hits[self.path] = hits.get(self.path, 0) + 1
        if self.path == "/ok":
            self._send(200, b"hello", {"Content-Type": "text/plain"})
        elif self.path == "/flaky":
            if hits[self.path] == 1:
                self._send(503, b"busy", {"Retry-After": "0"})
            else:
                self._send(200, b"recovered")
        elif self.path == "/always-503":
            self._send(503, b"down")
        elif self.path == "/big":
            self._send(200, b"x" * 5000)
        elif self.path == "/redirect-ok":
            self._send(302, headers={"Location": "/ok"})
        elif self.path == "/redirect-private":
            self._send(302, headers={"Location": "http://10.20.30.40/secret"})
        elif self.path == "/redirect-metadata":
            self._send(301, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
        elif self.path == "/loop":
            self._send(302, headers={"Location": "/loop"})
        elif self.path == "/slow":
            time.sleep(5)
            self._send(200, b"late")
        else:
            self._send(404, b"missing")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _client(allow: str, **overrides: object) -> HttpClient:
    settings = Settings(fetch_allow_private_hosts=allow, **overrides)  # type: ignore[arg-type]
    return HttpClient(settings, max_backoff_seconds=0.05)


def _get(client: HttpClient, url: str, **kwargs: Any) -> FetchedResponse:
    async def go() -> FetchedResponse:
        try:
            return await client.get(url, **kwargs)
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_plain_get(server: str) -> None:
    response = _get(_client(server), f"http://{server}/ok")
    assert (response.status_code, response.content, response.content_type) == (200, b"hello", "text/plain")


def test_loopback_is_refused_without_allowlist(server: str) -> None:
    with pytest.raises(FetchBlocked, match=r"127\.0\.0\.1"):
        _get(_client(""), f"http://{server}/ok")


def test_transient_status_is_retried(server: str) -> None:
    hits.pop("/flaky", None)
    response = _get(_client(server), f"http://{server}/flaky")
    assert response.status_code == 200 and response.content == b"recovered"
    assert hits["/flaky"] == 2


def test_persistent_5xx_is_returned_after_bounded_retries(server: str) -> None:
    hits.pop("/always-503", None)
    response = _get(_client(server), f"http://{server}/always-503", retries=2)
    assert response.status_code == 503
    assert hits["/always-503"] == 3


def test_size_cap(server: str) -> None:
    with pytest.raises(FetchTooLarge):
        _get(_client(server), f"http://{server}/big", max_bytes=1000)


def test_redirect_followed_within_allowed_host(server: str) -> None:
    response = _get(_client(server), f"http://{server}/redirect-ok")
    assert response.content == b"hello"
    assert response.redirects == [f"http://{server}/redirect-ok"]


@pytest.mark.parametrize("path", ["/redirect-private", "/redirect-metadata"])
def test_redirect_to_private_address_is_refused(server: str, path: str) -> None:
    with pytest.raises(FetchBlocked):
        _get(_client(server), f"http://{server}{path}")


def test_redirect_loop_is_capped(server: str) -> None:
    with pytest.raises(Exception, match="too many redirects"):
        _get(_client(server), f"http://{server}/loop")


def test_total_time_budget(server: str) -> None:
    # the total budget ended the request, not the (longer) per-read time-out nor the late answer
    with pytest.raises(FetchTimeout, match=r"exceeded its \d+ s budget"):
        _get(_client(server), f"http://{server}/slow", total_timeout=0.5, retries=0)
