"""`/v1/query` and `/v1/query/stream` end to end with a real model writing: SmolLM2-135M served by llama.cpp
on loopback (`LLM_PROVIDER=openai`), over the answer app, moto and a loopback scholarly web.

The model is tiny, so these tests assert grounding, never prose: whatever it writes, an answer only
carries sentences the Verifier kept, citing evidence retrieved for this question, located verbatim in a
served abstract; otherwise the answer is a refusal with a reason code and no claim in its text. A model
that does not cite ids, or that finds the evidence insufficient, ends in a refusal: a grounded outcome
too. `assert_grounded` checks whichever of the two came, in full (SmolLM2 keeps no verified claim in
these prompts, so its drafts end in `no_supported_claims`; the extractive fallback exercises the answer side).

Prompts stay small (the `fast` preset reads abstracts only, low effort, three served papers of two short
sentences each, temperature 0 so that a run repeats), so each model call takes a few seconds on one thread.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.answer.schemas import QueryResponse
from functions.cli.sse import ServerSentEvent, iter_sse
from functions.local_runtime.aws import EmbeddedAws
from functions.research.checking.gate import (
    INSUFFICIENT_SOURCES,
    LOW_CONFIDENCE,
    NO_EVIDENCE,
    NO_SOURCES,
    NO_SUPPORTED_CLAIMS,
    NOT_ANSWERED,
    RED_TEAM,
)
from tests.e2e.answer_topic import UNANSWERABLE
from tests.e2e.scholarly_topic import environment
from tests.integration.answer.conftest import FAST_UPSTREAM
from tests.support.llm_server import LlmServer
from tests.support.scholarly_fixtures import SamplePaper, install
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.llm, pytest.mark.timeout(120)]

QUESTION = "How does sparse attention reduce the memory use of transformer architectures?"
# On the topic of the served papers (so sources are found and the model is asked), but nothing in their
# abstracts states an energy figure.
UNANSWERED = "How many kilowatt hours of energy does training a sparse attention transformer consume?"
PAPERS = (
    SamplePaper(
        title="Sparse Attention for Long Documents",
        abstract=(
            "Sparse attention lets each token attend to a small window of nearby tokens. This reduces the "
            "memory use of transformer architectures on long documents."
        ),
        year=2023,
        authors=("Maria Garcia", "Wei Chen"),
        doi="10.1234/sparse.window",
        arxiv_id="2301.00001",
        venue="ACL",
        citations=50,
    ),
    SamplePaper(
        title="Block Sparse Attention in Transformer Architectures",
        abstract=(
            "Block sparse attention computes attention only inside fixed blocks of tokens. Transformer "
            "architectures with block sparse attention need far less memory than dense attention."
        ),
        year=2024,
        authors=("Li Wang", "Jean-Pierre Dupont"),
        doi="10.1234/sparse.block",
        venue="ICML",
        citations=20,
    ),
    SamplePaper(
        title="Soil Microbiome Diversity in Alpine Meadows",
        abstract=(
            "We sequence soil samples from alpine meadows. Microbial diversity declines with altitude."
        ),
        year=2021,
        authors=("Hans Mueller", "Eva Novak"),
        doi="10.5678/soil.alpine",
        venue="Ecology Letters",
        citations=30,
    ),
)
ABSTRACTS = {paper.title: paper.abstract for paper in PAPERS}
# Small and repeatable: abstracts only, low effort, few sources, greedy decoding.
OPTIONS: dict[str, Any] = {
    "preset": "fast",
    "reasoning_effort": "low",
    "max_sources": 3,
    "temperature": 0.0,
}
REASON_CODES = {
    NO_SOURCES,
    NO_EVIDENCE,
    NO_SUPPORTED_CLAIMS,
    NOT_ANSWERED,
    INSUFFICIENT_SOURCES,
    LOW_CONFIDENCE,
    RED_TEAM,
}
LLM_WRITER = "llm:openai"
RAW_CHUNK_ID = re.compile(r"chunk-[0-9a-f]{10}")
MARKER = re.compile(r"\[\d+\]")


@pytest.fixture
def scholarly_web() -> Iterator[ScholarlyWeb]:
    with ScholarlyWeb() as web:
        install(web, PAPERS)
        yield web


@contextmanager
def answer_app(web: ScholarlyWeb, **env: str) -> Iterator[TestClient]:
    """The answer app on moto, searching `web`, with `env` on top (the LLM settings)."""
    settings = environment(web, **FAST_UPSTREAM, **env)
    with EmbeddedAws(step_functions=(), state_machines=(), extra_environment=settings):
        from functions.answer.app import app

        with TestClient(app, raise_server_exceptions=False) as client:
            yield client


@pytest.fixture
def client(scholarly_web: ScholarlyWeb, llm_env: LlmServer) -> Iterator[TestClient]:
    with answer_app(scholarly_web, **llm_env.env()) as test_client:
        yield test_client


def _unreachable_model() -> dict[str, str]:
    """LLM settings naming a loopback port nothing listens on (bound, then released), allowed by the
    SSRF guard, so the connection itself is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return {
        "LLM_PROVIDER": "openai",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "LLM_MODEL": "smollm2",
        "LLM_ALLOW_PRIVATE_HOSTS": f"127.0.0.1:{port}",
    }


