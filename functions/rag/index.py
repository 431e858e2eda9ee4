"""Build the index from PDFs, write it as versioned artifacts, and load it back (once per container)."""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from functions.common.ml.minilm import MiniLmEmbedder
from functions.common.storage import BlobStore, get_json
from functions.rag.graph import NeighbourFinder, build_edges
from functions.rag.item_context import sentences
from functions.rag.knowledge_base import KnowledgeBase
from functions.rag.lexical import SYMBOL_PATTERN, WORD_PATTERN, LexicalIndex, book_vocabulary
from functions.rag.model import Edge, Entity, EntityType, PageText, TocEntry, count_by_kind
from functions.rag.pdf_pages import extract_pages
from functions.rag.query_encoder import StaticQueryEncoder
from functions.rag.store import pointer_key, put_json, version_prefix
from functions.rag.structure import (
    appendix_entities,
    chapter_of,
    chunk_entities,
    extract_entities,
    read_chapter,
    section_entities,
)
from functions.rag.toc import looks_like_toc, parse_toc

if TYPE_CHECKING:
    from functions.common.ml.embedder import Embedder

# How a hybrid index embeds queries: the static encoder stored with it, or the full MiniLM pass.
QueryEncoding = Literal["static", "minilm"]
# The MiniLM pass reads a query's first 64 tokens (questions run 10-35; BM25 still reads all of it): a
# 1,000-character query would otherwise cost ~60 ms of CPU, five times a question's.
QUERY_MAX_TOKENS = 64
# Bump when parsing, graph or tokenising rules change: it is part of the version, so a new parser re-indexes.
PARSER_VERSION = "rag-parser-6"
_SLUG = re.compile(r"[^a-z0-9]+")
# The book's sentences that teach the static query encoder (query_encoder.py) MiniLM's space: running
# prose of question length.
ENCODER_SENTENCE_WORDS = (6, 40)


@dataclass
class SourcePdf:
    name: str
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class BuiltIndex:
    book_id: str
    version: str
    title: str
    entities: list[Entity]
    edges: list[Edge]
    lexical: LexicalIndex
    heading_lexical: LexicalIndex
    context_lexical: LexicalIndex | None  # None when no item has a context (a book without numbered items)
    symbol_lexical: LexicalIndex | None  # the contexts' one-character symbols; None when they have none
    vocabulary: list[str]
    sources: list[dict[str, str]]
    embeddings: np.ndarray[Any, np.dtype[np.float32]] | None = None
    embedder: Embedder | None = None
    query_encoder: StaticQueryEncoder | None = None


def index_version(sources: list[SourcePdf], embedder: Embedder | None = None) -> str:
    digest = hashlib.sha256(PARSER_VERSION.encode())
    for source in sorted(sources, key=lambda item: item.sha256):
        digest.update(source.sha256.encode())
    if embedder is not None:
        digest.update(embedder.name.encode())
    return digest.hexdigest()[:16]


def book_id_from_title(title: str) -> str:
    return _SLUG.sub("-", title.lower()).strip("-")[:60] or "book"


def build_index(
    sources: list[SourcePdf], book_id: str | None = None, embedder: Embedder | None = None
) -> BuiltIndex:
    toc, title, chapters = _contents_and_chapters(sources)
    entities = _book_entities(chapters, toc)
    _set_headings(entities)
    lexical = LexicalIndex.build([entity.search_text for entity in entities])
    heading_lexical = LexicalIndex.build([entity.heading for entity in entities])
    contexts = [entity.context for entity in entities]
    context_lexical = LexicalIndex.build_optional(contexts)
    symbol_lexical = LexicalIndex.build_optional(contexts, SYMBOL_PATTERN)
    neighbours = _neighbour_finder(entities, lexical)
    edges, citation_nodes = build_edges(entities, neighbours)
    entities.extend(citation_nodes)
    vocabulary = book_vocabulary([entity.content for entity in entities if entity.search_text])
    embeddings = None
    query_encoder = None
    if embedder is not None:
        documents = [entity for entity in entities if entity.search_text]
        embeddings = embedder.embed([_dense_text(entity) for entity in documents])
        if isinstance(embedder, MiniLmEmbedder):
            query_encoder = _fit_query_encoder(embedder, documents, embeddings)
    return BuiltIndex(
        book_id=book_id or book_id_from_title(title or "textbook"),
        version=index_version(sources, embedder),
        title=title,
        entities=entities,
        edges=edges,
        lexical=lexical,
        heading_lexical=heading_lexical,
        context_lexical=context_lexical,
        symbol_lexical=symbol_lexical,
        vocabulary=vocabulary,
        sources=[{"name": source.name, "sha256": source.sha256} for source in sources],
        embeddings=embeddings,
        embedder=embedder,
        query_encoder=query_encoder,
    )


