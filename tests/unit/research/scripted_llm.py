"""A scripted LLM behind the real LlmProvider interface (functions.common.llm), for unit tests: it streams
a fixed answer in small deltas and judges claims with a fixed verdict. Tests against a real model server
are marked `llm`."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from functions.common.errors import UpstreamError
from functions.common.llm import Completion, CompletionStream, StreamEnd, Usage


class ScriptedLlm:
    name = "scripted"
    model = "scripted-1"

    def __init__(
        self, answer: str, *, verdict: str = "unsupported", fail: bool = False, delta_size: int = 7
    ) -> None:
        self.answer = answer
        self.verdict = verdict
        self.fail = fail
        self.delta_size = delta_size
        self.prompts: list[str] = []

    async def complete(
        self,
        system: str,
        prompt: str,
        *,
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int = 1024,
    ) -> Completion:
        self.prompts.append(prompt)
        text = f'{{"verdict": "{self.verdict}", "reason": "scripted"}}' if json_schema else self.answer
        return Completion(text, Usage(len(prompt.split()), len(text.split())), self.model)

    def stream(
        self, system: str, prompt: str, *, temperature: float | None = None, max_tokens: int = 1024
    ) -> CompletionStream:
        self.prompts.append(prompt)

        async def events() -> AsyncGenerator[str | StreamEnd, None]:
            if self.fail:
                raise UpstreamError("LLM endpoint answered 503", status_code=503)
            for start in range(0, len(self.answer), self.delta_size):
                yield self.answer[start : start + self.delta_size]
            yield StreamEnd(Usage(len(prompt.split()), len(self.answer.split())), self.model)

        return CompletionStream(events(), self.model)