def _trace_events(client: TestClient, trace_id: str) -> dict[str, dict[str, Any]]:
    """The answer's stored trace events by name (the last of each name)."""
    response = client.get(f"/v1/traces/{trace_id}")
    assert response.status_code == 200, response.text
    return {event["name"]: event["payload"] for event in response.json()["events"]}


def _without_markers(text: str) -> str:
    return " ".join(MARKER.sub(" ", text).split())


def assert_grounded(body: dict[str, Any], events: dict[str, dict[str, Any]]) -> bool:
    """Either a grounded answer or a refusal with a reason code; returns whether it was an answer.

    An answer: every citation is a chunk retrieved for this question, from a kept source, located
    verbatim in a served abstract; every part of the text is a sentence the Verifier did not reject;
    no rejected sentence appears. A refusal: a reason code, no citation, and only the refusal sentence.
    """
    QueryResponse.model_validate(body)
    retrieved = set(events["retrieval_completed"]["chunks"])
    kept_sources = set(events["sources_ranked"]["kept"])
    claims = body["claim_verifications"]
    kept = [claim for claim in claims if claim["verdict"] != "unsupported"]
    rejected = [claim for claim in claims if claim["verdict"] == "unsupported"]
    for claim in kept:
        assert claim["evidence_chunk_ids"] and set(claim["evidence_chunk_ids"]) <= retrieved, claim

    if body["refusal"]:
        assert body["refusal_code"] in REASON_CODES, body
        assert body["answer"] == f"No answer: {body['refusal_reason']}.", body["answer"]
        assert body["citations"] == [] and body["confidence_score"] == 0.0
        assert claims == [], "a refusal carries no draft text"
        assert events["decision"]["refusal"] is True
        assert events["decision"]["reason_code"] == body["refusal_code"]
        return False

    assert body["refusal_code"] is None and body["citations"] and kept, body
    for citation in body["citations"]:
        assert citation["chunk_id"] in retrieved and citation["source_id"] in kept_sources, citation
        abstract = ABSTRACTS[citation["title"]]
        assert abstract[citation["chunk_start"] : citation["chunk_end"]] == citation["snippet"], citation
        number = int(citation["citation_id"].removeprefix("cit-"))
        assert f"[{number}]" in body["answer"]
    cited = {citation["chunk_id"] for citation in body["citations"]}
    assert {i for claim in kept for i in claim["evidence_chunk_ids"]} == cited
    # The answer is the kept sentences (with their markers and any section headings), nothing else.
    rest = _without_markers(re.sub(r"^#+ .*$", " ", body["answer"], flags=re.M))
    for claim in sorted(kept, key=lambda c: -len(c["claim_text"])):
        assert claim["claim_text"] in rest, claim
        rest = rest.replace(claim["claim_text"], " ", 1)
    assert not rest.strip(), f"answer text no kept claim accounts for: {rest!r}"
    kept_texts = {claim["claim_text"] for claim in kept}
    for claim in rejected:
        if not any(claim["claim_text"] in text for text in kept_texts):
            assert claim["claim_text"] not in body["answer"], claim
    assert events["decision"]["refusal"] is False
    return True


