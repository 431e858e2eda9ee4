"""An offline scholarly web over the real corpus (`../shared/corpus`), for the research-quality bench.

A loopback `ScholarlyWeb` that answers arXiv, Semantic Scholar, OpenAlex and Crossref the way the real
engines behave, over a literature made of
  - the 20 real papers of `papers/regular/` (metadata below; abstract from the ground-truth files
    beside the PDF, else from the PDF's first page), each with its real PDF served where the extractor
    resolves it (arXiv id -> `ARXIV_PDF_BASE_URL/pdf/<id>`, DOI -> `DOI_RESOLVER_URL/<doi>`);
  - a few hundred real off-topic and near-topic distractors parsed from the recorded API responses in
    `api/` (arXiv Atom fixtures, Semantic Scholar / OpenAlex / Crossref VCR cassettes), without PDFs
    (404, as paywalled papers often answer).

Search semantics (see each `_search_*`):
  - arXiv: the real `search_query` syntax (`all:`/`ti:`/`abs:`/`au:`, quoted phrases, AND / OR / ANDNOT,
    parentheses, juxtaposition = OR as in Lucene, `submittedDate:[... TO ...]`), a strict boolean match
    over stemmed tokens, ranked by BM25; only papers with an arXiv id exist there.
  - Semantic Scholar `/paper/search?query=` and OpenAlex `/works?search=`: every stemmed query word
    must occur in title+abstract, ranked by BM25 (roughly how both behave for short queries).
  - Crossref `/works?query=` / `query.bibliographic=` / `query.title=`: ranked OR over the title (and the
    abstract when the record has one); top `rows`; only DOI-registered works.
Year filters in each API's own syntax, `max_results` / `limit` / `per_page` / `rows` and offsets honoured.

Years: the contract caps `publication_window_years` at 10 and the corpus spans 1950-2026, so by default
every record's year (relevant papers and distractors alike) is re-dated into the last ten years by one
order-preserving linear map (`redate`); `redate_years=None` serves the real years.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import threading
import unicodedata
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import feedparser
import yaml

from tests.support.scholarly_fixtures import (
    SamplePaper,
    arxiv_feed,
    crossref_works,
    openalex_works,
    semantic_scholar_search,
)
from tests.support.scholarly_web import RecordedRequest, Reply, ScholarlyWeb

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"  # BENCH_CORPUS_DIR overrides
ARXIV_PDF_PREFIX = "/arxiv-pdf"
DOI_PREFIX = "/doi"
TEST_DOI_PREFIX = (
    "10.5555"  # Crossref's test prefix: for corpus papers whose real DOI the corpus does not show
)


class CorpusMissing(RuntimeError):
    pass


# --- the 20 relevant papers ---------------------------------------------------------------------------
# Titles, authors, years, venues and identifiers as printed in the PDFs / INDEX.json / ground-truth files.
# Abstracts are read at run time (`_abstract`): ground truth when present, else the PDF's first page.


@dataclass(frozen=True)
class CorpusEntry:
    corpus_id: str
    title: str
    authors: tuple[str, ...]
    year: int
    venue: str
    arxiv_id: str | None = None
    doi: str | None = None  # a real DOI shown by the corpus; otherwise a 10.5555 test DOI is made
    # page-1 markers for the abstract when no ground truth holds one (regexes; defaults: "Abstract" ...
    # the next heading)
    abstract_start: str | None = None
    abstract_end: str | None = None


CORPUS_PAPERS: tuple[CorpusEntry, ...] = (
    CorpusEntry(
        "s2orc_2020.acl-main.207",
        "SPECTER: Document-level Representation Learning using Citation-informed Transformers",
        ("Arman Cohan", "Sergey Feldman", "Iz Beltagy", "Doug Downey", "Daniel S. Weld"),
        2020,
        "Annual Meeting of the Association for Computational Linguistics",
    ),
    CorpusEntry(
        "s2orc_24e6b80e_crenarchaeota",
        "Niche Partitioning of Marine Group I Crenarchaeota in the Euphotic and Upper Mesopelagic Zones "
        "of the East China Sea",
        ("Anyi Hu", "Nianzhi Jiao", "Rui Zhang", "Zao Yang"),
        2011,
        "Applied and Environmental Microbiology",
        doi="10.1128/AEM.00294-11",
    ),
    CorpusEntry(
        "grobidclient_0046d83a_fes",
        "Multi-contact functional electrical stimulation for hand opening: electrophysiologically driven "
        "identification of the optimal stimulation site",
        (
            "Cristiano De Marchis",
            "Thiago Santos Monteiro",
            "Cristina Simon-Martinez",
            "Silvia Conforto",
            "Alireza Gharabaghi",
        ),
        2016,
        "Journal of NeuroEngineering and Rehabilitation",
    ),
    CorpusEntry(
        "grobid_sample_dutot",
        "Bi-criteria Algorithm for Scheduling Jobs on Cluster Platforms",
        ("Pierre-François Dutot", "Lionel Eyraud", "Grégory Mounié", "Denis Trystram"),
        2004,
        "ACM Symposium on Parallelism in Algorithms and Architectures",
    ),
    CorpusEntry(
        "cermine_test1_dvt_trauma",
        "Complications related to deep venous thrombosis prophylaxis in trauma: a systematic review of "
        "the literature",
        ("Indraneel Datta", "Chad G Ball", "Lucas Rudmik", "S Morad Hameed", "John B Kortbeek"),
        2010,
        "Journal of Trauma Management & Outcomes",
        doi="10.1186/1752-2897-4-1",
    ),
    CorpusEntry(
        "cermine_test3_phoenix",
        "Phytochemical and Biological investigations of Phoenix paludosa Roxb.",
        (
            "Farzana Alam",
            "Mohammad S. Rahman",
            "Md. Shahanur Alam",
            "Md. Khalid Hossain",
            "Md. Aslam Hossain",
            "Mohammad A. Rashid",
        ),
        2009,
        "Dhaka University Journal of Pharmaceutical Sciences",
    ),
    CorpusEntry(
        "sp_P07-1088",
        "Sparse Information Extraction: Unsupervised Language Models to the Rescue",
        ("Doug Downey", "Stefan Schoenmackers", "Oren Etzioni"),
        2007,
        "Annual Meeting of the Association for Computational Linguistics",
    ),
    CorpusEntry(
        "sp_agarwal11",
        "Noisy Matrix Decomposition via Convex Relaxation: Optimal Rates in High Dimensions",
        ("Alekh Agarwal", "Sahand Negahban", "Martin J. Wainwright"),
        2011,
        "International Conference on Machine Learning",
    ),
    CorpusEntry(
        "sp_dyer12",
        "Joint Feature Selection in Distributed Stochastic Learning for Large-Scale Discriminative "
        "Training in SMT",
        ("Patrick Simianer", "Stefan Riezler", "Chris Dyer"),
        2012,
        "Annual Meeting of the Association for Computational Linguistics",
    ),
    CorpusEntry(
        "sp_senellart10",
        "Probabilistic XML via Markov Chains",
        ("Michael Benedikt", "Evgeny Kharlamov", "Dan Olteanu", "Pierre Senellart"),
        2010,
        "Proceedings of the VLDB Endowment",
    ),
    CorpusEntry(
        "sp_seung08",
        "Natural Image Denoising with Convolutional Networks",
        ("Viren Jain", "H. Sebastian Seung"),
        2008,
        "Advances in Neural Information Processing Systems",
    ),
    CorpusEntry(
        "sp_bunescu-acl07",
        "Learning to Extract Relations from the Web using Minimal Supervision",
        ("Razvan C. Bunescu", "Raymond J. Mooney"),
        2007,
        "Annual Meeting of the Association for Computational Linguistics",
    ),
    CorpusEntry(
        "sp_fader11",
        "Identifying Relations for Open Information Extraction",
        ("Anthony Fader", "Stephen Soderland", "Oren Etzioni"),
        2011,
        "Conference on Empirical Methods in Natural Language Processing",
    ),
    CorpusEntry(
        "sp_c921a74c_mobilefeedback",
        "Did you notice?: neuronal processing of multimodal mobile phone feedback",
        ("Jan-Niklas Antons", "Sebastian Arndt", "Julia Seebode", "Robert Schleicher", "Sebastian Möller"),
        2013,
        "CHI Extended Abstracts on Human Factors in Computing Systems",
        abstract_end=r"Author Keywords",
    ),
    CorpusEntry(
        "sp_6c46de8a_scheduling",
        "Scheduling problems in transportation networks of line topology",
        ("Dariusz R. Kowalski", "Eyal Nussbaum", "Michael Segal", "Vitaly Milyeykovski"),
        2014,
        "Optimization Letters",
    ),
    CorpusEntry(
        "arxiv_1504.06236_influential_nodes",
        "Improving detection of influential nodes in complex networks",
        ("Amir Sheikhahmadi", "Mohammad A. Nematbakhsh", "Arman Shokrollahi"),
        2015,
        "Physica A: Statistical Mechanics and its Applications",
        arxiv_id="1504.06236",
    ),
    CorpusEntry(
        "arxiv_papermage",
        "PaperMage: A Unified Toolkit for Processing, Representing, and Manipulating Visually-Rich "
        "Scientific Documents",
        ("Kyle Lo", "Zejiang Shen", "Benjamin Newman", "Joseph Chee Chang", "Luca Soldaini"),
        2023,
        "Conference on Empirical Methods in Natural Language Processing: System Demonstrations",
    ),
    CorpusEntry(
        "arxiv_0908.0054_bosonic_dm",
        "Ultra light bosonic dark matter and CMB",
        ("Ivan Rodriguez Montoya", "Tonatiuh Matos Chassin"),
        2009,
        "arXiv",
        arxiv_id="0908.0054",
        # the PDF prints no "Abstract" heading: the abstract paragraph precedes "I. INTRODUCTION"
        abstract_start=r"In this work we report",
        abstract_end=r"I\. INTRODUCTION",
    ),
    CorpusEntry(
        "jss_MullenJSSv18i03_timp",
        "TIMP: An R Package for Modeling Multi-way Spectroscopic Measurements",
        ("Katharine M. Mullen", "Ivo H. M. van Stokkum"),
        2007,
        "Journal of Statistical Software",
        abstract_end=r"Keywords:",
    ),
    CorpusEntry(
        "pdffigures2_f63cb207_ephaptic",
        "Ephaptic coupling of cortical neurons",
        ("Costas A Anastassiou", "Rodrigo Perin", "Henry Markram", "Christof Koch"),
        2011,
        "Nature Neuroscience",
        doi="10.1038/nn.2727",  # printed on the PDF's first page
        # no "Abstract" heading: Nature's abstract paragraph follows the author line
        abstract_start=r"The electrochemical processes",
        abstract_end=r"C o m p u",
    ),
)


# --- a paper of the web ---------------------------------------------------------------------------------


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

    @property
    def relevant(self) -> bool:
        return self.corpus_id is not None


# --- text -------------------------------------------------------------------------------------------

_STOP_WORDS = (
    "a an and are as at be by for from has have in into is it its of on or that the their this to was "
    "were which with we our can how what when where why do does using via"
)
_STOP = frozenset(_STOP_WORDS.split(" "))
_WORD = re.compile(r"[0-9a-z]+")
_local = threading.local()


def _stemmer() -> Any:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
        _local.stemmer = stemmer
    return stemmer


def fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    return "".join(c for c in text if not unicodedata.combining(c)).lower()


def tokens(text: str | None) -> list[str]:
    """Stemmed content words, stop words dropped (positions of the rest kept in order)."""
    if not text:
        return []
    words = [w for w in _WORD.findall(fold(text)) if w not in _STOP]
    return list(_stemmer().stemWords(words))


def normalise_title(title: str) -> str:
    return " ".join(_WORD.findall(fold(title)))


# --- BM25 index -------------------------------------------------------------------------------------


@dataclass
class _Doc:
    paper: WebPaper
    fields: dict[str, list[str]]  # "ti", "abs", "au", "all"
    counts: Counter[str]  # of "all"


class Index:
    K1, B = 1.2, 0.75

    def __init__(self, papers: Iterable[WebPaper]) -> None:
        self.docs: list[_Doc] = []
        for paper in papers:
            ti, ab, au = tokens(paper.title), tokens(paper.abstract), tokens(" ".join(paper.authors))
            # the title counts twice in the ranking text, as engines weight titles above abstracts
            everything = ti + ti + ab
            self.docs.append(
                _Doc(paper, {"ti": ti, "abs": ab, "au": au, "all": ti + ab + au}, Counter(everything))
            )
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
    if node.op == "term":
        return list(node.phrase)
    if node.op in ("and", "or"):
        return _positive_terms(node.left or node) + _positive_terms(node.right or node)
    if node.op == "andnot":
        return _positive_terms(node.left or node)
    return []


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


# --- year filters in each API's syntax ----------------------------------------------------------------


def _year_range_s2(value: str | None) -> tuple[int | None, int | None]:
    if not value:
        return None, None
    if "-" not in value:
        return int(value), int(value)
    start, _, end = value.partition("-")
    return (int(start[:4]) if start else None), (int(end[:4]) if end else None)


def _openalex_filters(value: str | None) -> tuple[int | None, int | None]:
    start: int | None = None
    end: int | None = None
    for part in (value or "").split(","):
        name, _, arg = part.partition(":")
        if name == "from_publication_date":
            start = int(arg[:4])
        elif name == "to_publication_date":
            end = int(arg[:4])
        elif name == "publication_year":
            if arg.startswith(">"):
                start = int(arg[1:]) + 1
            elif arg.startswith("<"):
                end = int(arg[1:]) - 1
            elif "-" in arg:
                a, _, b = arg.partition("-")
                start, end = int(a), int(b)
            elif arg:
                start = end = int(arg)
    return start, end


def _crossref_filters(value: str | None) -> tuple[int | None, int | None]:
    start: int | None = None
    end: int | None = None
    for part in (value or "").split(","):
        name, _, arg = part.partition(":")
        if name in ("from-pub-date", "from-published-date", "from-issued-date"):
            start = int(arg[:4])
        elif name in ("until-pub-date", "until-published-date", "until-issued-date"):
            end = int(arg[:4])
    return start, end


def _in_years(paper: WebPaper, start: int | None, end: int | None) -> bool:
    if start is None and end is None:
        return True
    if paper.year is None:
        return False
    return (start is None or paper.year >= start) and (end is None or paper.year <= end)


def _int(value: str | None, default: int, low: int, high: int) -> int:
    try:
        number = int(value) if value not in (None, "") else default
    except ValueError:
        number = default
    return max(low, min(high, number))


# --- the web -------------------------------------------------------------------------------------------


def _sample(paper: WebPaper, pdf_url: str | None = None) -> SamplePaper:
    return SamplePaper(
        title=paper.title,
        abstract=paper.abstract or "",
        year=paper.year or 0,
        authors=paper.authors or ("Anonymous",),
        doi=paper.doi,
        arxiv_id=paper.arxiv_id,
        venue=paper.venue,
        citations=paper.citations,
        kind=paper.kind,
        pdf_url=pdf_url,
    )


class CorpusWeb:
    """The search APIs and PDF hosts over `papers`; `start()` returns the running ScholarlyWeb."""

    def __init__(self, papers: list[WebPaper]) -> None:
        self.papers = papers
        self.everything = Index(papers)
        self.arxiv = Index(p for p in papers if p.arxiv_id)
        self.crossref = Index(p for p in papers if p.doi)
        self.by_doi = {p.doi.lower(): p for p in papers if p.doi}
        self.by_arxiv = {p.arxiv_id: p for p in papers if p.arxiv_id}
        self.web = ScholarlyWeb()
        self.hits: dict[tuple[str, str], int] = {}  # (api, query text) -> total matches, for reports

    # -- lifecycle
    def start(self) -> ScholarlyWeb:
        web = self.web.start()
        web.set_handler(web.ARXIV_PATH, self._arxiv)
        web.set_handler(web.SEMANTIC_SCHOLAR_PATH, self._semantic_scholar)
        web.set_handler(web.OPENALEX_PATH, self._openalex)
        web.set_handler(web.OPENALEX_PATH + "/", self._openalex_work, prefix=True)
        web.set_handler(web.CROSSREF_PATH, self._crossref)
        web.set_handler(web.CROSSREF_PATH + "/", self._crossref_work, prefix=True)
        web.set_handler(ARXIV_PDF_PREFIX + "/", self._pdf, prefix=True)
        web.set_handler(DOI_PREFIX + "/", self._pdf, prefix=True)
        return web

    def stop(self) -> None:
        self.web.stop()

    def environment(self, **extra: str) -> dict[str, str]:
        """Settings that point every upstream at this web, provider spacing off, no LLM."""
        return {
            **self.web.env(),
            "ARXIV_PDF_BASE_URL": self.web.url(ARXIV_PDF_PREFIX),
            "DOI_RESOLVER_URL": self.web.url(DOI_PREFIX),
            "SEARCH_ARXIV_MIN_INTERVAL_SECONDS": "0",
            "SEARCH_SEMANTIC_SCHOLAR_MIN_INTERVAL_SECONDS": "0",
            "SEARCH_OPENALEX_MIN_INTERVAL_SECONDS": "0",
            "SEARCH_CROSSREF_MIN_INTERVAL_SECONDS": "0",
            "LLM_PROVIDER": "none",
            **extra,
        }

    def _pdf_url(self, paper: WebPaper) -> str | None:
        if paper.pdf_path is None:
            return None
        if paper.arxiv_id:
            return self.web.url(f"{ARXIV_PDF_PREFIX}/pdf/{paper.arxiv_id}")
        return self.web.url(f"{DOI_PREFIX}/{paper.doi}")

    # -- search engines
    def search_arxiv(self, query: str) -> list[WebPaper]:
        tree = _Parser(_lex(query)).parse()
        terms = _positive_terms(tree)
        hits = [
            (self.arxiv.bm25(d, terms), i, d.paper)
            for i, d in enumerate(self.arxiv.docs)
            if _matches(tree, d)
        ]
        return [paper for _, _, paper in sorted(hits, key=lambda h: (-h[0], h[1]))]

    def search_all_words(self, query: str, start: int | None, end: int | None) -> list[WebPaper]:
        terms = list(dict.fromkeys(tokens(query)))
        if not terms:
            return []
        hits = []
        for i, doc in enumerate(self.everything.docs):
            if not _in_years(doc.paper, start, end):
                continue
            if all(term in doc.counts for term in terms):
                hits.append((self.everything.bm25(doc, terms), i, doc.paper))
        return [paper for _, _, paper in sorted(hits, key=lambda h: (-h[0], h[1]))]

    def search_crossref(self, query: str, start: int | None, end: int | None) -> list[WebPaper]:
        terms = tokens(query)
        hits = []
        for i, doc in enumerate(self.crossref.docs):
            if not _in_years(doc.paper, start, end):
                continue
            score = self.crossref.bm25(doc, terms)
            if score > 0:
                hits.append((score, i, doc.paper))
        return [paper for _, _, paper in sorted(hits, key=lambda h: (-h[0], h[1]))]

    # -- API handlers
    def _arxiv(self, request: RecordedRequest) -> Reply:
        query = request.param("search_query") or ""
        start = _int(request.param("start"), 0, 0, 30000)
        size = _int(request.param("max_results"), 10, 0, 2000)
        try:
            found = self.search_arxiv(query) if query else []
        except ArxivQueryError as exc:
            # arXiv answers a malformed query with 200 and an error entry
            body = (
                "<?xml version='1.0' encoding='UTF-8'?><feed xmlns=\"http://www.w3.org/2005/Atom\" "
                'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"><opensearch:totalResults>1'
                "</opensearch:totalResults><entry><id>http://arxiv.org/api/errors#incorrect_id_format</id>"
                f"<title>Error</title><summary>{exc}</summary></entry></feed>"
            )
            return Reply.of(body, content_type="application/atom+xml; charset=utf-8")
        self.hits[("arxiv", query)] = len(found)
        page = found[start : start + size]
        feed = arxiv_feed([_sample(p) for p in page], total=len(found))
        return Reply.of(feed, content_type="application/atom+xml; charset=utf-8")

    def _semantic_scholar(self, request: RecordedRequest) -> Reply:
        query = request.param("query") or ""
        if not query.strip():
            return Reply.of({"error": "Missing required parameter: 'query'"}, 400)
        start, end = _year_range_s2(request.param("year"))
        offset = _int(request.param("offset"), 0, 0, 10000)
        limit = _int(request.param("limit"), 10, 1, 100)
        found = self.search_all_words(query, start, end)
        self.hits[("s2", query)] = len(found)
        page = found[offset : offset + limit]
        body = semantic_scholar_search([_sample(p) for p in page])
        for record, paper in zip(body["data"], page, strict=True):
            record["paperId"] = hashlib.sha1(paper.key.encode()).hexdigest()
            record["url"] = f"https://www.semanticscholar.org/paper/{record['paperId']}"
            record["abstract"] = paper.abstract
        body["total"], body["offset"] = len(found), offset
        if offset + limit < len(found):
            body["next"] = offset + limit
        return Reply.of(body)

    def _openalex_record(self, paper: WebPaper) -> dict[str, Any]:
        work: dict[str, Any] = openalex_works([_sample(paper, self._pdf_url(paper))])["results"][0]
        work["id"] = f"https://openalex.org/W{int(hashlib.sha1(paper.key.encode()).hexdigest()[:10], 16)}"
        if not paper.abstract:
            work["abstract_inverted_index"] = None
        return work

    def _openalex(self, request: RecordedRequest) -> Reply:
        query = request.param("search") or ""
        start, end = _openalex_filters(request.param("filter"))
        per_page = _int(request.param("per_page") or request.param("per-page"), 25, 1, 200)
        page_number = _int(request.param("page"), 1, 1, 10000)
        found = self.search_all_words(query, start, end) if query.strip() else []
        self.hits[("openalex", query)] = len(found)
        page = found[(page_number - 1) * per_page : page_number * per_page]
        return Reply.of(
            {
                "meta": {"count": len(found), "page": page_number, "per_page": per_page},
                "results": [self._openalex_record(p) for p in page],
            }
        )

    def _openalex_work(self, request: RecordedRequest) -> Reply:
        ident = unquote(request.path[len(ScholarlyWeb.OPENALEX_PATH) + 1 :])
        paper = self.by_doi.get(ident.removeprefix("doi:").removeprefix("https://doi.org/").lower())
        if paper is None:
            return Reply.of({"error": "NotFoundError", "message": f"{ident} not found"}, 404)
        return Reply.of(self._openalex_record(paper))

    def _crossref_item(self, paper: WebPaper) -> dict[str, Any]:
        item: dict[str, Any] = crossref_works([_sample(paper)])["message"]["items"][0]
        if not paper.abstract:
            item.pop("abstract", None)
        return item

    def _crossref(self, request: RecordedRequest) -> Reply:
        query = " ".join(
            v for k in ("query", "query.bibliographic", "query.title") if (v := request.param(k) or "")
        )
        start, end = _crossref_filters(request.param("filter"))
        rows = _int(request.param("rows"), 20, 0, 1000)
        offset = _int(request.param("offset"), 0, 0, 10000)
        found = self.search_crossref(query, start, end) if query.strip() else []
        self.hits[("crossref", query)] = len(found)
        page = found[offset : offset + rows]
        return Reply.of(
            {
                "status": "ok",
                "message-type": "work-list",
                "message-version": "1.0.0",
                "message": {
                    "total-results": len(found),
                    "items": [self._crossref_item(p) for p in page],
                    "items-per-page": rows,
                    "query": {"start-index": offset, "search-terms": query},
                },
            }
        )

    def _crossref_work(self, request: RecordedRequest) -> Reply:
        doi = unquote(request.path[len(ScholarlyWeb.CROSSREF_PATH) + 1 :]).lower()
        paper = self.by_doi.get(doi)
        if paper is None:
            return Reply.of("Resource not found.", 404)
        return Reply.of(
            {
                "status": "ok",
                "message-type": "work",
                "message-version": "1.0.0",
                "message": self._crossref_item(paper),
            }
        )

    def _pdf(self, request: RecordedRequest) -> Reply:
        path = request.path
        paper: WebPaper | None = None
        if path.startswith(ARXIV_PDF_PREFIX + "/pdf/"):
            ident = re.sub(r"(v\d+)?(\.pdf)?$", "", path[len(ARXIV_PDF_PREFIX + "/pdf/") :])
            paper = self.by_arxiv.get(ident)
        elif path.startswith(DOI_PREFIX + "/"):
            paper = self.by_doi.get(unquote(path[len(DOI_PREFIX) + 1 :]).lower())
        if paper is None or paper.pdf_path is None:
            return Reply.of(
                "<html><body>Access denied: subscription required</body></html>", 404, "text/html"
            )
        return Reply.of(paper.pdf_path.read_bytes(), content_type="application/pdf")


# --- loading the corpus ----------------------------------------------------------------------------------


def corpus_dir(path: Path | None = None) -> Path:
    root = path or Path(os.environ.get("BENCH_CORPUS_DIR") or DEFAULT_CORPUS)
    if not (root / "papers" / "regular").is_dir() or not (root / "api").is_dir():
        raise CorpusMissing(
            f"the corpus is not at {root} (expected papers/regular/ and api/); "
            "the quality bench reads the shared corpus and cannot run without it"
        )
    return root


_TEI = {"tei": "http://www.tei-c.org/ns/1.0"}


def _squash(text: str) -> str:
    return " ".join(re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text).split())


def _ground_truth_abstract(folder: Path) -> str | None:
    s2orc = folder / "s2orc.json"
    if s2orc.exists():
        data = json.loads(s2orc.read_text(encoding="utf-8"))
        abstract = data.get("abstract")
        if isinstance(abstract, list):
            abstract = " ".join(str(p.get("text", "")) for p in abstract if isinstance(p, dict))
        if isinstance(abstract, str) and abstract.strip():
            return _squash(abstract)
    for name in ("grobid.tei.xml", "grobid_header.tei.xml"):
        tei = folder / name
        if tei.exists():
            node = ET.parse(tei).getroot().find(".//tei:profileDesc/tei:abstract", _TEI)
            if node is not None:
                text = _squash(" ".join(node.itertext()))
                if text:
                    return text
    nlm = folder / "metadata.nlm.xml"
    if nlm.exists():
        node = ET.parse(nlm).getroot().find(".//abstract")
        if node is not None:
            text = _squash(" ".join(node.itertext()))
            if text:
                return text
    return None


_DEFAULT_END = (
    r"\n\s*(?:1\.?\s*Introduction|1\s+INTRODUCTION|I\.\s+INTRODUCTION|Introduction\s*\n|Keywords|Key words"
    r"|Categories and Subject|General Terms|Background\s*\n)"
)


def _pdf_abstract(pdf: Path, entry: CorpusEntry) -> str | None:
    """The abstract as printed on page 1 of the PDF (for papers whose ground truth holds none)."""
    import pypdf

    text = pypdf.PdfReader(str(pdf)).pages[0].extract_text() or ""
    start = re.search(entry.abstract_start or r"\b(?:Abstract|ABSTRACT)\b[.:]?", text)
    if start is None:
        return None
    begin = start.start() if entry.abstract_start else start.end()
    end = re.compile(entry.abstract_end or _DEFAULT_END).search(text, begin + 1)
    abstract = _squash(text[begin : end.start() if end else begin + 2000])
    return abstract[:2500] or None


def _test_doi(corpus_id: str) -> str:
    return f"{TEST_DOI_PREFIX}/corpus.{re.sub(r'[^0-9a-z.-]', '-', corpus_id.lower())}"


def load_corpus_papers(root: Path) -> list[WebPaper]:
    papers = []
    for entry in CORPUS_PAPERS:
        folder = root / "papers" / "regular" / entry.corpus_id
        pdf = folder / "paper.pdf"
        if not pdf.exists():
            raise CorpusMissing(f"missing {pdf}")
        abstract = _ground_truth_abstract(folder) or _pdf_abstract(pdf, entry)
        doi = entry.doi or (None if entry.arxiv_id else _test_doi(entry.corpus_id))
        papers.append(
            WebPaper(
                key=f"corpus:{entry.corpus_id}",
                title=entry.title,
                abstract=abstract,
                authors=entry.authors,
                year=entry.year,
                venue=entry.venue,
                doi=doi,
                arxiv_id=entry.arxiv_id,
                citations=40,
                kind="journal-article",
                corpus_id=entry.corpus_id,
                pdf_path=pdf,
                origin=f"corpus:{entry.corpus_id}",
            )
        )
    return papers


# -- distractors from the recordings


def _recorded_bodies(path: Path) -> Iterable[Any]:
    import gzip

    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("body"), str):
            yield data["body"]
        else:
            yield data
        return
    if path.suffix not in (".yaml", ".yml"):
        return
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return
    for interaction in data.get("interactions") or data.get("http_interactions") or []:
        response = interaction.get("response") or {}
        content = response.get("content")
        if content is None:
            body = response.get("body")
            content = body.get("string") if isinstance(body, dict) else body
        if isinstance(content, bytes):
            with contextlib.suppress(OSError):  # gzip-encoded bodies are stored as !!binary
                content = gzip.decompress(content)
            content = content.decode("utf-8", "replace")
        if content:
            yield content


def _strip_tags(text: str) -> str:
    return _squash(re.sub(r"<[^>]+>", " ", text))


def _from_s2(record: dict[str, Any], origin: str) -> WebPaper | None:
    ids = record.get("externalIds") or {}
    authors = tuple(
        str(a.get("name")) for a in record.get("authors") or [] if isinstance(a, dict) and a.get("name")
    )
    year = record.get("year") if isinstance(record.get("year"), int) else None
    return WebPaper(
        key=f"s2:{record.get('paperId')}",
        title=_squash(str(record["title"])),
        abstract=_squash(str(record["abstract"])) if record.get("abstract") else None,
        authors=authors,
        year=year,
        venue=str(record.get("venue") or "") or None,
        doi=str(ids["DOI"]).lower() if ids.get("DOI") else None,
        arxiv_id=str(ids["ArXiv"]) if ids.get("ArXiv") else None,
        citations=int(record.get("citationCount") or 0),
        origin=origin,
    )


def _from_openalex(work: dict[str, Any], origin: str) -> WebPaper | None:
    from functions.search.connectors.openalex import rebuild_abstract

    doi = str(work.get("doi") or "").removeprefix("https://doi.org/").lower() or None
    source = (work.get("primary_location") or {}).get("source") or {}
    return WebPaper(
        key=f"oa:{work.get('id')}",
        title=_squash(_strip_tags(str(work.get("title") or work.get("display_name")))),
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


def _from_crossref(item: dict[str, Any], origin: str) -> WebPaper | None:
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
        title=_squash(_strip_tags(str(titles[0]))),
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
                title=_squash(str(entry.get("title"))),
                abstract=_squash(str(entry.get("summary"))) or None,
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
    if isinstance(node, dict):
        paper: WebPaper | None = None
        if node.get("paperId") and node.get("title"):
            paper = _from_s2(node, origin)
        elif str(node.get("id", "")).startswith("https://openalex.org/W") and (
            node.get("title") or node.get("display_name")
        ):
            paper = _from_openalex(node, origin)
        elif node.get("DOI") and isinstance(node.get("title"), list) and node["title"]:
            paper = _from_crossref(node, origin)
        if paper is not None:
            out.append(paper)
        for value in node.values():
            _walk(value, origin, out)
    elif isinstance(node, list):
        for value in node:
            _walk(value, origin, out)


def load_distractors(root: Path, *, require_abstract: bool = True) -> list[WebPaper]:
    """Every paper record of the recordings, de-duplicated (DOI / arXiv id / title), richest kept."""
    found: list[WebPaper] = []
    for path in sorted((root / "api").rglob("*")):
        if not path.is_file():
            continue
        origin = str(path.relative_to(root))
        try:
            bodies = list(_recorded_bodies(path))
        except (ValueError, yaml.YAMLError, UnicodeDecodeError):
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
        if len(paper.title) < 12 or paper.year is None:
            continue
        if require_abstract and not (paper.abstract and len(paper.abstract) > 150):
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


def redate(papers: list[WebPaper], window: int, now: int) -> list[WebPaper]:
    """Map every year into [now - window + 1, now] by one order-preserving linear map."""
    years = [p.year for p in papers if p.year is not None]
    if not years:
        return papers
    # a handful of classics (1950, 1980s) would squeeze everything else into two years: the map starts
    # at 1995 and anything older lands on the window's first year
    oldest, newest = max(min(years), 1995), max(max(years), now)
    span = max(1, newest - oldest)
    low = now - window + 1

    def moved(year: int | None) -> int | None:
        if year is None:
            return None
        return low + round((max(year, oldest) - oldest) * (now - low) / span)

    return [replace(p, year=moved(p.year)) for p in papers]


@cache
def _cached_literature(root: str, redate_years: int | None, with_titles_only: bool) -> tuple[WebPaper, ...]:
    base = Path(root)
    relevant = load_corpus_papers(base)
    titles = {normalise_title(p.title) for p in relevant}
    dois = {p.doi for p in relevant if p.doi}
    distractors = [
        p
        for p in load_distractors(base, require_abstract=not with_titles_only)
        if normalise_title(p.title) not in titles and p.doi not in dois
    ]
    papers = relevant + distractors
    if redate_years:
        papers = redate(papers, redate_years, datetime.now(UTC).year)
    return tuple(papers)


def literature(
    root: Path | None = None, *, redate_years: int | None = 10, with_titles_only: bool = False
) -> list[WebPaper]:
    """The 20 corpus papers followed by the distractors (abstract-bearing ones unless asked otherwise)."""
    return list(_cached_literature(str(corpus_dir(root)), redate_years, with_titles_only))
