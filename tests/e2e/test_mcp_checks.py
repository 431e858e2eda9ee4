"""The two checks spoken over MCP for real: `verify_claim` and `check_references` through the official
SDK's client over HTTP against the local runtime's gateway (`AUTH=required`), each result equal to what
its REST route answers the same team, on a loopback web serving real PDFs and Crossref and OpenAlex as
registries (tests/support/registry_web.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.references import MAX_REFERENCES
from tests.e2e.answer_topic import answer_papers, gateway_server
from tests.e2e.scholarly_topic import TopicPaper, environment, serve
from tests.support.mcp_client import create_team, mcp_client, output_schemas, structured
from tests.support.registry_web import RegistryWeb
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ADMIN_TOKEN = "mcp-checks-admin-secret"


@dataclass
class Live:
    base_url: str
    papers: list[TopicPaper]
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    papers = answer_papers()
    with ScholarlyWeb() as web:
        serve(web, papers)
        RegistryWeb([paper.sample for paper in papers]).install(web)
        reset_workflow_settings_cache()
        env = environment(web, AUTH="required", ADMIN_TOKEN=ADMIN_TOKEN)
        with EmbeddedAws(extra_environment=env), gateway_server() as base_url:
            _, token = create_team(base_url, ADMIN_TOKEN, "MCP checks")
            yield Live(base_url, papers, token)
    reset_workflow_settings_cache()


def _tool_calls(live: Live, calls: list[tuple[str, dict[str, Any]]]) -> tuple[dict[str, Any], list[Any]]:
    async def run() -> tuple[dict[str, Any], list[Any]]:
        async with mcp_client(live.base_url, live.token) as client:
            return await output_schemas(client), [
                await client.call_tool(name, arguments) for name, arguments in calls
            ]

    return asyncio.run(run())


def _rest(live: Live, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{live.base_url}{path}", json=body, headers=live.headers, timeout=240)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _reference(paper: TopicPaper) -> str:
    sample = paper.sample
    return f"{', '.join(sample.authors)}. {sample.title}. {sample.year}."


def test_check_references_mirrors_its_route(live: Live) -> None:
    with_doi = [paper for paper in live.papers if paper.sample.doi][:2]
    assert len(with_doi) == 2
    real, other = with_doi
    references = [
        _reference(real),
        f"doi:{other.sample.doi}",
        # a real DOI with an invented title: the typical fabrication
        f"{real.sample.authors[0]}. Deep reinforcement learning for glacier retreat forecasting. "
        f"{real.sample.year}. doi:{real.sample.doi}",
        "Zhang Q, Ivanova P. Quantum annealing schedules for protein docking benchmarks. Nat Chem. 2018.",
    ]
    schemas, (result,) = _tool_calls(live, [("check_references", {"references": references})])
    body = structured(result, schemas["check_references"])
    assert [entry["status"] for entry in body["references"]] == [
        "verified",
        "verified",
        "doi_title_mismatch",
        "not_found",
    ]
    assert body["references"][2]["matched"]["title"] == real.sample.title  # the DOI's real record
    assert "4 references checked" in result.content[0].text
    assert body == _rest(live, "/v1/references/check", {"references": references})


def test_verify_claim_mirrors_its_route_with_page_located_quotes(live: Live) -> None:
    paper = next(item for item in live.papers if item.sample.arxiv_id)
    finding = next(s for s in paper.text.split(". ") if s.startswith("In our experiments")) + "."
    arguments = {"claim": finding, "sources": [str(paper.sample.arxiv_id)]}
    schemas, (result,) = _tool_calls(live, [("verify_claim", arguments)])
    body = structured(result, schemas["verify_claim"])
    assert body["verdict"] == "supported", body
    assert result.content[0].text.startswith("supported")
    assert body["evidence"] and all("page" in item and item["quote"] for item in body["evidence"])
    rest = _rest(live, "/v1/claims/verify", arguments)
    assert (rest["verdict"], [item["quote"] for item in rest["evidence"]]) == (
        body["verdict"],
        [item["quote"] for item in body["evidence"]],
    )


def test_bad_checks_are_error_results_naming_the_problem(live: Live) -> None:
    _, (too_many, empty_claim, blank) = _tool_calls(
        live,
        [
            ("check_references", {"references": ["10.1000/x"] * (MAX_REFERENCES + 1)}),
            ("verify_claim", {"claim": ""}),
            ("check_references", {"references": ["   "]}),
        ],
    )
    for result, field in ((too_many, "references"), (empty_claim, "claim"), (blank, "references")):
        assert result.is_error and result.structured_content is None
        assert field in result.content[0].text
