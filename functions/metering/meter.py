"""What one unit of work (a step invocation, an API request) uses, collected while it runs.

The unit's code opens a `Meter` with `metering(meter)`; whatever runs inside it (on the same thread, in
tasks of an event loop it starts, or in threads started with `asyncio.to_thread`, which copy the
context) finds it with `current_meter()`: the boto3 call counter (functions/metering/aws_calls.py), the
LLM provider wrapper `MeteredLlm` and the full-text wrapper `MeteredFullText` below add to it. Work
outside any meter is not counted.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Unpack

from functions.common.llm import (
    Completion,
    CompletionOptions,
    CompletionStream,
    LlmProvider,
    StreamEnd,
    StreamOptions,
    Usage,
)

if TYPE_CHECKING:
    from functions.common.models import ExtractedPaper, ExtractOptions, FullTextPort


@dataclass
class Reservation:
    """Budget held for the unit while it runs (functions/metering/budget.py), settled when it is recorded."""

    usd: float
    month: str | None  # None: reserved on the job's ledger only (the job holds part of the month)


@dataclass
class Meter:
    aws_calls: Counter[tuple[str, str]] = field(default_factory=Counter)  # (service, Operation) -> calls
    llm_tokens_in: int = 0
    llm_tokens_out: int = 0
    sources_fetched: int = 0
    sources_parsed: int = 0
    sources_failed: int = 0
    reservations: list[Reservation] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def elapsed_seconds(self) -> float:
        """How long the unit has been running (a step's Lambda time so far)."""
        return time.monotonic() - self.started

    def count_call(self, service: str, operation: str) -> None:
        with self._lock:
            self.aws_calls[(service, operation)] += 1

    def add_tokens(self, usage: Usage | None) -> None:
        if usage is None:
            return
        with self._lock:
            self.llm_tokens_in += max(0, usage.prompt_tokens)
            self.llm_tokens_out += max(0, usage.completion_tokens)

    def add_source(self, parsed: bool) -> None:
        with self._lock:
            self.sources_fetched += 1
            if parsed:
                self.sources_parsed += 1
            else:
                self.sources_failed += 1

    def reserve(self, usd: float, month: str | None) -> None:
        with self._lock:
            self.reservations.append(Reservation(usd, month))

    def calls(self) -> list[tuple[str, str, int]]:
        with self._lock:
            return [(service, operation, count) for (service, operation), count in self.aws_calls.items()]


_CURRENT: ContextVar[Meter | None] = ContextVar("metering_meter", default=None)


def current_meter() -> Meter | None:
    return _CURRENT.get()


@contextmanager
def metering(meter: Meter) -> Iterator[Meter]:
    token = _CURRENT.set(meter)
    try:
        yield meter
    finally:
        _CURRENT.reset(token)


# --- the LLM port, metered ---------------------------------------------------------------------------


class MeteredLlm:
    """An LlmProvider that adds each answer's reported token usage to the meter current at the call."""

    def __init__(self, inner: LlmProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model

    async def complete(self, system: str, prompt: str, **options: Unpack[CompletionOptions]) -> Completion:
        meter = current_meter()
        completion = await self.inner.complete(system, prompt, **options)
        if meter is not None:
            meter.add_tokens(completion.usage)
        return completion

    def stream(self, system: str, prompt: str, **options: Unpack[StreamOptions]) -> CompletionStream:
        meter = current_meter()
        inner = self.inner.stream(system, prompt, **options)

        async def events() -> AsyncGenerator[str | StreamEnd, None]:
            try:
                async for delta in inner:
                    yield delta
                usage = inner.usage or Usage(0, 0)
                if meter is not None:
                    meter.add_tokens(usage)
                yield StreamEnd(usage, inner.model)
            finally:
                await inner.aclose()

        return CompletionStream(events(), inner.model)


def metered_llm(provider: LlmProvider | None) -> LlmProvider | None:
    return MeteredLlm(provider) if provider is not None else None


# --- full-text extraction, metered ------------------------------------------------------------------


class MeteredFullText:
    """A FullTextPort that counts each source fetched, and whether it parsed, on the current meter."""

    def __init__(self, inner: FullTextPort) -> None:
        self.inner = inner

    async def extract(self, source_url: str, **options: Unpack[ExtractOptions]) -> ExtractedPaper:
        meter = current_meter()
        try:
            paper = await self.inner.extract(source_url, **options)
        except Exception:
            if meter is not None:
                meter.add_source(False)
            raise
        if meter is not None:
            meter.add_source(bool(paper.success))
        return paper

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
