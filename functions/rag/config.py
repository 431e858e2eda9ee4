"""Settings of the knowledge base (read from the environment once per cold start)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic_settings import BaseSettings, SettingsConfigDict


class RagSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAG_", case_sensitive=False, extra="ignore")

    # A local directory holding the `kb/...` artifacts (the local server, the ingest command); when
    # unset the index lives in the data bucket (`DATA_BUCKET`).
    index_path: str | None = None
    # Which book to serve; unset serves the most recently ingested one (`kb/LATEST`).
    book_id: str | None = None
    # S3 prefix under which uploaded book PDFs trigger the ingest function: <prefix><book_id>/<file>.pdf
    source_prefix: str = "kb-source/"
    # Serve an index built with embeddings as hybrid (BM25 + dense); false serves it lexical-only.
    dense: bool = True
    # How a hybrid index embeds the queries: "minilm" (the full MiniLM pass stored with the index, a
    # few ms per query; the static encoder when the index has no model) or "static" (the index's static
    # query encoder, under a millisecond; MiniLM when the index has no static encoder).
    query_encoder: Literal["static", "minilm"] = "minilm"
    # A sentence-transformers model directory (model.safetensors, config.json, vocab.txt) that the
    # ingest uses to embed the book; unset ingests lexical-only.
    embedding_model_dir: str | None = None


@lru_cache(maxsize=1)
def get_rag_settings() -> RagSettings:
    return RagSettings()


def reset_rag_settings_cache() -> None:
    get_rag_settings.cache_clear()
