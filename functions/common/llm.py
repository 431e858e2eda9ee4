"""The LLM port and its adapters: Amazon Bedrock (Converse API) or any OpenAI-compatible chat endpoint.

Both adapters are async, can stream the answer as the model writes it, and report token usage.
`LLM_PROVIDER=none` (the default) configures no model at all: `provider_from_settings` returns None.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar, Unpack

from functions.common.errors import FetchError, UpstreamError
from functions.common.settings import Settings, get_settings

# The HTTP client (httpcore, h11, h2, tenacity) is imported by the first completion, not with this module:
# every API handler imports the LLM port through metering, and most routes never call a model.
if TYPE_CHECKING:
    from functions.common.outbound.http import ExchangeOptions, HttpClient

DEFAULT_BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
# How much of an error body is read, and quoted in the UpstreamError.
_ERROR_BODY_BYTES = 64 * 1024
_ERROR_MESSAGE_CHARS = 300

T = TypeVar("T")


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    model: str


@dataclass(frozen=True)
class StreamEnd:
    """An adapter's last stream event: what the whole answer used, and the model that wrote it."""

    usage: Usage
    model: str


class CompletionStream:
    """The text deltas of one answer, as the model produces them (`async for delta in stream`).

    Once the iteration has ended, `text` is the whole answer and `usage` and `model` are set (usage is
    zero when the endpoint reported none). A consumer that stops early closes it: `async with stream:`
    or `await stream.aclose()`, which releases the connection.
    """

    def __init__(self, events: AsyncGenerator[str | StreamEnd, None], model: str) -> None:
        self._events = events
        self._parts: list[str] = []
        self.model = model
        self.usage: Usage | None = None

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def __aiter__(self) -> CompletionStream:
        return self

    async def __anext__(self) -> str:
        while True:
            event = await anext(self._events)
            if isinstance(event, StreamEnd):
                self.usage, self.model = event.usage, event.model
                continue
            self._parts.append(event)
            return event

    async def aclose(self) -> None:
        await self._events.aclose()

    async def __aenter__(self) -> CompletionStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class StreamOptions(TypedDict, total=False):
    """What a call may ask besides its prompts; unset, the endpoint's default temperature and 1024 tokens."""

    temperature: float | None
    max_tokens: int


class CompletionOptions(StreamOptions, total=False):
    json_schema: dict[str, Any] | None  # ask the endpoint for JSON matching this schema


class LlmProvider(Protocol):
    name: str
    model: str

    async def complete(self, system: str, prompt: str, **options: Unpack[CompletionOptions]) -> Completion:
        """The whole answer; with `json_schema`, the endpoint is asked for JSON matching it."""
        ...

    def stream(self, system: str, prompt: str, **options: Unpack[StreamOptions]) -> CompletionStream:
        """The answer's text deltas as they are produced; nothing is sent before iteration starts."""
        ...


def schema_name(schema: dict[str, Any]) -> str:
    """The schema's title as the name both APIs require (letters, digits, `_` and `-`; 64 at most)."""
    title = str(schema.get("title") or "response")
    return re.sub(r"[^A-Za-z0-9_-]", "_", title)[:64]


# --- OpenAI-compatible chat completions ------------------------------------------------------------


def chat_request_body(
    model: str,
    system: str,
    prompt: str,
    *,
    json_schema: dict[str, Any] | None = None,
    temperature: float | None = None,
    max_tokens: int = 1024,
    stream: bool = False,
) -> dict[str, Any]:
    """The `/chat/completions` body; a temperature of None leaves the endpoint's default."""
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": prompt})
    body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens}
    if temperature is not None:
        body["temperature"] = temperature
    if json_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema_name(json_schema), "schema": json_schema, "strict": True},
        }
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


class SseParser:
    """Server-sent events, fed one line at a time: `feed` returns an event's data once its closing blank
    line arrives (several `data:` lines joined by newlines); comments and other fields are skipped."""

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> str | None:
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if field == "data":
            self._data.append(value.removeprefix(" "))
        return None

    def flush(self) -> str | None:
        """The pending event's data (for a stream that ends without its last blank line)."""
        if not self._data:
            return None
        data = "\n".join(self._data)
        self._data = []
        return data


@dataclass(frozen=True)
class StreamChunk:
    text: str
    usage: Usage | None
    model: str | None


