"""The engines: BM25 over stemmed tokens, the arXiv `search_query` language, and the three kinds of
search the APIs run (arXiv boolean, Semantic Scholar / OpenAlex all-words, Crossref ranked OR)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from bench.corpus_web.paper import WebPaper
from bench.corpus_web.text import tokens

# --- BM25 index -------------------------------------------------------------------------------------


@dataclass
class _Doc:
    paper: WebPaper
    fields: dict[str, list[str]]  # "ti", "abs", "au", "all"
    counts: Counter[str]  # of the ranking text


def _doc(paper: WebPaper) -> _Doc:
    ti, ab, au = tokens(paper.title), tokens(paper.abstract), tokens(" ".join(paper.authors))
    # the title counts twice in the ranking text, as engines weight titles above abstracts
    return _Doc(paper, {"ti": ti, "abs": ab, "au": au, "all": ti + ab + au}, Counter(ti + ti + ab))


class Index:
    K1, B = 1.2, 0.75

    def __init__(self, docs: list[_Doc]) -> None:
        self.docs = docs
        self.df: Counter[str] = Counter()
        for doc in self.docs:
            self.df.update(set(doc.counts))
        self.avg = sum(sum(d.counts.values()) for d in self.docs) / max(1, len(self.docs))

    def bm25(self, doc: _Doc, terms: Iterable[str]) -> float:
        n, length, total = len(self.docs), sum(doc.counts.values()), 0.0
        for term in set(terms):
            tf = doc.counts.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (n - self.df[term] + 0.5) / (self.df[term] + 0.5))
            total += idf * tf * (self.K1 + 1) / (tf + self.K1 * (1 - self.B + self.B * length / self.avg))
        return total


def _has_phrase(field_tokens: list[str], phrase: list[str]) -> bool:
    if not phrase:
        return False
    if len(phrase) == 1:
        return phrase[0] in field_tokens
    width = len(phrase)
    return any(field_tokens[i : i + width] == phrase for i in range(len(field_tokens) - width + 1))


# --- arXiv search_query ------------------------------------------------------------------------------

_ARXIV_TOKEN = re.compile(
    r"""\s*(?:
        (?P<lp>\() | (?P<rp>\)) |
        (?P<date>submittedDate:\[\s*(?P<d1>\d+)\s+TO\s+(?P<d2>\d+)\s*\]) |
        (?P<fgroup>(?P<gf>[a-z_]+):\() |
        (?P<fphrase>(?P<pf>[a-z_]+):"(?P<pv>[^"]*)") |
        (?P<fterm>(?P<tf>[a-z_]+):(?P<tv>[^\s()"]+)) |
        (?P<phrase>"(?P<qv>[^"]*)") |
        (?P<word>[^\s()"]+)
    )""",
    re.VERBOSE,
)
_FIELDS = {"all": "all", "ti": "ti", "abs": "abs", "au": "au", "co": "all", "jr": "all", "cat": "cat"}


class ArxivQueryError(ValueError):
    pass


@dataclass
class _Node:
    op: str  # "term" | "date" | "and" | "or" | "andnot"
    field: str = "all"
    phrase: list[str] = dc_field(default_factory=list)
    start: int = 0
    end: int = 0
    left: _Node | None = None
    right: _Node | None = None


def _lex(query: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    position = 0
    while position < len(query):
        if query[position:].strip() == "":
            break
        match = _ARXIV_TOKEN.match(query, position)
        if match is None or match.end() == position:
            raise ArxivQueryError(f"cannot parse search_query at {query[position:]!r}")
        position = match.end()
        if match.group("lp"):
            out.append(("(", None))
        elif match.group("rp"):
            out.append((")", None))
        elif match.group("date"):
            out.append(("date", (int(match.group("d1")), int(match.group("d2")))))
        elif match.group("fgroup"):
            out.append(("fgroup", match.group("gf")))
        elif match.group("fphrase"):
            out.append(("term", (match.group("pf"), match.group("pv"))))
        elif match.group("fterm"):
            out.append(("term", (match.group("tf"), match.group("tv"))))
        elif match.group("phrase"):
            out.append(("term", (None, match.group("qv"))))
        else:
            word = match.group("word")
            out.append(("op", word) if word in ("AND", "OR", "ANDNOT") else ("term", (None, word)))
    return out


class _Parser:
    """expr := unary ((AND | OR | ANDNOT)? unary)*, left-associative; juxtaposition is OR (Lucene)."""

    def __init__(self, items: list[tuple[str, Any]]) -> None:
        self.items, self.at = items, 0

    def parse(self) -> _Node:
        node = self.expr("all")
        if self.at != len(self.items):
            raise ArxivQueryError("unbalanced parentheses in search_query")
        return node

    def expr(self, default_field: str) -> _Node:
        node = self.unary(default_field)
        while self.at < len(self.items) and self.items[self.at][0] != ")":
            kind, value = self.items[self.at]
            op = "or"
            if kind == "op":
                op = str(value).lower()
                self.at += 1
            node = _Node(op, left=node, right=self.unary(default_field))
        return node

    def unary(self, default_field: str) -> _Node:
        if self.at >= len(self.items):
            raise ArxivQueryError("search_query ends where a term is expected")
        kind, value = self.items[self.at]
        self.at += 1
        if kind in ("(", "fgroup"):
            inner_field = default_field if kind == "(" else _FIELDS.get(str(value), "all")
            node = self.expr(inner_field)
            if self.at >= len(self.items) or self.items[self.at][0] != ")":
                raise ArxivQueryError("missing ) in search_query")
            self.at += 1
            return node
        if kind == "date":
            return _Node("date", start=value[0], end=value[1])
        if kind == "term":
            prefix, text = value
            name = _FIELDS.get(prefix, "all") if prefix else default_field
            return _Node("term", field=name, phrase=tokens(text.replace("_", " ")))
        raise ArxivQueryError(f"unexpected {value!r} in search_query")


def _positive_terms(node: _Node) -> list[str]:
    """The terms a match is ranked by: every term outside an ANDNOT right-hand side."""
    if node.op == "term":
        return list(node.phrase)
    if node.op == "date":
        return []
    assert node.left is not None and node.right is not None
    if node.op == "andnot":
        return _positive_terms(node.left)
    return _positive_terms(node.left) + _positive_terms(node.right)


def _stamp(year: int | None) -> int:
    return (year or 0) * 100_000_000 + 6_15_0000  # published mid-June of its year, YYYYMMDDHHMM


def _matches(node: _Node, doc: _Doc) -> bool:
    if node.op == "term":
        if not node.phrase:  # a stop word only ("all:the"): arXiv matches nothing useful; be strict
            return False
        if node.field == "cat":
            return False  # the recordings carry no categories
        return _has_phrase(doc.fields[node.field], node.phrase)
    if node.op == "date":
        return node.start <= _stamp(doc.paper.year) <= node.end
    left, right = node.left, node.right
    assert left is not None and right is not None
    if node.op == "and":
        return _matches(left, doc) and _matches(right, doc)
    if node.op == "andnot":
        return _matches(left, doc) and not _matches(right, doc)
    return _matches(left, doc) or _matches(right, doc)


# --- the engines ------------------------------------------------------------------------------------


def _in_years(paper: WebPaper, start: int | None, end: int | None) -> bool:
    if start is None and end is None:
        return True
    if paper.year is None:
        return False
    return (start is None or paper.year >= start) and (end is None or paper.year <= end)


def _ranked(hits: Iterable[tuple[float, int, WebPaper]]) -> list[WebPaper]:
    """Papers by descending score, ties in index order."""
    return [paper for _, _, paper in sorted(hits, key=lambda h: (-h[0], h[1]))]


class Engines:
    """The searches over `papers`; each paper is tokenised once, each engine keeps its own statistics."""

    def __init__(self, papers: list[WebPaper]) -> None:
        docs = [_doc(p) for p in papers]
        self.everything = Index(docs)
        self.arxiv_only = Index([d for d in docs if d.paper.arxiv_id])
        self.crossref_only = Index([d for d in docs if d.paper.doi])

    def arxiv(self, query: str) -> list[WebPaper]:
        """arXiv: a strict boolean match of `search_query`, ranked by BM25 (ArxivQueryError if malformed)."""
        tree = _Parser(_lex(query)).parse()
        terms = _positive_terms(tree)
        index = self.arxiv_only
        return _ranked(
            (index.bm25(d, terms), i, d.paper) for i, d in enumerate(index.docs) if _matches(tree, d)
        )

    def all_words(self, query: str, start: int | None, end: int | None) -> list[WebPaper]:
        """Semantic Scholar and OpenAlex: every query word in title+abstract, ranked by BM25."""
        terms = list(dict.fromkeys(tokens(query)))
        if not terms:
            return []
        index = self.everything
        return _ranked(
            (index.bm25(doc, terms), i, doc.paper)
            for i, doc in enumerate(index.docs)
            if _in_years(doc.paper, start, end) and all(term in doc.counts for term in terms)
        )

    def crossref(self, query: str, start: int | None, end: int | None) -> list[WebPaper]:
        """Crossref: ranked OR over title (and abstract), only DOI-registered works."""
        terms = tokens(query)
        index = self.crossref_only
        scored = (
            (index.bm25(doc, terms), i, doc.paper)
            for i, doc in enumerate(index.docs)
            if _in_years(doc.paper, start, end)
        )
        return _ranked(hit for hit in scored if hit[0] > 0)
