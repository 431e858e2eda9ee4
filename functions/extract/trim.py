"""Fitting an extracted paper into the contract's max_length."""

from __future__ import annotations

import re

from functions.common.models import ExtractedPaper


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    head = text[:limit]
    sentence_end = max(head.rfind(". "), head.rfind(".\n"))
    if sentence_end >= limit // 2:
        return head[: sentence_end + 1]
    return re.sub(r"\s+\S*$", "", head).rstrip(" ,;:") + "…"


def trim_to_length(paper: ExtractedPaper, max_length: int) -> ExtractedPaper:
    """Fit the contract's content (title, findings, abstract, methodology, citations) into max_length
    characters, in that order of priority. Evidence is additive and not counted."""
    trimmed = paper.model_copy(deep=True)
    budget = max(0, max_length)
    trimmed.title = _cut(trimmed.title, budget)
    budget -= len(trimmed.title)
    trimmed.key_findings, budget = _whole_items_within(trimmed.key_findings, budget)
    trimmed.abstract = _cut(trimmed.abstract, budget)
    budget -= len(trimmed.abstract)
    trimmed.methodology = _cut(trimmed.methodology, budget)
    budget -= len(trimmed.methodology)
    trimmed.citations, budget = _whole_items_within(trimmed.citations, budget)
    return trimmed


def _whole_items_within(items: list[str], budget: int) -> tuple[list[str], int]:
    """The leading items that fit whole into budget characters, and the budget left."""
    kept: list[str] = []
    for item in items:
        if len(item) > budget:
            break
        kept.append(item)
        budget -= len(item)
    return kept, budget
