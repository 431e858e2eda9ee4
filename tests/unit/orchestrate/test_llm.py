from __future__ import annotations

from typing import Any

import boto3
from botocore.stub import Stubber

from functions.common.settings import Settings
from functions.orchestrate.llm import BedrockProvider, OpenAiCompatibleProvider, provider_from_settings


def test_bedrock_uses_the_converse_api() -> None:
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    stubber = Stubber(client)
    stubber.add_response(
        "converse",
        {
            "output": {"message": {"role": "assistant", "content": [{"text": '{"themes": []}'}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
            "metrics": {"latencyMs": 12},
        },
        {
            "modelId": "anthropic.claude-3-haiku-20240307-v1:0",
            "system": [{"text": "sys"}],
            "messages": [{"role": "user", "content": [{"text": "prompt"}]}],
            "inferenceConfig": {"maxTokens": 2048, "temperature": 0.1},
        },
    )
    with stubber:
        assert BedrockProvider("anthropic.claude-3-haiku-20240307-v1:0", client).complete(
            "sys", "prompt"
        ) == ('{"themes": []}')
    stubber.assert_no_pending_responses()


def test_openai_compatible_endpoint_request_and_answer() -> None:
    seen: dict[str, Any] = {}

    async def post_json(url: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        seen.update(url=url, headers=headers, body=body)
        return 200, {"choices": [{"message": {"role": "assistant", "content": "recorded answer"}}]}

    provider = OpenAiCompatibleProvider("http://vllm.local:8000/v1/", "llama-3", "sk-test", post_json)
    assert provider.complete("sys", "prompt") == "recorded answer"
    assert seen["url"] == "http://vllm.local:8000/v1/chat/completions"
    assert seen["headers"]["Authorization"] == "Bearer sk-test"
    assert seen["body"]["model"] == "llama-3" and seen["body"]["messages"][0] == {
        "role": "system",
        "content": "sys",
    }


def test_provider_selection_from_settings() -> None:
    assert provider_from_settings(Settings(llm_provider="none")) is None
    chosen = provider_from_settings(
        Settings(llm_provider="openai", openai_base_url="http://x/v1", llm_model="m")
    )
    assert isinstance(chosen, OpenAiCompatibleProvider) and chosen.model == "m"
