"""A small PDF writer for tests: Helvetica text at given positions, several pages, real xref table.

pypdfium2 cannot write text PDFs, and test PDFs must be generated in the test; this writes raw PDF
objects. `paper_pdf` lays out a two-column paper (title, authors, abstract, numbered sections,
references) with simple word wrapping.
"""

from __future__ import annotations

import textwrap
import zlib
from dataclasses import dataclass
from functools import cache

PAGE_WIDTH, PAGE_HEIGHT = 612, 792


@dataclass(frozen=True)
class TextRun:
    x: float
    y: float
    size: float
    text: str


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def build_pdf(
    pages: list[list[TextRun]],
    *,
    title: str | None = None,
    raw_streams: dict[int, bytes] | None = None,
    author: str | None = None,
    deflated_streams: dict[int, bytes] | None = None,
) -> bytes:
    """One PDF with one content stream per page; `raw_streams` replaces a page's stream (damaged pages),
    `deflated_streams` with one already deflated (written with /Filter /FlateDecode);
    `title`/`author` fill the document information dictionary."""
    objects: list[bytes] = []
    page_ids: list[int] = []
    first_page_id = 4
    for index, runs in enumerate(pages):
        page_id = first_page_id + 2 * index
        page_ids.append(page_id)
        stream = (raw_streams or {}).get(index)
        deflated = (deflated_streams or {}).get(index)
        if deflated is not None:
            stream = deflated
        elif stream is None:
            parts = [
                f"BT /F1 {r.size:g} Tf 1 0 0 1 {r.x:g} {r.y:g} Tm ({_escape(r.text)}) Tj ET" for r in runs
            ]
            stream = "\n".join(parts).encode("latin-1", "replace")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_WIDTH} {PAGE_HEIGHT}] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_id + 1} 0 R >>".encode()
        )
        flate = b" /Filter /FlateDecode" if deflated is not None else b""
        objects.append(b"<< /Length %d%s >>\nstream\n" % (len(stream), flate) + stream + b"\nendstream")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    header = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(page_ids)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    all_objects = header + objects
    info_id = None
    info = "".join(
        f" /{key} ({_escape(value)})" for key, value in (("Title", title), ("Author", author)) if value
    )
    if info:
        all_objects.append(f"<<{info} >>".encode("latin-1", "replace"))
        info_id = len(all_objects)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: list[int] = []
    for number, body in enumerate(all_objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(all_objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    trailer = f"<< /Size {len(all_objects) + 1} /Root 1 0 R"
    if info_id:
        trailer += f" /Info {info_id} 0 R"
    out += f"trailer\n{trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


class _Flow:
    """Fills two columns per page from top to bottom."""

    def __init__(self, top: float) -> None:
        self.pages: list[list[TextRun]] = [[]]
        self.column = 0
        self.y = top

    def line(self, text: str, size: float = 10.0, gap: float = 14.0) -> None:
        if self.y < 250:
            if self.column == 0:
                self.column, self.y = 1, 740
            else:
                self.pages.append([])
                self.column, self.y = 0, 740
        x = 56 if self.column == 0 else 316
        self.pages[-1].append(TextRun(x, self.y, size, text))
        self.y -= gap

    def paragraph(self, text: str, width: int = 48) -> None:
        for piece in textwrap.wrap(text, width):
            self.line(piece)
        self.y -= 4


def paper_pages(
    *,
    title: str,
    authors: str,
    abstract: str,
    sections: list[tuple[str, list[str]]],
    references: list[str],
    title_continuation: list[str] | None = None,
    type_label: str | None = None,
    author_block: list[TextRun] | None = None,
) -> list[list[TextRun]]:
    """The pages of `paper_pdf`. `title_continuation`: further title lines in the title's size;
    `type_label`: an article-type label ("Research Article") above the title, in the same size;
    `author_block`: runs placed between the title and the abstract (y from about 705 down to 650)
    instead of the one `authors` line (see `author_block`)."""
    flow = _Flow(top=640)
    title_lines = [title, *(title_continuation or [])]
    header = [TextRun(72, 730 - 21 * i, 17, line) for i, line in enumerate(title_lines)]
    if type_label:
        header.insert(0, TextRun(72, 756, 17, type_label))
    if author_block is None:
        header.append(TextRun(72, 700 - 21 * (len(title_lines) - 1), 11, authors))
    else:
        header.extend(author_block)
    flow.pages[0].extend(header)
    flow.line("Abstract", size=12, gap=15)
    flow.paragraph(abstract)
    for heading, paragraphs in sections:
        flow.y -= 6
        flow.line(heading, size=12, gap=15)
        for paragraph in paragraphs:
            flow.paragraph(paragraph)
    flow.y -= 6
    flow.line("References", size=12, gap=15)
    for reference in references:
        flow.paragraph(reference)
    return flow.pages


def paper_pdf(
    *,
    title: str,
    authors: str,
    abstract: str,
    sections: list[tuple[str, list[str]]],
    references: list[str],
) -> bytes:
    pages = paper_pages(
        title=title, authors=authors, abstract=abstract, sections=sections, references=references
    )
    return build_pdf(pages, title=None)


def cover_page(repository: str, lines: list[str]) -> list[TextRun]:
    """A repository cover sheet: the archive's name in large type, then its boilerplate lines."""
    runs = [TextRun(72, 740, 28, repository)]
    runs += [TextRun(72, 690 - 18 * i, 11, line) for i, line in enumerate(lines)]
    return runs


SAMPLE_TITLE = "Sparse Attention Routing for Efficient Long Document Transformers"
SAMPLE_ABSTRACT = (
    "Transformers scale quadratically with sequence length, which limits their use on long scientific "
    "documents. We propose a sparse attention routing scheme that selects a small set of key blocks for "
    "every query block. On three long-document benchmarks our method reduces training time by 38% while "
    "keeping accuracy within 0.4 points of dense attention."
)
SAMPLE_SECTIONS: list[tuple[str, list[str]]] = [
    (
        "1 Introduction",
        [
            "Long documents such as scientific articles and legal contracts exceed the context of most "
            "pretrained models. Prior work truncates the input or splits it into chunks, which discards "
            "dependencies between distant passages.",
            "We show that a learned routing of attention blocks keeps these dependencies at a fraction of "
            "the cost. Our contributions are a routing layer, a training recipe and an evaluation on "
            "three benchmarks.",
        ],
    ),
    (
        "2 Methods",
        [
            "We train a twelve layer encoder with a hidden size of 768 on 40 billion tokens of scientific "
            "text. Every layer groups the sequence into blocks of 64 tokens and a router scores the key "
            "blocks for each query block. The top eight blocks are kept and the rest are masked.",
            "The router is trained jointly with the encoder using a straight-through estimator. We use the "
            "AdamW optimizer with a learning rate of 0.0003 and a batch size of 256 sequences.",
        ],
    ),
    (
        "3 Results",
        [
            "Sparse routing reduced training time by 38% compared with dense attention on sequences of "
            "8192 tokens. Accuracy on the document classification benchmark was 91.2%, within 0.4 points "
            "of the dense baseline.",
            "The routed model outperformed the sliding window baseline by 2.7 F1 points on long document "
            "question answering. Memory use at inference was reduced by 45% for inputs of 16384 tokens.",
        ],
    ),
    (
        "4 Discussion",
        [
            "The gains grow with sequence length because the number of kept blocks is constant. A "
            "limitation of this study is that all benchmarks are in English and in the scientific domain.",
        ],
    ),
    (
        "5 Conclusion",
        [
            "Learned block routing makes attention over long documents affordable without a loss in "
            "accuracy. Future work will apply the router to decoder models.",
        ],
    ),
]
SAMPLE_REFERENCES = [
    "Ashish Vaswani, Noam Shazeer, Niki Parmar, Jakob Uszkoreit, Llion Jones, Aidan N. Gomez, Lukasz "
    "Kaiser, and Illia Polosukhin. 2017. Attention is all you need. In Advances in Neural Information "
    "Processing Systems.",
    "Iz Beltagy, Matthew E. Peters, and Arman Cohan. 2020. Longformer: The long-document transformer. "
    "arXiv preprint.",
    "Manzil Zaheer, Guru Guruganesh, Avinava Dubey, and Joshua Ainslie. 2020. Big bird: Transformers for "
    "longer sequences. In Advances in Neural Information Processing Systems.",
]


SAMPLE_AUTHORS = "Maria Keller and Tomas Lindqvist"


def sample_paper_pages(
    *,
    title: str = SAMPLE_TITLE,
    authors: str = SAMPLE_AUTHORS,
    abstract: str = SAMPLE_ABSTRACT,
    title_continuation: list[str] | None = None,
    type_label: str | None = None,
    author_block: list[TextRun] | None = None,
) -> list[list[TextRun]]:
    """`paper_pages` of the sample paper (its sections and references), with the parts a test varies."""
    return paper_pages(
        title=title,
        authors=authors,
        abstract=abstract,
        sections=SAMPLE_SECTIONS,
        references=SAMPLE_REFERENCES,
        title_continuation=title_continuation,
        type_label=type_label,
        author_block=author_block,
    )


def sample_paper_pdf(title: str = SAMPLE_TITLE) -> bytes:
    return build_pdf(sample_paper_pages(title=title), title=None)


def author_block(
    columns: list[list[str]], *, top: float = 705, size: float = 11, small: float = 9, width: float = 180
) -> list[TextRun]:
    """An author block: one column per list, its first line (names) in `size`, the rest (affiliation,
    address, e-mail) in `small`, columns `width` points apart starting at x=72. Written row by row,
    so a PDF reader sees each row as one line with wide gaps."""
    runs: list[TextRun] = []
    for row in range(max((len(column) for column in columns), default=0)):
        for index, column in enumerate(columns):
            if row < len(column):
                size_of_row = size if row == 0 else small
                runs.append(TextRun(72 + width * index, top - 13 * row, size_of_row, column[row]))
    return runs


def paper_with_authors(
    runs: list[TextRun], *, title: str = SAMPLE_TITLE, metadata_author: str | None = None
) -> bytes:
    """`sample_paper_pdf` with its author line replaced by `runs` (and an optional /Author entry)."""
    return build_pdf(sample_paper_pages(title=title, authors="", author_block=runs), author=metadata_author)


BOMB_LINE = b"BT /F1 9 Tf 72 700 Td (All work and no play makes a dull parser.) Tj ET\n"


@cache
def deflated_repeats(line: bytes, inflated_bytes: int) -> bytes:
    """`line` repeated to `inflated_bytes`, deflated at level 9 a megabyte at a time (never held whole)."""
    block = line * (1024 * 1024 // len(line))
    compressor = zlib.compressobj(9)
    parts: list[bytes] = []
    written = 0
    while written < inflated_bytes:
        piece = block[: inflated_bytes - written]
        parts.append(compressor.compress(piece))
        written += len(piece)
    parts.append(compressor.flush())
    return b"".join(parts)


def bomb_pdf(inflated_bytes: int = 200 * 1024 * 1024, *, pages: int = 1) -> bytes:
    """A small PDF whose page content streams each inflate (FlateDecode) to `inflated_bytes` of real
    text operators: a decompression bomb of a few hundred kilobytes."""
    stream = deflated_repeats(BOMB_LINE, inflated_bytes)
    return build_pdf(
        [[] for _ in range(pages)],
        title="Quarterly figures",
        deflated_streams=dict.fromkeys(range(pages), stream),
    )
