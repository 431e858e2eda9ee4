"""One implementation per stage: the research job and the answer engine run the same Write, Verify,
Red-Team and Decide stages, and the answer's early lead is a stage of the preset's list."""

from __future__ import annotations

import asyncio

import pytest

from functions.common.errors import UpstreamError
from functions.research.job.synthesis import JOB_STAGES
from functions.research.pipeline import AnswerPipeline
from functions.research.presets import (
    DECIDE,
    DEFAULT_PRESET,
    LEAD,
    PRESETS,
    RANK,
    READ,
    RED_TEAM,
    VERIFY,
    WRITE,
    Preset,
)
from functions.research.retrieval.retriever import Retriever
from functions.research.writing.drafting import Writers, write_draft
from functions.research.writing.writer import Draft, DraftSentence
from tests.support.fakes.answer_search import InMemorySearch


def test_the_job_and_the_answer_engine_run_one_write_verify_red_team_and_decide() -> None:
    answer_stages = AnswerPipeline(Retriever(InMemorySearch([]))).stages
    for name in (WRITE, VERIFY, RED_TEAM, DECIDE):
        job_stage: object = JOB_STAGES[name]
        assert job_stage is answer_stages[name], name


@pytest.mark.parametrize("preset", [DEFAULT_PRESET, *PRESETS.values()], ids=lambda p: p.name)
def test_every_preset_names_the_lead_between_ranking_and_reading(preset: Preset) -> None:
    stages = preset.stages
    assert stages.index(RANK) + 1 == stages.index(LEAD) == stages.index(READ) - 1
    assert stages.index(READ) < stages.index(WRITE)


def _draft(writer: str) -> Draft:
    return Draft(
        sentences=[DraftSentence(f"written by {writer}", ["chunk-0000000001"])], writer=writer, model=writer
    )


async def _extractive() -> Draft:
    return _draft("extractive")


def test_a_failing_model_writer_gives_way_to_the_extractive_writer_and_says_why() -> None:
    async def failing() -> Draft:
        raise UpstreamError("the model at http://127.0.0.1:9/v1 answered 503")

    draft = asyncio.run(write_draft(Writers(_extractive, failing)))
    assert draft.writer == "extractive"
    assert draft.notes == [
        "LLM writer failed (the model at http://127.0.0.1:9/v1 answered 503); the extractive writer answered"
    ]


def test_a_model_writer_past_its_budget_gives_way_to_the_extractive_writer() -> None:
    async def never_done() -> Draft:
        await asyncio.Event().wait()
        return _draft("llm:never")

    draft = asyncio.run(write_draft(Writers(_extractive, never_done, budget_seconds=0.0)))
    assert draft.writer == "extractive"
    assert draft.notes == ["LLM writer exceeded its 0 s budget; the extractive writer answered"]


def test_a_model_failure_the_driver_does_not_fall_back_on_is_raised() -> None:
    async def broken() -> Draft:
        raise ValueError("a bug, not an upstream failure")

    with pytest.raises(ValueError, match="a bug"):
        asyncio.run(write_draft(Writers(_extractive, broken)))
    recovered = asyncio.run(write_draft(Writers(_extractive, broken, fallback_on=(Exception,))))
    assert recovered.writer == "extractive" and "ValueError: a bug" in recovered.notes[0]


def test_the_model_draft_stands_when_it_answers() -> None:
    async def model() -> Draft:
        return _draft("llm:scripted")

    draft = asyncio.run(write_draft(Writers(_extractive, model, budget_seconds=60.0)))
    assert draft.writer == "llm:scripted" and draft.notes == []
