"""A job that waits for its reviewer at every phase (issue 22), steered from the console's checkpoint view in
Debian's Chromium against the real local runtime (conftest.py): each phase's payload is shown, the edits
made in the form are the body of the approval, and the job goes on to the next checkpoint and its end."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.conftest import Served, screenshot, serious_violations
from tests.e2e.scholarly_topic import GOAL

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

WAITING = re.compile(r"waits for your review of its (plan|screening|extraction|synthesis)$")


def _start(page: Page, *phases: str) -> str:
    page.get_by_role("button", name="Research job", exact=True).click()
    page.get_by_label("Research goal", exact=True).fill(GOAL)
    page.get_by_label("Depth", exact=True).select_option("rapid")
    for phase in phases:
        page.locator(f"#job-checkpoint-{phase}").check()
    page.get_by_role("button", name="Start research", exact=True).click()
    expect(page).to_have_url(re.compile(r"#job/[\w-]+$"))
    return str(page.evaluate("location.hash")).split("/", 1)[1]


def _waiting_at(page: Page, phase: str, after: str | None = None) -> str:
    """Waits until the console shows the job held at `phase`, at a checkpoint other than the one shown
    as `after` (its "Waiting since" line), and returns that line. Only states the job holds until the
    reviewer decides are awaited: a status the job passes through on its way may never be on screen."""
    since = page.locator("#job-checkpoint > p.meta")
    if after is not None:
        expect(since).not_to_have_text(after, timeout=90_000)  # the next checkpoint, not the decided one
    expect(page.locator("#job-checkpoint")).to_be_visible(timeout=90_000)
    expect(page.locator("#job-checkpoint")).to_have_attribute("data-phase", phase)
    expect(page.locator("#job-status")).to_have_text(WAITING)
    expect(page.locator("#checkpoint-heading")).to_be_focused()
    expect(since).to_have_text(re.compile(r"^Waiting since \S+$"))
    return since.inner_text()


def _approve(page: Page, phase: str) -> Any:
    """Approves the checkpoint on screen; returns the edits sent once the API has answered that it
    approved this phase."""
    with page.expect_response(re.compile(r".*/api/agent/checkpoint/[\w-]+/approve$")) as answered:
        page.locator("#job-checkpoint button[type=submit]").click()
    answer = answered.value
    assert answer.status == 200, answer.text()
    assert answer.json()["phase"] == phase and answer.json()["decision"] == "approved"
    return answer.request.post_data_json


def test_a_reviewer_edits_each_phase_and_the_approvals_carry_the_edits(page: Page, served: Served) -> None:
    job_id = _start(page, "plan", "screening", "extraction", "synthesis")

    shown = _waiting_at(page, "plan")
    checkpoint = page.locator("#job-checkpoint")
    plan = httpx.get(f"{served.base_url}/api/agent/checkpoint/{job_id}", timeout=10).json()["payload"]
    dropped, kept = plan["connectors"][0], plan["connectors"][1]
    expect(checkpoint.locator("fieldset[data-connector]")).to_have_count(len(plan["available_connectors"]))
    checkpoint.get_by_label(f"Query {dropped}", exact=True).uncheck()
    checkpoint.get_by_role("button", name=f"Add a query for {kept}").click()
    page.keyboard.type("sparse attention memory")
    screenshot(page, "checkpoint-plan.png")
    assert serious_violations(page) == []
    edits = _approve(page, "plan")
    assert dropped not in edits["connectors"] and kept in edits["connectors"]
    assert edits["queries"][kept] == [*plan["queries"][kept], "sparse attention memory"]
    assert set(edits) == {"connectors", "queries"}  # the window was left as it was

    shown = _waiting_at(page, "screening", after=shown)
    rows = checkpoint.locator("table.candidates tbody tr")
    expect(rows.first).to_be_visible()
    excluded = rows.first.get_attribute("data-candidate-id")
    rows.first.get_by_label("Exclude").check()
    expect(rows.first.locator("td").nth(3)).to_have_text(re.compile(r"^\d\.\d\d$"))  # relevance, 2 places
    checkpoint.get_by_label("Sources to extract").fill("3")
    screenshot(page, "checkpoint-screening.png")
    assert serious_violations(page) == []
    assert _approve(page, "screening") == {"exclude": [excluded], "max_sources": 3}

    shown = _waiting_at(page, "extraction", after=shown)
    quote = checkpoint.locator("li[data-evidence-id]").first
    expect(quote.locator("blockquote")).not_to_be_empty()
    struck = quote.get_attribute("data-evidence-id")
    quote.get_by_label("Strike").check()
    screenshot(page, "checkpoint-extraction.png")
    assert _approve(page, "extraction") == {"strike": [struck]}

    shown = _waiting_at(page, "synthesis", after=shown)
    claim = checkpoint.locator("li[data-claim-id]").first
    expect(checkpoint.locator(".draft h4, .draft p").first).to_be_visible()
    struck_claim = claim.get_attribute("data-claim-id")
    claim.get_by_label("Strike").check()
    screenshot(page, "checkpoint-synthesis.png")
    assert serious_violations(page) == []
    assert _approve(page, "synthesis") == {"strike": [struck_claim], "resynthesize": True}

    _waiting_at(
        page, "synthesis", after=shown
    )  # resynthesized without the struck claim, held again for approval
    assert _approve(page, "synthesis") is None  # approved as it stands: no body
    expect(page.locator("#job-status")).to_have_text(
        re.compile(r"^Job .+: (COMPLETED|PARTIAL)$"), timeout=90_000
    )
    results = httpx.get(f"{served.base_url}/api/agent/results/{job_id}", timeout=10).json()
    extracted = {source["source_id"] for source in results["sources"] if source["extraction_success"]}
    assert excluded not in extracted and len(extracted) <= 3  # what the approvals asked for
    assert struck not in {item["evidence_id"] for item in results["evidence"]}


def test_a_refused_edit_is_named_and_a_reviewer_aborts_the_job(page: Page, served: Served) -> None:
    job_id = _start(page, "screening")
    _waiting_at(page, "screening")
    added = page.get_by_label(re.compile(r"^Add papers"))
    added.fill("isbn:9780262035613")
    page.locator("#job-checkpoint button[type=submit]").click()
    refused = re.compile(r"^Could not approve: 400: .*isbn:9780262035613")  # the API names what it refused
    expect(page.locator("#job-status")).to_have_text(refused)
    expect(page.locator("#job-checkpoint")).to_be_visible()  # still waiting, the edits kept
    expect(added).to_have_value("isbn:9780262035613")
    with page.expect_request(re.compile(r".*/api/agent/checkpoint/[\w-]+/abort$")):
        page.get_by_role("button", name="Abort the job", exact=True).click()
    expect(page.locator("#job-status")).to_have_text(re.compile(r"^Job .+: FAILED"), timeout=60_000)
    expect(page.locator("#job-checkpoint")).to_be_hidden()
    status = httpx.get(f"{served.base_url}/api/agent/status/{job_id}", timeout=10).json()
    assert status["status"] == "FAILED" and "awaiting_checkpoint" not in status


def _expect_seeds_shown(
    shown: Callable[[str], Locator], sources: list[dict[str, Any]], id_key: str, titles: dict[str, str]
) -> int:
    """Each source's `.source-via` line as `shown(its id)` locates it: the seed's title (`titles`, else its
    id) for one found in a seed's references, none for a search's hit; how many were chased."""
    chased = 0
    for source in sources:
        via = shown(source[id_key])
        if source["discovered_via"]["method"] == "references":
            chased += 1
            seed = source["discovered_via"]["seed"]
            expect(via).to_have_text(
                f"Found in the references of “{titles.get(seed, seed)}” (Semantic Scholar)"
            )
        else:
            expect(via).to_have_count(0)
    return chased


def test_a_chased_source_shows_its_seed_at_the_extraction_checkpoint_and_in_the_source_list(
    page: Page, served: Served
) -> None:
    started = httpx.post(
        f"{served.base_url}/api/agent/execute",
        json={
            "research_goal": GOAL,
            "scope_parameters": {
                "discovery_depth": "rapid",
                "citation_chasing": "backward",
                "human_checkpoints": ["extraction"],
            },
        },
        timeout=30,
    )
    assert started.status_code == 202, started.text
    job_id = started.json()["job_id"]
    page.goto(f"{served.console_url}#job/{job_id}")

    _waiting_at(page, "extraction")
    payload = httpx.get(f"{served.base_url}/api/agent/checkpoint/{job_id}", timeout=10).json()["payload"]
    checkpoint = page.locator("#job-checkpoint")
    at_checkpoint = _expect_seeds_shown(
        lambda id: checkpoint.locator(f'fieldset[data-source-id="{id}"] .source-via'),
        payload["sources"],
        "id",
        {source["id"]: source["title"] for source in payload["sources"]},
    )
    assert at_checkpoint, payload["sources"]
    assert serious_violations(page) == []
    _approve(page, "extraction")

    expect(page.locator("#job-status")).to_have_text(
        re.compile(r"^Job .+: (COMPLETED|PARTIAL)$"), timeout=90_000
    )
    results = httpx.get(f"{served.base_url}/api/agent/results/{job_id}", timeout=10).json()
    listed = [s for s in results["sources"] if s["cited"]] or results["sources"]
    in_list = _expect_seeds_shown(
        lambda id: page.locator(f'#job-sources li[data-source-id="{id}"] .source-via'),
        listed,
        "source_id",
        {source["source_id"]: source["title"] for source in results["sources"]},
    )
    assert in_list, "no source citation chasing found is in the job's source list"
