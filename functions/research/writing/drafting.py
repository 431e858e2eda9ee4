"""The Write stage's work for either driver: the model's draft when it answers in time, else the extractive
writer's, with a note that says why.

A driver hands over its two writers (`Writers`): the answer engine its `ExtractiveWriter` and `LlmWriter`
(functions/research/writing/writer.py), the research job its report writers
(functions/research/writing/report_writer.py). The stage itself (functions/research/stages.py, `write`)
is the same for both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from functions.common.errors import UpstreamError
from functions.research.writing.writer import Draft

DraftWriter = Callable[[], Awaitable[Draft]]


@dataclass(frozen=True)
class Writers:
    """A draft's two writers. `model`: None without an LLM (or without evidence for it); it may take at
    most `budget_seconds` (None: no limit), and a failure of a kind in `fallback_on` gives way to the
    extractive writer rather than failing the run."""

    extractive: DraftWriter
    model: DraftWriter | None = None
    budget_seconds: float | None = None
    fallback_on: tuple[type[Exception], ...] = (UpstreamError,)


def _failure(exc: Exception) -> str:
    return exc.message if isinstance(exc, UpstreamError) else f"{type(exc).__name__}: {exc}"


async def write_draft(writers: Writers) -> Draft:
    """The model's draft, or the extractive writer's when there is no model or it fails or overruns its
    budget (the draft's notes say which)."""
    if writers.model is None:
        return await writers.extractive()
    try:
        async with asyncio.timeout(writers.budget_seconds):
            return await writers.model()
    except TimeoutError:
        if writers.budget_seconds is None:
            raise
        note = (
            f"LLM writer exceeded its {writers.budget_seconds:.0f} s budget; the extractive writer answered"
        )
    except writers.fallback_on as exc:  # the answer still comes, from the evidence itself
        note = f"LLM writer failed ({_failure(exc)}); the extractive writer answered"
    draft = await writers.extractive()
    draft.notes.append(note)
    return draft