def _contents_and_chapters(
    sources: list[SourcePdf],
) -> tuple[list[TocEntry], str, list[tuple[str, str, list[PageText]]]]:
    """The table of contents, the book's title (from the contents' front page) and the chapters:
    every given PDF is one or the other."""
    toc: list[TocEntry] = []
    title = ""
    chapters: list[tuple[str, str, list[PageText]]] = []
    parsed = [(source, extract_pages(source.data, source.name)) for source in sources]
    for source, pages in parsed:
        opened = chapter_of(pages)
        if opened is not None:
            chapters.append((opened[0], opened[1], pages))
        elif looks_like_toc(pages):
            toc = parse_toc(pages)
            title = _front_title(pages)
        else:
            raise ValueError(
                f"{source.name}: neither a chapter (first page 'Chapter N') nor a table of contents"
            )
    if not chapters:
        raise ValueError("no chapter found in the given PDFs")
    return toc, title, chapters


def _book_entities(chapters: list[tuple[str, str, list[PageText]]], toc: list[TocEntry]) -> list[Entity]:
    """Every chapter's sections, items and chunks, in chapter order, then the appendices."""
    starts = {entry.number: entry.printed_page for entry in toc if entry.level == 1}
    entities: list[Entity] = []
    for chapter, chapter_title, pages in sorted(chapters, key=lambda item: _chapter_key(item[0])):
        if chapter in starts:  # the printed page: chapter start from the contents + page offset
            for page in pages:
                page.printed_page = starts[chapter] + page.page_index - 1
        text = read_chapter(pages, chapter, chapter_title, toc)
        entities.extend(section_entities(text))
        entities.extend(extract_entities(text))
        entities.extend(chunk_entities(text))
    entities.extend(appendix_entities(toc))
    if not entities:
        raise ValueError("no text found in the chapter PDFs")
    return entities


def _dense_text(entity: Entity) -> str:
    """What a document's vector embeds: a numbered item's context (the sentences that introduce and cite
    it say what it is about; its display or table does not), else its heading and content."""
    return entity.context or f"{entity.heading}\n{entity.content}"


def _fit_query_encoder(
    embedder: MiniLmEmbedder, documents: list[Entity], embeddings: np.ndarray[Any, np.dtype[np.float32]]
) -> StaticQueryEncoder | None:
    """Fitted on the book's prose sentences and its items' contexts (whose vectors are `embeddings`' rows)."""
    shortest, longest = ENCODER_SENTENCE_WORDS
    prose = sorted(
        {
            " ".join(sentence.split())
            for entity in documents
            if entity.is_chunk
            for sentence in sentences(" ".join(entity.content.split()))
            if shortest <= len(sentence.split()) <= longest
        }
    )
    items = [index for index, entity in enumerate(documents) if entity.context]
    texts = prose + [documents[index].context for index in items]
    if not texts:
        return None
    targets = np.vstack([embedder.embed(prose), embeddings[items]])
    return StaticQueryEncoder.fit(embedder, texts, targets)


def _front_title(pages: list[PageText]) -> str:
    lines = [line.strip() for line in pages[0].text.splitlines() if line.strip()] if pages else []
    # The title page lists the title (possibly over several lines) and then the author.
    return " ".join(lines[:-1]) if len(lines) > 1 else (lines[0] if lines else "")


def _chapter_key(number: str) -> tuple[int, int]:
    return (0, int(number)) if number.isdigit() else (1, ord(number))


def _set_headings(entities: list[Entity]) -> None:
    titles = {
        entity.number: entity.title
        for entity in entities
        if entity.type == EntityType.SECTION.value and not entity.is_chunk
    }

    def path(number: str) -> str:
        parts = number.split(".")
        found = [titles.get(".".join(parts[:depth]), "") for depth in range(1, len(parts) + 1)]
        return " > ".join(title for title in found if title)

    for entity in entities:
        if entity.is_chunk or entity.type == EntityType.SECTION.value:
            entity.heading = path(entity.section)
        elif entity.type == EntityType.APPENDIX.value:
            entity.heading = f"Appendix {entity.number} {entity.title}"
        else:
            entity.heading = f"{entity.type.capitalize()} {entity.number} {entity.title}"


