"""From page text to a structured paper: title, authors, abstract, sections, references, findings,
methodology and page-located evidence. Deterministic and lean (no model): the whole analysis of a
typical paper runs in tens of milliseconds.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from functions.common.models import EvidenceQuote
from functions.common.text import sentence_spans
from functions.extract import authors
from functions.extract.frontmatter import (
    clean_abstract,
    is_cover_page,
    is_repository_name,
    is_type_label,
    strip_type_label,
)
from functions.extract.identifiers import XMP_TITLE
from functions.extract.layout import Line, Section, document_lines, find_sections, inherited_kinds
from functions.extract.pdf import PageText, SizedLine
from functions.extract.references import format_reference, join_hyphenated, split_references

FINDING_MIN, FINDING_MAX = 50, 200
METHOD_MIN, METHOD_MAX = 200, 1000
MAX_FINDINGS, MIN_FINDINGS = 7, 3
MAX_EVIDENCE = 24

_RESULT_CUE = re.compile(
    r"\b(we (?:show|find|found|demonstrate|observe|observed|report|obtain|achieve|achieved|confirm)"
    r"|results? (?:show|shows|indicate|suggest|demonstrate|reveal|confirm)|outperform\w*|improv\w*"
    r"|achiev\w*|significant\w*|increas\w*|decreas\w*|reduc\w*|higher|lower|better|worse|accura\w*"
    r"|effective\w*|correlat\w*|associated with|led to|leads to|yield\w*|gains?|superior|robust\w*"
    r"|state[- ]of[- ]the[- ]art|faster|slower|fewer|more than|less than|compared (?:to|with))\b",
    re.IGNORECASE,
)
_QUANTITY = re.compile(
    r"\d+(?:\.\d+)?\s?%|\bp\s?[<=>]\s?0?\.\d+|\b\d+(?:\.\d+)?\s?(?:x|times|fold)\b|\b0?\.\d{2,}\b"
    r"|\b\d+(?:\.\d+)?\s?(?:points?|ms|s|hours?|mg|kg|km)\b",
    re.IGNORECASE,
)
_METHOD_CUE = re.compile(
    r"\b(we (?:propose|present|introduce|use|used|train|trained|collect|collected|develop|developed|"
    r"apply|applied|employ|employed|conduct|conducted|design|designed|model|analy[sz]ed?|build|built|"
    r"measure|measured|sample|sampled|evaluate|evaluated|compute|computed)|our (?:method|approach|model|"
    r"framework|system|algorithm)|participants|(?:data|samples?) (?:were|was) (?:collected|obtained|"
    r"analy[sz]ed)|(?:was|were) (?:measured|estimated|computed|recorded|performed))\b",
    re.IGNORECASE,
)
_NOISE_START = re.compile(r"^(figure|fig\.|table|tab\.|algorithm|equation|eq\.|copyright|©|\(?[a-z]\))", re.I)
_KEYWORDS_LINE = re.compile(
    r"^(keywords|key words|index terms|ccs concepts|general terms|categories and subject|"
    r"acm reference|jel|subjects?)\b",
    re.IGNORECASE,
)
_ABSTRACT_LABEL = re.compile(r"^(abstract|summary)\b[\s.:\u2014\u2013-]*(?P<rest>.*)$", re.IGNORECASE)
_TITLE_JUNK = re.compile(
    r"arxiv:|proceedings|journal|conference|vol\.|volume|issn|doi|preprint|copyright|©|http|www\.|"
    r"published|accepted|received|submitted|page \d|pp\.|workshop|transactions|letters?\b",
    re.IGNORECASE,
)
_AFFILIATION = re.compile(
    r"universit|institut|department|dept\.|laborator|college|school|centre|center|@|\.edu|\.com|"
    r"research|inc\.|corporation|hospital|faculty|academy|e-?mail",
    re.IGNORECASE,
)
# Never in a title line, not even next to one.
_STRONG_TITLE_JUNK = re.compile(r"arxiv:|https?:|www\.|©|\bissn\b|\bdoi\s*:|@|\bvol\.|\bpp\.", re.I)
_BAD_META_TITLE = re.compile(r"untitled|microsoft word|\.dvi|\.tex|\.pdf|\.doc|^\d+$|^paper\b", re.I)

KIND_WEIGHT = {
    "abstract": 1.0,
    "results": 1.0,
    "conclusion": 1.0,
    "discussion": 0.85,
    "introduction": 0.55,
    "other": 0.45,
    "limitations": 0.4,
    "future_work": 0.3,
    "methods": 0.3,
    "front": 0.3,
    "related_work": 0.05,
    "appendix": 0.1,
}
EXCLUDED_KINDS = frozenset({"references", "acknowledgements"})
FOCUS_KINDS = {
    "method": "methods",
    "methodology": "methods",
    "methods": "methods",
    "results": "results",
    "result": "results",
    "findings": "results",
    "conclusions": "conclusion",
    "conclusion": "conclusion",
    "discussion": "discussion",
    "limitations": "limitations",
    "future work": "future_work",
    "introduction": "introduction",
    "background": "introduction",
}


@dataclass(slots=True)
class Sentence:
    page: int
    start: int
    end: int
    text: str
    kind: str
    section: str
    order: int
    score: float = 0.0


@dataclass(slots=True)
class Analysis:
    title: str = ""
    authors: list[str] = field(default_factory=list)
    abstract: str = ""
    sections: list[str] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)
    key_findings: list[str] = field(default_factory=list)
    methodology: str = ""
    evidence: list[EvidenceQuote] = field(default_factory=list)
    confidence_score: float = 0.0
    findings_from_abstract_only: bool = False


def analyse(
    pages: list[PageText],
    *,
    first_page_lines: list[SizedLine] | None = None,
    second_page_lines: list[SizedLine] | None = None,
    metadata: dict[str, str] | None = None,
    focus_areas: list[str] | None = None,
) -> Analysis:
    metadata = metadata or {}
    usable = [page for page in pages if page.text and "garbled" not in page.flags]
    lines = document_lines(usable)
    sections = find_sections(lines)
    kinds = inherited_kinds(sections)
    result = Analysis()
    front_page, sized = _front_page(usable, first_page_lines or [], second_page_lines or [])
    result.title = _title(sized, lines, metadata, front_page)
    result.authors = _authors(sized, result.title, metadata)
    abstract_span = _abstract_span(lines, sections, sized, front_page)
    if abstract_span:
        result.abstract = " ".join(lines[i].text for i in range(*abstract_span)).strip()
    elif metadata.get("abstract"):
        result.abstract = metadata["abstract"].strip()
    result.abstract = clean_abstract(join_hyphenated(result.abstract))
    result.sections = [s.title for s in sections if s.kind != "abstract"]
    references = _reference_entries(lines, sections)
    result.citations = [c for c in (format_reference(r) for r in references) if c]

    sentences = _sentences(usable, lines, sections, kinds, abstract_span)
    focus_terms, focus_kinds = _focus(focus_areas or [])
    for sentence in sentences:
        sentence.score = _finding_score(sentence, focus_terms, focus_kinds)
    findings = _pick_findings(sentences)
    result.findings_from_abstract_only = bool(findings) and all(s.kind == "abstract" for s in findings)
    result.key_findings = [s.text for s in findings]
    method_sentences = _method_sentences(sentences)
    result.methodology = " ".join(s.text for s in method_sentences)
    conclusion_sentences = _conclusion_sentences(sentences)
    result.evidence = _evidence(
        sentences, findings, method_sentences, conclusion_sentences, focus_terms, focus_kinds
    )
    quality = len(usable) / max(1, len(pages))
    result.confidence_score = _confidence(result, len(sections), quality)
    return result


# --- title, authors, abstract ---------------------------------------------------------------------


def _front_page(
    pages: list[PageText], first: list[SizedLine], second: list[SizedLine]
) -> tuple[int, list[SizedLine]]:
    """The page where the article starts (2 behind a repository cover sheet) and its sized lines."""
    on_page_two = len(pages) >= 2 and pages[0].number == 1 and pages[1].number == 2
    if on_page_two and second and is_cover_page(pages[0].text, first, pages[1].text):
        return 2, second
    return (pages[0].number if pages else 1), first


def _usable_meta_title(value: str) -> str:
    title = strip_type_label(" ".join(value.split()))
    if _TITLE_JUNK.search(title) or _BAD_META_TITLE.search(title) or is_repository_name(title):
        return ""
    return title


def _title(sized: list[SizedLine], lines: list[Line], metadata: dict[str, str], front_page: int) -> str:
    from rapidfuzz import fuzz  # on first use, not with the handler (bench/cold_start.py)

    front_text = " ".join(line.text for line in lines if line.page == front_page)
    # Embedded titles are often junk ("Microsoft Word - paper.docx"): used only when the page shows them.
    for key in (XMP_TITLE, "Title", "title"):
        meta_title = _usable_meta_title(metadata.get(key, ""))
        if (
            meta_title
            and len(meta_title.split()) >= 3
            and (not front_text or fuzz.partial_ratio(meta_title.lower(), front_text.lower()) >= 90)
        ):
            return meta_title
    from_fonts = _title_from_fonts(sized)
    if from_fonts:
        return from_fonts
    meta_title = _usable_meta_title(metadata.get("Title", metadata.get("title", "")))
    if meta_title and len(meta_title.split()) >= 2:
        return meta_title
    for line in [line for line in lines if line.page >= front_page][:15]:
        text = strip_type_label(line.text)
        words = text.split()
        if (
            3 <= len(words) <= 25
            and not _TITLE_JUNK.search(text)
            and not _AFFILIATION.search(text)
            and not is_repository_name(text)
        ):
            return text
    return ""


def _title_line(line: SizedLine, *, seed: bool) -> bool:
    """Can this line be part of a title? A seed must be free of venue words too ("Journal", "Letters");
    a neighbour of a seed in the same type size may contain them ("... for Physical Review Letters")."""
    text = line.text
    if (
        line.top >= 500
        or sum(ch.isalpha() for ch in text) < (4 if seed else 2)
        or _ABSTRACT_LABEL.match(text)
        or is_type_label(text)
        or is_repository_name(text)
        or _STRONG_TITLE_JUNK.search(text)
    ):
        return False
    return not (seed and (line.top >= 450 or _TITLE_JUNK.search(text)))


def _title_from_fonts(sized: list[SizedLine]) -> str:
    seeds = [index for index, line in enumerate(sized) if _title_line(line, seed=True)]
    if not seeds:
        return ""
    body = statistics.median(line.height for line in sized)
    biggest = max(sized[index].height for index in seeds)
    if biggest < body * 1.1:
        return ""

    def same_size(line: SizedLine) -> bool:
        return abs(line.height - biggest) <= 0.08 * biggest

    seed = next(index for index in seeds if same_size(sized[index]))
    first = last = seed
    # A title may run over several lines of the same size, above and below the seed line.
    while (
        first > 0
        and same_size(sized[first - 1])
        and _title_line(sized[first - 1], seed=False)
        and 0 <= sized[first].top - sized[first - 1].top <= 3.0 * biggest
    ):
        first -= 1
    while (
        last + 1 < len(sized)
        and same_size(sized[last + 1])
        and _title_line(sized[last + 1], seed=False)
        and 0 <= sized[last + 1].top - sized[last].top <= 3.0 * biggest
    ):
        last += 1
    title = " ".join(line.text for line in sized[first : last + 1])
    title = join_hyphenated(re.sub(r"\s+", " ", title)).strip(" .*\u2020\u2021\u2217")
    title = strip_type_label(title)
    if title.isupper():
        title = title.title()
    return title if len(title.split()) >= 2 else ""


def _authors(sized: list[SizedLine], title: str, metadata: dict[str, str]) -> list[str]:
    embedded = authors.from_metadata(metadata.get("Author", metadata.get("author", "")))
    layout = authors.from_layout(sized, title) if title else []
    return authors.choose(embedded, layout)


def _abstract_span(
    lines: list[Line], sections: list[Section], sized: list[SizedLine], front_page: int
) -> tuple[int, int] | None:
    """Line range [start, end) of the abstract's text: after an "Abstract" label, else the first
    run of long front-page lines in one font size, else the block just before the first heading."""
    limit = min(len(lines), 400)
    start: int | None = None
    for index in range(limit):
        if lines[index].page < front_page:
            continue
        match = _ABSTRACT_LABEL.match(lines[index].text)
        if match and lines[index].page <= front_page + 1:
            rest = match.group("rest")
            if rest and not rest[0].isupper() and not rest[0].isdigit() and not rest.startswith("("):
                continue  # "Summary statistics are ...": a sentence, not the label
            start = index if rest else index + 1
            if rest:
                # Keep the offsets simple: the label is dropped by trimming the first line below.
                lines[index] = Line(
                    lines[index].page, lines[index].end - len(rest), lines[index].end, rest.strip()
                )
            break
    first_body = next(
        (s.line_index for s in sections if s.kind not in ("abstract",) and s.line_index > (start or -1)),
        None,
    )
    if start is None:
        from_sizes = _abstract_from_sizes(lines, sized, first_body, front_page)
        if from_sizes or first_body is None:
            return from_sizes
        # No label: the block of long lines just before the first section heading.
        end = first_body
        begin = end - 1
        while (
            begin > 0
            and len(lines[begin - 1].text) >= 35
            and not _AFFILIATION.search(lines[begin - 1].text)
            and end - begin < 30
        ):
            begin -= 1
        if end - begin < 3:
            return None
        return begin, end
    end = start
    length = 0
    while end < len(lines) and length < 3000:
        text = lines[end].text
        if end != start and (_KEYWORDS_LINE.match(text) or (first_body is not None and end >= first_body)):
            break
        length += len(text)
        end += 1
    return (start, end) if end > start else None


def _abstract_from_sizes(
    lines: list[Line], sized: list[SizedLine], first_body: int | None, front_page: int
) -> tuple[int, int] | None:
    runs: list[list[SizedLine]] = []
    for line in sized:
        long_enough = (
            len(line.text) >= 40 and not _AFFILIATION.search(line.text) and not _TITLE_JUNK.search(line.text)
        )
        if (
            runs
            and runs[-1]
            and abs(runs[-1][-1].height - line.height) <= 0.15
            and (long_enough or len(runs[-1]) >= 3)
        ):
            runs[-1].append(line)
        elif long_enough:
            runs.append([line])
        else:
            runs.append([])
    # Licence and correspondence blocks are runs of long small-type lines too: not the abstract.
    run = next((r for r in runs if len(r) >= 3 and clean_abstract(" ".join(x.text for x in r))), None)
    if run is None:
        return None
    body = statistics.median(line.height for line in sized)
    if abs(run[0].height - body) <= 0.15 and len(run) > 25:
        return None  # the run is ordinary body text, not a set-off abstract
    head = run[0].text[:25]
    for index, doc_line in enumerate(lines):
        if doc_line.page < front_page:
            continue
        if doc_line.page != front_page:
            break
        if doc_line.text.startswith(head):
            end = min(index + len(run), first_body if first_body and first_body > index else len(lines))
            return index, end
    return None


# --- references ----------------------------------------------------------------------------------


def reference_entries(pages: list[PageText]) -> list[str]:
    """The entries of a paper's reference section, in order (none when it has no such section)."""
    lines = document_lines([page for page in pages if page.text and "garbled" not in page.flags])
    return _reference_entries(lines, find_sections(lines))


