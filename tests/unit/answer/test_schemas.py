"""The request models accept what the seeds allow and nothing else."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import ValidationError

from functions.answer.schemas import (
    FocusModeName,
    PresetName,
    QueryRequest,
    ReasoningEffort,
    ResearchRequest,
    TrustSearchRequest,
)
from functions.research.presets import FOCUS_MODES, PRESETS, REASONING_EFFORTS


def test_the_contract_literals_are_the_pipelines_tables() -> None:
    assert set(get_args(PresetName)) == set(PRESETS)
    assert set(get_args(FocusModeName)) == set(FOCUS_MODES)
    assert set(get_args(ReasoningEffort)) == set(REASONING_EFFORTS)


def test_research_request_defaults_as_the_seed() -> None:
    request = ResearchRequest.model_validate({"query": "What is RAG?"})
    assert (request.top_k, request.connectors, request.reasoning_effort) == (10, None, "medium")
    assert request.preset is None and request.focus_mode is None


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": ""},
        {"query": "   "},
        {"query": "x" * 2001},
        {"query": "q", "top_k": 0},
        {"query": "q", "top_k": 51},
        {"query": "q", "top_k": "10"},
        {"query": "q", "reasoning_effort": "extreme"},
        {"query": "q", "preset": "deep"},
        {"query": "q", "focus_mode": "sports"},
        {"query": "q", "connectors": "arxiv"},
    ],
)
def test_research_request_rejects(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ResearchRequest.model_validate(body)


def test_query_request_takes_the_seed_options_and_our_extensions() -> None:
    request = QueryRequest.model_validate(
        {
            "query": "What is the latest guidance on X?",
            "user_id": "usr-123",
            "session_id": "sess-456",
            "documents": ["doc-001", "doc-002"],
            "options": {
                "stream": False,
                "max_sources": 8,
                "temperature": 0.2,
                "embedding_model": "text-embedding-3-large",
                "search_provider": "bing",
                "enable_verifier": True,
                "preset": "fast",
                "focus_mode": "news",
                "reasoning_effort": "high",
                "min_confidence": 0.5,
                "min_sources": 2,
            },
        }
    )
    assert request.options.max_sources == 8 and request.options.preset == "fast"
    assert QueryRequest.model_validate({"query": "q"}).options.enable_verifier is True


@pytest.mark.parametrize(
    "options",
    [
        {"max_sources": 0},
        {"max_sources": 31},
        {"temperature": -0.1},
        {"min_confidence": 1.5},
        {"min_sources": 0},
        {"reasoning_effort": "max"},
        {"stream": "yes"},
    ],
)
def test_query_request_rejects_options(options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        QueryRequest.model_validate({"query": "q", "options": options})


def test_search_request_bounds() -> None:
    assert TrustSearchRequest.model_validate({"query": "q"}).max_results == 10
    for body in ({"query": "q", "max_results": 51}, {"query": "q", "freshness": "hour"}, {"query": ""}):
        with pytest.raises(ValidationError):
            TrustSearchRequest.model_validate(body)
