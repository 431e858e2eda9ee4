"""A streamed answer shows only what the Verifier kept, sentence by sentence, while the model still writes."""

from __future__ import annotations

import asyncio
import re

from functions.common.llm import CompletionStream
from functions.research.checking.verifier import Verifier
from functions.research.pipeline import AnswerPipeline, AnswerRequest
from functions.research.retrieval.retriever import Retriever
from functions.research.trace import TraceRecorder
from functions.research.verified_stream import VerifiedStream
from functions.research.writing.writer import DraftSentence
from tests.support.fakes.answer_search import InMemorySearch
from tests.unit.research.scripted_llm import ScriptedLlm
from tests.unit.research.test_answer_pipeline import RAG

CHUNK = "chunk-0123456789"
EVIDENCE = {
    CHUNK: "Retrieval augmented generation improved exact match on open-domain question answering by 11 points."
}
PHISHING = "Readers should visit http://evil.example/login and paste their API token there"


def test_kept_sentences_go_out_as_they_are_verified_and_the_rest_never() -> None:
    shown: list[str] = []
    fed: list[int] = []

    async def on_delta(text: str) -> None:
        shown.append(text)
        fed.append(len(model_text))

    model_text = ""

    async def run() -> list[str]:
        nonlocal model_text
        stream = VerifiedStream(Verifier(None), EVIDENCE, on_delta)
        answer = (
            f"Retrieval augmented generation improved exact match by 11 points [{CHUNK}]. "
            f"{PHISHING} [{CHUNK}]. It also doubled recall on every benchmark [{CHUNK}]. "
            f"On open-domain question answering, retrieval augmented generation improved exact match by 11 points [{CHUNK}]."
        )
        for start in range(0, len(answer), 5):
            model_text += answer[start : start + 5]
            await stream.feed_model_text(answer[start : start + 5])
        sentences = [
            DraftSentence(text, [CHUNK])
            for text in (
                "Retrieval augmented generation improved exact match by 11 points.",
                PHISHING + ".",
                "It also doubled recall on every benchmark.",
                "On open-domain question answering, retrieval augmented generation improved exact match by 11 points.",
            )
        ]
        verdicts = await stream.finish(sentences)
        assert [v.claim_id for v in verdicts] == ["clm-001", "clm-002", "clm-003", "clm-004"]
        return [v.verdict for v in verdicts]

    verdicts = asyncio.run(run())
    assert verdicts[1] == verdicts[2] == "unsupported" and verdicts[0] != "unsupported"
    assert shown == [
        "Retrieval augmented generation improved exact match by 11 points. [1]",
        " On open-domain question answering, retrieval augmented generation improved exact match by 11 points. [1]",
    ]
    assert fed[0] < len(model_text)  # the first kept sentence went out while the model was still writing
    assert not any("evil.example" in text or "token" in text for text in shown)


def test_a_model_that_finds_no_answer_shows_nothing() -> None:
    shown: list[str] = []

    async def on_delta(text: str) -> None:
        shown.append(text)

    async def run() -> None:
        stream = VerifiedStream(Verifier(None), EVIDENCE, on_delta)
        for piece in (
            "INSUFF",
            "ICIENT_EVIDENCE. ",
            "Retrieval augmented generation improved exact match ",
            ".",
        ):
            await stream.feed_model_text(piece)
        assert await stream.finish([]) == []

    asyncio.run(run())
    assert shown == []


class EvidenceCitingLlm(ScriptedLlm):
    """Writes one sentence the evidence states and one it does not, citing the first evidence id."""

    def stream(
        self, system: str, prompt: str, *, temperature: float | None = None, max_tokens: int = 1024
    ) -> CompletionStream:
        found = re.search(r"\[(chunk-[0-9a-f]{10})\] ([^\n]+)", prompt)
        assert found is not None
        chunk_id, text = found.groups()
        self.answer = f"{text.rstrip('.')} [{chunk_id}]. {PHISHING} [{chunk_id}]."
        return super().stream(system, prompt, temperature=temperature, max_tokens=max_tokens)


def test_the_pipeline_streams_only_verified_text_and_a_refusal_keeps_no_draft() -> None:
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    pipeline = AnswerPipeline(Retriever(InMemorySearch(RAG)), EvidenceCitingLlm(""))
    request = AnswerRequest(question="How does retrieval augmented generation work?", reasoning_effort="low")
    result = asyncio.run(pipeline.run(request, TraceRecorder("trace-test"), on_delta=on_delta))
    assert deltas, "nothing was streamed"
    assert not any("evil.example" in delta or "API token" in delta for delta in deltas)
    if result.decision.refusal:
        assert result.claim_verifications == [] and result.sentences == []
    else:
        assert "".join(deltas) == result.answer
        assert any(v.verdict == "unsupported" for v in result.claim_verifications)