def _reference_entries(lines: list[Line], sections: list[Section]) -> list[str]:
    reference_sections = [s for s in sections if s.kind == "references"]
    if not reference_sections:
        return []
    section = reference_sections[-1]
    end = section.end_line
    following = [s for s in sections if s.line_index > section.line_index]
    if following and following[0].kind not in ("appendix", "acknowledgements"):
        end = len(lines)  # headings inside a bibliography are usually misread titles
    return split_references([line.text for line in lines[section.line_index + 1 : end]])


# --- sentences -----------------------------------------------------------------------------------


def _sentences(
    pages: list[PageText],
    lines: list[Line],
    sections: list[Section],
    kinds: list[str],
    abstract_span: tuple[int, int] | None,
) -> list[Sentence]:
    page_text = {page.number: page.text for page in pages}
    spans: list[tuple[int, int, str, str]] = []  # line range, kind, section title
    if abstract_span:
        spans.append((abstract_span[0], abstract_span[1], "abstract", "Abstract"))
    body_sections = [(s, k) for s, k in zip(sections, kinds, strict=True) if s.kind != "abstract"]
    for section, kind in body_sections:
        if kind in EXCLUDED_KINDS:
            continue
        start = section.line_index + 1
        if abstract_span and start < abstract_span[1]:
            start = max(start, abstract_span[1])
        title = re.sub(r"^[\dIVX.]+\s+", "", section.title)
        spans.append((start, section.end_line, kind, title))
    if not body_sections:
        front_start = abstract_span[1] if abstract_span else 0
        spans.append((front_start, len(lines), "other", ""))
    sentences: list[Sentence] = []
    for start, end, kind, title in spans:
        index = start
        while index < end:
            page = lines[index].page
            stop = index
            while stop < end and lines[stop].page == page:
                stop += 1
            text = page_text[page]
            for s_start, s_end in sentence_spans(text, lines[index].start, lines[stop - 1].end):
                sentence_text = text[s_start:s_end].replace("\n", " ")
                sentences.append(Sentence(page, s_start, s_end, sentence_text, kind, title, len(sentences)))
            index = stop
    return sentences


