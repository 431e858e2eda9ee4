"""Reading an answer or a report in the console (issue 21), in Debian's Chromium against the real local
runtime (conftest.py): markers that lead to the source list, retrieved text shown as text, a view that
follows the URL hash, a citations panel that moves no text, causes of a partial result, no failed request
on load."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.browser.conftest import Served, console_page, rewrite_final, screenshot, serious_violations
from tests.e2e.scholarly_topic import GOAL

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

QUESTION = "How does sparse attention reduce the memory of transformer architectures?"
DONE = re.compile(r"^Done")
FINISHED_JOB = re.compile(r"^Job .+: (COMPLETED|PARTIAL)$")


def _ask(page: Page, question: str, preset: str = "") -> None:
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_label("Preset", exact=True).select_option(preset)
    page.locator("#ask-submit").click()
    expect(page.locator("#ask-status")).to_have_text(DONE, timeout=60_000)


def _served_paper(served: Served, title: str) -> Any:
    return next(paper.sample for paper in served.papers if paper.sample.title == title)


def _follow_each_marker(page: Page, markers: Locator) -> list[Locator]:
    """Clicks every marker; each moves the focus to its source list entry, whose title it carries, and
    leaves the view's hash alone. Returns the entries reached."""
    hash_before = page.evaluate("location.hash")
    entries = []
    for index in range(markers.count()):
        marker = markers.nth(index)
        target = (marker.get_attribute("href") or "#").removeprefix("#")
        entry = page.locator(f"[id='{target}']")
        expect(entry).to_have_count(1)
        marker.click()
        expect(entry).to_be_focused()
        assert marker.get_attribute("title") == entry.locator(".source-title").inner_text()
        entries.append(entry)
    assert page.evaluate("location.hash") == hash_before
    return entries


def test_loading_the_console_requests_nothing_that_fails(browser: Browser, served: Served) -> None:
    context = browser.new_context()
    page = context.new_page()
    failures: list[str] = []
    answered: dict[str, int] = {}
    page.on("response", lambda response: answered.__setitem__(response.url, response.status))
    page.on("console", lambda message: failures.append(message.text) if message.type == "error" else None)
    page.goto(served.console_url)
    page.locator("body[data-ready=true]").wait_for()
    page.wait_for_load_state("networkidle")
    context.close()
    assert answered.get(f"{served.console_url}config.json") == 200, answered  # it 404ed on every load
    assert [url for url, status in answered.items() if status >= 400] == []
    assert failures == []


def test_an_answers_markers_lead_to_its_sources_with_authors_year_venue_and_pages(
    page: Page, served: Served
) -> None:
    _ask(page, QUESTION, "fast")

    markers = page.locator("#ask-answer a.cite-marker")
    expect(markers.first).to_be_visible()
    numbers = [text.strip("[]") for text in markers.all_inner_texts()]
    entries = _follow_each_marker(page, markers)
    for number, entry in zip(numbers, entries, strict=True):
        expect(entry.locator(".source-quotes")).to_contain_text(f"[{number}]")  # the quote's number
    sources = page.locator("#ask-sources li.source")
    assert sources.count() >= 1
    for index in range(sources.count()):
        source = sources.nth(index)
        paper = _served_paper(served, source.locator(".source-title").inner_text())
        facts = source.locator(".source-facts").inner_text()
        assert str(paper.year) in facts and paper.venue in facts and "O'Neil" in facts, facts
        link = source.locator(".source-title a")
        assert re.match(r"https://(arxiv\.org|doi\.org)/", link.get_attribute("href") or "")
        quoted = source.locator(".source-quotes").inner_text()
        assert re.fullmatch(r"Quoted: \[\d+\] (p\. \d+|abstract)(; \[\d+\] (p\. \d+|abstract))*", quoted), (
            quoted
        )
    screenshot(page, "ask-sources.png")
    assert serious_violations(page) == []


LITERAL = " *not emphasis* and [not a link](https://example.org/x) <b>not bold</b> `not code`"


def _literal(final: dict[str, Any]) -> None:
    """Markdown put into the retrieved text of the final answer: a claim's sentence (as the answer shows
    it), its quote and its source's title."""
    claim = final["claim_verifications"][0]
    final["answer"] = final["answer"].replace(claim["claim_text"], claim["claim_text"] + LITERAL, 1)
    claim["claim_text"] += LITERAL
    for citation in final["citations"]:
        citation["snippet"] += LITERAL
        citation["title"] += " *starred*"


def test_markdown_in_retrieved_text_shows_literally_and_only_our_structure_renders(page: Page) -> None:
    page.route("**/v1/query/stream", lambda route: rewrite_final(route, _literal))
    _ask(page, QUESTION, "comprehensive")

    answer = page.locator("#ask-answer")
    claim = answer.locator(".claim").first
    expect(claim).to_contain_text(LITERAL.strip())
    for markup in ("em", "strong", "b", "code", "a[href^='https://example.org']"):
        expect(page.locator(f"#ask-answer {markup}, #citations {markup}")).to_have_count(0)
    headings = answer.locator("h4, h5, h6")
    expect(headings.first).to_be_visible()  # the writer's own section headings are still headings
    assert "#" not in "".join(headings.all_inner_texts())
    expect(page.locator("#ask-sources .source-title").first).to_contain_text("*starred*")
    claim.click()
    expect(page.locator("#citations blockquote.quote").first).to_contain_text(LITERAL.strip())


