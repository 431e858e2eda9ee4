"""A small scholarly literature on one topic, served by a local ScholarlyWeb with generated PDFs.

Every paper is answered by the four search APIs (each returns the subset it would know) and has a
real PDF (built by tests.support.pdfgen) at the address the extractor derives from its identifier:
arXiv papers at `ARXIV_PDF_BASE_URL/pdf/<id>`, DOI-only papers at `DOI_RESOLVER_URL/<doi>`.
Used by the end-to-end tests and by bench/workflow.py.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from tests.support.citation_graph import CitationGraphWeb
from tests.support.pdfgen import paper_pdf
from tests.support.scholarly_fixtures import SamplePaper, install
from tests.support.scholarly_web import RecordedRequest, Reply, ScholarlyWeb

GOAL = "What are recent advances in transformer architectures?"
ARXIV_PDF_PREFIX = "/arxiv-pdf"
DOI_PREFIX = "/doi"

_THEMES = [
    ("Sparse Attention", "sparse attention", "reduced the memory use of self-attention by {a}%"),
    ("Mixture of Experts", "mixture of experts routing", "increased throughput by {a}% at equal compute"),
    ("Efficient Training", "efficient training schedules", "shortened pretraining time by {a}%"),
    ("Quantization", "low-bit quantization", "cut inference latency by {a}% with 4-bit weights"),
    ("Long Context", "long context modelling", "extended the usable context to {b} thousand tokens"),
]
_METHODS = [
    "We evaluate every model on the {bench} benchmark with five random seeds and report the mean.",
    "We run an ablation study that removes one component at a time on the {bench} benchmark.",
    "We conduct controlled experiments on {n} GPUs and compare against a dense baseline.",
    "We simulate deployment workloads and measure latency on the {bench} benchmark.",
]
_BENCHMARKS = ["GLUE", "SuperGLUE", "LongBench", "SCROLLS", "MMLU", "WikiText"]
_OFF_TOPIC = [
    ("Graph Neural Networks for Molecular Property Prediction", "molecular graphs and chemistry datasets"),
    ("Crop Yield Forecasting from Satellite Imagery", "satellite images of agricultural fields"),
    ("Bayesian Optimisation of Chemical Reactors", "reactor temperature and pressure control"),
]


@dataclass(frozen=True)
class TopicPaper:
    sample: SamplePaper
    pdf: bytes
    text: str  # every sentence written into the PDF, for grounding checks
    pdf_path: str  # path on the ScholarlyWeb serving the PDF


def _sentences(index: int, theme: tuple[str, str, str], rng: random.Random) -> dict[str, list[str]]:
    name, phrase, finding = theme
    a, b = 20 + (index * 7) % 50, 16 * (2 + index % 6)
    bench = _BENCHMARKS[index % len(_BENCHMARKS)]
    result = finding.format(a=a, b=b)
    return {
        "Introduction": [
            f"Transformer architectures dominate language modelling, and {phrase} is a promising way to "
            f"make them cheaper to train and to run (study {index + 1}).",
        ],
        "Methods": [_METHODS[index % len(_METHODS)].format(bench=bench, n=8 * (1 + index % 4))],
        "Results": [
            f"In our experiments {phrase} {result} compared with a dense transformer baseline.",
            f"On the {bench} benchmark the {name.lower()} model scored {60 + index % 30}.{index % 10} points, "
            f"within {1 + index % 3} points of the strongest transformer architecture.",
        ],
        "Discussion": [
            f"A limitation of this study is that {phrase} was only tested on English text with "
            f"{rng.choice(['two', 'three', 'four'])} model sizes.",
        ],
        "Conclusion": [f"Future work should examine {phrase} for multilingual transformer models."],
    }


def topic_papers(
    count: int, *, off_topic: int = 2, seed: int = 7, first_year: int = 2023
) -> list[TopicPaper]:
    """`count` on-topic papers (all five themes) and `off_topic` unrelated ones that screening rejects."""
    rng = random.Random(seed)
    papers: list[TopicPaper] = []
    for index in range(count + off_topic):
        on_topic = index < count
        theme = _THEMES[index % len(_THEMES)]
        if on_topic:
            title = f"{theme[0]} in Transformer Architectures: Study {index + 1} on {_BENCHMARKS[index % 6]}"
            abstract = (
                f"We study {theme[1]} for transformer architectures. Recent advances in transformer "
                f"architectures make {theme[1]} practical; we evaluate it on {_BENCHMARKS[index % 6]} and "
                "report accuracy, cost and the limitations we found."
            )
            sections = _sentences(index, theme, rng)
        else:
            title, topic = _OFF_TOPIC[(index - count) % len(_OFF_TOPIC)]
            abstract = f"We study {topic}. Our models improve forecasts over strong baselines."
            sections = {"Results": [f"Our approach improved accuracy on {topic} by 12 percent."]}
        arxiv_id = f"2{3 + index % 3}0{1 + index % 9}.{10000 + index:05d}" if index % 4 != 3 else None
        doi = f"10.5555/topic.{index:04d}"
        venue = ["NeurIPS", "ICML", "ICLR", "ACL", "Journal of Machine Learning Research", "TACL"][index % 6]
        sample = SamplePaper(
            title=title,
            abstract=abstract,
            year=first_year + index % 4,
            authors=(f"Researcher{chr(65 + index % 26)} Alpha", "Beatriz O'Neil", "Chen Wei"),
            doi=doi,
            arxiv_id=arxiv_id,
            venue=venue,
            citations=5 + (index * 13) % 200,
        )
        section_list = [
            (f"{n + 1} {name}", paragraphs) for n, (name, paragraphs) in enumerate(sections.items())
        ]
        pdf = paper_pdf(
            title=title,
            authors=", ".join(sample.authors),
            abstract=abstract,
            sections=section_list,
            references=["Vaswani et al. 2017. Attention is all you need. NeurIPS."],
        )
        text = " ".join([title, abstract, *(s for _, paragraphs in section_list for s in paragraphs)])
        path = f"{ARXIV_PDF_PREFIX}/pdf/{arxiv_id}" if arxiv_id else f"{DOI_PREFIX}/{doi}"
        papers.append(TopicPaper(sample=sample, pdf=pdf, text=text, pdf_path=path))
    return papers


def serve(web: ScholarlyWeb, papers: list[TopicPaper]) -> None:
    """Answer the search APIs with these papers and serve each PDF at its extractor address."""
    install(web, [paper.sample for paper in papers])
    by_path = {paper.pdf_path: paper for paper in papers}

    def pdf(request: RecordedRequest) -> Reply:
        path = (
            re.sub(r"(v\d+)?(\.pdf)?$", "", request.path)
            if request.path.startswith(ARXIV_PDF_PREFIX)
            else request.path
        )
        paper = by_path.get(path)
        if paper is None:
            return Reply.of({"message": f"no paper at {request.path}"}, 404)
        return Reply.of(paper.pdf, content_type="application/pdf")

    web.set_handler(ARXIV_PDF_PREFIX + "/", pdf, prefix=True)
    web.set_handler(DOI_PREFIX + "/", pdf, prefix=True)


def serve_cited_only(web: ScholarlyWeb, papers: list[TopicPaper], cited_only: TopicPaper) -> CitationGraphWeb:
    """Serve `papers` as `serve` does, and `cited_only` too (its PDF, its metadata by DOI), but no search
    returns it: every on-topic paper of `papers` references it, in the providers' citation graphs."""
    everything = [*papers, cited_only]
    serve(web, everything)
    hidden = len(papers)
    on_topic = [i for i, paper in enumerate(papers) if "Transformer" in paper.sample.title]
    graph = CitationGraphWeb(
        [p.sample for p in everything], {i: [hidden] for i in on_topic}, searchable=hidden
    )
    graph.install(web)
    return graph


