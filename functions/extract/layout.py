"""The document as located lines and sections: every piece of text keeps its page and character offsets.

Headings are recognised from the text alone (numbered `1`, `2.3`, `IV.`; or a known name such as
"Introduction", "Materials and Methods", "References"), with a numbering sequence check so that list
items and table rows are not taken for sections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from functions.extract.pdf import PageText

SECTION_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("abstract", ("abstract", "summary")),
    ("references", ("references", "bibliography", "literature cited", "works cited", "reference")),
    ("acknowledgements", ("acknowledgement", "acknowledgment", "funding")),
    ("appendix", ("appendix", "supplementary", "supplemental")),
    ("introduction", ("introduction", "background", "motivation", "overview", "preliminar")),
    ("related_work", ("related work", "prior work", "previous work", "literature review")),
    ("limitations", ("limitation", "threats to validity")),
    ("future_work", ("future work", "future direction", "outlook")),
    ("conclusion", ("conclusion", "concluding", "summary and", "closing")),
    ("discussion", ("discussion", "analysis", "implication", "interpretation")),
    ("methods", ("methodolog", "materials and", "setup", "set-up", "experimental design", "study design")),
    (
        "results",
        (
            "result",
            "experiment",
            "evaluation",
            "finding",
            "performance",
            "empirical",
            "benchmark",
            "case study",
        ),
    ),
    (
        "methods",
        (
            "method",
            "approach",
            "materials",
            "model",
            "design",
            "setup",
            "set-up",
            "data",
            "procedure",
            "framework",
            "algorithm",
            "architecture",
            "implementation",
            "system",
            "technique",
            "protocol",
            "formulation",
            "problem",
            "participants",
            "study area",
            "sampling",
        ),
    ),
)
KNOWN_UNNUMBERED = frozenset(
    {
        "abstract",
        "summary",
        "introduction",
        "background",
        "related work",
        "related works",
        "methods",
        "method",
        "methodology",
        "materials and methods",
        "material and methods",
        "methods and materials",
        "experimental",
        "experimental setup",
        "experiments",
        "results",
        "results and discussion",
        "discussion",
        "discussions",
        "conclusion",
        "conclusions",
        "conclusions and future work",
        "concluding remarks",
        "limitations",
        "future work",
        "evaluation",
        "references",
        "bibliography",
        "literature cited",
        "acknowledgements",
        "acknowledgments",
        "acknowledgement",
        "acknowledgment",
        "appendix",
        "keywords",
    }
)
_NUMBERED = re.compile(
    r"^(?P<num>\d{1,2}(?:\.\d{1,2}){0,3}|[IVX]{1,5}|[A-H])(?:\.|\s)\s*(?P<title>[A-Z][^\n]{1,90})$"
)
_STOP_WORDS_IN_HEADING = re.compile(
    r"university|institute|department|laboratory|college|school of|@|http|www\.|\bet al\b|©|copyright",
    re.IGNORECASE,
)


@dataclass(slots=True)
class Line:
    page: int
    start: int  # offsets into that page's normalised text
    end: int
    text: str


@dataclass(slots=True)
class Section:
    title: str
    kind: str  # one of SECTION_KINDS' names or "other"
    line_index: int  # index of the heading line; the body starts after it
    end_line: int = 0  # exclusive


def document_lines(pages: list[PageText]) -> list[Line]:
    lines: list[Line] = []
    for page in pages:
        offset = 0
        for text in page.text.split("\n"):
            if text:
                lines.append(Line(page.number, offset, offset + len(text), text))
            offset += len(text) + 1
    return lines


def section_kind(title: str) -> str:
    lowered = title.lower()
    for kind, keywords in SECTION_KINDS:
        if any(keyword in lowered for keyword in keywords):
            return kind
    return "other"


def _clean_heading(text: str) -> str:
    return re.sub(r"[\s.:]+$", "", text).strip()


def _plain_heading(text: str) -> str | None:
    candidate = _clean_heading(text).lower()
    if candidate in KNOWN_UNNUMBERED:
        return _clean_heading(text)
    return None


def _numbered_heading(text: str) -> tuple[str, str] | None:
    match = _NUMBERED.match(text)
    if not match:
        return None
    number, title = match.group("num"), _clean_heading(match.group("title"))
    words = title.split()
    if not 1 <= len(words) <= 9 or title.endswith((",", ";", "-")):
        return None
    if _STOP_WORDS_IN_HEADING.search(title) or re.search(r"\d|=|\(|\)|\[|%", title):
        return None
    if sum(ch.isalpha() for ch in title) < 0.8 * len(title.replace(" ", "")):
        return None
    # Roman or letter numbering: only with an upper-case heading or a known name.
    if not number[0].isdigit() and not (title.isupper() or section_kind(title) != "other"):
        return None
    return number, title


def find_sections(lines: list[Line]) -> list[Section]:
    sections: list[Section] = []
    last_top = 0
    running = _running_heads(lines)
    roman = {"I": 1, "II": 2, "III": 3, "IV": 4, "V": 5, "VI": 6, "VII": 7, "VIII": 8, "IX": 9, "X": 10}
    for index, line in enumerate(lines):
        text = line.text.strip()
        if len(text) > 100 or _head_key(text) in running:
            continue
        plain = _plain_heading(text)
        if plain is None and text.isupper() and len(text.split()) <= 5:
            plain = _plain_heading(text.title())
        if plain is not None:
            sections.append(Section(plain, section_kind(plain), index))
            continue
        numbered = _numbered_heading(text)
        if numbered is None:
            continue
        number, title = numbered
        head = number.split(".")[0]
        if head.isdigit():
            top = int(head)
        elif head in roman:
            top = roman[head]
        else:
            top = ord(head) - ord("A") + 1
            if sections and sections[-1].kind not in ("references", "appendix", "acknowledgements"):
                continue  # lettered headings only after the main matter (appendices)
            sections.append(Section(f"{number} {title}", "appendix", index))
            continue
        subsection = "." in number
        if subsection and top != last_top:
            continue
        if not subsection and top not in (last_top + 1, last_top + 2):
            continue
        # A numbered heading line is short and the next line usually starts a sentence.
        if not subsection:
            last_top = top
        sections.append(Section(f"{number} {title}", section_kind(title), index))
    for position, section in enumerate(sections):
        section.end_line = sections[position + 1].line_index if position + 1 < len(sections) else len(lines)
    return sections


def _head_key(text: str) -> str:
    return re.sub(r"^[\dIVX.]+\s+|\s+\d+$", "", text).lower()


def _running_heads(lines: list[Line]) -> set[str]:
    """Page headers ("4 TIMP: Modeling ...") look like numbered headings; they repeat across pages."""
    pages: dict[str, set[int]] = {}
    for line in lines:
        if len(line.text) <= 100:
            pages.setdefault(_head_key(line.text), set()).add(line.page)
    return {key for key, seen in pages.items() if len(seen) >= 3 and key not in KNOWN_UNNUMBERED}


def inherited_kinds(sections: list[Section]) -> list[str]:
    """Subsections and unnamed sections take the kind of the top-level section they sit in."""
    kinds: list[str] = []
    parent = "other"
    for section in sections:
        number = section.title.split(" ", 1)[0]
        is_sub = bool(re.match(r"^\d+\.\d", number))
        if not is_sub:
            parent = section.kind
            kinds.append(section.kind)
        else:
            kinds.append(section.kind if section.kind != "other" else parent)
    return kinds
