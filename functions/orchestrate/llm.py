"""Optional LLM writers: Bedrock (Converse API) or any OpenAI-compatible chat endpoint.

`LLM_PROVIDER=none` (the default) uses no model at all. Providers receive their transport as an
adapter so that tests can replay recorded responses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from functions.common.errors import UpstreamError
from functions.common.settings import Settings, get_settings

PostJson = Callable[[str, dict[str, str], dict[str, Any]], Coroutine[Any, Any, tuple[int, Any]]]


class LlmProvider(Protocol):
    name: str

    def complete(self, system: str, prompt: str) -> str: ...


class BedrockProvider:
    """Amazon Bedrock through the Converse API (model-agnostic request shape)."""

    name = "bedrock"

    def __init__(self, model_id: str, client: Any) -> None:
        self.model_id = model_id
        self._client = client

    def complete(self, system: str, prompt: str) -> str:
        response = self._client.converse(
            modelId=self.model_id,
            system=[{"text": system}],
            messages=[{"role": "user", "content": [{"text": prompt}]}],
            inferenceConfig={"maxTokens": 2048, "temperature": 0.1},
        )
        blocks = response["output"]["message"]["content"]
        return "".join(str(block.get("text", "")) for block in blocks)


class OpenAiCompatibleProvider:
    """Any `/chat/completions` endpoint: OpenAI, vLLM, Ollama, LM Studio."""

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str | None, post_json: PostJson) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        self._post_json = post_json

    def complete(self, system: str, prompt: str) -> str:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        body = {
            "model": self.model,
            "temperature": 0.1,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
        }
        status, data = asyncio.run(self._post_json(f"{self.base_url}/chat/completions", headers, body))
        if status != 200:
            raise UpstreamError(f"LLM endpoint answered {status}", status_code=status)
        return str(data["choices"][0]["message"]["content"])


async def _post_with_http_client(url: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
    from functions.common.http import HttpClient  # bounded and SSRF-guarded like every outbound call

    client = HttpClient()
    try:
        response = await client.request("POST", url, headers=headers, json=body, timeout=30, total_timeout=35)
        return response.status_code, response.json()
    finally:
        await client.aclose()


def provider_from_settings(settings: Settings | None = None) -> LlmProvider | None:
    settings = settings or get_settings()
    if settings.llm_provider == "bedrock":
        from functions.common.aws import generic_client

        model = settings.llm_model or "anthropic.claude-3-haiku-20240307-v1:0"
        return BedrockProvider(model, generic_client("bedrock-runtime"))
    if settings.llm_provider == "openai":
        api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        return OpenAiCompatibleProvider(
            settings.openai_base_url or "https://api.openai.com/v1",
            settings.llm_model or "gpt-4o-mini",
            api_key,
            _post_with_http_client,
        )
    return None
