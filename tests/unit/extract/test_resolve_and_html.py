"""Source classification (arXiv, DOI, library, URL) and HTML article pages."""

from __future__ import annotations

import pytest

from functions.common.errors import InvalidInput
from functions.common.models import ExtractedPaper
from functions.extract.html import parse_html
from functions.extract.resolve import classify
from functions.extract.trim import trim_to_length


@pytest.mark.parametrize(
    ("source", "kind", "canonical"),
    [
        ("https://arxiv.org/abs/2401.12345", "arxiv", "arxiv:2401.12345"),
        ("https://arxiv.org/abs/2401.12345v3", "arxiv", "arxiv:2401.12345v3"),
        ("http://arxiv.org/pdf/2401.12345v2.pdf", "arxiv", "arxiv:2401.12345v2"),
        ("https://export.arxiv.org/abs/hep-th/9901001v1", "arxiv", "arxiv:hep-th/9901001v1"),
        ("2401.12345", "arxiv", "arxiv:2401.12345"),
        ("arXiv:2401.12345v1", "arxiv", "arxiv:2401.12345v1"),
        ("https://doi.org/10.1103/PhysRevE.88.012814", "doi", "doi:10.1103/physreve.88.012814"),
        ("http://dx.doi.org/10.1016/j.envint.2020.105730", "doi", "doi:10.1016/j.envint.2020.105730"),
        ("doi:10.1128/AEM.00294-11", "doi", "doi:10.1128/aem.00294-11"),
        ("10.1128/AEM.00294-11", "doi", "doi:10.1128/aem.00294-11"),
        ("library://doc-0123456789abcdef01234567", "library", "library:doc-0123456789abcdef01234567"),
    ],
)
def test_classify(source: str, kind: str, canonical: str) -> None:
    target = classify(source)
    assert (target.kind, target.canonical_id) == (kind, canonical)


def test_plain_urls_hash_to_a_canonical_id() -> None:
    target = classify("https://example.org/files/download?id=7")
    assert target.kind == "url" and target.canonical_id.startswith("url:") and len(target.cache_key) == 16


@pytest.mark.parametrize(
    "bad", ["", "ftp://example.org/a.pdf", "file:///etc/passwd", "not a url", "library://../../x"]
)
def test_invalid_sources_name_the_field(bad: str) -> None:
    with pytest.raises(InvalidInput) as info:
        classify(bad)
    assert info.value.field == "source_url"


def test_html_meta_tags_and_main_text() -> None:
    html = """<html><head><title>Site | Article</title>
    <meta name="citation_title" content="Soil Carbon Under Cover Crops">
    <meta name="citation_author" content="Ana Ruiz"><meta name="citation_author" content="Li Wei">
    <meta name="citation_pdf_url" content="/content/article.pdf">
    <script>var tracking = 1;</script></head>
    <body><nav>Home | Journals</nav><article><h2>Abstract</h2>
    <p>Cover crops increased soil organic carbon by 12% over five years in all plots.</p>
    <h2>Results</h2><p>Carbon stocks were significantly higher in the cover crop plots than in fallow plots.</p>
    </article><footer>Copyright</footer></body></html>"""
    document = parse_html(html, "https://journal.example/articles/1")
    assert document.metadata["Title"] == "Soil Carbon Under Cover Crops"
    assert document.metadata["Author"] == "Ana Ruiz; Li Wei"
    assert document.pdf_url == "https://journal.example/content/article.pdf"
    text = document.pages[0].text
    assert (
        "Cover crops increased soil organic carbon" in text
        and "tracking" not in text
        and "Journals" not in text
    )


def test_trim_to_length_keeps_priority_order() -> None:
    paper = ExtractedPaper(
        source_url="u",
        canonical_id="c",
        success=True,
        title="A title",
        abstract="First sentence of the abstract. " * 20,
        key_findings=["Finding sentence that states a measured result of 12%."] * 3,
        methodology="Method text. " * 50,
        citations=["Smith et al., 2020. A study. Venue."] * 10,
    )
    trimmed = trim_to_length(paper, 400)
    total = len(trimmed.title) + len(trimmed.abstract) + len(trimmed.methodology)
    total += sum(map(len, trimmed.key_findings)) + sum(map(len, trimmed.citations))
    assert total <= 400
    assert trimmed.title == "A title" and len(trimmed.key_findings) == 3
    assert paper.methodology.startswith("Method text.")  # the original is untouched
