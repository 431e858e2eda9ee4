"""OpenAiCompatibleProvider against a loopback endpoint that misbehaves in ways llama.cpp does not: an
error that quotes the API key, a 200 that is not a completion, an error event in the middle of a stream."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from functions.common.errors import UpstreamError
from functions.common.llm import CompletionStream, OpenAiCompatibleProvider
from functions.common.settings import Settings

API_KEY = "sk-test-0123456789abcdef"
received_auth: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        received_auth.append(self.headers.get("Authorization", ""))
        route = self.path.split("/")[1]
        if route == "bad-key":
            message = f"Incorrect API key provided: {self.headers['Authorization'].removeprefix('Bearer ')}"
            self._send(401, json.dumps({"error": {"message": message, "code": "invalid_api_key"}}).encode())
        elif route == "html":
            self._send(200, b"<html>maintenance</html>", "text/html")
        elif route == "plain-502":
            self._send(502, b"Bad Gateway\n", "text/plain")
        elif route == "mid-stream-error":
            events: list[dict[str, object]] = [
                {"choices": [{"delta": {"content": "Hel"}}]},
                {"choices": [{"delta": {"content": "lo"}}]},
                {"error": {"code": 500, "message": "the slot crashed"}},
            ]
            body = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
            self._send(200, body, "text/event-stream")
        elif route == "no-usage":
            lines = [b'data: {"choices":[{"delta":{"content":"Hi"}}]}', b"data: [DONE]"]
            self._send(200, b"\n\n".join(lines) + b"\n\n", "text/event-stream")
        else:
            self._send(404, b"{}")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _provider(server: str, route: str) -> OpenAiCompatibleProvider:
    settings = Settings(llm_allow_private_hosts=server)
    return OpenAiCompatibleProvider(f"http://{server}/{route}", "m", API_KEY, settings=settings)


async def _drain(stream: CompletionStream) -> list[str]:
    return [delta async for delta in stream]


def test_the_key_is_sent_but_never_quoted_back(server: str) -> None:
    provider = _provider(server, "bad-key")

    with pytest.raises(UpstreamError) as completing:
        asyncio.run(provider.complete("s", "p"))
    with pytest.raises(UpstreamError) as streaming:
        asyncio.run(_drain(provider.stream("s", "p")))

    assert received_auth[-2:] == [f"Bearer {API_KEY}"] * 2
    for caught in (completing, streaming):
        assert caught.value.status_code == 401
        assert caught.value.message == "LLM endpoint answered 401: Incorrect API key provided: [redacted]"
    assert API_KEY not in repr(provider)


def test_a_200_that_is_not_a_completion_is_an_upstream_error(server: str) -> None:
    with pytest.raises(UpstreamError, match="without a chat completion"):
        asyncio.run(_provider(server, "html").complete("s", "p"))


def test_a_plain_text_error_body_is_quoted(server: str) -> None:
    with pytest.raises(UpstreamError, match=r"answered 502: Bad Gateway$") as caught:
        asyncio.run(_provider(server, "plain-502").complete("s", "p"))
    assert caught.value.status_code == 502


def test_an_error_event_mid_stream_ends_it_with_an_upstream_error(server: str) -> None:
    stream = _provider(server, "mid-stream-error").stream("s", "p")

    with pytest.raises(UpstreamError, match="the slot crashed") as caught:
        asyncio.run(_drain(stream))
    assert caught.value.status_code == 500
    assert stream.text == "Hello"  # what arrived before the error stays readable


def test_a_stream_without_usage_reports_zero_usage(server: str) -> None:
    stream = _provider(server, "no-usage").stream("s", "p")

    assert asyncio.run(_drain(stream)) == ["Hi"]
    assert stream.usage is not None
    assert (stream.usage.prompt_tokens, stream.usage.completion_tokens) == (0, 0)
    assert stream.model == "m"
