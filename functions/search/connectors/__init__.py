"""Connector registry: name -> factory taking a ConnectorContext. Adding a source is one line here."""

from __future__ import annotations

from collections.abc import Callable

from functions.search.connectors.arxiv import ArxivConnector
from functions.search.connectors.base import Connector, ConnectorContext
from functions.search.connectors.crossref import CrossrefConnector
from functions.search.connectors.library import LibraryConnector
from functions.search.connectors.openalex import OpenAlexConnector
from functions.search.connectors.semantic_scholar import SemanticScholarConnector

ConnectorFactory = Callable[[ConnectorContext], Connector]

REGISTRY: dict[str, ConnectorFactory] = {
    "arxiv": ArxivConnector,
    "semantic_scholar": SemanticScholarConnector,
    "openalex": OpenAlexConnector,
    "crossref": CrossrefConnector,
    "library": LibraryConnector,
}

__all__ = ["REGISTRY", "Connector", "ConnectorContext", "ConnectorFactory"]
