"""Edges of the knowledge graph, derived from the entities and the text that mentions them.

Direction conventions (what `A --TYPE--> B` means):
- REFERENCES: A's text names B ("Algorithm 4.1", "(4.2)", "Table 5.1", "Section 3.2", "Appendix B");
  REFERENCED_BY is its reverse (B --REFERENCED_BY--> A).
- USES_IN: formula F and algorithm A, both ways (F --USES_IN--> A and A --USES_IN--> F), when A's
  text names F or one passage names both.
- PART_OF: item -> its deepest section -> parent section -> chapter; passage -> section.
- FOLLOWS: A comes after (builds on) B in reading order: next section, next chapter, next item of a kind.
- CITES: A cites bibliography entry `[n]` (a `citation_n` node), or a box's caption names B
  ("Convergence proof of (2.12)").
- RELATED_TO: B is one of A's nearest neighbours by content (lexical similarity of the texts).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from functions.rag.model import (
    CITATION_TYPE,
    Edge,
    Entity,
    EntityType,
    RelationType,
    entity_id,
    number_key,
)

_NUMBERED_MENTION = re.compile(
    r"\b(Algorithm|Table|Figure|Box|Example)s?\s+((?:\d{1,2}|[A-Z])\.\d{1,3})\b", re.IGNORECASE
)
_SECTION_MENTION = re.compile(r"\bSections?\s+(\d{1,2}(?:\.\d{1,2}){1,2})\b")
_CHAPTER_MENTION = re.compile(r"\bChapters?\s+(\d{1,2})\b")
_APPENDIX_MENTION = re.compile(r"\bAppendix\s+([A-Z])\b")
_EQUATION_MENTION = re.compile(r"\(((?:\d{1,2}|[A-Z])\.\d{1,3})\)")
_CITATION = re.compile(r"(?<=\s)\[(\d{1,3})\](?=[\s.,;:)]|$)")

# Nearest neighbours: given an entity's text, the ids of the most similar entities, best first.
NeighbourFinder = Callable[[Entity, int], list[str]]
RELATED_NEIGHBOURS = 3  # the most similar entities each one is linked to (RELATED_TO edges)


def mentioned_ids(text: str, known: set[str]) -> list[str]:
    """Ids of known entities that the text names, in order of first mention."""
    found: list[str] = []

    def note(candidate: str) -> None:
        if candidate in known and candidate not in found:
            found.append(candidate)

    for match in _NUMBERED_MENTION.finditer(text):
        note(entity_id(EntityType(match.group(1).lower()), match.group(2)))
    for match in _SECTION_MENTION.finditer(text):
        note(entity_id(EntityType.SECTION, match.group(1)))
    for match in _CHAPTER_MENTION.finditer(text):
        note(entity_id(EntityType.SECTION, match.group(1)))
    for match in _APPENDIX_MENTION.finditer(text):
        note(entity_id(EntityType.APPENDIX, match.group(1)))
    for match in _EQUATION_MENTION.finditer(text):
        note(entity_id(EntityType.FORMULA, match.group(1)))
    return found


def cited_entries(text: str) -> list[str]:
    return sorted({f"citation_{match.group(1)}" for match in _CITATION.finditer(text)})


def _own_mention(entity: Entity) -> str:
    """The entity's own label, not a reference to anything ("Table 4.1: ..." names Table 4.1)."""
    if entity.type == EntityType.FORMULA.value:
        return f"({entity.number})"
    return f"{entity.type.capitalize()} {entity.number}"


def build_edges(
    entities: list[Entity], neighbours: NeighbourFinder | None = None
) -> tuple[list[Edge], list[Entity]]:
    """All edges, plus the citation nodes they point at."""
    by_id = {entity.id: entity for entity in entities}
    known = set(by_id)
    edges: set[Edge] = set()
    citations: dict[str, list[str]] = {}

    for entity in entities:
        text = entity.content
        if not entity.is_chunk and entity.type != EntityType.SECTION.value:
            text = text.replace(_own_mention(entity), " ", 1)
        parent = _part_of_target(entity, known)
        for target in mentioned_ids(text, known):
            if target in (entity.id, parent):
                continue
            edges.add(Edge(entity.id, RelationType.REFERENCES, target))
            edges.add(Edge(target, RelationType.REFERENCED_BY, entity.id))
        for citation in cited_entries(entity.content):
            edges.add(Edge(entity.id, RelationType.CITES, citation))
            citations.setdefault(citation, []).append(entity.id)
        if entity.type == EntityType.BOX.value:
            for target in mentioned_ids(entity.title, known):
                edges.add(Edge(entity.id, RelationType.CITES, target))

    edges |= _uses_in(entities, known)
    edges |= _part_of(entities, known)
    edges |= _follows(entities)
    if neighbours is not None:
        for entity in entities:
            if entity.is_chunk or entity.type == EntityType.APPENDIX.value:
                continue
            for target in neighbours(entity, RELATED_NEIGHBOURS):
                if target != entity.id:
                    edges.add(Edge(entity.id, RelationType.RELATED_TO, target))

    citation_nodes = [
        _citation_node(citation, sources, by_id) for citation, sources in sorted(citations.items())
    ]
    return sorted(edges), citation_nodes


