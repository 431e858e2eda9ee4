"""A paper of the web: one of the 20 corpus papers (with its PDF) or a distractor."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WebPaper:
    key: str  # stable id (S2 paperId, OpenAlex W id, ...)
    title: str
    abstract: str | None
    authors: tuple[str, ...]
    year: int | None
    venue: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    citations: int = 0
    kind: str = "journal-article"
    corpus_id: str | None = None  # set for the 20 relevant papers
    pdf_path: Path | None = None
    origin: str = ""  # "corpus:<id>" or the recording it was parsed from
