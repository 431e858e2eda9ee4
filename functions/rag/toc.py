"""The table of contents: numbered chapters, sections and appendices with their printed start pages."""

from __future__ import annotations

import re

from functions.rag.model import PageText, TocEntry

# "4.1.2 Illustrative examples . . . . . 59", "4 Value Iteration and Policy Iteration 57", "C.1 ... 251"
_TOC_LINE = re.compile(
    r"^(?P<number>(?:\d{1,2}|[A-Z])(?:\.\d{1,2}){0,2})\s+(?P<title>\S.*?)(?:\s*\.)*\s+(?P<page>\d{1,4})\s*$"
)
_LEADER = re.compile(r"(?:\s*\.){2,}\s*$")


def parse_toc(pages: list[PageText]) -> list[TocEntry]:
    entries: list[TocEntry] = []
    seen: set[str] = set()
    for page in pages:
        for raw in page.text.splitlines():
            match = _TOC_LINE.match(raw.strip())
            if not match:
                continue
            number = match.group("number")
            title = _LEADER.sub("", match.group("title")).strip()
            if number in seen or not title or not (title[0].isalpha() or title[0].isdigit()):
                continue
            seen.add(number)
            entries.append(
                TocEntry(
                    number=number,
                    title=title,
                    printed_page=int(match.group("page")),
                    level=number.count(".") + 1,
                )
            )
    return entries


def looks_like_toc(pages: list[PageText]) -> bool:
    """A contents listing: the word "Contents" and several numbered entries with dotted leaders."""
    text = "\n".join(page.text for page in pages[:8])
    dotted = sum(1 for line in text.splitlines() if _TOC_LINE.match(line.strip()) and ". ." in line)
    return "Contents" in text and dotted >= 3
