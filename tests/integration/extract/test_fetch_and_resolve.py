"""Extraction over real HTTP on 127.0.0.1: arXiv and DOI resolution, content sniffing, redirects,
SSRF refusals, size cap, 404, timeout, and the cache on a repeat."""

from __future__ import annotations

import pytest

from functions.common.errors import FetchBlocked, FetchTimeout, InvalidInput
from functions.common.settings import reset_settings_cache
from functions.extract.errors import SourceUnavailable
from functions.extract.parse_cache import pages_key, parsed_key, pdf_key
from functions.extract.service import ExtractionService
from tests.integration.extract.conftest import Harness
from tests.support.pdfgen import SAMPLE_TITLE, sample_paper_pdf
from tests.support.scholarly_web import ScholarlyWeb

PDF = sample_paper_pdf()


def test_arxiv_abs_url_fetches_the_pdf_and_a_repeat_hits_the_cache(
    web: ScholarlyWeb, harness: Harness
) -> None:
    web.set_response("/arxiv-site/pdf/2401.12345v2", PDF, content_type="application/pdf")
    paper = harness.run(lambda s: s.extract("https://arxiv.org/abs/2401.12345v2", focus_areas=["results"]))
    assert paper.success and paper.title == SAMPLE_TITLE
    assert paper.canonical_id == "arxiv:2401.12345v2"
    assert 3 <= len(paper.key_findings) <= 7 and paper.evidence[0].page == 1
    assert harness.blobs.exists(pdf_key(paper.pdf_sha256 or ""))
    assert harness.blobs.exists(parsed_key(paper.canonical_id)) and harness.blobs.exists(
        pages_key(paper.canonical_id)
    )
    before = web.count("/")
    again = harness.run(lambda s: s.extract("http://arxiv.org/pdf/2401.12345v2.pdf"))
    service = harness.last
    assert service is not None
    assert web.count("/") == before, "a repeat must not fetch"
    assert service.stats.parses == 0 and service.stats.cache_hits == 1
    assert again.key_findings and again.title == paper.title


def test_bare_arxiv_id_uses_the_configured_base(web: ScholarlyWeb, harness: Harness) -> None:
    web.set_response("/arxiv-site/pdf/2401.00001", PDF, content_type="application/pdf")
    paper = harness.run(lambda s: s.extract("2401.00001"))
    assert paper.success and web.count("/arxiv-site/pdf/2401.00001") == 1


def test_doi_resolves_through_openalex_best_oa_location(web: ScholarlyWeb, harness: Harness) -> None:
    web.set_response(
        "/openalex/works/doi:10.5555/oa.1",
        {"best_oa_location": {"pdf_url": web.url("/repository/oa-1")}, "open_access": {"oa_url": None}},
    )
    web.set_response("/repository/oa-1", PDF, content_type="application/octet-stream")
    paper = harness.run(lambda s: s.extract("https://doi.org/10.5555/OA.1"))
    assert paper.success and paper.canonical_id == "doi:10.5555/oa.1"
    assert web.count("/doi/") == 0, "the landing page is only a fallback"


