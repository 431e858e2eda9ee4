"""The literature the answer engine's end-to-end tests and bench/answer.py serve, and the checks they share.

The transformer topic of `scholarly_topic` (on-topic papers with real PDFs, off-topic ones that relevance
ranking rejects) plus two papers on activation checkpointing whose abstracts report different memory
savings for the same measurement: the disagreement the `contracrow` preset must find.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import uvicorn

from functions.local_runtime.gateway import Gateway, load_function_apps
from tests.e2e.scholarly_topic import ARXIV_PDF_PREFIX, DOI_PREFIX, TopicPaper, topic_papers
from tests.support.pdfgen import paper_pdf
from tests.support.scholarly_fixtures import SamplePaper

# A question the served papers answer (the seed's "What is RAG and how does it work?", on this topic).
QUESTION = "What is sparse attention and how does it work in transformer architectures?"
# The seed's own /api/v1/ask example: nothing on a transformer literature answers it.
UNANSWERABLE = "What is the capital of France?"
CONTRADICTION_QUESTION = (
    "How much does activation checkpointing reduce the peak memory of transformer training?"
)
# The two abstracts' disagreeing sentences (62 vs 14 percent for the same quantity).
HIGH_SAVING = (
    "Activation checkpointing reduced the peak memory of transformer training by 62 percent on eight GPUs."
)
LOW_SAVING = (
    "Activation checkpointing reduced the peak memory of transformer training by 14 percent on eight GPUs."
)

# Every path prefix a PDF of the served literature is fetched under.
PDF_PREFIXES = (ARXIV_PDF_PREFIX, DOI_PREFIX)


def _paper(
    title: str,
    abstract: str,
    sections: list[tuple[str, list[str]]],
    *,
    year: int,
    doi: str,
    arxiv_id: str | None,
    authors: tuple[str, str],
) -> TopicPaper:
    sample = SamplePaper(
        title=title,
        abstract=abstract,
        year=year,
        authors=authors,
        doi=doi,
        arxiv_id=arxiv_id,
        venue="Transactions on Machine Learning Research",
        citations=40,
    )
    pdf = paper_pdf(
        title=title, authors=", ".join(authors), abstract=abstract, sections=sections, references=[]
    )
    text = " ".join([title, abstract, *(s for _, paragraphs in sections for s in paragraphs)])
    path = f"{ARXIV_PDF_PREFIX}/pdf/{arxiv_id}" if arxiv_id else f"{DOI_PREFIX}/{doi}"
    return TopicPaper(sample=sample, pdf=pdf, text=text, pdf_path=path)


def _disagreeing_paper(index: int, finding: str, year: int, arxiv_id: str | None) -> TopicPaper:
    title = (
        "Activation Checkpointing for Memory-Efficient Transformer Training"
        if index == 0
        else "Revisiting Activation Checkpointing in Large Transformer Training"
    )
    sections = [
        (
            "1 Introduction",
            [
                "Activation checkpointing trades recomputation for memory when training deep transformer "
                "models on accelerators with little memory."
            ],
        ),
        (
            "2 Methods",
            [
                f"We train transformer models with and without activation checkpointing on {8 * (index + 1)} GPUs."
            ],
        ),
        ("3 Results", [finding]),
    ]
    return _paper(
        title,
        f"We measure activation checkpointing for transformer training. {finding}",
        sections,
        year=year,
        doi=f"10.5555/checkpointing.{index:04d}",
        arxiv_id=arxiv_id,
        authors=(f"Ingrid Checkpoint{index}", "Tomas Memory"),
    )


def team_papers() -> list[TopicPaper]:
    """Two internal reports on sparse attention that are on no search API: uploaded with POST
    /v1/documents, they stand for the seed's `doc-001` and `doc-002`."""
    year = datetime.now(UTC).year
    reports = [
        (
            "Block Kernels for Sliding Window Attention: an Internal Evaluation",
            "Sparse attention restricts every token to a sliding window of neighbours, so the cost of "
            "attention grows linearly with the sequence length.",
            "Our block kernels for sliding window sparse attention ran 3.1 times faster than dense "
            "attention on sequences of 16 thousand tokens.",
        ),
        (
            "Guidance for Deploying Sparse Attention Transformers in Production Search",
            "Sparse attention transformers attend to a few global tokens and to local windows, which keeps "
            "long documents within the memory of one accelerator.",
            "In production search the sparse attention transformer matched the ranking quality of the dense "
            "model while serving twice as many queries per second.",
        ),
    ]
    return [
        _paper(
            title,
            abstract,
            [
                ("1 Approach", ["We benchmark the kernels on our own search workloads."]),
                ("2 Findings", [finding]),
            ],
            year=year,
            doi=f"10.5555/team.{index:04d}",
            arxiv_id=None,
            authors=(f"Team Author{index}", "Internal Reviewer"),
        )
        for index, (title, abstract, finding) in enumerate(reports)
    ]


def answer_papers() -> list[TopicPaper]:
    """Nine on-topic transformer papers, three off-topic ones, and the two that disagree. Years count
    back from the current one (the `news` focus keeps the last two years): the transformer papers are
    from the last four years, the disagreeing ones from four years and one year ago."""
    year = datetime.now(UTC).year
    return [
        *topic_papers(9, off_topic=3, first_year=year - 3),
        _disagreeing_paper(0, HIGH_SAVING, year - 4, "2207.40001"),
        _disagreeing_paper(1, LOW_SAVING, year - 1, None),
    ]


def paper_for(citation: dict[str, Any], papers: list[TopicPaper]) -> TopicPaper:
    """The served paper a citation (either face's shape) names, by its title."""
    found = [paper for paper in papers if paper.sample.title == citation["title"]]
    assert len(found) == 1, citation
    return found[0]


@contextmanager
def gateway_server() -> Iterator[str]:
    """Every function app behind the local runtime's gateway, served by uvicorn on a free loopback port
    as `make run` serves it (inside an EmbeddedAws the caller started); yields the base URL."""
    # The socket listens before the server thread starts: early requests wait in its backlog.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(Gateway(load_function_apps()), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()
