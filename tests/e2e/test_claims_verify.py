"""End to end on the embedded runtime with `AUTH=required`: `POST /v1/claims/verify` through the local
gateway, over real search and extraction against a loopback scholarly web serving real PDFs.

Claims are sentences the served papers state (and the same sentences with a number changed or the
direction flipped), checked against sources the request names (arXiv ids, DOIs, a team's uploaded
documents), or against what the search finds without them. Every evidence passage is checked to be
verbatim at its place: on its PDF page, or in the abstract at its offsets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.extract.pdf import parse_pdf
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.gateway import Gateway, load_function_apps
from functions.orchestrate.config import reset_workflow_settings_cache
from tests.e2e.answer_topic import HIGH_SAVING, answer_papers, team_papers
from tests.e2e.scholarly_topic import TopicPaper, environment, serve
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ADMIN_TOKEN = "claims-admin-secret"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
VERIFY = "/v1/claims/verify"


@dataclass
class Served:
    client: TestClient
    papers: list[TopicPaper]
    team: list[TopicPaper]
    owner: dict[str, str]  # team A's headers
    other: dict[str, str]  # team B's
    document_id: str  # team A's upload of team[0]


def _team(client: TestClient, name: str) -> dict[str, str]:
    created = client.post("/admin/teams", json={"name": name, "tier": "standard"}, headers=ADMIN)
    assert created.status_code == 201, created.text
    return {"Authorization": f"Bearer {created.json()['token']}"}


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    papers, team = answer_papers(), team_papers()
    with ScholarlyWeb() as web:
        serve(web, papers)
        reset_workflow_settings_cache()
        env = environment(web, AUTH="required", ADMIN_TOKEN=ADMIN_TOKEN)
        with EmbeddedAws(extra_environment=env), TestClient(Gateway(load_function_apps())) as client:
            owner, other = _team(client, "claims-a"), _team(client, "claims-b")
            uploaded = client.post(
                "/v1/documents",
                files={"file": ("report.pdf", team[0].pdf, "application/pdf")},
                data={"metadata": json.dumps({"year": team[0].sample.year})},
                headers=owner,
            )
            assert uploaded.status_code == 201, uploaded.text
            yield Served(client, papers, team, owner, other, uploaded.json()["document_id"])
        reset_workflow_settings_cache()


def _verify(served: Served, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    response = served.client.post(VERIFY, json=body, headers=served.owner if headers is None else headers)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _finding(paper: TopicPaper) -> str:
    """The paper's measured result, a sentence of its body (so only its full text states it)."""
    return next(s for s in paper.text.split(". ") if s.startswith("In our experiments")) + "."


@cache
def _pages(pdf: bytes) -> list[str]:
    return [page.text for page in parse_pdf(pdf).pages]


def _assert_verbatim(evidence: dict[str, Any], papers: list[TopicPaper]) -> None:
    """The passage is on its page of one of the PDFs at its offsets, or in an abstract at them."""
    start, end, quote = evidence["char_start"], evidence["char_end"], evidence["quote"]
    if evidence["origin"] == "page":
        pages = [_pages(paper.pdf) for paper in papers]
        page = evidence["page"] - 1
        assert any(
            len(texts) > page and texts[page][start:end].replace("\n", " ") == quote for texts in pages
        ), evidence
    else:
        assert evidence["page"] is None
        assert any(paper.sample.abstract[start:end] == quote for paper in papers), evidence


def test_a_claim_checked_against_named_sources(served: Served) -> None:
    paper = served.papers[0]
    other = next(p for p in served.papers if p.sample.arxiv_id is None)  # its PDF is at its DOI
    assert paper.sample.arxiv_id and other.sample.doi
    claim = _finding(paper)
    sources = [paper.sample.arxiv_id, f"https://doi.org/{other.sample.doi}"]
    body = _verify(served, {"claim": claim, "sources": sources})
    assert body["claim"] == claim
    assert body["verdict"] == "supported", body
    assert 0.5 <= body["confidence"] <= 0.95
    assert [source["source"] for source in body["sources"]] == sources
    assert all(source["read"] for source in body["sources"]), body["sources"]
    top = body["evidence"][0]
    assert top["stance"] == "supports" and top["source"] == paper.sample.arxiv_id
    assert top["origin"] == "page" and top["page"] >= 1  # a sentence of the body, not of the abstract
    for evidence in body["evidence"]:
        _assert_verbatim(evidence, served.papers)