def _is_clean(text: str) -> bool:
    if len(text) < 30 or not text[0].isupper() or _NOISE_START.match(text):
        return False
    letters = sum(map(str.isalpha, text))
    if letters < 0.7 * (len(text) - text.count(" ")):
        return False
    if text.count("(") != text.count(")") or text.count("[") != text.count("]"):
        return False
    return text[-1] in ".!" and "http" not in text and "@" not in text


def _focus(focus_areas: list[str]) -> tuple[set[str], set[str]]:
    terms: set[str] = set()
    kinds: set[str] = set()
    for area in focus_areas:
        lowered = area.lower().strip()
        if lowered in FOCUS_KINDS:
            kinds.add(FOCUS_KINDS[lowered])
            continue
        terms.update(w for w in re.findall(r"[a-z0-9]{3,}", lowered) if w not in {"the", "and", "for"})
    return terms, kinds


def _focus_overlap(text: str, terms: set[str]) -> float:
    if not terms:
        return 0.0
    words = set(re.findall(r"[a-z0-9]{3,}", text.lower()))
    hits = sum(1 for term in terms if term in words or any(w.startswith(term[:5]) for w in words))
    return hits / len(terms)


def _finding_score(sentence: Sentence, terms: set[str], kinds: set[str]) -> float:
    text = sentence.text
    if not _is_clean(text):
        return 0.0
    cue = min(1.0, len(_RESULT_CUE.findall(text)) / 2)
    quantity = 1.0 if _QUANTITY.search(text) else 0.0
    weight = KIND_WEIGHT.get(sentence.kind, 0.4)
    if sentence.kind in kinds:
        weight = max(weight, 0.9)
    score = weight * (0.3 + 0.45 * cue + 0.25 * quantity)
    if cue == 0 and quantity == 0:
        score *= 0.3
    if re.search(r"\bwe\b|\bour\b|\bthis (?:paper|study|work)\b", text, re.IGNORECASE):
        score *= 1.1
    if text.count("et al") >= 1 or re.search(r"\[\d", text):
        score *= 0.6
    score += 0.3 * _focus_overlap(text, terms)
    if not FINDING_MIN <= len(text) <= FINDING_MAX:
        score *= 0.5 if len(text) <= 320 else 0.0
    return round(min(score, 1.0), 4)