def parse_stream_chunk(data: str) -> StreamChunk:
    """One `chat.completion.chunk` event's data; an error event raises UpstreamError."""
    try:
        payload = json.loads(data)
    except ValueError as exc:
        raise UpstreamError(f"LLM stream sent an event that is not JSON: {data[:80]!r}") from exc
    if not isinstance(payload, dict):
        raise UpstreamError("LLM stream sent an event that is not a JSON object")
    if "error" in payload:
        message, status = _error_details(payload)
        raise UpstreamError(f"LLM stream failed: {message}", status_code=status)
    choices = payload.get("choices") or []
    first = choices[0] if choices and isinstance(choices[0], dict) else {}
    delta = first.get("delta") or {}
    model = payload.get("model")
    return StreamChunk(
        text=str(delta.get("content") or ""),
        usage=_openai_usage(payload.get("usage")),
        model=str(model) if model else None,
    )


def _openai_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return Usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0))


def _error_details(payload: Any) -> tuple[str, int | None]:
    """The message and code of an OpenAI-style error body (`{"error": {"message", "code"}}`)."""
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        code = error.get("code")
        return str(error.get("message") or error), code if isinstance(code, int) else None
    if error:
        return str(error), None
    return str(payload), None


class OpenAiCompatibleProvider:
    """Any `/chat/completions` endpoint: OpenAI, vLLM, Ollama, LM Studio, llama.cpp's server.

    Every call goes through HttpClient (bounded, SSRF-guarded: a loopback or private endpoint must be
    allowed by LLM_ALLOW_PRIVATE_HOSTS) within LLM_TIMEOUT_SECONDS, both read from `settings` (by
    default the process's). Each call opens and closes its own client, so one provider can serve
    several event loops.
    """

    name = "openai"

    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, *, settings: Settings | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        self._settings = settings or get_settings()

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAiCompatibleProvider(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def _url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[HttpClient]:
        from functions.common.outbound.http import HttpClient

        client = HttpClient(self._settings, purpose="llm")
        try:
            yield client
        finally:
            await client.aclose()

    def _unreachable(self, exc: FetchError) -> UpstreamError:
        return UpstreamError(f"LLM endpoint {self.base_url} failed: {self._redact(exc.message)}")

    def _status_error(self, status: int, body: bytes) -> UpstreamError:
        try:
            message, _ = _error_details(json.loads(body))
        except ValueError:
            message = body.decode("utf-8", errors="replace")
        message = self._redact(" ".join(message.split())[:_ERROR_MESSAGE_CHARS])
        return UpstreamError(f"LLM endpoint answered {status}: {message}", status_code=status)

    def _post_options(self, body: dict[str, Any]) -> ExchangeOptions:
        """What every call sends `body` with: its headers, and the one time-out for the whole exchange."""
        timeout = self._settings.llm_timeout_seconds
        return {"headers": self._headers(), "json": body, "timeout": timeout, "total_timeout": timeout}

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]") if self._api_key else text

    async def complete(self, system: str, prompt: str, **options: Unpack[CompletionOptions]) -> Completion:
        body = chat_request_body(self.model, system, prompt, **options)
        async with self._client() as http:
            try:
                response = await http.request("POST", self._url, **self._post_options(body))
            except FetchError as exc:
                raise self._unreachable(exc) from exc
        if response.status_code != 200:
            raise self._status_error(response.status_code, response.content[:_ERROR_BODY_BYTES])
        try:
            data = response.json()
            message = data["choices"][0]["message"]
        except (ValueError, LookupError, TypeError) as exc:
            raise UpstreamError("LLM endpoint answered without a chat completion") from exc
        return Completion(
            text=str(message.get("content") or ""),
            usage=_openai_usage(data.get("usage")) or Usage(0, 0),
            model=str(data.get("model") or self.model),
        )

    def stream(self, system: str, prompt: str, **options: Unpack[StreamOptions]) -> CompletionStream:
        body = chat_request_body(self.model, system, prompt, **options, stream=True)
        return CompletionStream(self._stream_events(body), self.model)

    async def _stream_events(self, body: dict[str, Any]) -> AsyncGenerator[str | StreamEnd, None]:
        usage: Usage | None = None
        model = self.model
        async with self._client() as http:
            try:
                async with http.stream("POST", self._url, **self._post_options(body)) as response:
                    if response.status_code != 200:
                        body_head = (await response.read())[:_ERROR_BODY_BYTES]
                        raise self._status_error(response.status_code, body_head)
                    parser = SseParser()
                    async for line in response.aiter_lines():
                        data = parser.feed(line)
                        if data is None:
                            continue
                        if data == "[DONE]":
                            break
                        chunk = parse_stream_chunk(data)
                        usage = chunk.usage or usage
                        model = chunk.model or model
                        if chunk.text:
                            yield chunk.text
            except FetchError as exc:
                raise self._unreachable(exc) from exc
        yield StreamEnd(usage or Usage(0, 0), model)


