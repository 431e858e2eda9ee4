"""The real papers of ../shared/corpus: regular ones extract, difficult ones fail cleanly (how fast they
answer is measured by bench/extract.py, not asserted here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from functions.common.models import ExtractedPaper
from functions.extract.extraction import from_parsed, parse_or_failure
from functions.extract.pdf import ParsedPdf, PdfParseError, parse_pdf
from functions.extract.pdf_sandbox import parse_pdf_isolated

pytestmark = pytest.mark.corpus


def _extract(path: Path) -> ExtractedPaper:
    outcome = parse_or_failure(path.read_bytes(), str(path), f"file:{path.parent.name}")
    if isinstance(outcome, ExtractedPaper):
        return outcome
    return from_parsed(outcome, source_url=str(path), canonical_id=f"file:{path.parent.name}")


def test_regular_papers_extract_with_findings_and_evidence(corpus_dir: Path) -> None:
    index = json.loads((corpus_dir / "papers" / "INDEX.json").read_text())
    regular = [e for e in index if e["category"] == "regular"]
    papers = [_extract(corpus_dir / "papers" / "regular" / e["id"] / "paper.pdf") for e in regular]
    succeeded = [p for p in papers if p.success]
    assert len(succeeded) >= 0.9 * len(regular)
    for paper in succeeded:
        assert paper.title and 1 <= len(paper.key_findings) <= 7
        assert all(q.page >= 1 and q.char_end > q.char_start for q in paper.evidence)


def test_difficult_papers_answer_cleanly(corpus_dir: Path) -> None:
    folder = corpus_dir / "papers" / "difficult"
    reasons = {path.parent.name: _extract(path).failure_reason for path in sorted(folder.glob("*/paper.pdf"))}
    assert "no text layer" in (reasons["scanned_cermine_simple_ccitt"] or "")
    assert "password" in (reasons["encrypted_crazyones_aes256"] or "")


def _parse(parse: Callable[[bytes], ParsedPdf], data: bytes) -> dict[str, Any] | str:
    try:
        return parse(data).to_json()
    except PdfParseError as exc:
        return f"unreadable: {exc.reason}"


def test_every_paper_parses_within_the_limits_exactly_as_in_process(corpus_dir: Path) -> None:
    paths = sorted((corpus_dir / "papers").glob("*/*/paper.pdf"))
    assert len(paths) >= 20
    for path in paths:
        data = path.read_bytes()
        assert _parse(parse_pdf_isolated, data) == _parse(parse_pdf, data), path.parent.name