def _pick_findings(sentences: list[Sentence]) -> list[Sentence]:
    from rapidfuzz import fuzz  # on first use, not with the handler (bench/cold_start.py)

    ranked = sorted(
        (
            s
            for s in sentences
            if s.score > 0
            and FINDING_MIN <= len(s.text) <= FINDING_MAX
            and (_RESULT_CUE.search(s.text) or _QUANTITY.search(s.text))
        ),
        key=lambda s: (-s.score, s.order),
    )
    picked: list[Sentence] = []
    for sentence in ranked:
        if len(picked) >= MAX_FINDINGS:
            break
        if sentence.score < 0.25 and len(picked) >= MIN_FINDINGS:
            break
        if any(fuzz.ratio(sentence.text, other.text) > 75 for other in picked):
            continue
        picked.append(sentence)
    return picked


def _method_sentences(sentences: list[Sentence]) -> list[Sentence]:
    pool = [s for s in sentences if s.kind == "methods" and _is_clean(s.text) and len(s.text) <= 400]
    if sum(len(s.text) for s in pool) < METHOD_MIN:
        cued = [s for s in sentences if _METHOD_CUE.search(s.text) and _is_clean(s.text)]
        pool = sorted({s.order: s for s in pool + cued}.values(), key=lambda s: s.order)
    chosen: list[Sentence] = []
    length = 0
    for sentence in pool:
        if length + len(sentence.text) + 1 > METHOD_MAX:
            if length >= METHOD_MIN:
                break
            continue
        chosen.append(sentence)
        length += len(sentence.text) + 1
        if length >= 600:
            break
    return chosen


