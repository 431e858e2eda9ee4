"""An answer streams from the moment the gate admits it: before the critique and the Red-Team, which
only annotate what was sent; a refused answer streams nothing."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from functions.common.models import ExtractedPaper
from functions.research.checking.gate import Decision, GateFacts, after_admission, answer_policy, decide
from functions.research.checking.verifier import Verifier
from functions.research.pipeline import AnswerPipeline, AnswerRequest, AnswerResult
from functions.research.retrieval.retriever import Retriever
from functions.research.trace import TraceEvent, TraceRecorder
from functions.research.verified_stream import VerifiedStream
from functions.research.writing.writer import DraftSentence
from tests.support.fakes.answer_search import InMemorySearch
from tests.unit.research.test_answer_pipeline import RAG

QUESTION = "How does retrieval augmented generation work?"


def _streamed(request: AnswerRequest) -> tuple[AnswerResult, list[str], list[str]]:
    """The result, the deltas, and one log of what happened in order ("delta" or the trace event's name)."""
    happened: list[str] = []
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)
        happened.append("delta")

    async def on_trace(event: TraceEvent) -> None:
        happened.append(event.name)

    pipeline = AnswerPipeline(Retriever(InMemorySearch(RAG)))
    result = asyncio.run(pipeline.run(request, TraceRecorder("trace-test", on_trace), on_delta=on_delta))
    return result, deltas, happened


@pytest.mark.parametrize("preset", ["fast", "comprehensive"])
def test_the_first_verified_sentence_goes_out_before_the_critique_and_the_red_team(preset: str) -> None:
    result, deltas, happened = _streamed(
        AnswerRequest(question=QUESTION, preset=preset, reasoning_effort="low")
    )
    assert not result.decision.refusal, result.decision
    first = happened.index("delta")
    assert happened.index("answer_admitted") < first < happened.index("redteam_completed")
    if preset == "comprehensive":
        assert first < happened.index("critique_generated")
    assert happened.count("delta") == len(result.sentences) > 1  # sentence by sentence
    assert "".join(deltas) == result.answer  # the deltas add up to the final text
    assert happened.index("decision") > happened.index("redteam_completed")


def test_an_answer_the_gate_refuses_streams_nothing() -> None:
    result, deltas, happened = _streamed(
        AnswerRequest(question=QUESTION, reasoning_effort="low", min_sources=5)
    )
    assert result.decision.refusal and result.decision.reason_code == "insufficient_sources"
    assert deltas == [] and "answer_admitted" not in happened
    assert result.sentences == [] and result.claim_verifications == []


CHUNK = "chunk-0123456789"
EVIDENCE = {
    CHUNK: "Retrieval augmented generation improved exact match on open-domain question answering by 11 points."
}
SENTENCES = [
    DraftSentence("Retrieval augmented generation improved exact match by 11 points.", [CHUNK]),
    DraftSentence(
        "On open-domain question answering, retrieval augmented generation improved exact match by 11 points.",
        [CHUNK],
    ),
]


def test_kept_sentences_wait_for_the_gate_then_go_out_in_order() -> None:
    shown: list[str] = []
    asked: list[int] = []

    async def on_delta(text: str) -> None:
        shown.append(text)

    async def admits_from_the_second(verifications: object) -> bool:
        assert isinstance(verifications, list)
        asked.append(len(verifications))
        return len(verifications) >= 2

    async def never(verifications: object) -> bool:
        return False

    async def run() -> tuple[VerifiedStream, VerifiedStream]:
        late = VerifiedStream(Verifier(None), EVIDENCE, on_delta, admits_from_the_second)
        for index, sentence in enumerate(SENTENCES):
            text = f"{sentence.text[:-1]} [{CHUNK}]. "
            await late.feed_model_text(text)
            if index == 0:
                await late.feed_model_text("Next")  # the first sentence is complete, and verified
                assert shown == [] and asked == [1]  # held: the gate does not admit one sentence yet
        await late.finish(SENTENCES)
        refused = VerifiedStream(Verifier(None), EVIDENCE, on_delta, never)
        await refused.finish(SENTENCES)
        return late, refused

    late, refused = asyncio.run(run())
    assert late.admitted and not refused.admitted
    assert shown == [f"{SENTENCES[0].text} [1]", f" {SENTENCES[1].text} [1]"]  # nothing from the refused one


def test_an_objection_after_admission_lowers_confidence_instead_of_retracting() -> None:
    policy = answer_policy(quality_gate=True)
    facts = GateFacts(
        signals=(1.0, 1.0, 0.2, 0.1),
        rationale="2/2 claim(s) verified",
        cited_sources=3,
        verified_claims=2,
        answered=True,
    )
    objected = Decision(
        True, "red_team", "Red-Team: a drafted number the evidence lacks", 0.0, facts.rationale
    )
    settled = after_admission(objected, facts, policy)
    assert not settled.refusal and settled.reason_code is None
    assert settled.confidence <= (policy.min_confidence or 0.0) and "Red-Team" in settled.rationale
    unchanged = decide(facts, policy)
    assert after_admission(unchanged, facts, policy) == unchanged


class PdfsAfterTheFirstSentence:
    """A full-text service whose PDFs arrive only once the client has heard a sentence (or after a
    generous guard, so that a regression fails instead of hanging); the PDFs never parse."""

    def __init__(self, guard_seconds: float = 20.0) -> None:
        self.heard = asyncio.Event()
        self.guard_seconds = guard_seconds
        self.requests = 0

    async def extract(self, source_url: str, **options: Any) -> ExtractedPaper:
        self.requests += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.heard.wait(), self.guard_seconds)
        return ExtractedPaper(
            source_url=source_url, canonical_id=source_url, success=False, failure_reason="test"
        )


def test_without_an_llm_the_direct_answer_streams_from_the_abstracts_while_the_full_text_is_read() -> None:
    pdfs = PdfsAfterTheFirstSentence()
    happened: list[str] = []
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)
        happened.append("delta")
        pdfs.heard.set()

    async def on_trace(event: TraceEvent) -> None:
        happened.append(event.name)

    pipeline = AnswerPipeline(Retriever(InMemorySearch(RAG), full_text=pdfs))
    request = AnswerRequest(question=QUESTION, preset="comprehensive")
    result = asyncio.run(pipeline.run(request, TraceRecorder("trace-test", on_trace), on_delta=on_delta))
    assert not result.decision.refusal, result.decision
    assert pdfs.requests > 0
    assert happened.index("delta") < happened.index("full_text_read") < happened.index("draft_written")
    assert "".join(deltas) == result.answer and deltas[0].strip() in result.answer.split("\n\n")[0]
    assert happened.count("retrieval_completed") == 1 and happened.count("answer_admitted") == 1
    chunks = {chunk.chunk_id for chunk in result.chunks}
    assert all(citation.chunk_id in chunks for citation in result.citations)  # the lead's among them


def test_a_direct_answer_the_gate_would_refuse_is_not_sent_from_the_abstracts() -> None:
    deltas: list[str] = []
    happened: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    async def on_trace(event: TraceEvent) -> None:
        happened.append(event.name)

    pipeline = AnswerPipeline(Retriever(InMemorySearch(RAG), full_text=PdfsAfterTheFirstSentence(0.0)))
    request = AnswerRequest(question=QUESTION, preset="comprehensive", min_sources=5)
    result = asyncio.run(pipeline.run(request, TraceRecorder("trace-test", on_trace), on_delta=on_delta))
    assert result.decision.refusal and result.decision.reason_code == "insufficient_sources"
    assert deltas == [] and "answer_admitted" not in happened and result.sentences == []
