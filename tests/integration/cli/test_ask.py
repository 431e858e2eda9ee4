"""`research-agent ask` against a real loopback server that streams SSE in chunked HTTP/1.1 with pauses.

The server holds back the `final` event until the client has printed (and flushed) the first delta, so a
client that buffered the stream would time out instead of passing.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from functions.cli.main import main

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

REPO = Path(__file__).resolve().parents[3]
QUESTION = "Does sparse attention lose accuracy on long documents?"
HOLD_SECONDS = 10.0

FINAL = {
    "answer_id": "ans-001",
    "query": QUESTION,
    "answer": "Sparse attention keeps accuracy on long documents [1].",
    "citations": [
        {
            "citation_id": "cit-001",
            "source_id": "ax_1a2b3c4d",
            "title": "Longformer: The Long-Document Transformer",
            "url": "https://arxiv.org/abs/2004.05150",
            "published_at": "2020-01-01T00:00:00Z",
            "snippet": "Longformer's attention scales linearly with sequence length.",
            "chunk_start": 0,
            "chunk_end": 61,
        }
    ],
    "claim_verifications": [
        {
            "claim_id": "clm-001",
            "claim_text": "Sparse attention keeps accuracy on long documents.",
            "verdict": "supported",
            "evidence_chunk_ids": ["chunk-0a1b2c3d4e"],
            "confidence": 0.86,
            "notes": "",
        },
        {
            "claim_id": "clm-002",
            "claim_text": "It is always faster.",
            "verdict": "unsupported",
            "evidence_chunk_ids": [],
            "confidence": 0.2,
            "notes": "",
        },
    ],
    "confidence_score": 0.78,
    "refusal": False,
    "trace_id": "trace-789",
}
TRACE = {
    "event_id": "evt-001",
    "agent": "Planner",
    "event_type": "plan",
    "timestamp": "2026-11-20T12:00:00Z",
    "payload": {"queries": 3},
    "name": "plan_created",
}


def sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


@dataclass
class StreamServer:
    """Plays a script of byte chunks (each flushed as one HTTP chunk) and `threading.Event` waits."""

    script: list[bytes | threading.Event | float] = field(default_factory=list)
    status: int = 200
    error_body: dict[str, Any] | None = None
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    held_until_released: bool | None = None  # did a wait end by release (True) or by timeout (False)?
    final_sent_at: float | None = None
    url: str = ""

    def __post_init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                server.requests.append((self.path, json.loads(self.rfile.read(length) or b"{}")))
                if server.status != 200:
                    body = json.dumps(server.error_body).encode()
                    self.send_response(server.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                # the client stops reading at an error event, so the rest may meet a closed socket
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._play()

            def _play(self) -> None:
                for step in server.script:
                    if isinstance(step, threading.Event):
                        server.held_until_released = step.wait(HOLD_SECONDS)
                    elif isinstance(step, float):
                        time.sleep(step)
                    else:
                        if b"event: final" in step:
                            server.final_sent_at = time.monotonic()
                        self.wfile.write(f"{len(step):x}\r\n".encode() + step + b"\r\n")
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> StreamServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class Terminal(io.StringIO):
    """stdout that remembers when text was flushed, and releases the server once `marker` is flushed."""

    def __init__(self, marker: str = "", release: threading.Event | None = None) -> None:
        super().__init__()
        self.marker, self.release = marker, release
        self.first_flush_at: float | None = None

    def flush(self) -> None:
        super().flush()
        if self.marker and self.marker in self.getvalue() and self.first_flush_at is None:
            self.first_flush_at = time.monotonic()
            if self.release is not None:
                self.release.set()


def streamed_answer(release: threading.Event) -> list[bytes | threading.Event | float]:
    first = sse("answer_delta", {"text": "Sparse attention ", "verified": True})
    return [
        sse("trace_event", TRACE),
        b": keep-alive\n\nevent: ping\ndata: not json, and not an event the client reads\n\n",
        first[:17],  # the first delta arrives in two pieces, cut inside its `data:` line
        0.05,
        first[17:],
        release,  # nothing more until the client has shown the first delta
        sse("answer_delta", {"text": "keeps accuracy on long documents [1].", "verified": True}),
        sse("citation", {"citations": FINAL["citations"]}),
        sse("final", FINAL),
    ]


@pytest.fixture
def released() -> threading.Event:
    return threading.Event()


@pytest.fixture
def server(released: threading.Event) -> Iterator[StreamServer]:
    with StreamServer(script=streamed_answer(released)) as running:
        yield running


def test_the_first_delta_is_printed_before_the_server_sends_the_final_event(
    server: StreamServer, released: threading.Event
) -> None:
    out, err = Terminal("Sparse attention", released), io.StringIO()
    code = main(
        ["ask", QUESTION, "--preset", "fast", "--focus-mode", "academic", "--url", server.url],
        out=out,
        err=err,
    )
    assert code == 0, err.getvalue()
    assert server.held_until_released is True  # the client flushed the delta while the stream was held
    assert out.first_flush_at is not None and server.final_sent_at is not None
    assert out.first_flush_at < server.final_sent_at
    assert server.requests == [
        ("/v1/query/stream", {"query": QUESTION, "options": {"preset": "fast", "focus_mode": "academic"}})
    ]
    text = out.getvalue()
    assert text.startswith("Sparse attention keeps accuracy on long documents [1].\n")
    assert "[1] Longformer: The Long-Document Transformer\n      https://arxiv.org/abs/2004.05150\n" in text
    assert "      Longformer's attention scales linearly with sequence length.\n" in text
    assert "  claim    verdict      conf  text\n" in text
    assert "  clm-001  supported    0.86  Sparse attention keeps accuracy on long documents.\n" in text
    assert "  clm-002  unsupported  0.20  It is always faster.\n" in text
    assert text.endswith("Answered; confidence 0.78; trace trace-789\n")
    assert err.getvalue() == ""  # trace events are silent without --trace


def test_trace_flag_prints_one_line_per_trace_event_to_stderr(
    server: StreamServer, released: threading.Event
) -> None:
    out, err = Terminal("Sparse attention", released), io.StringIO()
    assert main(["--url", server.url, "ask", QUESTION, "--trace"], out=out, err=err) == 0
    assert server.requests[0][1] == {"query": QUESTION, "options": {}}
    assert err.getvalue() == 'trace 2026-11-20T12:00:00Z Planner plan plan_created {"queries":3}\n'
    assert "trace" not in out.getvalue().split("Sources:")[0]


def test_the_module_entry_point_streams_to_a_real_pipe(
    server: StreamServer, released: threading.Event
) -> None:
    """`python -m functions.cli`: the delta must reach the pipe while the server still holds the final."""
    process = subprocess.Popen(
        [sys.executable, "-m", "functions.cli", "ask", QUESTION, "--url", server.url],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    seen, deadline = b"", time.monotonic() + 30
    while b"Sparse attention" not in seen:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(process.stdout.fileno(), 4096) if ready else b""
        if not chunk:
            process.kill()
            pytest.fail(f"no delta on the pipe before the final event; got {seen!r}")
        seen += chunk
    assert server.final_sent_at is None  # the server is still holding the rest of the stream
    released.set()
    rest, errors = process.communicate(timeout=30)
    assert process.returncode == 0, errors.decode()
    text = (seen + rest).decode()
    assert text.startswith("Sparse attention keeps accuracy") and "[1] Longformer" in text


def test_an_error_event_prints_its_message_and_exits_non_zero() -> None:
    error = {"error": {"code": "upstream_unavailable", "message": "every search connector failed"}}
    script: list[bytes | threading.Event | float] = [
        sse("answer_delta", {"text": "Partial ", "verified": True}),
        sse("error", error),
        sse("final", FINAL),  # never read: the client stops at the error
    ]
    with StreamServer(script=script) as server:
        out, err = io.StringIO(), io.StringIO()
        assert main(["ask", QUESTION, "--url", server.url], out=out, err=err) == 1
    assert out.getvalue() == "Partial "
    assert err.getvalue() == "error: upstream_unavailable: every search connector failed\n"


def test_draft_deltas_are_never_printed_and_a_refusal_shows_only_its_reason() -> None:
    """Only deltas marked verified are the answer; a refused final shows its reason, no draft text."""
    draft = "Readers should paste their API token at http://evil.example/login [1]."
    refused = {
        **FINAL,
        "answer": "No answer: Red-Team: the draft was not supported.",
        "citations": [],
        "claim_verifications": [],
        "confidence_score": 0.0,
        "refusal": True,
        "refusal_reason": "Red-Team: the draft was not supported",
        "refusal_code": "red_team",
    }
    script: list[bytes | threading.Event | float] = [
        sse("answer_delta", {"text": draft}),
        sse("answer_delta", {"text": draft, "verified": False}),
        sse("final", refused),
    ]
    with StreamServer(script=script) as server:
        out, err = io.StringIO(), io.StringIO()
        assert main(["ask", QUESTION, "--url", server.url], out=out, err=err) == 0
    text = out.getvalue()
    assert "evil.example" not in text and "API token" not in text
    assert text.startswith("No answer: Red-Team: the draft was not supported.\n")
    assert "Refused: Red-Team: the draft was not supported\n" in text
    assert text.endswith("Refused; confidence 0.00; trace trace-789\n")


def test_an_http_error_prints_the_error_body_message() -> None:
    body = {
        "error": {"code": "invalid_request", "message": "Missing query field", "details": {"field": "query"}}
    }
    with StreamServer(status=400, error_body=body) as server:
        out, err = io.StringIO(), io.StringIO()
        assert main(["ask", QUESTION, "--url", server.url + "/prod"], out=out, err=err) == 1
        assert server.requests[0][0] == "/prod/v1/query/stream"  # a stage prefix in the base URL is kept
    assert out.getvalue() == ""
    assert err.getvalue() == "error: HTTP 400 invalid_request: Missing query field (field=query)\n"


def test_a_stream_that_ends_without_a_final_event_fails() -> None:
    with StreamServer(script=[sse("answer_delta", {"text": "Cut "})]) as server:
        out, err = io.StringIO(), io.StringIO()
        assert main(["ask", QUESTION, "--url", server.url], out=out, err=err) == 1
    assert err.getvalue() == "error: the stream ended before the final event\n"


def test_an_unreachable_api_fails_cleanly() -> None:
    with StreamServer() as server:
        url = server.url  # the port is closed once the server is gone
    out, err = io.StringIO(), io.StringIO()
    assert main(["ask", QUESTION, "--url", url], out=out, err=err) == 1
    assert err.getvalue().startswith("error: ConnectError")
