"""The loaded knowledge base: hybrid search, graph expansion and direct lookup of numbered items."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from functions.common.errors import InvalidInput, NotFound
from functions.rag.api_models import EntityFields
from functions.rag.graph import mentioned_ids
from functions.rag.model import (
    LOOKUP_TYPES,
    NUMBER_PATTERN,
    Edge,
    Entity,
    EntityType,
    RelationType,
    canonical_document_id,
    count_by_kind,
)
from functions.rag.query_intent import query_intent

# Type-only: a run-time import of functions.common.ml.embedder would make infra/bundling.py ship its
# MiniLM weights with the RAG functions, which read the model stored with the index instead.
if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from functions.common.ml.embedder import Embedder
    from functions.rag.lexical import LexicalIndex

# numpy, bm25s and rapidfuzz (functions.rag.lexical, functions.rag.embedding) are imported where a loaded
# knowledge base uses them, not here: the API's handler imports this module for its filters and path
# validation, and its cold start should not pay for them (bench/cold_start.py).

MAX_NEIGHBOURS = 100
# Weight of the title field (label, caption, section path; its BM25 times the share of the query's
# words it holds) added to the body's BM25 score.
HEADING_WEIGHT = 1.5
# Weight of the numbered items' context field (defining and citing sentences, surrounding prose) added
# for every question: an item's own display or caption rarely uses the words a question is asked in.
CONTEXT_WEIGHT = 0.8
# Weight of the symbols field (the one-character symbols of the items' contexts: "q", "v", "P"),
# scored for the query's own one-character words; a field apart, so that the symbols neither lengthen
# the other fields' documents nor count for a query that names none.
SYMBOL_WEIGHT = 1.5
# An item scores at least this share of the best passage that names it ("as shown in (5.2)", the
# passage holding its display): the item is usually what the person asking wants.
CITED_SHARE = 0.9
# Entity-seeking questions ("which equation ...", see query_intent.py): the factor on items of a named type.
TYPE_BOOST = 2.0
# The first results mix kinds: within the top DIVERSE_TOP, the best prose (section or passage) and the
# best numbered item are both shown when each scores at least DIVERSE_FLOOR of the best score.
DIVERSE_TOP = 5
DIVERSE_FLOOR = 0.3
DIVERSE_WINDOW = 20  # candidates looked at beyond k for the missing kind
_QUERY_WORD = re.compile(r"[A-Za-z][A-Za-z']+")


@dataclass
class SearchFilters:
    chapter: str | None = None
    section: str | None = None
    page_number: int | None = None

    def accepts(self, entity: Entity) -> bool:
        if self.chapter is not None and entity.chapter != self.chapter.strip():
            return False
        if self.section is not None:
            wanted = self.section.strip()
            if entity.section != wanted and not entity.section.startswith(wanted + "."):
                return False
        if self.page_number is not None:
            first = entity.page_number
            last = entity.page_end if entity.page_end is not None else first
            if first is None or last is None or not first <= self.page_number <= last:
                return False
        return True


@dataclass
class SearchOutcome:
    results: list[dict[str, Any]]
    suggestions: list[str]
    corrected_terms: dict[str, str] = field(default_factory=dict)


@dataclass
class ExpandOutcome:
    documents: list[dict[str, Any]]
    relationship_count: int
    metadata: dict[str, Any]


class KnowledgeBase:
    def __init__(
        self,
        *,
        book_id: str,
        version: str,
        entities: list[Entity],
        edges: list[Edge],
        lexical: LexicalIndex,
        heading_lexical: LexicalIndex,
        vocabulary: list[str],
        context_lexical: LexicalIndex | None = None,
        symbol_lexical: LexicalIndex | None = None,
        embedder: Embedder | None = None,
        embeddings: NDArray[np.float32] | None = None,
    ) -> None:
        import numpy as np

        from functions.rag.embedding import LEXICAL_SHARE, STATIC_LEXICAL_SHARE
        from functions.rag.lexical import Speller
        from functions.rag.query_encoder import StaticQueryEncoder

        self.book_id = book_id
        self.version = version
        self.nodes = {entity.id: entity for entity in entities}
        # Lexical document i is documents[i]: every entity and passage except citation nodes.
        self.documents = [entity for entity in entities if entity.search_text]
        fields = [
            index
            for index in (lexical, heading_lexical, context_lexical, symbol_lexical)
            if index is not None
        ]
        if any(index.size != len(self.documents) for index in fields):
            raise ValueError("lexical index does not match the stored documents")
        self.lexical = lexical
        self.heading_lexical = heading_lexical
        # None for an index written before items had a context field: ranked as before.
        self.context_lexical = context_lexical
        self.symbol_lexical = symbol_lexical  # None for an index written before the symbols field
        self.document_types = np.array([entity.type for entity in self.documents])
        self.speller = Speller(vocabulary)
        # Hybrid only with both the vectors and the model that embeds the queries; else lexical.
        self.embedder = embedder if embeddings is not None else None
        self.embeddings = embeddings if embedder is not None else None
        self.lexical_share = (
            STATIC_LEXICAL_SHARE if isinstance(embedder, StaticQueryEncoder) else LEXICAL_SHARE
        )
        self.by_number = {(entity.type, entity.number): entity for entity in entities if not entity.is_chunk}
        self.outgoing: dict[str, list[Edge]] = {}
        for edge in edges:
            self.outgoing.setdefault(edge.source, []).append(edge)
        self.edge_count = len(edges)
        self._mentionable = {ident for ident, entity in self.nodes.items() if not entity.is_chunk}
        self.prior = np.array([_prior(entity, self.nodes) for entity in self.documents], dtype=np.float32)
        self.is_item = np.array([_is_item(entity) for entity in self.documents], dtype=bool)
        cited = self._cited_pairs(edges)
        self.cited_items = np.array([item for item, _ in cited], dtype=np.int64)
        self.citing_passages = np.array([passage for _, passage in cited], dtype=np.int64)

    def _cited_pairs(self, edges: list[Edge]) -> list[tuple[int, int]]:
        """(item, passage) pairs of document positions: the passage names the item."""
        position = {entity.id: index for index, entity in enumerate(self.documents)}
        return [
            (position[edge.target], position[edge.source])
            for edge in edges
            if edge.type == RelationType.REFERENCES.value
            and edge.source in position
            and edge.target in position
            and self.nodes[edge.source].is_chunk
            and _is_item(self.nodes[edge.target])
        ]

    @property
    def retrieval(self) -> str:
        return "hybrid" if self.embedder is not None else "lexical"

    # --- search -------------------------------------------------------------------------------------

    def search(
        self, query: str, k: int, types: list[str] | None = None, filters: SearchFilters | None = None
    ) -> SearchOutcome:
        import numpy as np

        tokens = self.lexical.tokens(query)
        corrections = self._corrections(query)
        for suggestion in corrections.values():
            tokens.extend(self.lexical.tokens(suggestion))
        suggestions = [_apply_corrections(query, corrections)] if corrections else []
        scores = self._scores(query, tokens, suggestions[0] if suggestions else query)
        wanted_types = set(types) if types else None
        active = filters or SearchFilters()

        # Items the query names outright ("Algorithm 4.1", "(4.2)") come first.
        named = [self.nodes[ident] for ident in mentioned_ids(query, self._mentionable)]
        top = float(scores.max()) if scores.size else 0.0
        results: list[dict[str, Any]] = []
        chosen: set[str] = set()
        for entity in named:
            if len(results) < k and _admits(entity, wanted_types, active):
                results.append(_result(entity, 1.0))
                chosen.add(entity.id)
        if top > 0:
            ranked: list[int] = []
            for index in np.argsort(-scores, kind="stable"):
                if len(results) + len(ranked) >= k + DIVERSE_WINDOW or scores[index] <= 0:
                    break
                entity = self.documents[int(index)]
                if entity.id in chosen or not _admits(entity, wanted_types, active):
                    continue
                ranked.append(int(index))
                chosen.add(entity.id)
            ranked = self._diversified(ranked, scores, top, min(k, DIVERSE_TOP) - len(results))
            results.extend(
                _result(self.documents[index], float(scores[index]) / top)
                for index in ranked[: k - len(results)]
            )
        return SearchOutcome(results=results, suggestions=suggestions, corrected_terms=corrections)

    def _corrections(self, query: str) -> dict[str, str]:
        """The query's words the book does not know, each with the speller's suggestion."""
        corrections: dict[str, str] = {}
        for word in _QUERY_WORD.findall(query):
            stems = self.lexical.tokens(word)
            if stems and not any(self.lexical.known(stem) for stem in stems):
                suggestion = self.speller.correct(word)
                if suggestion is not None and suggestion.lower() != word.lower():
                    corrections[word] = suggestion
        return corrections

    def _scores(self, query: str, tokens: list[str], dense_query: str) -> NDArray[np.float32]:
        """Every document's score: lexical fields (and the dense vectors, when hybrid) times its prior,
        items lifted by the passages that cite them and, for an entity-seeking query, by type."""
        scores = self._lexical_scores(query, tokens)
        if self.embedder is not None:
            scores = self._fused(scores, self.embedder.embed([dense_query])[0])
        return self._lifted(query, scores)

    def _lexical_scores(self, query: str, tokens: list[str]) -> NDArray[np.float32]:
        """The BM25 fields' weighted sum, times each document's prior."""
        lexical = self.lexical.scores(tokens) + HEADING_WEIGHT * self._heading_scores(tokens)
        if self.context_lexical is not None:
            lexical = lexical + CONTEXT_WEIGHT * self.context_lexical.scores(tokens)
        if self.symbol_lexical is not None:
            lexical = lexical + SYMBOL_WEIGHT * self.symbol_lexical.scores(self.symbol_lexical.tokens(query))
        scores: NDArray[np.float32] = lexical * self.prior
        return scores

    def _fused(self, lexical: NDArray[np.float32], query_vector: NDArray[np.float32]) -> NDArray[np.float32]:
        """The lexical scores fused with the cosines of the documents' vectors to `query_vector`."""
        from functions.rag.embedding import fuse_scores

        if self.embeddings is None:
            return lexical
        dense = (self.embeddings @ query_vector) * self.prior
        return fuse_scores(lexical, dense, self.lexical_share, self.is_item)

    def _lifted(self, query: str, scores: NDArray[np.float32]) -> NDArray[np.float32]:
        """Items lifted to CITED_SHARE of the best passage naming them and, for an entity-seeking query,
        the items of the named types multiplied by TYPE_BOOST."""
        import numpy as np

        if self.cited_items.size:
            borrowed = np.zeros_like(scores)
            np.maximum.at(borrowed, self.cited_items, scores[self.citing_passages])
            scores = np.maximum(scores, np.float32(CITED_SHARE) * borrowed)
        intent = query_intent(query)
        if intent.entity_seeking:
            named_type = np.isin(self.document_types, list(intent.wanted_types))
            scores = np.where(named_type, scores * TYPE_BOOST, scores).astype(np.float32)
        return scores

    def _heading_scores(self, tokens: list[str]) -> NDArray[np.float32]:
        """BM25 of the title field times the share of the query's words the title holds: a title that
        names the whole question ("Value iteration algorithm") outranks one that shares its generic words."""
        import numpy as np

        words = sorted({token for token in tokens if self.heading_lexical.known(token)})
        if not words:
            return np.zeros(self.heading_lexical.size, dtype=np.float32)
        per_word = self.heading_lexical.term_scores(words)
        coverage = (per_word > 0).sum(axis=0) / np.float32(len(set(tokens)))
        scores: NDArray[np.float32] = (per_word.sum(axis=0) * coverage).astype(np.float32)
        return scores

    def _diversified(
        self, ranked: list[int], scores: NDArray[np.float32], top: float, slots: int
    ) -> list[int]:
        """`ranked` with, inside its first `slots`, both the best prose (section or passage) and the best
        numbered item when each scores at least DIVERSE_FLOOR of `top`: the missing kind takes the last slot."""
        if slots < 2 or len(ranked) <= slots:
            return ranked
        kinds = {bool(self.is_item[index]) for index in ranked[:slots]}
        if len(kinds) == 2:
            return ranked
        missing = not kinds.pop()
        for index in ranked[slots:]:
            if bool(self.is_item[index]) == missing and scores[index] >= DIVERSE_FLOOR * top:
                ranked.remove(index)
                ranked.insert(slots - 1, index)
                break
        return ranked

    # --- graph --------------------------------------------------------------------------------------

    def expand(self, document_ids: list[str], relation_types: list[str] | None) -> ExpandOutcome:
        wanted = set(relation_types) if relation_types else None
        seeds: list[str] = []
        missing: list[str] = []
        for raw in document_ids:
            ident = canonical_document_id(raw)
            if ident is None:
                raise InvalidInput(
                    f"document_ids contains an invalid id: '{raw}'. Expected <type>_<number>, e.g. 'formula_3_2'",
                    field="document_ids",
                )
            if ident not in self.nodes:
                missing.append(raw)
            elif ident not in seeds:
                seeds.append(ident)

        def edges_of(ident: str) -> list[Edge]:
            return [edge for edge in self.outgoing.get(ident, []) if wanted is None or edge.type in wanted]

        neighbours: list[str] = []
        truncated = False
        for ident in seeds:
            for edge in edges_of(ident):
                if edge.target in seeds or edge.target in neighbours or edge.target not in self.nodes:
                    continue
                if len(neighbours) >= MAX_NEIGHBOURS:
                    truncated = True
                    break
                neighbours.append(edge.target)
        returned = set(seeds) | set(neighbours)
        documents: list[dict[str, Any]] = []
        count = 0
        for ident in seeds:
            relationships = [
                self._relationship(edge) for edge in edges_of(ident) if edge.target in self.nodes
            ]
            documents.append(self._expanded(ident, relationships, hop=0))
            count += len(relationships)
        for ident in neighbours:
            relationships = [self._relationship(edge) for edge in edges_of(ident) if edge.target in returned]
            documents.append(self._expanded(ident, relationships, hop=1))
            count += len(relationships)

        warnings: list[str] = []
        if missing:
            warnings.append(f"document_ids not found in knowledge base: {', '.join(missing)}")
        if truncated:
            warnings.append(f"expansion truncated to {MAX_NEIGHBOURS} connected documents")
        metadata: dict[str, Any] = {
            "found_ids": seeds,
            "not_found_ids": missing,
            "warnings": warnings,
            "traverse_types": sorted(wanted) if wanted else None,
            "index_version": self.version,
        }
        return ExpandOutcome(documents=documents, relationship_count=count, metadata=metadata)

    def _relationship(self, edge: Edge) -> dict[str, str]:
        return {"type": edge.type, "target_id": edge.target, "target_type": self.nodes[edge.target].type}

    def _expanded(self, ident: str, relationships: list[dict[str, str]], hop: int) -> dict[str, Any]:
        return {**entity_fields(self.nodes[ident]), "hop": hop, "relationships": relationships}

    # --- lookup -------------------------------------------------------------------------------------

    def entity(self, entity_type: str, number: str) -> dict[str, Any]:
        validate_entity_path(entity_type, number)
        found = self.by_number.get((entity_type, number))
        if found is None:
            raise NotFound(f"{entity_type.capitalize()} {number} not found in knowledge base")
        outgoing = self.outgoing.get(found.id, [])
        references = [edge.target for edge in outgoing if edge.type == "REFERENCES"]
        referencing = [edge.target for edge in outgoing if edge.type == "REFERENCED_BY"]
        # Numbered items first, then the passages that mention the entity.
        cited_by = sorted(referencing, key=lambda ident: (ident.startswith("chunk_"), ident))
        return {**entity_fields(found), "references": references, "cited_by": cited_by}

    def stats(self) -> dict[str, Any]:
        return {
            "book_id": self.book_id,
            "version": self.version,
            "nodes": count_by_kind(self.nodes.values()),
            "edges": self.edge_count,
        }


