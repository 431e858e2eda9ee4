"""HTML article pages: scholarly meta tags (citation_title, citation_pdf_url, ...) and the main text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

from functions.extract.pdf import PageText, normalise_text, quality_flags

_SKIPPED = frozenset(
    {"script", "style", "nav", "header", "footer", "aside", "noscript", "form", "svg", "button"}
)
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "li",
        "br",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "tr",
        "td",
        "blockquote",
        "figcaption",
        "dd",
        "dt",
        "title",
    }
)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4"})


@dataclass(slots=True)
class HtmlDocument:
    pages: list[PageText]
    metadata: dict[str, str]
    pdf_url: str | None
    citations: list[str] = field(default_factory=list)


class _ArticleParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.meta: dict[str, list[str]] = {}
        self.skip_depth = 0
        self.main_depth = 0
        self.main_seen = False
        self.blocks_all: list[str] = []
        self.blocks_main: list[str] = []
        self.current: list[str] = []
        self.title_parts: list[str] = []
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k.lower(): (v or "") for k, v in attrs}
        if tag == "meta":
            name = (attributes.get("name") or attributes.get("property") or "").lower()
            if name and attributes.get("content"):
                self.meta.setdefault(name, []).append(attributes["content"].strip())
            return
        if tag in _SKIPPED:
            self.skip_depth += 1
            return
        if tag == "title":
            self.in_title = True
        if tag in ("article", "main") or attributes.get("role") == "main":
            self.main_depth += 1
            self.main_seen = True
        if tag in _BLOCKS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if tag == "title":
            self.in_title = False
        if tag in _BLOCKS:
            self._flush(heading=tag in _HEADINGS)
        if tag in ("article", "main"):
            self.main_depth = max(0, self.main_depth - 1)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title_parts.append(data)
            return
        if self.skip_depth == 0:
            self.current.append(data)

    def _flush(self, heading: bool = False) -> None:
        text = " ".join("".join(self.current).split())
        self.current = []
        if not text:
            return
        if heading:
            text = text.rstrip(".")
        self.blocks_all.append(text)
        if self.main_depth > 0:
            self.blocks_main.append(text)

    def close(self) -> None:
        super().close()
        self._flush()


def parse_html(html: str, base_url: str) -> HtmlDocument:
    parser = _ArticleParser()
    parser.feed(html)
    parser.close()
    meta = parser.meta

    def first(*names: str) -> str:
        for name in names:
            if meta.get(name):
                return meta[name][0]
        return ""

    blocks = parser.blocks_main if parser.main_seen and parser.blocks_main else parser.blocks_all
    text = normalise_text("\n".join(blocks))
    metadata = {
        "Title": first("citation_title", "dc.title", "og:title")
        or " ".join("".join(parser.title_parts).split()),
        "Author": "; ".join(meta.get("citation_author", [])),
        "abstract": first("citation_abstract", "dc.description", "description", "og:description"),
    }
    pdf = first("citation_pdf_url")
    pdf_url = urljoin(base_url, pdf) if pdf else None
    citations = [re.sub(r"\s+", " ", c) for c in meta.get("citation_reference", [])]
    page = PageText(1, text, quality_flags(text))
    return HtmlDocument([page], {k: v for k, v in metadata.items() if v}, pdf_url, citations)
