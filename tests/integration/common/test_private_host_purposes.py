"""Each purpose reaches only the private hosts its own allow-list names (FETCH_ for the connectors,
EXTRACT_ for a team's source_url, WEBHOOK_ for callbacks, LLM_ for the model endpoint), and an IPv6 form
that embeds a private IPv4 address is refused after a redirect too. A loopback listener counts the
connections it accepts: a refused purpose makes none."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from functions.common.errors import FetchBlocked, UpstreamError
from functions.common.llm import OpenAiCompatibleProvider
from functions.common.outbound.http import HttpClient
from functions.common.settings import FetchPurpose, Settings
from functions.webhooks.sender import AttemptResult, WebhookSender
from functions.webhooks.settings import WebhookSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

PURPOSES: tuple[FetchPurpose, ...] = ("fetch", "extract", "webhook", "llm")


class CountingServer(ThreadingHTTPServer):
    """Answers every request 200 `ok` (or a redirect to `redirect_to`) and counts accepted connections."""

    daemon_threads = True

    def __init__(self) -> None:
        self.accepted = 0
        self.redirect_to: str | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                if server.redirect_to is not None:
                    self.send_response(302)
                    self.send_header("Location", server.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            do_GET = _answer
            do_POST = _answer

        super().__init__(("127.0.0.1", 0), Handler)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.accepted += 1
        return True

    @property
    def host_port(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def server() -> Iterator[CountingServer]:
    listener = CountingServer()
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        listener.shutdown()
        listener.server_close()


def _settings(purpose: FetchPurpose, host_port: str) -> Settings:
    return Settings(**{f"{purpose}_allow_private_hosts": host_port})  # type: ignore[arg-type]


async def _get(settings: Settings, purpose: FetchPurpose, url: str) -> int:
    client = HttpClient(settings, purpose=purpose, max_backoff_seconds=0.01)
    try:
        return (await client.get(url, retries=0)).status_code
    finally:
        await client.aclose()


@pytest.mark.parametrize("listed", PURPOSES)
def test_a_host_listed_for_one_purpose_is_refused_to_every_other(server: CountingServer, listed: str) -> None:
    settings = _settings(listed, server.host_port)  # type: ignore[arg-type]
    url = f"http://{server.host_port}/x"

    for purpose in PURPOSES:
        if purpose == listed:
            assert asyncio.run(_get(settings, purpose, url)) == 200
            assert server.accepted == 1
        else:
            with pytest.raises(FetchBlocked, match="private or reserved address"):
                asyncio.run(_get(settings, purpose, url))
    assert server.accepted == 1  # only the listed purpose's request reached the host


def test_every_allow_list_is_empty_by_default() -> None:
    settings = Settings()
    assert all(settings.private_hosts_for(purpose) == frozenset() for purpose in PURPOSES)


@pytest.mark.parametrize(
    "embedded",
    ["64:ff9b::7f00:1", "::ffff:0:127.0.0.1", "::127.0.0.1", "2002:7f00:1::1", "64:ff9b::a9fe:a9fe"],
)
def test_a_redirect_to_an_embedded_private_address_is_refused(server: CountingServer, embedded: str) -> None:
    port = server.server_address[1]
    server.redirect_to = f"http://[{embedded}]:{port}/metadata"
    settings = _settings("fetch", server.host_port)

    with pytest.raises(FetchBlocked, match="private or reserved address"):
        asyncio.run(_get(settings, "fetch", f"http://{server.host_port}/start"))
    assert server.accepted == 1  # the allow-listed first hop only


def test_a_callback_to_a_host_listed_only_for_the_connectors_is_never_sent(server: CountingServer) -> None:
    attempts: list[AttemptResult] = []
    sender = WebhookSender(settings=_settings("fetch", server.host_port), webhook=WebhookSettings())

    outcome = asyncio.run(
        sender.deliver(
            f"http://{server.host_port}/control",
            event="job.completed",
            delivery_id="d-1",
            body=b"{}",
            secret="whsec_test",
            report=attempts.append,
        )
    )
    assert outcome == "blocked" and server.accepted == 0
    assert attempts[0].error is not None and "private or reserved address" in attempts[0].error


def test_a_model_endpoint_listed_only_for_the_connectors_is_refused(server: CountingServer) -> None:
    provider = OpenAiCompatibleProvider(
        f"http://{server.host_port}/v1", "m", settings=_settings("fetch", server.host_port)
    )
    with pytest.raises(UpstreamError, match="private or reserved address"):
        asyncio.run(provider.complete("system", "Hello?", max_tokens=4))
    assert server.accepted == 0
