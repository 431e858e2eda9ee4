"""Connector registry: name -> factory taking a ConnectorContext, in the order of `sources.SOURCES`.

A source is added in `functions/search/sources.py` (its name and traits) and here (its factory).
"""

from __future__ import annotations

from collections.abc import Callable

from functions.search.connectors.arxiv import ArxivConnector
from functions.search.connectors.base import Connector, ConnectorContext
from functions.search.connectors.crossref import CrossrefConnector
from functions.search.connectors.library import LibraryConnector
from functions.search.connectors.openalex import OpenAlexConnector
from functions.search.connectors.semantic_scholar import SemanticScholarConnector
from functions.search.sources import connector_names

ConnectorFactory = Callable[[ConnectorContext], Connector]

_FACTORIES: dict[str, ConnectorFactory] = {
    ArxivConnector.name: ArxivConnector,
    SemanticScholarConnector.name: SemanticScholarConnector,
    OpenAlexConnector.name: OpenAlexConnector,
    CrossrefConnector.name: CrossrefConnector,
    LibraryConnector.name: LibraryConnector,
}
# A source without a factory fails here, at import; a factory without a source is caught by a test.
REGISTRY: dict[str, ConnectorFactory] = {name: _FACTORIES[name] for name in connector_names()}

__all__ = ["REGISTRY", "Connector", "ConnectorContext", "ConnectorFactory"]
