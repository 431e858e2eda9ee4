"""The real textbook: entities found against numbered_items_auto.json, pages, and lookups by number."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.common.storage import InMemoryBlobStore
from functions.rag.index import SourcePdf, build_index, load_knowledge_base, write_index
from functions.rag.knowledge_base import KnowledgeBase
from functions.rag.pdf_pages import normalise_text
from tests.conftest import CORPUS
from tests.unit.rag.serving import serving

pytestmark = pytest.mark.corpus
TEXTBOOK = CORPUS / "textbook"
# Ground-truth key -> (entity type, recall threshold)
KINDS = {
    "algorithms": ("algorithm", 0.95),
    "tables": ("table", 0.95),
    "figures": ("figure", 0.95),
    "boxes": ("box", 0.95),
    "equations": ("formula", 0.90),
}


@pytest.fixture(scope="module")
def textbook_kb() -> KnowledgeBase:
    if not TEXTBOOK.is_dir():
        pytest.skip("../shared/corpus/textbook is absent")
    sources = [SourcePdf(path.name, path.read_bytes()) for path in sorted(TEXTBOOK.glob("*.pdf"))]
    store = InMemoryBlobStore()
    write_index(store, build_index(sources))
    return load_knowledge_base(store)


@pytest.fixture(scope="module")
def ground_truth() -> dict[str, Any]:
    if not TEXTBOOK.is_dir():
        pytest.skip("../shared/corpus/textbook is absent")
    data: dict[str, Any] = json.loads((TEXTBOOK / "numbered_items_auto.json").read_text())
    return data


@pytest.fixture
def client(textbook_kb: KnowledgeBase) -> Iterator[TestClient]:
    with serving(textbook_kb) as test_client:
        yield test_client


@pytest.mark.parametrize("kind", list(KINDS))
def test_recall_and_printed_pages(
    corpus_dir: Path, textbook_kb: KnowledgeBase, ground_truth: dict[str, Any], kind: str
) -> None:
    entity_type, threshold = KINDS[kind]
    expected = [
        (item["number"], item["printed_page"])
        for ch in ground_truth["chapters"].values()
        for item in ch[kind]
    ]
    assert expected
    found = [number for number, _ in expected if (entity_type, number) in textbook_kb.by_number]
    right_page = [
        number
        for number, page in expected
        if (entity_type, number) in textbook_kb.by_number
        and textbook_kb.by_number[(entity_type, number)].page_number == page
    ]
    assert len(found) / len(expected) >= threshold, sorted(set(n for n, _ in expected) - set(found))
    assert len(right_page) / len(expected) >= threshold


def test_every_numbered_item_answers_by_number_with_its_caption(
    corpus_dir: Path, client: TestClient, ground_truth: dict[str, Any]
) -> None:
    failures = []
    for chapter in ground_truth["chapters"].values():
        for kind, entity_type in (("algorithms", "algorithm"), ("tables", "table"), ("figures", "figure")):
            for item in chapter[kind]:
                response = client.get(f"/entity/{entity_type}/{item['number']}")
                caption = normalise_text(item["caption_first_line"])
                if response.status_code != 200 or caption not in response.json()["content"]:
                    failures.append((entity_type, item["number"], response.status_code))
        for item in chapter["equations"]:
            response = client.get(f"/entity/formula/{item['number']}")
            if response.status_code != 200 or f"({item['number']})" not in response.json()["content"]:
                failures.append(("formula", item["number"], response.status_code))
    assert failures == []


def test_boxes_answer_through_the_graph_with_their_caption(
    corpus_dir: Path, client: TestClient, ground_truth: dict[str, Any]
) -> None:
    boxes = [item for chapter in ground_truth["chapters"].values() for item in chapter["boxes"]]
    ids = ["box_" + item["number"].replace(".", "_") for item in boxes]
    body = client.post(
        "/search/expand-graph", json={"document_ids": ids, "traverse_types": ["PART_OF"]}
    ).json()
    contents = {doc["id"]: doc["content"] for doc in body["expanded_documents"]}
    for ident, item in zip(ids, boxes, strict=True):
        assert normalise_text(item["caption_first_line"]) in contents[ident]


def test_search_finds_the_value_iteration_algorithm(corpus_dir: Path, client: TestClient) -> None:
    body = client.post(
        "/search/semantic",
        json={"query": "value iteration algorithm", "k": 5, "traverse_types": ["algorithm"]},
    ).json()
    assert body["results"][0]["id"] == "algo_4_1"
    assert body["results"][0]["page_number"] == 60


def test_entity_seeking_questions_find_their_item(textbook_kb: KnowledgeBase) -> None:
    """bench/rag_entity_queries.json: the numbered item in the top 5 for most questions of each split
    (dev 97%, held-out 93% when written; the thresholds leave room for one or two parser changes)."""
    from bench.rag import entity_split, is_item_hit, score_split

    queries = json.loads((Path(__file__).parents[3] / "bench" / "rag_entity_queries.json").read_text())
    for split, threshold in (("dev", 0.9), ("held_out", 0.85)):
        chosen = [query for query in queries["queries"] if entity_split(query) == split]
        hits = score_split(textbook_kb, chosen, is_item_hit).hits_at_5
        assert hits / len(chosen) >= threshold, (split, hits, len(chosen))


def test_natural_questions_find_the_item_they_are_about(textbook_kb: KnowledgeBase) -> None:
    """bench/rag_item_questions.json (issue 23): the answering item in the top 5 for most questions of
    each split (dev 74.5%, held-out 73.3% when the ranking was final; before it, 29.8% and 24.4%)."""
    from bench.rag import is_item_hit, score_split

    queries = json.loads((Path(__file__).parents[3] / "bench" / "rag_item_questions.json").read_text())
    for split, threshold in (("dev", 0.65), ("held_out", 0.65)):
        chosen = [query for query in queries["queries"] if query["split"] == split]
        hits = score_split(textbook_kb, chosen, is_item_hit).hits_at_5
        assert hits / len(chosen) >= threshold, (split, hits, len(chosen))
