"""Ingest a book: `python -m functions.rag.ingest [--index-dir DIR] [--book-id ID] PDF...`, and the
S3-triggered Lambda `functions.rag.ingest.handler`.

With `--embedding-model DIR` (or `RAG_EMBEDDING_MODEL_DIR`) the book is also embedded for hybrid
search. The command writes to `--index-dir`, else `RAG_INDEX_PATH`, else the data bucket when
`DATA_BUCKET` and AWS are configured, else the repository's `.rag-index/` that the local server reads
(`location.py`); it prints where it wrote, and any failure is one line on stderr and exit status 1.
The Lambda is triggered by a PDF uploaded under `RAG_SOURCE_PREFIX` (`kb-source/<book_id>/<file>.pdf`),
ingests every PDF of that book folder together, and writes the index to the data bucket. Both are
idempotent: the version is a hash of the PDFs and the parser version.
"""

from __future__ import annotations

import argparse
import io
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, PartialCredentialsError
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from functions.common import snapstart
from functions.common.ml.minilm import MiniLmEmbedder
from functions.common.observability import get_logger
from functions.common.storage import BlobStore, S3BlobStore
from functions.rag.config import get_rag_settings
from functions.rag.index import SourcePdf, build_index, write_index
from functions.rag.location import ingest_destination
from functions.rag.model import count_by_kind

if TYPE_CHECKING:
    from functions.common.ml.embedder import Embedder

logger = get_logger("rag-ingest")


def ingest(
    sources: list[SourcePdf], store: BlobStore, book_id: str | None = None, embedder: Embedder | None = None
) -> dict[str, Any]:
    started = time.perf_counter()
    built = build_index(sources, book_id=book_id, embedder=embedder)
    fresh = write_index(store, built)
    return {
        "book_id": built.book_id,
        "version": built.version,
        "written": fresh,
        "counts": count_by_kind(built.entities),
        "edges": len(built.edges),
        "embedder": embedder.name if embedder else None,
        "seconds": round(time.perf_counter() - started, 2),
    }


def configured_embedder(model_dir: Path | None = None) -> Embedder | None:
    directory = model_dir or get_rag_settings().embedding_model_dir
    return MiniLmEmbedder.from_model_dir(directory) if directory else None


class IngestError(Exception):
    """A failure the command reports in one line (no traceback)."""


def read_sources(paths: Sequence[Path]) -> list[SourcePdf]:
    sources: list[SourcePdf] = []
    for path in paths:
        if not path.exists():
            raise IngestError(f"{path}: no such file")
        if not path.is_file():
            raise IngestError(f"{path}: not a file")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise IngestError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
        if not data.startswith(b"%PDF-"):
            raise IngestError(f"{path}: not a PDF file")
        try:
            PdfReader(io.BytesIO(data)).get_num_pages()
        except (PyPdfError, ValueError, KeyError) as exc:
            raise IngestError(f"{path}: unreadable PDF ({_one_line(exc)})") from exc
        sources.append(SourcePdf(path.name, data))
    return sources


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m functions.rag.ingest", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("pdfs", nargs="+", type=Path, help="table of contents and chapter PDFs of one book")
    parser.add_argument(
        "--index-dir",
        type=Path,
        help="local index directory (default: RAG_INDEX_PATH; else the data bucket when DATA_BUCKET and AWS "
        "are configured; else .rag-index/, which the local server reads)",
    )
    parser.add_argument("--book-id", help="book id (default: derived from the title page)")
    parser.add_argument(
        "--embedding-model",
        type=Path,
        help="sentence-transformers model directory for hybrid search (default: RAG_EMBEDDING_MODEL_DIR; "
        "unset: lexical-only)",
    )
    args = parser.parse_args(argv)
    # pypdf logs what it repairs in a damaged file; the command reports what it cannot read itself.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        summary, where = _run(args)
    except IngestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    print(
        f"ingested {summary['book_id']} version {summary['version']} into {where} "
        f"({'written' if summary['written'] else 'unchanged'}, {summary['seconds']} s): "
        f"{summary['counts']}, {summary['edges']} edges, embeddings: {summary['embedder'] or 'none (lexical-only)'}"
    )
    return 0


def _run(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    sources = read_sources(args.pdfs)
    try:
        embedder = configured_embedder(args.embedding_model)
    except (OSError, ValueError, KeyError) as exc:
        raise IngestError(f"embedding model: {_one_line(exc)}") from exc
    destination = ingest_destination(args.index_dir)
    try:
        summary = ingest(sources, destination.store, book_id=args.book_id, embedder=embedder)
    except (NoCredentialsError, PartialCredentialsError) as exc:
        raise IngestError(
            f"no AWS credentials to write to {destination.description}: configure AWS or pass --index-dir"
        ) from exc
    except (BotoCoreError, ClientError, OSError) as exc:
        raise IngestError(f"cannot write to {destination.description}: {_one_line(exc)}") from exc
    except PyPdfError as exc:
        raise IngestError(f"unreadable PDF: {_one_line(exc)}") from exc
    except ValueError as exc:  # not a book: no chapter, no table of contents
        raise IngestError(_one_line(exc)) from exc
    where = destination.description
    if destination.local_default:
        where += " (no AWS configured; the local server reads it)"
    return summary, where


snapstart.prime_before_snapshot()  # the AWS SDK, imported by the first ingest otherwise


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    """S3 ObjectCreated notification -> ingest the uploaded book's folder into the data bucket."""
    prefix = get_rag_settings().source_prefix
    books: set[tuple[str, str]] = set()
    for record in event.get("Records", []):
        bucket = record["s3"]["bucket"]["name"]
        key = unquote_plus(record["s3"]["object"]["key"])
        relative = key.removeprefix(prefix)
        if key.startswith(prefix) and key.lower().endswith(".pdf") and "/" in relative:
            books.add((bucket, relative.split("/", 1)[0]))
    if not books:
        return {"ingested": []}
    # Once for all the books of the event: the model is read from disk.
    embedder = configured_embedder()
    index_store = S3BlobStore()
    results = []
    for bucket, book_id in sorted(books):
        source_store = S3BlobStore(bucket=bucket)
        keys = [key for key in source_store.list_keys(f"{prefix}{book_id}/") if key.lower().endswith(".pdf")]
        sources = [
            SourcePdf(key.rsplit("/", 1)[-1], source_store.get_bytes(key) or b"") for key in sorted(keys)
        ]
        summary = ingest(sources, index_store, book_id=book_id, embedder=embedder)
        logger.info("book ingested", **summary)
        results.append(summary)
    return {"ingested": results}


if __name__ == "__main__":
    sys.exit(main())