def test_doi_through_unpaywall_when_a_contact_email_is_set(
    web: ScholarlyWeb, harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACT_EMAIL", "research@example.org")
    reset_settings_cache()
    web.set_response(
        "/unpaywall/v2/10.5555/up.2", {"best_oa_location": {"url_for_pdf": web.url("/files/up2.pdf")}}
    )
    web.set_response("/files/up2.pdf", PDF, content_type="application/pdf")
    paper = harness.run(lambda s: s.extract("doi:10.5555/up.2"))
    assert paper.success
    assert web.requests_to("/unpaywall/v2/10.5555/up.2")[0].param("email") == "research@example.org"


def test_doi_landing_page_citation_pdf_url_after_redirects(web: ScholarlyWeb, harness: Harness) -> None:
    web.set_response(
        "/doi/10.5555/land.3", b"", status=302, headers={"Location": web.url("/publisher/article/3")}
    )
    landing = f'<html><head><meta name="citation_pdf_url" content="{web.url("/publisher/pdf/3")}"></head><body>Article</body></html>'
    web.set_response("/publisher/article/3", landing, content_type="text/html")
    web.set_response("/publisher/pdf/3", b"", status=301, headers={"Location": "/publisher/files/3"})
    web.set_response("/publisher/files/3", PDF, content_type="application/pdf")
    paper = harness.run(lambda s: s.extract("10.5555/land.3"))
    assert paper.success and paper.title == SAMPLE_TITLE
    assert web.count("/crossref/works/10.5555/land.3") == 1


def test_html_article_without_pdf_uses_the_main_text(web: ScholarlyWeb, harness: Harness) -> None:
    article = """<html><head><meta name="citation_title" content="Cover Crops and Soil Carbon">
    <meta name="citation_abstract" content="We measured soil carbon under cover crops for five years."></head>
    <body><nav>Menu</nav><main><h2>Results</h2>
    <p>Cover crops increased soil organic carbon by 12% compared with bare fallow plots.</p>
    <p>Nitrate leaching was reduced by 35% in the winter months in every plot we measured.</p>
    <p>Yields of the following crop were significantly higher after legume cover crops.</p></main></body></html>"""
    web.set_response("/news/cover-crops.pdf", article, content_type="text/html; charset=utf-8")
    paper = harness.run(lambda s: s.extract(web.url("/news/cover-crops.pdf")))
    assert paper.success and paper.title == "Cover Crops and Soil Carbon"
    assert any("12%" in f for f in paper.key_findings) and paper.pdf_sha256 is None


def test_pdf_detected_by_header_not_suffix(web: ScholarlyWeb, harness: Harness) -> None:
    web.set_response("/download", PDF, content_type="application/octet-stream")
    paper = harness.run(lambda s: s.extract(web.url("/download?id=7")))
    assert paper.success and paper.pdf_sha256


def test_missing_source_is_source_unavailable(web: ScholarlyWeb, harness: Harness) -> None:
    with pytest.raises(SourceUnavailable, match="404"):
        harness.run(lambda s: s.extract(web.url("/missing.pdf")))


def test_server_errors_are_marked_transient(web: ScholarlyWeb, harness: Harness) -> None:
    web.fail("/flaky", "503")
    with pytest.raises(SourceUnavailable) as info:
        harness.run(lambda s: s.extract(web.url("/flaky/paper.pdf")))
    assert info.value.transient


def test_size_cap_gives_a_clean_failure(
    web: ScholarlyWeb, harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FETCH_MAX_BYTES", "2000")
    reset_settings_cache()
    web.set_response("/big.pdf", PDF, content_type="application/pdf")
    paper = harness.run(lambda s: s.extract(web.url("/big.pdf")))
    assert not paper.success and "too large" in (paper.failure_reason or "")


def test_total_budget_turns_into_a_timeout(web: ScholarlyWeb, harness: Harness) -> None:
    web.set_response("/slow.pdf", PDF, content_type="application/pdf")
    web.set_latency("/slow.pdf", 3.0)
    with pytest.raises(FetchTimeout):
        harness.run(lambda s: s.extract(web.url("/slow.pdf"), budget_seconds=1.0))


def test_corrupt_pdf_is_a_cached_failure(web: ScholarlyWeb, harness: Harness) -> None:
    web.set_response("/broken.pdf", b"%PDF-1.4\n" + b"\x00garbage" * 50, content_type="application/pdf")
    paper = harness.run(lambda s: s.extract(web.url("/broken.pdf")))
    assert not paper.success and paper.failure_reason
    again = harness.run(lambda s: s.extract(web.url("/broken.pdf")))
    assert web.count("/broken.pdf") == 1 and again.failure_reason == paper.failure_reason


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.7/paper.pdf",
        "http://127.0.0.2:8080/paper.pdf",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/paper.pdf",
    ],
)
def test_ssrf_guard_refuses_private_addresses(url: str, harness: Harness) -> None:
    with pytest.raises(FetchBlocked):
        harness.run(lambda s: s.extract(url))


def test_public_name_resolving_to_a_private_address_is_refused(harness: Harness) -> None:
    async def to_private(host: str, port: int) -> list[str]:
        return ["10.1.2.3"]

    with pytest.raises(FetchBlocked, match="private or reserved address"):
        harness.run(lambda s: s.extract("https://papers.example.org/paper.pdf"), resolver=to_private)


def test_redirect_to_a_private_address_is_refused(web: ScholarlyWeb, harness: Harness) -> None:
    web.set_response("/go", b"", status=302, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
    with pytest.raises(FetchBlocked):
        harness.run(lambda s: s.extract(web.url("/go")))


def test_invalid_url_is_invalid_input(harness: Harness) -> None:
    with pytest.raises(InvalidInput):
        harness.run(lambda s: s.extract("gopher://example.org/paper"))


def test_service_from_settings_builds() -> None:
    assert isinstance(ExtractionService.from_settings(), ExtractionService)
