"""Page texts of one chapter -> sections, numbered entities and passages (chunks) of the book.

The PDF text is a flat list of lines; every line knows its printed page and the section it falls in.
Numbered items are recognised by the book's own captions and labels:
`Algorithm 4.1: ...`, `Table 4.1: ...`, `Figure 4.2: ...`, `Box 3.1: ...` (caption lines),
equation labels `(4.2)` at the end of a line, `Example 3.1.` paragraphs, and the questions of the
`Q&A` sections (exposed as `exercise` items numbered in reading order per chapter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from functions.rag.item_context import ContextReader, ItemContext, citing_sentences
from functions.rag.model import EQUATION_LABEL, Entity, EntityType, PageText, TocEntry, entity_id, number_key
from functions.rag.pdf_pages import footer_number

CHAPTER_HEADING = re.compile(r"^Chapter\s+(\d{1,2})\s*$")
APPENDIX_HEADING = re.compile(r"^Appendix\s+([A-Z])\s*$")
_SECTION_HEADING = re.compile(r"^((?:\d{1,2}|[A-Z])(?:\.\d{1,2}){1,2})\s+(\S.*)$")
_RUNNING_HEADER = re.compile(r"^(?:\d{1,2}|[A-Z])(?:\.\d{1,2})*\.\s+\S")
_CAPTION = re.compile(r"^(Algorithm|Table|Figure|Box)\s+((?:\d{1,2}|[A-Z])\.\d{1,3}):\s*(.*)$")
_EXAMPLE = re.compile(r"^Example\s+((?:\d{1,2}|[A-Z])\.\d{1,3})\.\s*(.*)$")
_STATEMENT = re.compile(r"^(Theorem|Lemma|Proposition|Corollary|Definition)\s+\d{1,2}\.\d{1,3}\b")
_QUESTION = re.compile(r"^[⋄◇•]?\s*Q:\s*(.*)$")
_SENTENCE_END = re.compile(r"[.?!:]\s*$")

CHUNK_TARGET_WORDS = 120
FORMULA_CONTEXT_BEFORE = 3
FORMULA_CONTEXT_AFTER = 2


@dataclass
class Line:
    text: str
    page: int | None
    section: str  # deepest section (or chapter) number the line belongs to
    heading: bool = False


@dataclass
class ChapterText:
    chapter: str
    title: str
    lines: list[Line]
    section_titles: dict[str, str]
    section_pages: dict[str, int | None]


def chapter_of(pages: list[PageText]) -> tuple[str, str] | None:
    """("4", "Value Iteration and Policy Iteration") when the first page opens a chapter or appendix."""
    if not pages:
        return None
    head = [line.strip() for line in pages[0].text.splitlines() if line.strip()][:4]
    for position, line in enumerate(head):
        match = CHAPTER_HEADING.match(line) or APPENDIX_HEADING.match(line)
        if match:
            title = head[position + 1] if position + 1 < len(head) else ""
            return match.group(1), title
    return None


def read_chapter(pages: list[PageText], chapter: str, title: str, toc: list[TocEntry]) -> ChapterText:
    """Flatten the pages into lines, dropping running headers and page-number footers."""
    known = {entry.number: entry for entry in toc if entry.number.split(".")[0] == chapter}
    section_titles = {number: entry.title for number, entry in known.items() if "." in number}
    section_pages: dict[str, int | None] = {number: entry.printed_page for number, entry in known.items()}
    chapter_entry = known.get(chapter)
    chapter_title = chapter_entry.title if chapter_entry else title
    section_pages.setdefault(chapter, pages[0].printed_page if pages else None)
    current = chapter
    seen: set[str] = set()
    lines: list[Line] = []
    for page in pages:
        raw_lines = [line.rstrip() for line in page.text.splitlines() if line.strip()]
        if raw_lines and footer_number(raw_lines[-1]) is not None:
            raw_lines = raw_lines[:-1]
        if raw_lines and _RUNNING_HEADER.match(raw_lines[0]) and page.page_index > 1:
            raw_lines = raw_lines[1:]
        for raw in raw_lines:
            text = raw.strip()
            number = _heading_number(text, chapter, current, seen, section_titles)
            if number:
                seen.add(number)
                current = number
                section_titles.setdefault(number, _SECTION_HEADING.match(text).group(2).strip())  # type: ignore[union-attr]
                if section_pages.get(number) is None:
                    section_pages[number] = page.printed_page
                lines.append(Line(text, page.printed_page, current, heading=True))
                continue
            lines.append(Line(text, page.printed_page, current))
    return ChapterText(chapter, chapter_title, lines, section_titles, section_pages)


def _heading_number(
    text: str, chapter: str, current: str, seen: set[str], known_titles: dict[str, str]
) -> str | None:
    match = _SECTION_HEADING.match(text)
    if not match:
        return None
    number, title = match.group(1), match.group(2).strip()
    if number.split(".")[0] != chapter or number in seen or not title[:1].isupper():
        return None
    if known_titles:
        expected = known_titles.get(number)
        # A wrapped heading line only carries the start of its title.
        return number if expected and _same_start(expected, title) else None
    return number if number_key(number) > number_key(current) else None


def _same_start(expected: str, found: str) -> bool:
    a, b = expected.lower().rstrip("-"), found.lower().rstrip("-")
    length = min(len(a), len(b), 20)
    return a[:length] == b[:length]


def _is_boundary(line: Line) -> bool:
    text = line.text
    return bool(
        line.heading
        or _CAPTION.match(text)
        or _EXAMPLE.match(text)
        or _STATEMENT.match(text)
        or _QUESTION.match(text)
    )


class _Builder:
    def __init__(self, chapter: ChapterText) -> None:
        self.chapter = chapter
        self.lines = chapter.lines
        self.entities: dict[str, Entity] = {}
        self.texts = [line.text for line in self.lines]
        # Context never crosses a heading or another item's caption.
        self.barrier = [line.heading or bool(_CAPTION.match(line.text)) for line in self.lines]
        self.reader = ContextReader(self.texts, self.barrier)
        self.item_contexts: dict[str, ItemContext] = {}

    def add(
        self,
        kind: EntityType,
        number: str,
        title: str,
        content: str,
        at: int,
        search_extra: str = "",
        context: ItemContext | None = None,
    ) -> None:
        ident = entity_id(kind, number)
        if ident in self.entities:  # the first occurrence is the definition; later ones repeat it
            return
        if context is not None:
            self.item_contexts[ident] = context
        line = self.lines[at]
        label = f"{kind.value.capitalize()} {number}"
        self.entities[ident] = Entity(
            id=ident,
            type=kind.value,
            number=number,
            title=title,
            content=content,
            chapter=self.chapter.chapter,
            section=line.section,
            page_number=line.page,
            # The caption is said three times: BM25 would otherwise drown it in a long body.
            search_text="\n".join(
                [
                    f"{label} {title}",
                    title,
                    title,
                    content,
                    search_extra,
                    section_path(self.chapter, line.section),
                ]
            ).strip(),
        )

    def following(self, start: int, limit: int, stop_at_boundary: bool = True) -> list[str]:
        out = [self.lines[start].text]
        for index in range(start + 1, min(len(self.lines), start + limit)):
            line = self.lines[index]
            if line.heading or (stop_at_boundary and _is_boundary(line)) or _CAPTION.match(line.text):
                break
            out.append(line.text)
        return out

    def caption_continuation(self, start: int, limit: int = 4) -> list[str]:
        out = [self.lines[start].text]
        index = start
        while not _SENTENCE_END.search(out[-1]) and len(out) < limit and index + 1 < len(self.lines):
            index += 1
            if _is_boundary(self.lines[index]):
                break
            out.append(self.lines[index].text)
        return out

    def preceding(self, end: int, limit: int) -> list[str]:
        out: list[str] = []
        for index in range(end - 1, max(-1, end - 1 - limit), -1):
            line = self.lines[index]
            if _is_boundary(line) or line.page != self.lines[end].page:
                break
            out.append(line.text)
        return list(reversed(out))

    def build(self) -> list[Entity]:
        question_count = 0
        for index, line in enumerate(self.lines):
            text = line.text
            caption = _CAPTION.match(text)
            if caption:
                self._caption(index, caption.group(1), caption.group(2), caption.group(3).strip())
                continue
            example = _EXAMPLE.match(text)
            if example:
                body = self.following(index, 20)
                self.add(
                    EntityType.EXAMPLE,
                    example.group(1),
                    _title_of(example.group(2)),
                    "\n".join(body),
                    index,
                    context=self._around(index, body),
                )
                continue
            question = _QUESTION.match(text)
            if question and self.chapter.section_titles.get(line.section, "").lower() == "q&a":
                question_count += 1
                body = self.following(index, 25)
                number = f"{self.chapter.chapter}.{question_count}"
                self.add(EntityType.EXERCISE, number, question.group(1).strip(), "\n".join(body), index)
                continue
            label = EQUATION_LABEL.search(text)
            if label and not line.heading and label.group(1).split(".")[0] == self.chapter.chapter:
                self._formula(index, label.group(1))
        self._add_contexts()
        return list(self.entities.values())

    def _add_contexts(self) -> None:
        citing = citing_sentences(self.texts, self.barrier, set(self.entities))
        for ident, context in self.item_contexts.items():
            entity = self.entities[ident]
            context.citing = citing.get(ident, [])
            label = f"{entity.type.capitalize()} {entity.number}"
            entity.context = f"{label} {entity.title}\n{context.text()}".strip()

    def _caption(self, index: int, kind_name: str, number: str, caption: str) -> None:
        kind = EntityType(kind_name.lower())
        if kind is EntityType.ALGORITHM:
            body = self.following(index, 40)
            self.add(kind, number, caption, "\n".join(body), index, context=self._around(index, body))
        elif kind is EntityType.BOX:
            body = self.following(index, 60, stop_at_boundary=False)
            self.add(kind, number, caption, "\n".join(body), index, context=self._around(index, body))
        elif kind is EntityType.TABLE:
            cells = self.preceding(index, 14)
            full = self.caption_continuation(index)
            title = " ".join(full)[len(f"Table {number}: ") :]
            context = self._around(index - len(cells), [*cells, *full])
            self.add(kind, number, title, "\n".join([*full, *cells]), index, context=context)
        else:
            full = self.caption_continuation(index)
            title = " ".join(full)[len(f"Figure {number}: ") :]
            self.add(kind, number, title, "\n".join(full), index, context=self._around(index, full))

    def _around(self, start: int, block: list[str]) -> ItemContext:
        """The context of an item printed on the lines from `start` on (`block`: their texts)."""
        return self.reader.of_block(start, start + len(block) - 1)

    def _formula(self, index: int, number: str) -> None:
        start = max(0, index - FORMULA_CONTEXT_BEFORE)
        context = [
            line.text for line in self.lines[start : index + 1 + FORMULA_CONTEXT_AFTER] if not line.heading
        ]
        section_title = self.chapter.section_titles.get(self.lines[index].section, self.chapter.title)
        self.add(
            EntityType.FORMULA,
            number,
            f"Equation ({number}) in {section_title}",
            "\n".join(context),
            index,
            search_extra=section_title,
            context=self.reader.of_display(index),
        )


def section_path(chapter: ChapterText, number: str) -> str:
    """Titles from the chapter down to the section: what a passage is about, said once."""
    titles = [chapter.title]
    parts = number.split(".")
    for depth in range(2, len(parts) + 1):
        title = chapter.section_titles.get(".".join(parts[:depth]))
        if title:
            titles.append(title)
    return " > ".join(titles)


def _title_of(first_line: str) -> str:
    sentence = re.split(r"(?<=[.?!])\s", first_line, maxsplit=1)[0]
    return sentence[:160]


def extract_entities(chapter: ChapterText) -> list[Entity]:
    return _Builder(chapter).build()


def section_entities(chapter: ChapterText) -> list[Entity]:
    """The chapter itself (a `section` numbered "4") and each of its sections, with their opening text."""
    by_section: dict[str, list[Line]] = {}
    for line in chapter.lines:
        if not line.heading:
            by_section.setdefault(line.section, []).append(line)
    numbers = [chapter.chapter, *sorted(chapter.section_titles, key=number_key)]
    out: list[Entity] = []
    for number in numbers:
        own = by_section.get(number, [])
        title = chapter.title if number == chapter.chapter else chapter.section_titles[number]
        if number != chapter.chapter and not own and not any(s.startswith(number + ".") for s in by_section):
            continue  # listed in the contents but not in the ingested pages
        words = " ".join(line.text for line in own).split()
        opening = " ".join(words[:80])
        page = chapter.section_pages.get(number)
        out.append(
            Entity(
                id=entity_id(EntityType.SECTION, number),
                type=EntityType.SECTION.value,
                number=number,
                title=title,
                content=f"{number} {title}\n{opening}".strip(),
                chapter=chapter.chapter,
                section=number,
                page_number=page if page is not None else (own[0].page if own else None),
                search_text=f"Section {number} {title}\n{section_path(chapter, number)}\n{opening}",
            )
        )
    return out


def chunk_entities(chapter: ChapterText) -> list[Entity]:
    """Passages of about CHUNK_TARGET_WORDS words, never crossing a section boundary."""
    out: list[Entity] = []
    counters: dict[str, int] = {}
    buffer: list[Line] = []

    def flush() -> None:
        if not buffer:
            return
        section = buffer[0].section
        counters[section] = counters.get(section, 0) + 1
        title = chapter.title if section == chapter.chapter else chapter.section_titles.get(section, "")
        text = "\n".join(line.text for line in buffer)
        out.append(
            Entity(
                id=f"chunk_{section.replace('.', '_')}_{counters[section]}",
                type=EntityType.SECTION.value,
                number=section,
                title=title,
                content=text,
                chapter=chapter.chapter,
                section=section,
                page_number=buffer[0].page,
                page_end=buffer[-1].page,
                is_chunk=True,
                search_text=f"{section_path(chapter, section)}\n{text}",
            )
        )
        buffer.clear()

    words = 0
    for line in chapter.lines:
        if line.heading or (buffer and buffer[0].section != line.section):
            flush()
            words = 0
            if line.heading:
                continue
        buffer.append(line)
        words += len(line.text.split())
        sentence_done = bool(_SENTENCE_END.search(line.text))
        if (words >= CHUNK_TARGET_WORDS and sentence_done) or words >= CHUNK_TARGET_WORDS * 2:
            flush()
            words = 0
    flush()
    return out


def appendix_entities(toc: list[TocEntry]) -> list[Entity]:
    """Appendices as listed in the contents (their text is ingested only when their PDF is given)."""
    out: list[Entity] = []
    for entry in toc:
        if not entry.number[:1].isalpha():
            continue
        number = entry.number
        out.append(
            Entity(
                id=entity_id(EntityType.APPENDIX, number),
                type=EntityType.APPENDIX.value,
                number=number,
                title=entry.title,
                content=f"Appendix {number}: {entry.title} (printed page {entry.printed_page})",
                chapter=number.split(".")[0],
                section=number,
                page_number=entry.printed_page,
                search_text=f"Appendix {number} {entry.title}",
            )
        )
    return out
