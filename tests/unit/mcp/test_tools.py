"""The tool declarations: names and schemas, and the REST call each builds from its arguments."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from functions.answer.schemas import CLAIM_MAX_CHARS, CLAIM_MAX_SOURCES
from functions.mcp.tools import TOOLS, TOOLS_BY_NAME
from functions.references import MAX_REFERENCES


def test_the_ten_tools_of_the_issue_with_object_schemas() -> None:
    assert [tool.name for tool in TOOLS] == [
        "search_papers",
        "read_paper",
        "ask",
        "verify_claim",
        "check_references",
        "start_research",
        "research_status",
        "research_results",
        "kb_search",
        "kb_entity",
    ]
    for tool in TOOLS:
        assert tool.input_schema()["type"] == "object"
        assert tool.output_schema()["type"] == "object"
        assert tool.input_schema().get("additionalProperties") is False, tool.name


def test_search_papers_puts_its_years_in_the_routes_filters() -> None:
    tool = TOOLS_BY_NAME["search_papers"]
    call = tool.call(
        tool.arguments.model_validate({"query": "attention", "year_start": 2020, "year_end": 2023})
    )
    assert (call.method, call.path) == ("POST", "/api/tools/search")
    assert call.json == {
        "query": "attention",
        "max_results": 20,
        "filters": {"year_range": {"start": 2020, "end": 2023}},
    }
    only_end = tool.call(tool.arguments.model_validate({"query": "attention", "year_end": 2023}))
    assert only_end.json["filters"] == {"year_range": {"end": 2023}}
    assert "filters" not in tool.call(tool.arguments.model_validate({"query": "attention"})).json


def test_ask_is_a_query_with_its_preset_and_documents() -> None:
    tool = TOOLS_BY_NAME["ask"]
    call = tool.call(
        tool.arguments.model_validate({"question": "Why?", "preset": "fast", "documents": ["doc-1"]})
    )
    assert (call.method, call.path) == ("POST", "/v1/query")
    assert call.json == {"query": "Why?", "documents": ["doc-1"], "options": {"preset": "fast"}}
    assert tool.streamed is not None
    assert tool.streamed(call.json)["options"] == {"preset": "fast", "stream": True}


def test_path_parameters_are_quoted_and_a_get_sends_no_body() -> None:
    status = TOOLS_BY_NAME["research_status"]
    call = status.call(status.arguments.model_validate({"job_id": "../admin/teams?x=1"}))
    assert call.path == "/api/agent/status/..%2Fadmin%2Fteams%3Fx%3D1" and call.json is None
    entity = TOOLS_BY_NAME["kb_entity"]
    call = entity.call(entity.arguments.model_validate({"entity_type": "algorithm", "number": "2.1"}))
    assert (call.method, call.path, call.json) == ("GET", "/entity/algorithm/2.1", None)


def test_start_research_and_kb_search_send_their_arguments_as_the_body() -> None:
    start = TOOLS_BY_NAME["start_research"]
    call = start.call(start.arguments.model_validate({"research_goal": "What is new in transformers?"}))
    assert call.json["research_goal"] == "What is new in transformers?"
    assert call.json["scope_parameters"]["discovery_depth"] == "focused"  # the route's default
    search = TOOLS_BY_NAME["kb_search"]
    call = search.call(search.arguments.model_validate({"query": "bellman", "traverse_types": ["formula"]}))
    assert call.json == {"query": "bellman", "k": 5, "traverse_types": ["formula"]}


def test_the_two_checks_send_their_arguments_as_their_routes_bodies() -> None:
    verify = TOOLS_BY_NAME["verify_claim"]
    call = verify.call(verify.arguments.model_validate({"claim": "Sparse attention cuts memory use."}))
    assert (call.method, call.path) == ("POST", "/v1/claims/verify")
    assert call.json == {"claim": "Sparse attention cuts memory use."}  # no sources: the route searches
    named = verify.call(verify.arguments.model_validate({"claim": "x y z", "sources": ["10.1/abc"]}))
    assert named.json == {"claim": "x y z", "sources": ["10.1/abc"]}
    check = TOOLS_BY_NAME["check_references"]
    call = check.call(check.arguments.model_validate({"references": ["10.1/abc", "@article{k, title={T}}"]}))
    assert (call.method, call.path) == ("POST", "/v1/references/check")
    assert call.json == {"references": ["10.1/abc", "@article{k, title={T}}"]}


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("search_papers", {"query": "x", "max_results": 0}, "max_results"),
        ("search_papers", {"query": "x", "page": 2}, "page"),
        ("ask", {"question": "Why?", "preset": "slow"}, "preset"),
        ("research_status", {}, "job_id"),
        ("kb_search", {"query": "x", "traverse_types": ["planet"]}, "traverse_types"),
        ("verify_claim", {"claim": "x" * (CLAIM_MAX_CHARS + 1)}, "claim"),
        ("verify_claim", {"claim": "x", "sources": ["10.1/a"] * (CLAIM_MAX_SOURCES + 1)}, "sources"),
        ("check_references", {"references": []}, "references"),
        ("check_references", {"references": ["10.1/a"] * (MAX_REFERENCES + 1)}, "references"),
        ("check_references", {"references": ["   "]}, "references"),
    ],
)
def test_invalid_arguments_are_refused_by_the_argument_model(
    name: str, arguments: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        TOOLS_BY_NAME[name].arguments.model_validate(arguments)
    assert field in str(refused.value)
