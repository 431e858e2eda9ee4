"""Every list of connectors is the registry's view (`functions/search/sources.py`)."""

from __future__ import annotations

import importlib
import pkgutil

from functions.extract import metadata_connectors
from functions.research.planning import job as planning
from functions.search import connectors, merge, schemas
from functions.search.connectors import REGISTRY
from functions.search.sources import (
    SOURCES,
    Source,
    connector_names,
    engine_matching,
    metadata_preference,
    planned_connectors,
)
from tests.unit.orchestrate.fixtures import plan


def test_every_connector_module_has_a_source_and_a_factory() -> None:
    names = set()
    for module in pkgutil.iter_modules(connectors.__path__):
        name = getattr(importlib.import_module(f"{connectors.__name__}.{module.name}"), "NAME", None)
        if isinstance(name, str):
            names.add(name)
    assert names == set(connector_names())
    assert tuple(REGISTRY) == connector_names()
    assert all(REGISTRY[name].name == name for name in REGISTRY)  # type: ignore[attr-defined]


def test_every_list_of_connectors_is_derived_from_the_sources() -> None:
    assert connector_names() == schemas.CONNECTOR_NAMES
    enum = schemas.V1SearchRequest.model_json_schema()["properties"]["connectors"]["anyOf"][0]["items"][
        "enum"
    ]
    assert enum == list(connector_names())
    assert planned_connectors() == planning.CONNECTORS
    assert engine_matching() == planning.ENGINE_MATCHING
    assert metadata_preference() == merge.METADATA_PREFERENCE
    assert metadata_preference() == metadata_connectors.SOURCES
    assert {query.connector for query in plan().settings.queries} == set(planned_connectors())


def test_a_new_source_reaches_every_view() -> None:
    fifth = Source("fifth_index", matching="all_words", metadata_rank=5)
    sources = (*SOURCES, fifth)
    assert connector_names(sources)[-1] == "fifth_index"
    assert "fifth_index" in planned_connectors(sources)
    assert engine_matching(sources)["fifth_index"] == "all_words"
    assert metadata_preference(sources)[-1] == "fifth_index"
    searched_on_request_only = Source("own_shelf", matching=None, metadata_rank=None)
    assert "own_shelf" not in planned_connectors((*SOURCES, searched_on_request_only))
    assert "own_shelf" not in metadata_preference((*SOURCES, searched_on_request_only))


def test_metadata_preference_puts_registries_of_record_first() -> None:
    assert metadata_preference() == ("crossref", "openalex", "semantic_scholar", "arxiv")
    assert planned_connectors() == ("arxiv", "semantic_scholar", "openalex", "crossref")
