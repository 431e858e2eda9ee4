"""A loopback webhook receiver for tests: records every POST (raw body and headers) and answers with
scripted statuses (`answers`, then 200), verifying `X-Research-Signature` with the team's secret.

    with WebhookReceiver(secret=secret, answers=[500]) as receiver:
        ... deliver to receiver.url ...
        receiver.wait_for(1)
        assert receiver.received[0].verified
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from functions.webhooks.signing import SIGNATURE_HEADER, verify


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    status: int  # what the receiver answered
    verified: bool  # the signature checked out with the receiver's secret (within 5 minutes)

    def json(self) -> Any:
        return json.loads(self.body)


class WebhookReceiver:
    def __init__(self, secret: str | None = None, answers: list[int] | None = None) -> None:
        self.secret = secret
        self.answers = list(answers or [])
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                status = receiver._record(self.path, headers, body)
                payload = b'{"ok": true}' if status < 300 else b'{"error": "scripted"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    def _record(self, path: str, headers: dict[str, str], body: bytes) -> int:
        verified = bool(
            self.secret
            and verify(self.secret, headers.get(SIGNATURE_HEADER.lower(), ""), body, now=time.time())
        )
        with self._lock:
            status = self.answers.pop(0) if self.answers else 200
            self.received.append(Received(path, headers, body, status, verified))
        return status

    @property
    def host_port(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}" if isinstance(host, str) else f"{host.decode()}:{port}"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str = "/hook") -> str:
        return f"http://{self.host_port}{path}"

    def wait_for(self, count: int, timeout: float = 120.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.02)
        raise AssertionError(f"expected {count} webhook deliveries, got {len(self.received)}")

    def __enter__(self) -> WebhookReceiver:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)