def _citation_node(citation: str, sources: list[str], by_id: dict[str, Entity]) -> Entity:
    number = citation.split("_", 1)[1]
    first = by_id[sources[0]]
    return Entity(
        id=citation,
        type=CITATION_TYPE,
        number=number,
        title=f"Bibliography entry [{number}]",
        content=f"Bibliography entry [{number}] of the book, cited by {', '.join(sorted(set(sources)))}.",
        chapter=first.chapter,
        section=first.section,
        page_number=first.page_number,
    )


def _uses_in(entities: list[Entity], known: set[str]) -> set[Edge]:
    algorithms = [entity for entity in entities if entity.type == EntityType.ALGORITHM.value]
    pairs: set[tuple[str, str]] = set()
    for algorithm in algorithms:
        for target in mentioned_ids(algorithm.content, known):
            if target.startswith("formula_"):
                pairs.add((target, algorithm.id))
    # A passage that points the reader to an algorithm and names equations explains what it computes.
    for entity in entities:
        if entity.type == EntityType.ALGORITHM.value:
            continue
        named = mentioned_ids(entity.content, known)
        formulas = [ident for ident in named if ident.startswith("formula_")]
        for algorithm_id in (ident for ident in named if ident.startswith("algo_")):
            pairs.update((formula, algorithm_id) for formula in formulas)
    edges: set[Edge] = set()
    for formula, algorithm_id in pairs:
        edges.add(Edge(formula, RelationType.USES_IN, algorithm_id))
        edges.add(Edge(algorithm_id, RelationType.USES_IN, formula))
    return edges


def _parent_section(number: str) -> str | None:
    return number.rsplit(".", 1)[0] if "." in number else None


def _part_of_target(entity: Entity, known: set[str]) -> str | None:
    """What the entity is PART_OF: the nearest known section above it (an appendix's: appendix)."""
    kind = EntityType.SECTION
    number: str | None = entity.section
    if entity.type in (EntityType.SECTION.value, EntityType.APPENDIX.value) and not entity.is_chunk:
        kind = EntityType(entity.type)
        number = _parent_section(entity.number)
    while number is not None:
        candidate = entity_id(kind, number)
        if candidate in known:
            return candidate
        number = _parent_section(number)
    return None


def _part_of(entities: list[Entity], known: set[str]) -> set[Edge]:
    edges: set[Edge] = set()
    for entity in entities:
        target = _part_of_target(entity, known)
        if target is not None and target != entity.id:
            edges.add(Edge(entity.id, RelationType.PART_OF, target))
    return edges


def _follows(entities: list[Entity]) -> set[Edge]:
    edges: set[Edge] = set()
    groups: dict[tuple[str, ...], list[Entity]] = {}
    for entity in entities:
        if entity.type == CITATION_TYPE:
            continue
        if entity.is_chunk:
            key: tuple[str, ...] = ("chunk", entity.section)
        elif entity.type == EntityType.SECTION.value:
            key = ("section", str(entity.number.count(".")), _parent_section(entity.number) or "")
        else:
            key = (entity.type, entity.chapter if entity.type != EntityType.APPENDIX.value else "")
        groups.setdefault(key, []).append(entity)
    for group in groups.values():
        ordered = sorted(group, key=_reading_order)
        for before, after in itertools.pairwise(ordered):
            edges.add(Edge(after.id, RelationType.FOLLOWS, before.id))
    return edges


def _reading_order(entity: Entity) -> tuple[tuple[int, ...], int]:
    sequence = int(entity.id.rsplit("_", 1)[1]) if entity.is_chunk else 0
    return number_key(entity.number), sequence