# What a bench measured under `environment()` must say: in its header, and beside each figure.
INTERVALS_OFF = "[provider intervals off]"
NO_POLITENESS = (
    "provider intervals OFF (every SEARCH_*_MIN_INTERVAL_SECONDS = 0): not the real web's rate limits "
    "(bench.concurrency and bench.quality measure under those)"
)


def figure(*values: object, **options: Any) -> None:
    """Prints a bench's figure measured under `environment()`, with INTERVALS_OFF beside it."""
    print(*values, INTERVALS_OFF, **options)


def environment(web: ScholarlyWeb, **extra: str) -> dict[str, str]:
    """Settings that point every upstream (search APIs, PDF hosts) at the local web, provider spacing
    off (`NO_POLITENESS` says so beside a bench's figures)."""
    return {
        **web.env(),
        "ARXIV_PDF_BASE_URL": web.url(ARXIV_PDF_PREFIX),
        "DOI_RESOLVER_URL": web.url(DOI_PREFIX),
        "SEARCH_ARXIV_MIN_INTERVAL_SECONDS": "0",
        "SEARCH_SEMANTIC_SCHOLAR_MIN_INTERVAL_SECONDS": "0",
        "SEARCH_OPENALEX_MIN_INTERVAL_SECONDS": "0",
        "SEARCH_CROSSREF_MIN_INTERVAL_SECONDS": "0",
        "SEARCH_ARXIV_PDF_MIN_INTERVAL_SECONDS": "0",
        "SEARCH_UNPAYWALL_MIN_INTERVAL_SECONDS": "0",
        "LLM_PROVIDER": "none",
        **extra,
    }


def normalise(text: str) -> str:
    return " ".join(text.split()).lower()
