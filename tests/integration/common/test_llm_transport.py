"""HttpClient.stream, the transport of streamed LLM answers, against a loopback server that writes slowly:
incremental reads, the byte cap, per-read and total time-outs, and the SSRF guard."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from functions.common.errors import FetchBlocked, FetchTimeout, FetchTooLarge
from functions.common.outbound.http import HttpClient
from functions.common.settings import Settings


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0 without Content-Length: the body ends when the connection closes, like a stream.
    def log_message(self, format: str, *args: object) -> None:
        return

    def _start(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()

    def _write(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()

    def do_GET(self) -> None:
        if self.path == "/drip":
            self._start()
            for index in range(5):
                self._write(f"line {index}\n".encode())
                time.sleep(0.1)
        elif self.path == "/crlf":
            self._start()
            self._write(b"data: one\r\n\r\ndata: t")
            time.sleep(0.05)
            self._write("wo \u00e9\r\nlast".encode())
        elif self.path == "/big":
            self._start()
            for _ in range(10):
                self._write(b"x" * 1000)
        elif self.path == "/declared-big":
            self._start(headers={"Content-Length": "10000"})
            self._write(b"x" * 10000)
        elif self.path == "/stall":
            self._start()
            self._write(b"first\n")
            time.sleep(1.5)
            self._write(b"late\n")
        elif self.path == "/redirect":
            self._start(302, {"Location": "/drip"})
        else:
            self._start(404)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self._start(200, {"Content-Type": "application/json"})
        self._write(json.dumps({"received": json.loads(body)}).encode())


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _client(allow: str) -> HttpClient:
    return HttpClient(Settings(fetch_allow_private_hosts=allow))


def _lines(allow: str, url: str, **kwargs: Any) -> list[tuple[float, str]]:
    """Each line with the time it arrived, counted from the request."""

    async def go() -> list[tuple[float, str]]:
        client = _client(allow)
        started = time.perf_counter()
        try:
            async with client.stream("GET", url, **kwargs) as response:
                assert response.status_code == 200
                return [(time.perf_counter() - started, line) async for line in response.aiter_lines()]
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_lines_arrive_as_the_server_writes_them(server: str) -> None:
    arrivals = _lines(server, f"http://{server}/drip")

    assert [line for _, line in arrivals] == [f"line {index}" for index in range(5)]
    first, last = arrivals[0][0], arrivals[-1][0]
    assert first < 0.25 <= last  # the server takes 0.5 s in all; the first line does not wait for it


def test_lines_split_across_reads_and_crlf_endings(server: str) -> None:
    lines = [line for _, line in _lines(server, f"http://{server}/crlf")]

    assert lines == ["data: one", "", "data: two \u00e9", "last"]


def test_post_sends_its_json_body(server: str) -> None:
    async def go() -> bytes:
        client = _client(server)
        try:
            async with client.stream("POST", f"http://{server}/echo", json={"stream": True}) as response:
                return await response.read()
        finally:
            await client.aclose()

    assert json.loads(asyncio.run(go())) == {"received": {"stream": True}}


def test_the_byte_cap_holds_while_streaming(server: str) -> None:
    with pytest.raises(FetchTooLarge, match="4000 byte limit"):
        _lines(server, f"http://{server}/big", max_bytes=4000)
    with pytest.raises(FetchTooLarge, match="10000 bytes"):
        _lines(server, f"http://{server}/declared-big", max_bytes=4000)


def test_a_stalled_read_times_out(server: str) -> None:
    started = time.perf_counter()
    with pytest.raises(FetchTimeout, match="ReadTimeout"):
        _lines(server, f"http://{server}/stall", timeout=0.3)
    assert time.perf_counter() - started < 1.2


def test_the_total_budget_covers_the_whole_body(server: str) -> None:
    with pytest.raises(FetchTimeout, match=r"exceeded its 0\.25 s budget"):
        _lines(server, f"http://{server}/drip", timeout=5, total_timeout=0.25)


def test_redirects_are_handed_back_not_followed(server: str) -> None:
    async def go() -> tuple[int, str]:
        client = _client(server)
        try:
            async with client.stream("GET", f"http://{server}/redirect") as response:
                return response.status_code, response.headers["location"]
        finally:
            await client.aclose()

    assert asyncio.run(go()) == (302, "/drip")


def test_the_ssrf_guard_refuses_loopback_unless_allowed(server: str) -> None:
    with pytest.raises(FetchBlocked, match="private or reserved address"):
        _lines("", f"http://{server}/drip")
    with pytest.raises(FetchBlocked, match="only http and https"):
        _lines(server, f"file://{server}/drip")
