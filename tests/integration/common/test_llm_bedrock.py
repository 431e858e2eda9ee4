"""BedrockProvider through a real boto3 client against a loopback Bedrock runtime twin: Converse (JSON) and
ConverseStream (AWS event-stream framing, written in lockstep with the reader so that incremental delivery
shows without a clock)."""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import json
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

import boto3
import pytest
from botocore.config import Config

from functions.common.errors import UpstreamError
from functions.common.llm import (
    DEFAULT_BEDROCK_MODEL,
    BedrockProvider,
    CompletionStream,
    provider_from_settings,
)

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
DELTAS = ["The ", "answer ", "is ", "forty-two."]
HOLD_LIMIT_SECONDS = 30.0  # the most the twin waits for the reader, so that nothing wedges


def event_message(headers: dict[str, str], payload: dict[str, Any]) -> bytes:
    """One message in the AWS event-stream framing: prelude, its CRC, string headers, payload, CRC."""
    encoded_headers = b"".join(
        struct.pack(">B", len(name)) + name.encode() + struct.pack(">BH", 7, len(value)) + value.encode()
        for name, value in headers.items()
    )
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(encoded_headers) + len(body) + 4, len(encoded_headers))
    message = prelude + struct.pack(">I", binascii.crc32(prelude)) + encoded_headers + body
    return message + struct.pack(">I", binascii.crc32(message))


def event(kind: str, payload: dict[str, Any]) -> bytes:
    return event_message(
        {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}, payload
    )


class Lockstep:
    """The twin sends each delta only once the reader has taken the one before (`read`), and counts what
    it has sent: a reader that waited for the whole stream would never take the first delta, and the
    twin's wait would run out (`in_step` false)."""

    def __init__(self) -> None:
        self.taken = [threading.Event() for _ in DELTAS]
        self.sent = 0
        self.in_step = True

    def read(self, index: int) -> None:
        self.taken[index].set()

    def release(self) -> None:
        for taken in self.taken:
            taken.set()

    def wait_taken(self, index: int) -> None:
        if not self.taken[index].wait(HOLD_LIMIT_SECONDS):
            self.in_step = False


@dataclass
class BedrockTwin:
    """What the twin received, and how it should answer the next call."""

    port: int = 0
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fail_with: tuple[int, str] | None = None  # (status, error type) for the next call
    throttle_mid_stream: bool = False
    lockstep: Lockstep | None = None  # for the next ConverseStream

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _handler(twin: BedrockTwin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
            path = unquote(self.path)
            twin.requests.append((path, body))
            if twin.fail_with is not None:
                status, error_type = twin.fail_with
                payload = json.dumps({"message": f"twin says {error_type}"}).encode()
                self.send_response(status)
                self.send_header("x-amzn-ErrorType", error_type)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            elif path.endswith("/converse"):
                self._converse()
            else:
                self._converse_stream()

        def _converse(self) -> None:
            answer = {
                "output": {"message": {"role": "assistant", "content": [{"text": "".join(DELTAS)}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 21, "outputTokens": 7, "totalTokens": 28},
                "metrics": {"latencyMs": 5},
            }
            payload = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _converse_stream(self) -> None:
            # Chunked like the service: botocore reads an unframed body in 64 KiB blocks, not as it comes.
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.amazon.eventstream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._send(event("messageStart", {"role": "assistant"}))
            for index, text in enumerate(DELTAS):
                if twin.throttle_mid_stream and index == 2:
                    self._send(
                        event_message(
                            {
                                ":exception-type": "throttlingException",
                                ":content-type": "application/json",
                                ":message-type": "exception",
                            },
                            {"message": "slow down"},
                        )
                    )
                    break
                if twin.lockstep is not None:
                    twin.lockstep.sent += 1  # counted before it leaves: the reader cannot be ahead of it
                self._send(event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}}))
                if twin.lockstep is not None:
                    twin.lockstep.wait_taken(index)
            else:
                self._send(event("contentBlockStop", {"contentBlockIndex": 0}))
                self._send(event("messageStop", {"stopReason": "end_turn"}))
                usage = {"inputTokens": 21, "outputTokens": 7, "totalTokens": 28}
                self._send(event("metadata", {"usage": usage, "metrics": {"latencyMs": 450}}))
            self._send(b"")  # the last chunk

        def _send(self, data: bytes) -> None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a reader that stopped early
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

    return Handler


@pytest.fixture
def twin() -> Iterator[BedrockTwin]:
    state = BedrockTwin()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()


def _client(endpoint: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=endpoint,
        region_name="us-east-1",
        config=Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=2, read_timeout=5),
    )