def _neighbour_finder(entities: list[Entity], lexical: LexicalIndex) -> NeighbourFinder:
    candidates = np.array(
        [not entity.is_chunk and entity.type != EntityType.APPENDIX.value for entity in entities], dtype=bool
    )

    def find(entity: Entity, count: int) -> list[str]:
        scores = lexical.scores(lexical.tokens(entity.search_text))
        scores = np.where(candidates, scores, 0)
        out: list[str] = []
        for index in np.argsort(-scores, kind="stable"):
            if len(out) >= count or scores[index] <= 0:
                break
            if entities[int(index)].id != entity.id:
                out.append(entities[int(index)].id)
        return out

    return find


def write_index(store: BlobStore, built: BuiltIndex) -> bool:
    """Write the artifacts and move the pointers; False when this exact version was already there."""
    prefix = version_prefix(built.book_id, built.version)
    manifest_key = f"{prefix}/manifest.json"
    fresh = not store.exists(manifest_key)
    if fresh:
        put_json(store, f"{prefix}/entities.json", [entity.to_dict() for entity in built.entities])
        put_json(store, f"{prefix}/edges.json", [edge.to_list() for edge in built.edges])
        put_json(store, f"{prefix}/vocabulary.json", built.vocabulary)
        lexical_files = _put_files(store, f"{prefix}/lexical", built.lexical.to_files())
        heading_files = _put_files(store, f"{prefix}/lexical_headings", built.heading_lexical.to_files())
        context_files = _put_index(store, f"{prefix}/lexical_context", built.context_lexical)
        symbol_files = _put_index(store, f"{prefix}/lexical_symbols", built.symbol_lexical)
        if built.embeddings is not None:
            buffer = io.BytesIO()
            np.save(buffer, built.embeddings.astype(np.float32), allow_pickle=False)
            store.put_bytes(f"{prefix}/embeddings.npy", buffer.getvalue())
        embedder_files = _put_files(store, f"{prefix}/embedder", _embedder_artifacts(built.embedder))
        encoder_files = (
            _put_files(store, f"{prefix}/query_encoder", built.query_encoder.to_artifacts())
            if built.query_encoder is not None
            else []
        )
        # The manifest goes last: its presence means the version is complete.
        put_json(
            store,
            manifest_key,
            {
                "book_id": built.book_id,
                "version": built.version,
                "title": built.title,
                "parser_version": PARSER_VERSION,
                "embedder": built.embedder.name if built.embedder else None,
                "embedder_files": embedder_files,
                "query_encoder_files": encoder_files,
                "sources": built.sources,
                "counts": count_by_kind(built.entities),
                "edges": len(built.edges),
                "lexical_files": lexical_files,
                "heading_lexical_files": heading_files,
                "context_lexical_files": context_files,
                "symbol_lexical_files": symbol_files,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            },
        )
    pointer = {"book_id": built.book_id, "version": built.version}
    put_json(store, pointer_key(built.book_id), pointer)
    put_json(store, pointer_key(None), pointer)
    return fresh


class IndexNotFound(LookupError):
    pass


def load_knowledge_base(
    store: BlobStore,
    book_id: str | None = None,
    embedder: Embedder | None = None,
    dense: bool = True,
    query_encoder: QueryEncoding = "minilm",
) -> KnowledgeBase:
    """The index the pointer names. With `dense`, an index built with an embedder is served hybrid,
    the queries embedded by the `query_encoder` kind when the index has it, else by the other one
    (MiniLM: the embedder stored with the index, or the given one when its name matches)."""
    pointer = get_json(store, pointer_key(book_id))
    if not pointer:
        raise IndexNotFound(f"no knowledge-base index at {pointer_key(book_id)}")
    prefix = version_prefix(pointer["book_id"], pointer["version"])
    manifest = get_json(store, f"{prefix}/manifest.json")
    entities_raw = get_json(store, f"{prefix}/entities.json")
    edges_raw = get_json(store, f"{prefix}/edges.json")
    if manifest is None or entities_raw is None or edges_raw is None:
        raise IndexNotFound(f"incomplete knowledge-base index at {prefix}")
    lexical = LexicalIndex.from_files(_files(store, f"{prefix}/lexical", manifest.get("lexical_files", [])))
    headings = LexicalIndex.from_files(
        _files(store, f"{prefix}/lexical_headings", manifest.get("heading_lexical_files", []))
    )
    # Indexes written before the context or the symbols field existed are served without it.
    context = _stored_index(store, f"{prefix}/lexical_context", manifest.get("context_lexical_files"))
    symbols = _stored_index(
        store, f"{prefix}/lexical_symbols", manifest.get("symbol_lexical_files"), SYMBOL_PATTERN
    )
    embeddings, query_embedder = None, None
    if dense and manifest.get("embedder"):
        embeddings, query_embedder = _dense_parts(store, prefix, manifest, embedder, query_encoder)
    return KnowledgeBase(
        book_id=pointer["book_id"],
        version=pointer["version"],
        entities=[Entity.from_dict(item) for item in entities_raw],
        edges=[Edge(*item) for item in edges_raw],
        lexical=lexical,
        heading_lexical=headings,
        context_lexical=context,
        symbol_lexical=symbols,
        vocabulary=get_json(store, f"{prefix}/vocabulary.json") or [],
        embedder=query_embedder,
        embeddings=embeddings,
    )