# --- Amazon Bedrock ---------------------------------------------------------------------------------


class BedrockProvider:
    """Amazon Bedrock through the Converse and ConverseStream APIs (one request shape for every model).

    `client` is a boto3 `bedrock-runtime` client; its blocking calls run in worker threads.
    """

    name = "bedrock"

    def __init__(self, model: str, client: Any) -> None:
        self.model = model
        self._client = client

    def _request(
        self,
        system: str,
        prompt: str,
        *,
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int = 1024,
    ) -> dict[str, Any]:
        inference: dict[str, Any] = {"maxTokens": max_tokens}
        if temperature is not None:
            inference["temperature"] = temperature
        request: dict[str, Any] = {
            "modelId": self.model,
            "messages": [{"role": "user", "content": [{"text": prompt}]}],
            "inferenceConfig": inference,
        }
        if system:
            request["system"] = [{"text": system}]
        if json_schema is not None:
            request["outputConfig"] = {
                "textFormat": {
                    "type": "json_schema",
                    "structure": {
                        "jsonSchema": {"schema": json.dumps(json_schema), "name": schema_name(json_schema)}
                    },
                }
            }
        return request

    async def complete(self, system: str, prompt: str, **options: Unpack[CompletionOptions]) -> Completion:
        request = self._request(system, prompt, **options)
        response = await _in_thread(lambda: self._client.converse(**request))
        try:
            blocks = response["output"]["message"]["content"]
        except (LookupError, TypeError) as exc:
            raise UpstreamError("Bedrock answered without a message") from exc
        return Completion(
            text="".join(str(block.get("text", "")) for block in blocks),
            usage=_bedrock_usage(response.get("usage")),
            model=self.model,
        )

    def stream(self, system: str, prompt: str, **options: Unpack[StreamOptions]) -> CompletionStream:
        request = self._request(system, prompt, **options)
        return CompletionStream(self._stream_events(request), self.model)

    async def _stream_events(self, request: dict[str, Any]) -> AsyncGenerator[str | StreamEnd, None]:
        response = await _in_thread(lambda: self._client.converse_stream(**request))
        events = response["stream"]
        iterator = iter(events)
        usage = Usage(0, 0)
        try:
            while (event := await _in_thread(lambda: next(iterator, None))) is not None:
                text = event.get("contentBlockDelta", {}).get("delta", {}).get("text")
                if text:
                    yield str(text)
                elif "metadata" in event:
                    usage = _bedrock_usage(event["metadata"].get("usage"))
        finally:
            await _in_thread(events.close)
        yield StreamEnd(usage, self.model)


def _bedrock_usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage(0, 0)
    return Usage(int(raw.get("inputTokens") or 0), int(raw.get("outputTokens") or 0))


async def _in_thread(call: Callable[[], T]) -> T:
    """Run one blocking botocore call in a worker thread; its failures become UpstreamError."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return await asyncio.to_thread(call)
    except ClientError as exc:  # an error answer, or an exception event inside a ConverseStream
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        raise UpstreamError(f"Bedrock failed: {exc}", status_code=status) from exc
    except BotoCoreError as exc:  # connection, time-out, or an unreadable answer
        raise UpstreamError(f"Bedrock failed: {exc}") from exc


def provider_from_settings(settings: Settings | None = None) -> LlmProvider | None:
    settings = settings or get_settings()
    if settings.llm_provider == "bedrock":
        from functions.common.aws import llm_runtime_client

        client = llm_runtime_client(settings.llm_timeout_seconds)
        return BedrockProvider(settings.llm_model or DEFAULT_BEDROCK_MODEL, client)
    if settings.llm_provider == "openai":
        api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        return OpenAiCompatibleProvider(
            settings.openai_base_url or DEFAULT_OPENAI_BASE_URL,
            settings.llm_model or DEFAULT_OPENAI_MODEL,
            api_key,
            settings=settings,
        )
    return None