def test_query_answers_only_with_verified_claims_or_refuses(client: TestClient) -> None:
    response = client.post("/v1/query", json={"query": QUESTION, "options": OPTIONS})

    assert response.status_code == 200, response.text
    body = response.json()
    events = _trace_events(client, body["trace_id"])
    assert events["draft_written"]["writer"] == LLM_WRITER
    assert events["verification_completed"]["claim_ids"], "the model wrote nothing the Verifier could check"
    assert_grounded(body, events)


def test_research_face_reports_the_model_and_its_token_usage(client: TestClient) -> None:
    response = client.post(
        "/api/v1/ask", json={"query": QUESTION, "preset": "fast", "top_k": 3, "connectors": ["arxiv"]}
    )

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"] == "smollm2"
    assert body["usage"]["prompt_tokens"] > 0 and body["usage"]["completion_tokens"] > 0
    events = _trace_events(client, body["trace_id"])
    assert events["draft_written"]["writer"] == LLM_WRITER


def test_stream_sends_the_model_tokens_as_numbered_deltas_then_the_query_body(client: TestClient) -> None:
    with client.stream("POST", "/v1/query/stream", json={"query": QUESTION, "options": OPTIONS}) as response:
        assert response.status_code == 200
        events: list[ServerSentEvent] = list(iter_sse(response.iter_bytes()))

    kinds = [event.event for event in events]
    assert kinds[-1] == "final" and "error" not in kinds, kinds
    deltas = [event.json()["text"] for event in events if event.event == "answer_delta"]
    assert all(event.json()["verified"] is True for event in events if event.event == "answer_delta")
    names = [event.json().get("name") if event.event == "trace_event" else event.event for event in events]
    # Verified sentences arrive while the model writes: before the whole draft is verified.
    if deltas:
        assert names.index("answer_delta") < names.index("verification_completed") < names.index("final")
    # Evidence ids are rewritten to [n], and only verified sentences are streamed.
    assert not any(RAW_CHUNK_ID.search(delta) for delta in deltas), deltas
    assert not RAW_CHUNK_ID.search("".join(deltas))

    final = events[-1].json()
    assert set(final) == set(QueryResponse.model_fields)
    streamed = {
        event.json()["name"]: event.json()["payload"] for event in events if event.event == "trace_event"
    }
    assert streamed["draft_written"]["writer"] == LLM_WRITER
    answered = assert_grounded(final, _trace_events(client, final["trace_id"]))
    if answered:
        assert "".join(deltas) == final["answer"]
    citation_events = [event.json()["citations"] for event in events if event.event == "citation"]
    assert citation_events == ([final["citations"]] if answered else [])


@pytest.mark.parametrize(
    ("question", "writer"),
    [
        pytest.param(UNANSWERED, LLM_WRITER, id="sources-found-but-silent"),
        # Nothing served is relevant: the gate refuses before any model is asked.
        pytest.param(UNANSWERABLE, "extractive", id="no-relevant-source"),
    ],
)
def test_a_question_the_evidence_does_not_answer_is_refused(
    client: TestClient, question: str, writer: str
) -> None:
    response = client.post("/v1/query", json={"query": question, "options": OPTIONS})

    assert response.status_code == 200, response.text
    body = response.json()
    events = _trace_events(client, body["trace_id"])
    assert events["draft_written"]["writer"] == writer
    assert body["refusal"] is True, body
    assert not assert_grounded(body, events)
    if writer == "extractive":
        assert body["refusal_code"] == NO_SOURCES and body["claim_verifications"] == []


def test_an_unreachable_model_leaves_the_extractive_writer_answering(scholarly_web: ScholarlyWeb) -> None:
    model = _unreachable_model()
    with answer_app(scholarly_web, **model) as client:
        assert client.get("/v1/health").json()["llm_configured"] is True
        response = client.post("/v1/query", json={"query": QUESTION, "options": OPTIONS})
        assert response.status_code == 200, response.text
        body = response.json()
        events = _trace_events(client, body["trace_id"])

    written = events["draft_written"]
    assert written["writer"] == "extractive"
    (note,) = written["notes"]
    assert note.startswith("LLM writer failed") and model["OPENAI_BASE_URL"].removesuffix("/v1") in note
    assert assert_grounded(body, events), body
    # The extractive writer quotes the evidence: every claim is a verbatim chunk, stated by what it cites.
    assert all(claim["verdict"] == "supported" for claim in body["claim_verifications"])
