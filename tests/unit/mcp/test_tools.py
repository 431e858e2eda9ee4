"""The tool declarations: names and schemas, and the REST call each builds from its arguments."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from functions.mcp.tools import TOOLS, TOOLS_BY_NAME


def test_the_eight_tools_of_the_issue_with_object_schemas() -> None:
    assert [tool.name for tool in TOOLS] == [
        "search_papers",
        "read_paper",
        "ask",
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


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("search_papers", {"query": "x", "max_results": 0}, "max_results"),
        ("search_papers", {"query": "x", "page": 2}, "page"),
        ("ask", {"question": "Why?", "preset": "slow"}, "preset"),
        ("research_status", {}, "job_id"),
        ("kb_search", {"query": "x", "traverse_types": ["planet"]}, "traverse_types"),
    ],
)
def test_invalid_arguments_are_refused_by_the_argument_model(
    name: str, arguments: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        TOOLS_BY_NAME[name].arguments.model_validate(arguments)
    assert field in str(refused.value)