async def _drain(stream: CompletionStream, lockstep: Lockstep | None = None) -> list[str]:
    deltas: list[str] = []
    async for delta in stream:
        if lockstep is not None:
            lockstep.read(len(deltas))
        deltas.append(delta)
    return deltas


def test_complete_sends_a_converse_request_and_reads_text_and_usage(twin: BedrockTwin) -> None:
    provider = BedrockProvider(MODEL, _client(twin.endpoint))
    completion = asyncio.run(
        provider.complete("Be brief.", "What is the answer?", temperature=0.2, max_tokens=64)
    )

    assert completion.text == "The answer is forty-two."
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (21, 7)
    assert completion.model == MODEL
    path, body = twin.requests[0]
    assert path == f"/model/{MODEL}/converse"
    assert body == {
        "messages": [{"role": "user", "content": [{"text": "What is the answer?"}]}],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 64, "temperature": 0.2},
    }


def test_a_json_schema_asks_for_structured_output(twin: BedrockTwin) -> None:
    schema = {"title": "answer sheet", "type": "object", "properties": {"answer": {"type": "string"}}}
    asyncio.run(BedrockProvider(MODEL, _client(twin.endpoint)).complete("", "Q?", json_schema=schema))

    _, body = twin.requests[0]
    assert "system" not in body
    assert body["inferenceConfig"] == {"maxTokens": 1024}
    json_schema = body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
    assert body["outputConfig"]["textFormat"]["type"] == "json_schema"
    assert json_schema["name"] == "answer_sheet"
    assert json.loads(json_schema["schema"]) == schema


def test_stream_yields_deltas_as_the_service_sends_them(twin: BedrockTwin) -> None:
    twin.lockstep = Lockstep()
    stream = BedrockProvider(MODEL, _client(twin.endpoint)).stream("Be brief.", "What is the answer?")

    assert asyncio.run(_drain(stream, twin.lockstep)) == DELTAS
    assert twin.lockstep.in_step  # each delta was read while the twin still held back the next
    assert stream.text == "The answer is forty-two."
    assert stream.usage is not None
    assert (stream.usage.prompt_tokens, stream.usage.completion_tokens) == (21, 7)
    assert twin.requests[0][0] == f"/model/{MODEL}/converse-stream"


def test_a_stream_closed_early_stops_reading(twin: BedrockTwin) -> None:
    provider = BedrockProvider(MODEL, _client(twin.endpoint))
    lockstep = twin.lockstep = Lockstep()

    async def first_delta() -> tuple[str, int]:
        async with provider.stream("", "Q?") as stream:
            return await anext(stream), lockstep.sent

    try:
        # the first delta, taken while the twin held back the rest: nothing waited for them
        assert asyncio.run(first_delta()) == (DELTAS[0], 1)
    finally:
        lockstep.release()


def test_an_error_answer_is_an_upstream_error_with_its_status(twin: BedrockTwin) -> None:
    provider = BedrockProvider(MODEL, _client(twin.endpoint))
    twin.fail_with = (400, "ValidationException")

    with pytest.raises(UpstreamError, match="ValidationException") as completing:
        asyncio.run(provider.complete("", "Q?"))
    with pytest.raises(UpstreamError, match="ValidationException") as streaming:
        asyncio.run(_drain(provider.stream("", "Q?")))

    assert completing.value.status_code == streaming.value.status_code == 400


def test_an_exception_event_inside_the_stream_is_an_upstream_error(twin: BedrockTwin) -> None:
    twin.throttle_mid_stream = True
    stream = BedrockProvider(MODEL, _client(twin.endpoint)).stream("", "Q?")

    with pytest.raises(UpstreamError, match="slow down"):
        asyncio.run(_drain(stream))
    assert stream.text == "".join(DELTAS[:2])


def test_an_unreachable_endpoint_is_an_upstream_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = BedrockProvider(MODEL, _client(f"http://127.0.0.1:{port}"))

    with pytest.raises(UpstreamError, match="Could not connect") as caught:
        asyncio.run(provider.complete("", "Q?"))
    assert caught.value.status_code is None


def test_provider_from_settings_builds_bedrock_on_the_configured_endpoint(
    twin: BedrockTwin, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.common.settings import reset_settings_cache

    monkeypatch.setenv("LLM_PROVIDER", "Bedrock")
    monkeypatch.delenv("LLM_MODEL", raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", twin.endpoint)
    reset_settings_cache()

    provider = provider_from_settings()

    assert isinstance(provider, BedrockProvider)
    assert provider.model == DEFAULT_BEDROCK_MODEL
    assert asyncio.run(provider.complete("", "Q?")).text == "The answer is forty-two."
    config = provider._client.meta.config  # one attempt, read timeout = the LLM budget: never billed twice
    assert config.retries["total_max_attempts"] == 1 and config.read_timeout == 60.0
