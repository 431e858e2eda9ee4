"""The LLM port's pure parts: the SSE line parser, stream-chunk parsing and the request bodies."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from functions.common.errors import UpstreamError
from functions.common.llm import (
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_OPENAI_MODEL,
    CompletionStream,
    OpenAiCompatibleProvider,
    SseParser,
    StreamChunk,
    StreamEnd,
    Usage,
    chat_request_body,
    parse_stream_chunk,
    provider_from_settings,
    schema_name,
)
from functions.common.settings import Settings


def _events(lines: list[str]) -> list[str]:
    parser = SseParser()
    found = [data for line in lines if (data := parser.feed(line)) is not None]
    tail = parser.flush()
    return [*found, tail] if tail is not None else found


def test_sse_parser_returns_each_event_at_its_blank_line() -> None:
    parser = SseParser()

    assert parser.feed('data: {"a": 1}') is None
    assert parser.feed("") == '{"a": 1}'
    assert parser.feed("") is None  # blank lines between events carry nothing
    assert parser.feed("data: [DONE]") is None
    assert parser.feed("") == "[DONE]"


def test_sse_parser_joins_data_lines_and_skips_comments_and_other_fields() -> None:
    lines = [": keep-alive", "event: message", "id: 7", "data: first", "data:second", "retry: 10", ""]

    assert _events(lines) == ["first\nsecond"]


def test_sse_parser_keeps_colons_and_spaces_inside_the_value() -> None:
    assert _events(['data:  {"url": "http://x"}', ""]) == [' {"url": "http://x"}']


def test_sse_parser_flushes_an_event_left_open_at_the_end() -> None:
    assert _events(["data: a", "", "data: b"]) == ["a", "b"]
    assert SseParser().flush() is None


def test_parse_stream_chunk_reads_the_delta_and_model() -> None:
    chunk = parse_stream_chunk(
        '{"choices":[{"index":0,"delta":{"content":" wonder"},"finish_reason":null}],"model":"smollm2"}'
    )

    assert chunk == StreamChunk(text=" wonder", usage=None, model="smollm2")


def test_parse_stream_chunk_reads_the_usage_only_chunk_and_empty_deltas() -> None:
    usage_chunk = parse_stream_chunk(
        '{"choices":[],"usage":{"prompt_tokens":38,"completion_tokens":48,"total_tokens":86}}'
    )
    role_chunk = parse_stream_chunk('{"choices":[{"delta":{"role":"assistant","content":null}}]}')

    assert usage_chunk == StreamChunk(text="", usage=Usage(38, 48), model=None)
    assert role_chunk.text == ""


@pytest.mark.parametrize(
    ("data", "message", "status"),
    [
        ('{"error":{"code":500,"message":"slot crashed"}}', "slot crashed", 500),
        ('{"error":"overloaded"}', "overloaded", None),
        ("not json", "not JSON", None),
        ("[1, 2]", "not a JSON object", None),
    ],
)
def test_parse_stream_chunk_raises_on_errors_and_garbage(data: str, message: str, status: int | None) -> None:
    with pytest.raises(UpstreamError, match=message) as caught:
        parse_stream_chunk(data)
    assert caught.value.status_code == status


def test_chat_request_body_plain() -> None:
    body = chat_request_body("m", "Be brief.", "Hi?", max_tokens=32)

    assert body == {
        "model": "m",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}],
        "max_tokens": 32,
    }


def test_chat_request_body_streaming_with_temperature_and_no_system() -> None:
    body = chat_request_body("m", "", "Hi?", temperature=0.0, stream=True)

    assert body["messages"] == [{"role": "user", "content": "Hi?"}]
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 1024
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "response_format" not in body


def test_chat_request_body_with_a_json_schema() -> None:
    schema: dict[str, Any] = {"title": "Claim check", "type": "object", "properties": {}}

    body = chat_request_body("m", "s", "p", json_schema=schema)

    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Claim_check", "schema": schema, "strict": True},
    }
    assert "stream" not in body


def test_schema_name_is_what_the_apis_accept() -> None:
    assert schema_name({}) == "response"
    assert schema_name({"title": "verdict-v2"}) == "verdict-v2"
    assert schema_name({"title": "x" * 80}) == "x" * 64


def test_completion_stream_collects_text_and_usage() -> None:
    async def events() -> AsyncGenerator[str | StreamEnd, None]:
        yield "Hel"
        yield "lo"
        yield StreamEnd(Usage(5, 2), "served-model")

    async def drain() -> tuple[list[str], CompletionStream]:
        stream = CompletionStream(events(), "asked-model")
        return [delta async for delta in stream], stream

    deltas, stream = asyncio.run(drain())

    assert deltas == ["Hel", "lo"]
    assert stream.text == "Hello"
    assert stream.usage == Usage(5, 2)
    assert stream.model == "served-model"


def test_completion_stream_closes_its_source_when_left_early() -> None:
    closed: list[bool] = []

    async def events() -> AsyncGenerator[str | StreamEnd, None]:
        try:
            for index in range(10):
                yield str(index)
        finally:
            closed.append(True)

    async def take_one() -> str:
        async with CompletionStream(events(), "m") as stream:
            return await anext(stream)

    assert asyncio.run(take_one()) == "0"
    assert closed == [True]


def test_provider_from_settings() -> None:
    assert provider_from_settings(Settings(llm_provider="none")) is None

    provider = provider_from_settings(Settings(llm_provider="openai", openai_api_key="sk-top-secret"))

    assert isinstance(provider, OpenAiCompatibleProvider)
    assert (provider.base_url, provider.model) == (DEFAULT_OPENAI_BASE_URL, DEFAULT_OPENAI_MODEL)
    assert "sk-top-secret" not in repr(provider)
