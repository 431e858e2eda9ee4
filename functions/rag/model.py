"""The knowledge base's vocabulary: entity and relationship types, ids, and the indexed records."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class EntityType(StrEnum):
    FORMULA = "formula"
    ALGORITHM = "algorithm"
    TABLE = "table"
    FIGURE = "figure"
    SECTION = "section"
    EXAMPLE = "example"
    EXERCISE = "exercise"
    APPENDIX = "appendix"
    BOX = "box"  # the book's numbered boxes (proofs, side notes); an addition to the seed's list


SEARCHABLE_TYPES: tuple[str, ...] = tuple(t.value for t in EntityType)
# The seed's list in the seed's order, quoted verbatim by validation messages; `box` is accepted as our
# documented addition but not listed there.
SEED_SEARCHABLE_TYPES: tuple[str, ...] = tuple(t.value for t in EntityType if t is not EntityType.BOX)
# GET /entity/{entity_type}/{number} accepts exactly the seed's enum.
LOOKUP_TYPES: tuple[str, ...] = ("formula", "algorithm", "table", "figure")


class RelationType(StrEnum):
    USES_IN = "USES_IN"
    CITES = "CITES"
    REFERENCES = "REFERENCES"
    RELATED_TO = "RELATED_TO"
    FOLLOWS = "FOLLOWS"
    REFERENCED_BY = "REFERENCED_BY"
    PART_OF = "PART_OF"


RELATION_TYPES: tuple[str, ...] = tuple(t.value for t in RelationType)

# Graph nodes that are not entities: passages of section text and bibliography citations.
CHUNK_PREFIX = "chunk"
CITATION_PREFIX = "citation"
CITATION_TYPE = "citation"

_ID_PREFIX = {EntityType.ALGORITHM: "algo"}
_PREFIX_ALIASES = {"algorithm": "algo"}
_KNOWN_PREFIXES = {*(t.value for t in EntityType), "algo", CHUNK_PREFIX, CITATION_PREFIX}

DOCUMENT_ID_PATTERN = re.compile(r"^([a-z]+)_([0-9A-Za-z]+(?:_[0-9A-Za-z]+)*)$")
NUMBER_PATTERN = re.compile(r"^(?:[0-9]+|[A-Z])\.[0-9]+$")
# An equation's label at the end of its line: "(4.2)".
EQUATION_LABEL = re.compile(r"\(((?:\d{1,2}|[A-Z])\.\d{1,3})\)\s*$")


def entity_id(entity_type: EntityType | str, number: str) -> str:
    """Stable id: `formula_3_2`, `algo_4_1`, `section_4_1_2`, `appendix_A`."""
    kind = EntityType(entity_type)
    return f"{_ID_PREFIX.get(kind, kind.value)}_{number.replace('.', '_')}"


def canonical_document_id(raw: str) -> str | None:
    """The stored id for a requested one (`algorithm_4_1` is accepted for `algo_4_1`); None if malformed."""
    match = DOCUMENT_ID_PATTERN.match(raw.strip())
    if not match:
        return None
    prefix, rest = match.groups()
    prefix = _PREFIX_ALIASES.get(prefix, prefix)
    if prefix not in _KNOWN_PREFIXES:
        return None
    return f"{prefix}_{rest}"


def number_key(number: str) -> tuple[int, ...]:
    """Reading order of "4.1.2"-style numbers (appendix letters after the chapter numbers)."""
    return tuple(int(part) if part.isdigit() else ord(part) for part in number.split("."))


@dataclass
class Entity:
    """A numbered item, a section, or a passage of text (`chunk_*`, typed `section`) of the book."""

    id: str
    type: str
    number: str
    title: str
    content: str
    chapter: str
    section: str
    page_number: int | None
    page_end: int | None = None
    is_chunk: bool = False
    search_text: str = ""  # what the lexical index sees (content plus title and context)
    heading: str = ""  # the title field: label, title and section path (a second, short BM25 field)
    # Numbered items only: label, caption, defining and citing sentences, surrounding prose (a third
    # BM25 field, weighed for entity-seeking questions; see item_context.py)
    context: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entity:
        return cls(**data)


def count_by_kind(entities: Iterable[Entity]) -> dict[str, int]:
    """How many of each type, passages counted apart as "chunk" (the manifest's and the logs' counts)."""
    counts: dict[str, int] = {}
    for entity in entities:
        key = "chunk" if entity.is_chunk else entity.type
        counts[key] = counts.get(key, 0) + 1
    return counts


@dataclass(frozen=True, order=True)
class Edge:
    source: str
    type: str
    target: str

    def to_list(self) -> list[str]:
        return [self.source, self.type, self.target]


@dataclass
class TocEntry:
    number: str
    title: str
    printed_page: int
    level: int


@dataclass
class PageText:
    source: str  # file name of the PDF
    page_index: int  # 1-based within that PDF
    text: str
    printed_page: int | None = None
    chapter: str = ""
