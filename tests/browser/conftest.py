"""The research console in a real browser: Debian's Chromium (never a downloaded one) driven by
Playwright, against the local runtime (every function app behind the gateway, the loopback scholarly
web, no LLM) served by uvicorn on a free loopback port, the console built into console/dist/."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from playwright.sync_api import Browser, Page, Playwright, Route, expect, sync_playwright

from functions.local_runtime.console import DEFAULT_CONSOLE_DIR
from tests.contract.runtime import ContractRuntime, contract_runtime
from tests.e2e.scholarly_topic import TopicPaper, serve_cited_only, topic_papers

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
# Every `expect` waits up to 30 s (Playwright's default is 5 s): room for a loaded 2-core machine; the
# waits for an answer or a job to finish give their own, longer time.
EXPECT_TIMEOUT_MS = 30_000
SCREENSHOTS = ROOT / "docs" / "screenshots"

# Recorded in the page before any of its own scripts run: Content-Security-Policy violations.
WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push([e.violatedDirective, e.blockedURI, e.sourceFile, e.lineNumber, e.columnNumber, e.sample].join(" "));
});
"""


@dataclass(frozen=True)
class Served:
    runtime: ContractRuntime
    base_url: str  # http://127.0.0.1:<port>
    papers: list[TopicPaper]  # what the loopback web's searches return

    @property
    def console_url(self) -> str:
        return f"{self.base_url}/console/"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# Module-scoped: the embedded AWS, its environment and the Playwright driver end with this module, before
# any other test runs.
@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    if not (DEFAULT_CONSOLE_DIR / "index.html").is_file():
        pytest.fail(f"{DEFAULT_CONSOLE_DIR} is not built: run `make console`", pytrace=False)
    with contract_runtime() as runtime:
        # two more on-topic papers: the sixth measures sparse attention's memory saving at 55% where the
        # first says 20%, a contradiction the Critic finds
        papers = topic_papers(6, off_topic=1)
        # and one more that no search returns and the on-topic papers reference: citation chasing's find
        serve_cited_only(runtime.web, papers, topic_papers(8, off_topic=0)[7])
        port = _free_port()
        config = uvicorn.Config(
            runtime.gateway, host="127.0.0.1", port=port, log_level="warning", lifespan="off"
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, name="console-runtime", daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                pytest.fail("the local runtime did not start", pytrace=False)
            time.sleep(0.02)
        try:
            yield Served(runtime, f"http://127.0.0.1:{port}", papers)
        finally:
            server.should_exit = True
            thread.join(timeout=10)


@pytest.fixture(scope="module")
def playwright_session() -> Iterator[Playwright]:
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="module")
def browser(playwright_session: Playwright) -> Iterator[Browser]:
    executable = CHROMIUM if CHROMIUM.is_file() else shutil.which("chromium")
    if executable is None:
        pytest.fail(
            "Debian's chromium is missing: `make test` installs it (apt-get install chromium)", pytrace=False
        )
    browser = playwright_session.chromium.launch(executable_path=str(executable), args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@contextmanager
def console_page(browser: Browser, served: Served, *, bypass_csp: bool = False) -> Iterator[Page]:
    """A fresh context on the console; fails on a page error or (unless bypassed) a CSP violation."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, accept_downloads=True, bypass_csp=bypass_csp
    )
    context.add_init_script(WATCH_CSP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(served.console_url)
    page.locator("body[data-ready=true]").wait_for()
    yield page
    violations = page.evaluate("window.__cspViolations")
    context.close()
    assert not errors, errors
    assert not violations, violations


@pytest.fixture
def page(browser: Browser, served: Served) -> Iterator[Page]:
    with console_page(browser, served) as opened:
        yield opened


def serious_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))  # CDP evaluation: not subject to the page's CSP
    found: list[dict[str, Any]] = page.evaluate(
        """() => axe.run(document, {resultTypes: ["violations"]}).then((result) =>
             result.violations
               .filter((v) => v.impact === "serious" || v.impact === "critical")
               .map((v) => ({id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(" "))})))"""
    )
    return found


def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name), full_page=True)


def rewrite_final(route: Route, change: Callable[[dict[str, Any]], None]) -> None:
    """Answers a routed `/v1/query/stream` with the real stream's events, its `final` answer changed
    in place by `change`."""
    response = route.fetch()
    blocks = []
    for block in response.text().split("\n\n"):
        if block.startswith("event: final"):
            head, _, data = block.partition("\ndata: ")
            final = json.loads(data)
            change(final)
            block = f"{head}\ndata: {json.dumps(final)}"
        blocks.append(block)
    route.fulfill(response=response, body="\n\n".join(blocks))