def _conclusion_sentences(sentences: list[Sentence]) -> list[Sentence]:
    pool = [s for s in sentences if s.kind == "conclusion" and _is_clean(s.text)]
    if not pool:
        pool = [s for s in sentences if s.kind == "discussion" and _is_clean(s.text)][-4:]
    chosen: list[Sentence] = []
    length = 0
    for sentence in pool:
        if length + len(sentence.text) > 800:
            break
        chosen.append(sentence)
        length += len(sentence.text) + 1
    return chosen


def _evidence(
    sentences: list[Sentence],
    findings: list[Sentence],
    methods: list[Sentence],
    conclusions: list[Sentence],
    terms: set[str],
    kinds: set[str],
) -> list[EvidenceQuote]:
    quotes: list[EvidenceQuote] = []
    used: set[int] = set()

    def add(sentence: Sentence, kind: str, relevance: float) -> None:
        if sentence.order in used or len(quotes) >= MAX_EVIDENCE:
            return
        used.add(sentence.order)
        quotes.append(
            EvidenceQuote(
                quote=sentence.text,
                page=sentence.page,
                char_start=sentence.start,
                char_end=sentence.end,
                section=sentence.section or None,
                kind=kind,
                relevance_score=round(min(1.0, max(0.0, relevance)), 3),
            )
        )

    for sentence in findings:
        add(sentence, "finding", sentence.score)
    for sentence in methods[:3]:
        add(sentence, "method", 0.5 + 0.4 * ("methods" in kinds))
    for sentence in conclusions[:3]:
        add(sentence, "conclusion", 0.5 + 0.4 * ("conclusion" in kinds))
    clean = [s for s in sentences if _is_clean(s.text) and len(s.text) <= 400]
    limitations = [
        s
        for s in clean
        if s.kind == "limitations" or re.search(r"\blimitation|\bdoes not (?:address|handle)", s.text, re.I)
    ]
    for sentence in limitations[:2]:
        add(sentence, "limitation", 0.5 + 0.4 * ("limitations" in kinds))
    future = [
        s for s in clean if s.kind == "future_work" or re.search(r"\bfuture (?:work|research)", s.text, re.I)
    ]
    for sentence in future[:2]:
        add(sentence, "future_work", 0.4)
    others = sorted(
        (s for s in clean if s.order not in used and s.score > 0),
        key=lambda s: -(s.score + 0.3 * _focus_overlap(s.text, terms)),
    )
    for sentence in others[: max(0, 12 - len(quotes))]:
        add(sentence, "quote", sentence.score)
    return quotes


def _confidence(result: Analysis, section_count: int, quality: float) -> float:
    score = 0.1 * bool(result.title) + 0.15 * bool(result.abstract)
    score += 0.3 * min(1.0, len(result.key_findings) / MIN_FINDINGS)
    score += 0.15 * (len(result.methodology) >= METHOD_MIN) + 0.05 * bool(result.methodology)
    score += 0.05 * bool(result.citations) + 0.1 * min(1.0, section_count / 4) + 0.1 * quality
    if result.findings_from_abstract_only:
        score = min(score, 0.5)
    return round(min(1.0, score), 2)
