"""Distractors: every paper record in the recorded API responses of `api/`.

The records are read by hand rather than by the connectors' `parse_response`: most of them (about 800
of the 1,044) sit in Semantic Scholar and OpenAlex entity files (a paper with its citations and
references, an author with their papers) that are no search answer a connector parses, so every JSON
body is walked for anything shaped like an S2, OpenAlex or Crossref record. Cassettes are read by
`tests.support.cassettes`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import feedparser
import yaml

from bench.corpus_web.paper import WebPaper
from bench.corpus_web.text import normalise_title, squash
from tests.support.cassettes import load_cassette


def _recorded_bodies(path: Path) -> list[Any]:
    """The response bodies of one recording: cassette bodies as text, a JSON file as data (an arXiv
    fixture's wrapped Atom body as text)."""
    if path.suffix in (".yaml", ".yml"):
        return [i.body.decode("utf-8", "replace") for i in load_cassette(path) if i.body]
    if path.suffix != ".json":
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and isinstance(data.get("body"), str):
        return [data["body"]]
    return [data]


def _strip_tags(text: str) -> str:
    return squash(re.sub(r"<[^>]+>", " ", text))


def _from_s2(record: dict[str, Any], origin: str) -> WebPaper:
    ids = record.get("externalIds") or {}
    authors = tuple(
        str(a.get("name")) for a in record.get("authors") or [] if isinstance(a, dict) and a.get("name")
    )
    year = record.get("year") if isinstance(record.get("year"), int) else None
    return WebPaper(
        key=f"s2:{record.get('paperId')}",
        title=squash(str(record["title"])),
        abstract=squash(str(record["abstract"])) if record.get("abstract") else None,
        authors=authors,
        year=year,
        venue=str(record.get("venue") or "") or None,
        doi=str(ids["DOI"]).lower() if ids.get("DOI") else None,
        arxiv_id=str(ids["ArXiv"]) if ids.get("ArXiv") else None,
        citations=int(record.get("citationCount") or 0),
        origin=origin,
    )


def _from_openalex(work: dict[str, Any], origin: str) -> WebPaper:
    # the project's modules are imported when first needed, as bench.quality sets the runtime's
    # environment (log level) before it loads them
    from functions.search.connectors.openalex import rebuild_abstract

    doi = str(work.get("doi") or "").removeprefix("https://doi.org/").lower() or None
    source = (work.get("primary_location") or {}).get("source") or {}
    return WebPaper(
        key=f"oa:{work.get('id')}",
        title=_strip_tags(str(work.get("title") or work.get("display_name"))),
        abstract=rebuild_abstract(work.get("abstract_inverted_index")),
        authors=tuple(
            str((a.get("author") or {}).get("display_name"))
            for a in work.get("authorships") or []
            if isinstance(a, dict) and (a.get("author") or {}).get("display_name")
        ),
        year=work.get("publication_year") if isinstance(work.get("publication_year"), int) else None,
        venue=str(source.get("display_name") or "") or None if isinstance(source, dict) else None,
        doi=doi,
        citations=int(work.get("cited_by_count") or 0),
        kind="preprint" if work.get("type") == "preprint" else "journal-article",
        origin=origin,
    )


def _from_crossref(item: dict[str, Any], origin: str) -> WebPaper:
    year = None
    for key in ("published", "issued", "published-print", "published-online", "created"):
        parts = (item.get(key) or {}).get("date-parts") or []
        if parts and parts[0] and isinstance(parts[0][0], int):
            year = int(parts[0][0])
            break
    authors = tuple(
        " ".join(x for x in (a.get("given"), a.get("family")) if x) or str(a.get("name") or "")
        for a in item.get("author") or []
        if isinstance(a, dict)
    )
    titles = item.get("title") or []
    return WebPaper(
        key=f"cr:{item.get('DOI')}",
        title=_strip_tags(str(titles[0])),
        abstract=_strip_tags(str(item["abstract"])).removeprefix("Abstract ")
        if item.get("abstract")
        else None,
        authors=tuple(a for a in authors if a),
        year=year,
        venue=((item.get("container-title") or [None])[0]) or None,
        doi=str(item["DOI"]).lower(),
        citations=int(item.get("is-referenced-by-count") or 0),
        kind=str(item.get("type") or "journal-article"),
        origin=origin,
    )


def _from_atom(text: str, origin: str) -> list[WebPaper]:
    from functions.search.text import arxiv_id_from

    out = []
    for entry in feedparser.parse(text).entries:
        arxiv_id = arxiv_id_from(str(entry.get("id", "")))
        published = entry.get("published_parsed")
        if not arxiv_id or not entry.get("title") or "/api/errors" in str(entry.get("id", "")):
            continue
        out.append(
            WebPaper(
                key=f"arxiv:{arxiv_id}",
                title=squash(str(entry.get("title"))),
                abstract=squash(str(entry.get("summary"))) or None,
                authors=tuple(str(a.get("name")) for a in entry.get("authors", []) if a.get("name")),
                year=published.tm_year if published else None,
                venue=entry.get("arxiv_journal_ref") or "arXiv",
                doi=str(entry.get("arxiv_doi")).lower() if entry.get("arxiv_doi") else None,
                arxiv_id=arxiv_id,
                kind="posted-content",
                origin=origin,
            )
        )
    return out


def _walk(node: Any, origin: str, out: list[WebPaper]) -> None:
    """Every S2 / OpenAlex / Crossref record anywhere in a JSON body (nested ones included)."""
    if isinstance(node, dict):
        if node.get("paperId") and node.get("title"):
            out.append(_from_s2(node, origin))
        elif str(node.get("id", "")).startswith("https://openalex.org/W") and (
            node.get("title") or node.get("display_name")
        ):
            out.append(_from_openalex(node, origin))
        elif node.get("DOI") and isinstance(node.get("title"), list) and node["title"]:
            out.append(_from_crossref(node, origin))
        for value in node.values():
            _walk(value, origin, out)
    elif isinstance(node, list):
        for value in node:
            _walk(value, origin, out)


def load_distractors(root: Path) -> list[WebPaper]:
    """Every paper record with an abstract in the recordings, de-duplicated (DOI / arXiv id / title),
    richest kept."""
    found: list[WebPaper] = []
    for path in sorted((root / "api").rglob("*")):
        if not path.is_file():
            continue
        origin = str(path.relative_to(root))
        try:
            bodies = _recorded_bodies(path)
        except (ValueError, KeyError, AttributeError, yaml.YAMLError):  # not a recording we can read
            continue
        for body in bodies:
            if isinstance(body, str):
                stripped = body.lstrip()
                if stripped.startswith("<"):
                    found.extend(_from_atom(stripped, origin))
                    continue
                try:
                    body = json.loads(stripped)
                except ValueError:
                    continue
            _walk(body, origin, found)
    best: dict[str, WebPaper] = {}
    for paper in found:
        if len(paper.title) < 12 or paper.year is None or not (paper.abstract and len(paper.abstract) > 150):
            continue
        key = paper.doi or paper.arxiv_id or normalise_title(paper.title)
        kept = best.get(key)
        richness = (len(paper.abstract or ""), len(paper.authors), bool(paper.venue))
        if kept is None or richness > (len(kept.abstract or ""), len(kept.authors), bool(kept.venue)):
            best[key] = paper
    titles: set[str] = set()
    unique = []
    for paper in best.values():
        title = normalise_title(paper.title)
        if title in titles:
            continue
        titles.add(title)
        unique.append(paper)
    return unique