def _dense_parts(
    store: BlobStore,
    prefix: str,
    manifest: dict[str, Any],
    embedder: Embedder | None,
    query_encoder: QueryEncoding,
) -> tuple[np.ndarray[Any, np.dtype[np.float32]] | None, Embedder | None]:
    """The stored vectors and the model that embeds the queries (None, None: no model to serve them).
    "minilm" takes the full model (the given one when its name matches, else the one stored with the
    index) and falls back to the static encoder when the index has no model; "static" the reverse."""
    query_embedder = (
        _minilm_query_embedder(store, prefix, manifest, embedder)
        or _static_query_encoder(store, prefix, manifest)
        if query_encoder == "minilm"
        else _static_query_encoder(store, prefix, manifest)
        or _minilm_query_embedder(store, prefix, manifest, embedder)
    )
    # The vectors are of no use without a model to embed the queries with.
    raw = store.get_bytes(f"{prefix}/embeddings.npy") if query_embedder is not None else None
    if raw is None:
        return None, query_embedder
    return np.load(io.BytesIO(raw), allow_pickle=False), query_embedder


def _static_query_encoder(store: BlobStore, prefix: str, manifest: dict[str, Any]) -> Embedder | None:
    if manifest.get("query_encoder_files"):
        return StaticQueryEncoder.from_artifacts(
            _files(store, f"{prefix}/query_encoder", manifest["query_encoder_files"])
        )
    return None


def _minilm_query_embedder(
    store: BlobStore, prefix: str, manifest: dict[str, Any], embedder: Embedder | None
) -> Embedder | None:
    if embedder is not None and embedder.name == manifest["embedder"]:
        return embedder
    if manifest.get("embedder_files"):
        model = MiniLmEmbedder.from_artifacts(_files(store, f"{prefix}/embedder", manifest["embedder_files"]))
        model.max_length = min(model.max_length, QUERY_MAX_TOKENS)
        return model
    return None


def _embedder_artifacts(embedder: Embedder | None) -> dict[str, bytes]:
    """The weights to store with the index, when the embedder can be written out (MiniLM can)."""
    if isinstance(embedder, MiniLmEmbedder):
        return embedder.to_artifacts()
    return {}


def _put_index(store: BlobStore, prefix: str, index: LexicalIndex | None) -> list[str]:
    """An optional field's files under `prefix` (none for a field the book does not have)."""
    return _put_files(store, prefix, index.to_files()) if index is not None else []


def _stored_index(
    store: BlobStore, prefix: str, names: list[str] | None, term_pattern: str = WORD_PATTERN
) -> LexicalIndex | None:
    """An optional field `_put_index` wrote, or None when the manifest lists no file of it."""
    return LexicalIndex.from_files(_files(store, prefix, names), term_pattern) if names else None


def _put_files(store: BlobStore, prefix: str, files: dict[str, bytes]) -> list[str]:
    """Write the files under `prefix`; their names, sorted, for the manifest (`_files` reads them back)."""
    for name, data in files.items():
        store.put_bytes(f"{prefix}/{name}", data)
    return sorted(files)


def _files(store: BlobStore, prefix: str, names: list[str]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for name in names:
        data = store.get_bytes(f"{prefix}/{name}")
        if data is None:
            raise IndexNotFound(f"missing index file {prefix}/{name}")
        files[name] = data
    if not files:
        raise IndexNotFound(f"no index files under {prefix}")
    return files