def test_a_changed_number_or_a_flipped_direction_is_contradicted(served: Served) -> None:
    paper = served.papers[0]
    claim = _finding(paper)
    changed = claim.replace("20%", "45%")
    flipped = claim.replace("reduced", "increased")
    assert changed != claim and flipped != claim
    for wrong in (changed, flipped):
        body = _verify(served, {"claim": wrong, "sources": [f"arXiv:{paper.sample.arxiv_id}"]})
        assert body["verdict"] == "contradicted", body
        assert body["evidence"][0]["stance"] == "contradicts"
        _assert_verbatim(body["evidence"][0], served.papers)


def test_a_claim_the_sources_do_not_address(served: Served) -> None:
    claim = "Daily aspirin lowers the risk of a first stroke in older adults with hypertension."
    body = _verify(served, {"claim": claim, "sources": [served.papers[0].sample.arxiv_id]})
    assert body["verdict"] == "insufficient_evidence", body
    assert body["evidence"] == [] and body["confidence"] == 0.0


def test_a_source_that_cannot_be_read_is_a_note(served: Served) -> None:
    paper = served.papers[0]
    missing = "10.5555/nowhere.0404"
    body = _verify(served, {"claim": _finding(paper), "sources": [missing, paper.sample.arxiv_id]})
    assert body["verdict"] == "supported", body
    unread = [source for source in body["sources"] if not source["read"]]
    assert [source["source"] for source in unread] == [missing] and unread[0]["note"]
    assert any(missing in note for note in body["notes"])
    only_missing = _verify(served, {"claim": _finding(paper), "sources": [missing]})
    assert only_missing["verdict"] == "insufficient_evidence"
    assert "no source could be read" in only_missing["notes"]


def test_without_sources_the_search_finds_the_evidence(served: Served) -> None:
    body = _verify(served, {"claim": HIGH_SAVING})
    assert body["verdict"] == "supported", body
    assert body["sources"] and all(source["url"] for source in body["sources"])
    stances = {evidence["stance"] for evidence in body["evidence"]}
    # The other checkpointing paper reports 14 percent for the same measurement.
    assert "contradicts" in stances, body
    assert any("state otherwise" in note for note in body["notes"])
    for evidence in body["evidence"]:
        _assert_verbatim(evidence, served.papers)


def test_a_library_document_is_the_teams_own(served: Served) -> None:
    report = served.team[0]
    finding = next(s for s in report.text.split(". ") if s.startswith("Our block kernels")).rstrip(".") + "."
    for named in (served.document_id, f"library://{served.document_id}"):
        body = _verify(served, {"claim": finding, "sources": [named]})
        assert body["verdict"] == "supported", body
        assert body["evidence"][0]["source"] == named
        _assert_verbatim(body["evidence"][0], served.team)
    theirs = served.client.post(
        VERIFY, json={"claim": finding, "sources": [served.document_id]}, headers=served.other
    )
    assert theirs.status_code == 404, theirs.text
    assert theirs.json()["error"]["code"] == "not_found"
    assert served.document_id in theirs.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"claim": ""}, "claim"),
        ({"claim": "   "}, "claim"),
        ({"claim": "x" * 2001}, "claim"),
        ({"claim": 42}, "claim"),
        ({}, "claim"),
        ({"claim": "Sparse attention reduces memory.", "sources": ["2301.10000"] * 21}, "sources"),
        ({"claim": "Sparse attention reduces memory.", "sources": ["not a source at all"]}, "sources[0]"),
        ({"claim": "Sparse attention reduces memory.", "sources": ["2301.10000", ""]}, "sources.1"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(served: Served, body: dict[str, Any], field: str) -> None:
    response = served.client.post(VERIFY, json=body, headers=served.owner)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"]["field"] == field, error


def test_a_call_without_a_token_is_refused(served: Served) -> None:
    response = served.client.post(VERIFY, json={"claim": HIGH_SAVING})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