def validate_entity_path(entity_type: str, number: str) -> None:
    if entity_type not in LOOKUP_TYPES:
        raise InvalidInput(f"entity_type must be one of: {', '.join(LOOKUP_TYPES)}", field="entity_type")
    if not NUMBER_PATTERN.match(number):
        raise InvalidInput("number format invalid. Expected format: X.Y or X.YZ", field="number")


# Restatements (the Q&A questions, the summaries) rank below the exposition they restate.
RESTATEMENT_PRIOR = 0.7
_RESTATEMENT_TITLES = {"q&a", "summary"}


def _prior(entity: Entity, nodes: dict[str, Entity]) -> float:
    if entity.type == "exercise":
        return RESTATEMENT_PRIOR
    section = nodes.get("section_" + entity.section.replace(".", "_"))
    if section is not None and section.title.lower() in _RESTATEMENT_TITLES:
        return RESTATEMENT_PRIOR
    return 1.0


def _is_item(entity: Entity) -> bool:
    """A numbered item of the book's text (an equation, algorithm, table, figure, box or example)."""
    return not entity.is_chunk and entity.type in _ITEM_TYPES


_ITEM_TYPES = frozenset(
    kind.value
    for kind in (
        EntityType.FORMULA,
        EntityType.ALGORITHM,
        EntityType.TABLE,
        EntityType.FIGURE,
        EntityType.BOX,
        EntityType.EXAMPLE,
    )
)


def _admits(entity: Entity, types: set[str] | None, filters: SearchFilters) -> bool:
    return (types is None or entity.type in types) and filters.accepts(entity)


_ENTITY_FIELDS = tuple(EntityFields.model_fields)  # read once: pydantic's class property costs per access


def entity_fields(entity: Entity) -> dict[str, Any]:
    """The fields every answer gives of an entity, those of `EntityFields` in api_models."""
    return {name: getattr(entity, name) for name in _ENTITY_FIELDS}


def _result(entity: Entity, score: float) -> dict[str, Any]:
    return {**entity_fields(entity), "score": round(score, 4)}


def _apply_corrections(query: str, corrections: dict[str, str]) -> str:
    out = query
    for word, replacement in corrections.items():
        out = re.sub(rf"\b{re.escape(word)}\b", replacement, out)
    return out
