"""An offline scholarly web over the real corpus (`../shared/corpus`), for the research-quality bench.

A loopback `ScholarlyWeb` that answers arXiv, Semantic Scholar, OpenAlex and Crossref the way the real
engines behave, over a literature made of
  - the 20 real papers of `papers/regular/` (`corpus`: metadata, abstract from the ground-truth files
    beside the PDF, else from the PDF's first page), each with its real PDF served where the extractor
    resolves it (arXiv id -> `ARXIV_PDF_BASE_URL/pdf/<id>`, DOI -> `DOI_RESOLVER_URL/<doi>`);
  - about a thousand real off-topic and near-topic distractors parsed from the recorded API responses in
    `api/` (`distractors`: arXiv Atom fixtures, Semantic Scholar / OpenAlex / Crossref VCR cassettes and
    entity files), without PDFs (404, as paywalled papers often answer).

Search semantics (`search`, served by `web`):
  - arXiv: the real `search_query` syntax (`all:`/`ti:`/`abs:`/`au:`, quoted phrases, AND / OR / ANDNOT,
    parentheses, juxtaposition = OR as in Lucene, `submittedDate:[... TO ...]`), a strict boolean match
    over stemmed tokens, ranked by BM25; only papers with an arXiv id exist there.
  - Semantic Scholar `/paper/search?query=` and OpenAlex `/works?search=`: every stemmed query word
    must occur in title+abstract, ranked by BM25 (roughly how both behave for short queries).
  - Crossref `/works?query=` / `query.bibliographic=` / `query.title=`: ranked OR over the title (and the
    abstract when the record has one); top `rows`; only DOI-registered works.
Year filters in each API's own syntax, `max_results` / `limit` / `per_page` / `rows` and offsets honoured.

Realism: `CorpusWeb(latency=True)` answers after 0.3-1.5 s per API call and 1-4 s per PDF (seeded), and
`environment()` keeps the project's real provider intervals unless `no_politeness=True`; the web records
when each provider's requests arrived and how many were open at once.

Years: the contract caps `publication_window_years` at 10 and the corpus spans 1950-2026, so by default
every record's year (relevant papers and distractors alike) is re-dated into the last ten years by one
order-preserving linear map (`literature.redate`); `redate_years=None` serves the real years.

The web's text handling (folding, Snowball stemming, BM25) is its own, independent of the project's
search code (`functions/search/text.py`): it stands in for the upstream engines the project is tested
against, so it must not agree with the project by construction.
"""

from bench.corpus_web.corpus import CORPUS_PAPERS, CorpusEntry, CorpusMissing, corpus_dir, load_corpus_papers
from bench.corpus_web.distractors import load_distractors
from bench.corpus_web.literature import literature, redate
from bench.corpus_web.paper import WebPaper
from bench.corpus_web.text import normalise_title
from bench.corpus_web.web import (
    CorpusWeb,
    Figure,
    add_condition_options,
    describe_conditions,
    figure_printer,
    project_intervals,
)

__all__ = [
    "CORPUS_PAPERS",
    "CorpusEntry",
    "CorpusMissing",
    "CorpusWeb",
    "Figure",
    "WebPaper",
    "add_condition_options",
    "corpus_dir",
    "describe_conditions",
    "figure_printer",
    "literature",
    "load_corpus_papers",
    "load_distractors",
    "normalise_title",
    "project_intervals",
    "redate",
]
