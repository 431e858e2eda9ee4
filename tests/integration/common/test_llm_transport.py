"""HttpClient.stream, the transport of streamed LLM answers, against a loopback server that writes in
steps: incremental reads, the byte cap, per-read and total time-outs, and the SSRF guard."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from functions.common.errors import FetchBlocked, FetchTimeout, FetchTooLarge
from functions.common.outbound.http import HttpClient
from functions.common.settings import Settings

DRIP_LINES = 5
HOLD_LIMIT_SECONDS = 30.0  # the most the server waits on the client or the test, so nothing wedges


class _Lockstep:
    """The server writes each line of /drip only once the client has read the one before (`read`): a
    client that waited for the whole body would never read the first line, and the server's wait for it
    would run out (`in_step` false) instead of a clock deciding what incremental means."""

    def __init__(self) -> None:
        self.read_lines = [threading.Event() for _ in range(DRIP_LINES)]
        self.in_step = True

    def read(self, index: int) -> None:
        self.read_lines[index].set()

    def wait_read(self, index: int) -> None:
        if not self.read_lines[index].wait(HOLD_LIMIT_SECONDS):
            self.in_step = False


class _Server(ThreadingHTTPServer):
    lockstep = _Lockstep()
    stall_released = threading.Event()  # set as the module's tests end: /stall never writes its rest before


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
        server = self.server
        assert isinstance(server, _Server)
        if self.path == "/drip":
            self._start()
            for index in range(DRIP_LINES):
                self._write(f"line {index}\n".encode())
                if index + 1 < DRIP_LINES:
                    server.lockstep.wait_read(index)
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
            server.stall_released.wait(HOLD_LIMIT_SECONDS)
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
def httpd() -> Iterator[_Server]:
    running = _Server(("127.0.0.1", 0), _Handler)
    running.daemon_threads = True
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.stall_released.set()
    running.shutdown()


@pytest.fixture
def server(httpd: _Server) -> str:
    httpd.lockstep = _Lockstep()
    return f"127.0.0.1:{httpd.server_address[1]}"


def _client(allow: str) -> HttpClient:
    return HttpClient(Settings(fetch_allow_private_hosts=allow))


def _lines(
    allow: str, url: str, on_line: Callable[[int], None] = lambda index: None, **kwargs: Any
) -> list[str]:
    """The body's lines, `on_line(index)` called as each one arrives."""

    async def go() -> list[str]:
        client = _client(allow)
        lines: list[str] = []
        try:
            async with client.stream("GET", url, **kwargs) as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    on_line(len(lines))
                    lines.append(line)
                return lines
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_lines_arrive_as_the_server_writes_them(httpd: _Server, server: str) -> None:
    lines = _lines(server, f"http://{server}/drip", on_line=httpd.lockstep.read)

    assert lines == [f"line {index}" for index in range(DRIP_LINES)]
    assert httpd.lockstep.in_step  # each line was read while the server still held back the next


def test_lines_split_across_reads_and_crlf_endings(server: str) -> None:
    lines = _lines(server, f"http://{server}/crlf")

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
    with pytest.raises(FetchTimeout, match="ReadTimeout"):  # the rest is written only as the tests end
        _lines(server, f"http://{server}/stall", timeout=0.3)


def test_the_total_budget_covers_the_whole_body(server: str) -> None:
    # each read comes well within its 5 s; the body as a whole never ends within the budget
    with pytest.raises(FetchTimeout, match=r"exceeded its 0\.25 s budget"):
        _lines(server, f"http://{server}/stall", timeout=5, total_timeout=0.25)


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