def test_opening_the_citations_panel_moves_no_text_of_the_answer(page: Page) -> None:
    _ask(page, QUESTION, "fast")
    claims = page.locator("#ask-answer .claim")
    expect(claims.first).to_be_visible()

    def boxes() -> list[Any]:
        return [page.locator("#ask-answer").bounding_box()] + [
            claims.nth(index).bounding_box() for index in range(claims.count())
        ]

    before = boxes()
    claims.first.click()
    expect(page.get_by_role("complementary", name="Citations")).to_be_visible()
    assert boxes() == before  # the panel overlays the page: nothing under the pointer reflows
    page.keyboard.press("Escape")
    assert boxes() == before


def test_the_view_follows_the_hash_through_back_forward_and_reload(page: Page, served: Served) -> None:
    tab = page.get_by_role("button", name="Research job", exact=True)
    tab.click()
    expect(page).to_have_url(re.compile(r"#job$"))
    page.get_by_role("button", name="Library", exact=True).click()
    expect(page).to_have_url(re.compile(r"#library$"))
    page.go_back()
    expect(page.locator("#view-job")).to_be_visible()
    expect(tab).to_have_attribute("aria-current", "page")
    page.go_forward()
    expect(page.locator("#view-library")).to_be_visible()

    trace_id = httpx.post(
        f"{served.base_url}/v1/query", json={"query": QUESTION, "options": {"preset": "fast"}}, timeout=30
    ).json()["trace_id"]
    page.get_by_role("button", name="Trace", exact=True).click()
    page.get_by_label(re.compile("^Trace id")).fill(trace_id)
    page.get_by_role("button", name="Load trace", exact=True).click()
    expect(page).to_have_url(re.compile(f"#trace/{trace_id}$"))
    events = re.compile(r"^\d+ events$")
    expect(page.locator("#trace-status")).to_have_text(events)
    page.reload()
    page.locator("body[data-ready=true]").wait_for()
    expect(page.locator("#view-trace")).to_be_visible()
    expect(page.locator("#trace-status")).to_have_text(events)  # the same trace, loaded again
    expect(page.get_by_label(re.compile("^Trace id"))).to_have_value(trace_id)
    page.go_back()  # the Trace tab's own entry, then the library's
    expect(page).to_have_url(re.compile(r"#trace$"))
    page.go_back()
    expect(page.locator("#view-library")).to_be_visible()


def test_a_jobs_address_shows_its_report_whose_markers_lead_to_its_sources(
    page: Page, served: Served
) -> None:
    started = httpx.post(
        f"{served.base_url}/api/agent/execute",
        json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}},
        timeout=30,
    ).json()
    page.goto(f"{served.console_url}#job/{started['job_id']}")
    expect(page.locator("#job-status")).to_have_text(FINISHED_JOB, timeout=90_000)
    page.reload()  # the address alone brings the job back
    page.locator("body[data-ready=true]").wait_for()
    expect(page.locator("#view-job")).to_be_visible()
    expect(page.locator("#job-status")).to_have_text(FINISHED_JOB, timeout=30_000)

    markers = page.locator("#job-report a.cite-marker")
    expect(markers.first).to_be_visible()
    assert not re.search(r"\[ev-", page.locator("#job-report").inner_text())  # every evidence id resolved
    for entry in _follow_each_marker(page, markers):
        expect(entry.locator(".source-quotes")).to_have_text(re.compile(r"^Quoted: p\. \d+"))
    sources = page.locator("#job-sources li.source")
    for index in range(sources.count()):
        paper = _served_paper(served, sources.nth(index).locator(".source-title").inner_text())
        facts = sources.nth(index).locator(".source-facts").inner_text()
        assert str(paper.year) in facts and paper.venue in facts, facts
    screenshot(page, "job-sources.png")
    assert serious_violations(page) == []


# Last in this module: a connector fails from here on (its circuit breaker may stay open).
def test_a_failed_connector_is_named_as_the_cause_of_a_partial_answer_and_job(
    browser: Browser, served: Served
) -> None:
    web = served.runtime.web
    web.fail(web.CROSSREF_BASE, "503")
    try:
        with console_page(browser, served) as page:
            _ask(page, "Which memory savings do sparse attention transformer variants report?", "fast")
            partial = page.locator("#ask-partial")
            expect(partial).to_be_visible()
            expect(partial).to_contain_text(re.compile(r"crossref could not be searched: .+"))

            page.get_by_role("button", name="Research job", exact=True).click()
            page.get_by_label("Research goal", exact=True).fill(
                "What do studies report about low-bit quantization of transformer architectures?"
            )
            page.get_by_label("Depth", exact=True).select_option("rapid")
            page.get_by_role("button", name="Start research", exact=True).click()
            expect(page.locator("#job-status")).to_have_text(re.compile(r"^Job .+: PARTIAL$"), timeout=90_000)
            notice = page.locator("#job-partial")
            expect(notice).to_be_visible()
            expect(notice).to_contain_text("crossref answered errors")
            screenshot(page, "job-partial.png")
            assert serious_violations(page) == []
    finally:
        web.clear_failure(web.CROSSREF_BASE)
