"""A local "scholarly web" on 127.0.0.1 for tests and benchmarks: canned upstream API responses.

It stands in for arXiv, Semantic Scholar, OpenAlex, Crossref and Unpaywall (and any other path, e.g.
PDFs for extraction), with injected latency and failures. Real HTTP, real sockets, a threaded server,
so concurrent requests really overlap.

    with ScholarlyWeb() as web:
        web.set_response(web.ARXIV_PATH, atom_xml, content_type="application/atom+xml")
        web.set_latency(web.OPENALEX_PATH, 0.3)             # or a range drawn per request: (0.3, 1.5)
        web.fail(web.CROSSREF_PATH, "503")                 # or "down", "429" (+ retry_after), "500"
        hold = web.hold(web.OPENALEX_BASE)                 # no answer until hold.release()
        monkeypatch.setenv(...) for key, value in web.env().items()   # or web.apply_env(monkeypatch)
        ...
        assert web.count(web.ARXIV_PATH) == 1
        assert web.smallest_gap("arxiv") >= 3.0 and web.max_open("arxiv") == 1

Every request is filed under a provider (`PROVIDERS`, by path prefix; `set_provider` adds more, e.g. PDF
hosts) with its arrival time (monotonic, taken as the request is read), and the web counts the requests
of each provider open at once (from arrival until its answer is ready to send), so politeness can be
checked from the receiving side.

Upstream mount points (the `*_API_URL` values of `env()`):
    ARXIV_API_URL            = {base}/arxiv/api/query
    SEMANTIC_SCHOLAR_API_URL = {base}/s2/graph/v1          (search at .../paper/search)
    OPENALEX_API_URL         = {base}/openalex             (search at .../works)
    CROSSREF_API_URL         = {base}/crossref             (search at .../works)
    UNPAYWALL_API_URL        = {base}/unpaywall/v2
Responses match on the exact path (query string ignored) unless a handler is given for a prefix.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        body: bytes | str | dict[str, Any] | list[Any],
        status: int = 200,
        content_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        if isinstance(body, (dict, list)):
            data, kind = json.dumps(body).encode(), "application/json"
        elif isinstance(body, str):
            data, kind = body.encode(), "text/plain; charset=utf-8"
        else:
            data, kind = body, "application/octet-stream"
        return cls(status, data, content_type or kind, dict(headers or {}))


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    at: float  # time.monotonic() as the request was read
    provider: str = "other"
    body: bytes = b""  # what a POST sent (Semantic Scholar's `/paper/batch`)

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    def json(self) -> Any:
        return json.loads(self.body or b"null")


Handler = Callable[[RecordedRequest], Reply]


@dataclass
class _Span:
    """One request from its arrival to the moment its answer was ready (inf while it is being served)."""

    started: float
    ended: float = math.inf
    provider: str = "other"


@dataclass
class _Failure:
    mode: str  # "down" | "429" | "500" | "502" | "503" | "504"
    retry_after: float | None
    remaining: int | None  # None = until cleared


Latency = float | tuple[float, float]  # seconds, or a range to draw from uniformly per request


@dataclass
class Hold:
    """Answers held back until the test releases them: an upstream that has not answered yet for as long
    as the test needs, whatever the machine's load, where a latency would only make it likely.

    `limit` bounds each wait, so that a test that never releases cannot wedge the server; an answer the
    limit let go sets `outlasted`, which a test asserts is false (the order it checks came from the
    release, not from a clock)."""

    limit: float
    released: threading.Event = field(default_factory=threading.Event)
    outlasted: bool = False

    def release(self) -> None:
        self.released.set()

    def wait(self) -> None:
        if not self.released.wait(self.limit):
            self.outlasted = True


class ScholarlyWeb:
    ARXIV_PATH = "/arxiv/api/query"
    SEMANTIC_SCHOLAR_BASE = "/s2/graph/v1"
    SEMANTIC_SCHOLAR_PATH = "/s2/graph/v1/paper/search"
    OPENALEX_BASE = "/openalex"
    OPENALEX_PATH = "/openalex/works"
    CROSSREF_BASE = "/crossref"
    CROSSREF_PATH = "/crossref/works"
    UNPAYWALL_BASE = "/unpaywall/v2"
    # path prefix -> the provider its requests are filed under
    PROVIDERS = {
        ARXIV_PATH: "arxiv",
        SEMANTIC_SCHOLAR_BASE: "semantic_scholar",
        OPENALEX_BASE: "openalex",
        CROSSREF_BASE: "crossref",
        UNPAYWALL_BASE: "unpaywall",
    }

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, seed: int = 0) -> None:
        self._routes: dict[str, Reply | Handler] = {}
        self._prefix_handlers: dict[str, Handler] = {}
        self._latency: dict[str, Latency] = {}
        self._failures: dict[str, _Failure] = {}
        self._holds: dict[str, Hold] = {}
        self._providers: dict[str, str] = dict(self.PROVIDERS)
        self._random = random.Random(seed)  # latency draws
        self._spans: list[_Span] = []
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        web = self

        class _RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                web._handle(self)

            def do_POST(self) -> None:
                web._handle(self)

            def do_HEAD(self) -> None:
                web._handle(self)

        self._server = ThreadingHTTPServer((host, port), _RequestHandler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ---- lifecycle --------------------------------------------------------------------------------

    def start(self) -> ScholarlyWeb:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            holds = list(self._holds.values())
        for hold in holds:  # nothing waits on a web that is gone
            hold.release()
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScholarlyWeb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def host_port(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}" if isinstance(host, str) else f"{host.decode()}:{port}"

    @property
    def base_url(self) -> str:
        return f"http://{self.host_port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def env(self) -> dict[str, str]:
        """Environment for the settings: upstream base URLs here, and the SSRF allow-list entries (for
        the connectors and for a team's own `source_url`s, which point here too)."""
        return {
            "ARXIV_API_URL": self.url(self.ARXIV_PATH),
            "SEMANTIC_SCHOLAR_API_URL": self.url(self.SEMANTIC_SCHOLAR_BASE),
            "OPENALEX_API_URL": self.url(self.OPENALEX_BASE),
            "CROSSREF_API_URL": self.url(self.CROSSREF_BASE),
            "UNPAYWALL_API_URL": self.url(self.UNPAYWALL_BASE),
            "FETCH_ALLOW_PRIVATE_HOSTS": self.host_port,
            "EXTRACT_ALLOW_PRIVATE_HOSTS": self.host_port,
        }

    def apply_env(self, monkeypatch: Any) -> None:
        """Set `env()` with pytest's monkeypatch and drop the cached settings."""
        from functions.common.settings import reset_settings_cache

        for key, value in self.env().items():
            monkeypatch.setenv(key, value)
        reset_settings_cache()

    # ---- configuration ----------------------------------------------------------------------------

    def set_response(
        self,
        path: str,
        body: bytes | str | dict[str, Any] | list[Any],
        status: int = 200,
        content_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        with self._lock:
            self._routes[path] = Reply.of(body, status, content_type, headers)

    def set_handler(self, path_or_prefix: str, handler: Handler, *, prefix: bool = False) -> None:
        """A function of the request (e.g. answer per query parameter); `prefix=True` for a subtree."""
        with self._lock:
            if prefix:
                self._prefix_handlers[path_or_prefix] = handler
            else:
                self._routes[path_or_prefix] = handler

    def set_latency(self, path_prefix: str, seconds: Latency) -> None:
        """Delay every answer under `path_prefix`: a fixed time, or a (low, high) range drawn uniformly
        per request from the web's seeded generator."""
        with self._lock:
            self._latency[path_prefix] = seconds

    def hold(self, path_prefix: str, *, limit: float = 120.0) -> Hold:
        """Hold every answer under `path_prefix` (after any latency) until `release()` on what this
        returns; a released hold lets answers through at once."""
        hold = Hold(limit)
        with self._lock:
            self._holds[path_prefix] = hold
        return hold

    def set_provider(self, path_prefix: str, provider: str) -> None:
        """File the requests under `path_prefix` as `provider`'s (for `arrivals`, `smallest_gap`, ...)."""
        with self._lock:
            self._providers[path_prefix] = provider

    def fail(
        self,
        path_prefix: str,
        mode: str = "503",
        *,
        retry_after: float | None = None,
        times: int | None = None,
    ) -> None:
        """Inject a failure: "down" (connection closed, no answer), "429" or a 5xx status code."""
        if mode != "down" and not mode.isdigit():
            raise ValueError(f"unknown failure mode {mode!r}")
        with self._lock:
            self._failures[path_prefix] = _Failure(mode, retry_after, times)

    def clear_failure(self, path_prefix: str | None = None) -> None:
        with self._lock:
            if path_prefix is None:
                self._failures.clear()
            else:
                self._failures.pop(path_prefix, None)

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()
            self._spans.clear()

    def count(self, path_prefix: str = "/") -> int:
        with self._lock:
            return sum(1 for r in self.requests if r.path.startswith(path_prefix))

    def requests_to(self, path_prefix: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.startswith(path_prefix)]

    # ---- what each provider received ---------------------------------------------------------------

    def providers(self) -> list[str]:
        """The providers that received requests since the last reset, in order of first request."""
        with self._lock:
            return list(dict.fromkeys(r.provider for r in self.requests))

    def arrivals(self, provider: str) -> list[float]:
        """Arrival times (monotonic) of `provider`'s requests, in order."""
        with self._lock:
            return sorted(r.at for r in self.requests if r.provider == provider)

    def gaps(self, provider: str) -> list[float]:
        """The time between each two consecutive requests to `provider`, as they arrived here."""
        times = self.arrivals(provider)
        return [later - earlier for earlier, later in pairwise(times)]

    def smallest_gap(self, provider: str) -> float | None:
        """The shortest time between two requests to `provider` (None: fewer than two requests)."""
        gaps = self.gaps(provider)
        return min(gaps) if gaps else None

    def max_open(self, provider: str) -> int:
        """The most requests to `provider` that were open at once (from arrival to answer)."""
        with self._lock:
            spans = [(s.started, s.ended) for s in self._spans if s.provider == provider]
        # an answer at the very instant another request arrives does not overlap it: ends sort first
        events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
        most = current = 0
        for _, step in events:
            current += step
            most = max(most, current)
        return most

    # ---- serving ----------------------------------------------------------------------------------

    def _longest(self, table: dict[str, Any], path: str) -> Any:
        matches = [key for key in table if path.startswith(key)]
        return table[max(matches, key=len)] if matches else None

    def _draw(self, latency: Latency | None) -> float:
        """Seconds to wait for one request (called under the lock: the generator is shared)."""
        if latency is None:
            return 0.0
        if isinstance(latency, tuple):
            low, high = latency
            return self._random.uniform(low, high)
        return latency

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        span = _Span(started=time.monotonic())
        parts = urlsplit(handler.path)
        with self._lock:
            span.provider = self._longest(self._providers, parts.path) or "other"
            self._spans.append(span)
        try:
            reply = self._reply(handler, parts.path, parts.query, span)
        finally:
            # taken before the answer is written: a client cannot have read it, and sent its next
            # request, any earlier, so a next request that arrived before `ended` really overlapped
            span.ended = time.monotonic()
        if reply is None:  # "down": the connection was closed without an answer
            return
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", reply.content_type)
            handler.send_header("Content-Length", str(len(reply.body)))
            for name, text in reply.headers.items():
                handler.send_header(name, text)
            handler.end_headers()
            if handler.command != "HEAD":
                handler.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (its time-out)
            handler.close_connection = True

    def _reply(self, handler: BaseHTTPRequestHandler, path: str, query: str, span: _Span) -> Reply | None:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        request = RecordedRequest(
            method=handler.command,
            path=path,
            query=parse_qs(query, keep_blank_values=True),
            headers={k.lower(): v for k, v in handler.headers.items()},
            at=span.started,
            provider=span.provider,
            body=body,
        )
        with self._lock:
            self.requests.append(request)
            latency = self._draw(self._longest(self._latency, request.path))
            failure: _Failure | None = self._longest(self._failures, request.path)
            hold: Hold | None = self._longest(self._holds, request.path)
            if failure is not None and failure.remaining is not None:
                failure.remaining -= 1
                if failure.remaining <= 0:
                    for key, value in list(self._failures.items()):
                        if value is failure:
                            del self._failures[key]
            route = self._routes.get(request.path) or self._longest(self._prefix_handlers, request.path)
        if latency:
            time.sleep(latency)
        if hold is not None:
            hold.wait()
        if failure is not None:
            if failure.mode == "down":
                handler.close_connection = True
                handler.connection.close()
                return None
            headers = {"Retry-After": f"{failure.retry_after:g}"} if failure.retry_after is not None else {}
            return Reply.of(
                {"message": f"injected failure {failure.mode}"}, int(failure.mode), headers=headers
            )
        if route is None:
            return Reply.of({"message": f"no route for {request.path}"}, 404)
        if isinstance(route, Reply):
            return route
        return route(request)


def serving(web: ScholarlyWeb) -> Iterator[ScholarlyWeb]:
    """For pytest fixtures: `yield from serving(ScholarlyWeb())`."""
    with web:
        yield web
