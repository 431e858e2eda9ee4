"""Versioned artifacts: write, load, idempotent re-ingest, local directory store, fusion seam."""

from __future__ import annotations

from pathlib import Path

import pytest

from functions.common.storage import InMemoryBlobStore, get_json
from functions.rag.index import BuiltIndex, IndexNotFound, load_knowledge_base, write_index
from functions.rag.ingest import main as ingest_main
from functions.rag.store import LocalDirBlobStore
from tests.unit.rag.tiny_book import tiny_book


def test_artifacts_are_versioned_and_pointed_at(built_index: BuiltIndex) -> None:
    store = InMemoryBlobStore()
    assert write_index(store, built_index) is True
    prefix = f"kb/{built_index.book_id}/{built_index.version}/"
    keys = store.list_keys(prefix)
    for name in ("manifest.json", "entities.json", "edges.json", "vocabulary.json"):
        assert prefix + name in keys
    assert any(key.startswith(prefix + "lexical/") for key in keys)
    pointer = {"book_id": built_index.book_id, "version": built_index.version}
    assert get_json(store, f"kb/{built_index.book_id}/LATEST") == pointer
    assert get_json(store, "kb/LATEST") == pointer
    manifest = get_json(store, prefix + "manifest.json")
    assert manifest is not None
    assert manifest["counts"]["algorithm"] == 2 and manifest["edges"] == len(built_index.edges)


def test_reingesting_the_same_book_is_idempotent(built_index: BuiltIndex) -> None:
    store = InMemoryBlobStore()
    write_index(store, built_index)
    before = {key: store.get_bytes(key) for key in store.list_keys("kb/")}
    assert write_index(store, built_index) is False
    after = {key: store.get_bytes(key) for key in store.list_keys("kb/")}
    assert before == after


def test_loaded_index_answers_like_the_built_one(built_index: BuiltIndex) -> None:
    store = InMemoryBlobStore()
    write_index(store, built_index)
    knowledge_base = load_knowledge_base(store, built_index.book_id)
    assert knowledge_base.version == built_index.version
    assert knowledge_base.entity("algorithm", "1.1")["title"] == "Belief update for a POMDP"
    assert knowledge_base.search("inventory policy reorder point", 3).results[0]["id"] in {
        "algo_2_1",
        "chunk_2_2_1",
        "section_2_2",
    }


def test_missing_index_is_reported() -> None:
    with pytest.raises(IndexNotFound):
        load_knowledge_base(InMemoryBlobStore())


def test_ingest_command_writes_a_local_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdfs = []
    for source in tiny_book():
        path = tmp_path / source.name
        path.write_bytes(source.data)
        pdfs.append(str(path))
    index_dir = tmp_path / "index"
    assert ingest_main(["--index-dir", str(index_dir), *pdfs]) == 0
    assert "written" in capsys.readouterr().out
    assert ingest_main(["--index-dir", str(index_dir), *pdfs]) == 0
    assert "unchanged" in capsys.readouterr().out
    knowledge_base = load_knowledge_base(LocalDirBlobStore(index_dir))
    assert knowledge_base.book_id == "decisions-under-uncertainty"


def test_local_directory_store_refuses_keys_outside_it(tmp_path: Path) -> None:
    store = LocalDirBlobStore(tmp_path)
    store.put_bytes("kb/a/b.json", b"{}")
    assert store.exists("kb/a/b.json") and store.get_bytes("kb/a/b.json") == b"{}"
    assert store.list_keys("kb/") == ["kb/a/b.json"]
    assert store.get_bytes("kb/missing") is None
    with pytest.raises(ValueError, match="escapes"):
        store.put_bytes("../outside", b"x")
