"""OpenAiCompatibleProvider against a real model: SmolLM2 served by llama.cpp (xllamacpp) on loopback."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import httpx
import pytest

from functions.common.errors import UpstreamError
from functions.common.llm import (
    Completion,
    CompletionStream,
    OpenAiCompatibleProvider,
    provider_from_settings,
)
from functions.common.settings import Settings
from tests.support.llm_server import LlmServer

pytestmark = [pytest.mark.llm, pytest.mark.timeout(60)]

SYSTEM = "You are a concise assistant."
# At temperature 0 SmolLM2 writes this essay until max_tokens runs out (1000 tokens: 6 s or more).
LONG_ANSWER = "Write a very long essay about the history of the sea."
CAPITAL_SCHEMA: dict[str, Any] = {
    "title": "capital",
    "type": "object",
    "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
    "required": ["city", "country"],
    "additionalProperties": False,
}


def _provider(
    server: LlmServer, *, base_url: str | None = None, timeout_seconds: float = 60.0
) -> OpenAiCompatibleProvider:
    settings = Settings(
        llm_allow_private_hosts=f"127.0.0.1:{server.port}", llm_timeout_seconds=timeout_seconds
    )
    return OpenAiCompatibleProvider(base_url or server.base_url, server.model, settings=settings)


async def _drain(stream: CompletionStream) -> list[str]:
    return [delta async for delta in stream]


def _generating(server: LlmServer) -> tuple[bool, int]:
    """Whether the server's slot is generating now, and how many tokens it has decoded in this task
    (llama.cpp's `/slots`; the count starts again at 0 once the task is over)."""
    with httpx.Client(trust_env=False) as client:
        (slot,) = client.get(f"{server.address}/slots").json()
    return bool(slot["is_processing"]), int(slot["next_token"][0]["n_decoded"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_complete_from_settings_returns_text_and_usage(llm_env: LlmServer) -> None:
    provider = provider_from_settings()
    assert isinstance(provider, OpenAiCompatibleProvider)
    assert (provider.base_url, provider.model) == (llm_env.base_url, "smollm2")

    completion = asyncio.run(
        provider.complete(SYSTEM, "What is the capital of France?", temperature=0, max_tokens=16)
    )

    assert isinstance(completion, Completion)
    assert completion.text.strip()
    assert completion.model == "smollm2"
    assert completion.usage.prompt_tokens > 10  # the chat template wraps both messages
    assert 0 < completion.usage.completion_tokens <= 16


def test_json_schema_gives_json_matching_the_schema(llm_server: LlmServer) -> None:
    completion = asyncio.run(
        _provider(llm_server).complete(
            "Answer with JSON.",
            "Which city is the capital of France, and in which country is it?",
            json_schema=CAPITAL_SCHEMA,
            temperature=0,
            max_tokens=64,
        )
    )

    answer = json.loads(completion.text)
    assert set(answer) == {"city", "country"}
    assert all(isinstance(value, str) and value for value in answer.values())


def test_stream_yields_deltas_as_they_are_generated(llm_server: LlmServer) -> None:
    stream = _provider(llm_server).stream(
        SYSTEM, "Count from 1 to 100, separated by commas.", temperature=0, max_tokens=64
    )

    async def read() -> tuple[list[str], tuple[bool, int]]:
        first = await anext(stream)
        at_first = _generating(llm_server)  # the server's own state as the first delta is read
        return [first, *[delta async for delta in stream]], at_first

    deltas, (generating, decoded) = asyncio.run(read())

    assert len(deltas) >= 20
    # A buffered answer would arrive once its 64 tokens were all generated; a streamed one's first delta
    # is read while the server is still generating the rest.
    assert generating and decoded < 64, (generating, decoded)
    assert stream.text == "".join(deltas)
    assert stream.usage is not None
    assert stream.usage.completion_tokens == 64
    assert stream.usage.prompt_tokens > 10
    assert stream.model == "smollm2"


def test_a_stream_closed_early_stops_the_generation(llm_server: LlmServer) -> None:
    provider = _provider(llm_server)

    async def take_three() -> list[str]:
        async with provider.stream(SYSTEM, LONG_ANSWER, temperature=0, max_tokens=1000) as stream:
            return [await anext(stream) for _ in range(3)]

    assert len(asyncio.run(take_three())) == 3
    # Left alone, this generation goes on to all its 1000 tokens; the server stops it when the client
    # goes away, a few tokens after the three read.
    deadline = time.monotonic() + 45
    generating, decoded = _generating(llm_server)
    while generating:
        assert decoded < 200, f"the abandoned generation is still running: {decoded} tokens"
        assert time.monotonic() < deadline, "the abandoned generation is still running"
        time.sleep(0.05)
        generating, decoded = _generating(llm_server)


def test_unreachable_endpoint_is_an_upstream_error(llm_server: LlmServer) -> None:
    port = _free_port()
    settings = Settings(llm_allow_private_hosts=f"127.0.0.1:{port}")
    provider = OpenAiCompatibleProvider(f"http://127.0.0.1:{port}/v1", "smollm2", settings=settings)

    with pytest.raises(UpstreamError) as completing:
        asyncio.run(provider.complete(SYSTEM, "Hello?", max_tokens=4))
    with pytest.raises(UpstreamError) as streaming:
        asyncio.run(_drain(provider.stream(SYSTEM, "Hello?", max_tokens=4)))

    for caught in (completing, streaming):
        assert caught.value.status_code is None
        assert f"127.0.0.1:{port}" in caught.value.message


def test_a_loopback_endpoint_not_allowed_is_refused_by_the_ssrf_guard(llm_server: LlmServer) -> None:
    provider = OpenAiCompatibleProvider(llm_server.base_url, "smollm2", settings=Settings())

    with pytest.raises(UpstreamError, match="private or reserved address"):
        asyncio.run(provider.complete(SYSTEM, "Hello?", max_tokens=4))
    with pytest.raises(UpstreamError, match="private or reserved address"):
        asyncio.run(_drain(provider.stream(SYSTEM, "Hello?", max_tokens=4)))


def test_a_prompt_longer_than_the_context_is_an_upstream_400(llm_server: LlmServer) -> None:
    provider = _provider(llm_server)
    prompt = "word " * (llm_server.context_tokens + 500)

    with pytest.raises(UpstreamError) as completing:
        asyncio.run(provider.complete(SYSTEM, prompt, max_tokens=4))
    with pytest.raises(UpstreamError) as streaming:
        asyncio.run(_drain(provider.stream(SYSTEM, prompt, max_tokens=4)))

    for caught in (completing, streaming):
        assert caught.value.status_code == 400
        assert "context size" in caught.value.message  # the server's own explanation is kept


def test_an_unknown_route_is_an_upstream_404(llm_server: LlmServer) -> None:
    provider = _provider(llm_server, base_url=f"{llm_server.address}/no-such-api")

    with pytest.raises(UpstreamError) as completing:
        asyncio.run(provider.complete(SYSTEM, "Hello?", max_tokens=4))
    with pytest.raises(UpstreamError) as streaming:
        asyncio.run(_drain(provider.stream(SYSTEM, "Hello?", max_tokens=4)))

    assert completing.value.status_code == streaming.value.status_code == 404


def test_a_generation_past_its_budget_is_an_upstream_error(llm_server: LlmServer) -> None:
    provider = _provider(llm_server, timeout_seconds=0.3)

    # the whole generation would take many seconds: the 0.3 s budget ends it, and says so
    with pytest.raises(UpstreamError, match="budget"):
        asyncio.run(_drain(provider.stream(SYSTEM, LONG_ANSWER, temperature=0, max_tokens=1000)))
