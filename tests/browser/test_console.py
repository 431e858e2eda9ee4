"""The research console driven in Debian's Chromium against the real local runtime (conftest.py).

Each test saves a screenshot of its view into docs/screenshots/ and runs axe-core on it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import Served, console_page, rewrite_final, screenshot, serious_violations
from tests.e2e.scholarly_topic import GOAL, normalise

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

QUESTION = "How does sparse attention reduce the memory of transformer architectures?"
CONTESTED = "How much does sparse attention reduce the memory use of self-attention?"
UNANSWERABLE = "How do honeybees communicate the location of nectar to their hive?"
DONE = re.compile(r"^Done")

# Records, in order, when streamed answer text appears and when the final answer is rendered.
WATCH_STREAM = """
window.__order = [];
new MutationObserver((records) => {
  for (const record of records) {
    const target = record.target.nodeType === Node.TEXT_NODE ? record.target.parentElement : record.target;
    if (!target || !target.closest) continue;
    if (target.closest("#ask-stream") && record.addedNodes.length) window.__order.push("delta");
    if (target.closest("#ask-answer") && record.addedNodes.length) window.__order.push("final");
  }
}).observe(document, {subtree: true, childList: true});
"""


def _ask(page: Page, question: str, preset: str = "") -> None:
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_label("Preset", exact=True).select_option(preset)
    page.locator("#ask-submit").click()
    expect(page.locator("#ask-status")).to_have_text(DONE, timeout=60_000)


def test_an_answer_streams_in_before_the_final_event(page: Page) -> None:
    page.evaluate(WATCH_STREAM)
    _ask(page, QUESTION, "fast")

    order = page.evaluate("window.__order")
    assert "delta" in order and "final" in order, order
    assert order.index("delta") < order.index("final")  # text streamed in before the final answer
    stages = page.locator("#ask-stages li")
    names = [name for name in stages.evaluate_all("items => items.map(li => li.dataset.name)")]
    assert names[0] == "request_received"
    assert {
        "plan_created",
        "search_completed",
        "retrieval_completed",
        "verification_completed",
        "decision",
    } <= set(names)
    claims = page.locator("#ask-answer .claim")
    expect(claims.first).to_be_visible()
    assert claims.count() >= 2
    assert set(claims.evaluate_all("cs => cs.map(c => c.dataset.verdict)")) <= {
        "supported",
        "partial",
        "unsupported",
        "contradicted",
    }
    screenshot(page, "ask.png")
    assert serious_violations(page) == []


def test_a_claim_opens_its_quote_and_page_in_the_citations_panel(page: Page, served: Served) -> None:
    _ask(page, CONTESTED, "comprehensive")
    texts = [normalise(paper.text) for paper in served.papers]

    disagreement = page.locator("#ask-contradictions li li")
    expect(disagreement).to_have_count(2)
    sides = disagreement.all_inner_texts()
    assert "by 20%" in sides[0] and "by 55%" in sides[1], sides

    claim = page.locator("#ask-answer .claim").first
    claim.focus()
    page.keyboard.press("Enter")  # the keyboard opens it as a click does
    panel = page.get_by_role("complementary", name="Citations")
    expect(panel).to_be_visible()
    expect(panel).to_be_focused()
    quote = panel.locator("blockquote.quote").first.inner_text()
    assert any(normalise(quote) in text for text in texts), quote  # verbatim from a served paper
    # The direct answer may come from an abstract (written while the PDFs are read); later claims from pages.
    expect(panel.locator(".where").first).to_have_text(
        re.compile(r"^(p\. \d+|abstract), characters \d+\u2013\d+$")
    )
    expect(
        panel.locator(".context mark, .context-note").first
    ).to_be_visible()  # the job test checks the context
    link = panel.locator(".citation h3 a").first
    assert re.match(r"https://(arxiv\.org|doi\.org)/", link.get_attribute("href") or "")
    assert link.get_attribute("rel") == "noopener noreferrer"
    screenshot(page, "claim.png")
    assert serious_violations(page) == []

    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(claim).to_be_focused()  # focus returns to the claim

    page_located = re.compile(r"^p\. \d+, characters \d+\u2013\d+$")
    wheres = []
    for other in page.locator("#ask-answer .claim").all():
        other.click()
        expect(panel).to_be_visible()
        wheres.append(panel.locator(".where").first.inner_text().strip())
        page.keyboard.press("Escape")
        if page_located.match(wheres[-1]):
            break
    assert page_located.match(wheres[-1]), wheres  # a claim read from the full text names its page as "p. N"


def test_a_question_without_evidence_is_refused_with_its_reason(page: Page) -> None:
    page.set_viewport_size({"width": 375, "height": 800})
    _ask(page, UNANSWERABLE, "fast")

    refusal = page.get_by_role("alert")
    expect(refusal).to_be_visible()
    expect(refusal).to_contain_text("Refused: No source relevant to the question was found")
    expect(refusal).to_contain_text("Reason code: no_relevant_sources")
    assert page.locator("#ask-answer .claim").count() == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= 375  # no sideways scrolling on a phone
    screenshot(page, "refusal.png")
    assert serious_violations(page) == []


def test_a_rapid_job_runs_to_completion_with_its_progress_bar_moving(page: Page) -> None:
    page.get_by_role("button", name="Research job", exact=True).click()
    page.evaluate(
        """window.__progress = [];
           new MutationObserver(() => window.__progress.push(Number(document.getElementById("job-progress").getAttribute("value"))))
             .observe(document.getElementById("job-progress"), {attributes: true, attributeFilter: ["value"]});"""
    )
    page.get_by_label("Research goal", exact=True).fill(GOAL)
    page.get_by_label("Depth", exact=True).select_option("rapid")
    page.get_by_role("button", name="Start research", exact=True).click()
    expect(page.locator("#job-status")).to_have_text(re.compile(r"^Job .+: COMPLETED$"), timeout=90_000)

    progress = page.evaluate("window.__progress")
    moved = [value for value in progress if value > 0]
    assert moved[-1] == 100, progress
    assert len(set(moved)) >= 2, progress  # seen between the start and the end, not only at 100
    assert moved == sorted(moved), progress
    expect(page.locator("#job-report .claim").first).to_be_visible()
    page.locator("#job-report .claim").first.click()
    panel = page.locator("#citations")
    quote = panel.locator("blockquote.quote").first.inner_text()
    expect(panel.locator(".where").first).to_have_text(re.compile(r"^p\. \d+"))
    expect(panel.locator(".context mark").first).to_have_text(quote)  # highlighted among its page's quotes
    assert len(panel.locator(".context").first.inner_text()) > len(quote) + 20

    with page.expect_download() as download:
        page.get_by_role("button", name="Download BibTeX", exact=True).click()
    bibtex = download.value.path().read_text(encoding="utf-8")
    assert bibtex.lstrip().startswith("@") and "title" in bibtex
    assert download.value.suggested_filename.endswith("bibliography.bib")
    for label in ("Download Report (Markdown)", "Download Annotated bibliography"):
        expect(page.get_by_role("button", name=label)).to_be_visible()
    with page.expect_download() as download:
        page.get_by_role("button", name="Download RIS (Zotero, EndNote, Mendeley)", exact=True).click()
    assert download.value.path().read_text(encoding="utf-8").startswith("TY  - ")
    expect(page.get_by_role("button", name="Download CSL-JSON (Zotero, Pandoc)", exact=True)).to_be_visible()
    diagram = page.get_by_role("img", name=re.compile(r"^PRISMA 2020 flow: \d+ records identified"))
    expect(diagram).to_be_visible()
    assert diagram.evaluate("image => image.complete && image.naturalWidth") == 794  # the SVG drew
    screenshot(page, "job.png")
    assert serious_violations(page) == []


def test_an_uploaded_pdf_is_listed_in_the_team_library(page: Page, served: Served) -> None:
    page.get_by_role("button", name="Library", exact=True).click()
    page.get_by_label("PDF files", exact=True).set_input_files(
        {"name": "sparse-attention.pdf", "mimeType": "application/pdf", "buffer": served.runtime.pdf}
    )
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.locator("#library-status")).to_have_text("Uploaded 1 of 1 file(s)", timeout=30_000)

    row = page.locator("#library-rows tr[data-document-id^='doc-']")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("sparse-attention.pdf")
    expect(row).to_contain_text("Sparse Attention in Transformer Architectures")
    document_id = row.get_attribute("data-document-id")
    answer = httpx.get(f"{served.base_url}/v1/documents/{document_id}", timeout=10)
    assert answer.status_code == 200 and answer.json()["filename"] == "sparse-attention.pdf"
    screenshot(page, "library.png")
    assert serious_violations(page) == []


def test_the_trace_viewer_lists_an_answers_events_in_order(page: Page, served: Served) -> None:
    answer = httpx.post(
        f"{served.base_url}/v1/query", json={"query": QUESTION, "options": {"preset": "fast"}}, timeout=30
    ).json()
    page.get_by_role("button", name="Trace", exact=True).click()
    page.get_by_label(re.compile("^Trace id")).fill(answer["trace_id"])
    page.get_by_role("button", name="Load trace", exact=True).click()
    expect(page.locator("#trace-status")).to_have_text(re.compile(r"^\d+ events$"))

    events = page.locator("#trace-events li")
    names = events.locator(".stage-name").all_inner_texts()
    assert names[0] == "request_received" and names[-1] == "decision"
    assert "plan_created" in names
    times = [
        int(t) for t in re.findall(r"\+(\d+) ms", " ".join(events.locator(".stage-time").all_inner_texts()))
    ]
    assert times == sorted(times) and len(times) == len(names)
    events.nth(1).locator("summary").click()
    payload = json.loads(events.nth(1).locator("pre").inner_text())
    assert payload["queries"]  # plan_created's payload, as stored
    screenshot(page, "trace.png")
    assert serious_violations(page) == []


HOSTILE_TITLE = '<img src=x onerror="window.__pwned=1">Hostile <script>window.__pwned=2</script>title'
HOSTILE_QUOTE = 'Quoted <img src=x onerror="window.__pwned=3"> text <script>window.__pwned=4</script> end.'
HOSTILE_MARKDOWN = '\n\n<img src=x onerror="window.__pwned=5"><script>window.__pwned=6</script>[link](javascript:window.__pwned=7)'


def _hostile(final: dict[str, Any]) -> None:
    """Markup put back into what the server cleans: the client must be safe on its own."""
    for citation in final["citations"]:
        citation["title"] = HOSTILE_TITLE
        citation["snippet"] = HOSTILE_QUOTE
    final["answer"] += HOSTILE_MARKDOWN


def test_markup_in_retrieved_text_is_rendered_inert(browser: Browser, served: Served) -> None:
    # without the Content-Security-Policy, so that only the console's own handling keeps it inert
    with console_page(browser, served, bypass_csp=True) as page:
        page.route("**/v1/query/stream", lambda route: rewrite_final(route, _hostile))
        _ask(page, QUESTION, "fast")
        _assert_inert(page)


def _assert_inert(page: Page) -> None:
    page.locator("#ask-answer .claim").first.click()
    panel = page.locator("#citations")
    expect(panel).to_be_visible()

    expect(panel.locator("blockquote.quote").first).to_have_text(HOSTILE_QUOTE)  # shown as text
    expect(panel.locator(".citation h3").first).to_have_text(HOSTILE_TITLE)
    for region in ("#citations", "#ask-answer"):
        assert page.locator(f"{region} script, {region} img, {region} [onerror]").count() == 0
        assert page.locator(f"{region} a[href^='javascript']").count() == 0
    page.wait_for_timeout(300)  # time for an injected handler to have fired
    assert page.evaluate("window.__pwned") is None


def test_the_token_stays_in_the_tab_and_is_sent_as_a_bearer_token(page: Page) -> None:
    page.get_by_label("API token", exact=True).fill("rt_console-test-token")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#token-state")).to_have_text("A token is set.")
    page.get_by_role("button", name="Trace", exact=True).click()
    page.get_by_label(re.compile("^Trace id")).fill("trace-unknown")
    with page.expect_request("**/v1/traces/trace-unknown") as sent:
        page.get_by_role("button", name="Load trace", exact=True).click()
    assert sent.value.headers["authorization"] == "Bearer rt_console-test-token"
    expect(page.locator("#trace-status")).to_have_text(re.compile(r"^Error: 404"))  # the API's own message
    stored = page.evaluate("[sessionStorage.getItem('research-console.token'), JSON.stringify(localStorage)]")
    assert stored[0] == "rt_console-test-token" and "rt_console-test-token" not in stored[1]
