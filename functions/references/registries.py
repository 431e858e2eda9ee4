"""The deployed `Registries`: lookups through the extract function's metadata adapter over the search
connectors (functions/extract/metadata_connectors.py), so that every request takes the team's fair share
of the provider's turns, its daily allowance, its breaker and its retries, and every answer is cached
for `SEARCH_CACHE_TTL_SECONDS`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from functions.common.outbound.http import HttpClient
from functions.common.settings import Settings
from functions.extract.metadata_connectors import ConnectorMetadata, lookup_cache, lookup_cache_key
from functions.references.lookup import Answer, Kind
from functions.search.connectors import crossref
from functions.search.connectors.base import send_lookup


class ConnectorRegistries:
    """Implements `functions.references.lookup.Registries`."""

    def __init__(self, metadata: ConnectorMetadata) -> None:
        self._metadata = metadata

    async def lookup(self, registry: str, kind: Kind, value: str, *, team: str, budget: float) -> Answer:
        result = await self._metadata.answer(registry, kind, value, budget, team=team)
        return Answer(result.works, result.error)

    async def retraction_notices(self, dois: Sequence[str], *, team: str, budget: float) -> Answer:
        connector = self._metadata.connector(crossref.NAME)
        if connector is None:
            return Answer([], "crossref is not configured")
        asked = sorted(dois)[: crossref.NOTICE_BATCH]
        request = crossref.build_retraction_notices_request(connector.context.settings, asked)
        key = lookup_cache_key(crossref.NAME, "updates", ",".join(asked))
        parse = crossref.parse_retraction_notices
        result = await self._metadata.cached(
            key, crossref.NAME, lambda: send_lookup(connector, request, parse, budget, team=team)
        )
        return Answer(result.works, result.error)


@asynccontextmanager
async def connector_registries(settings: Settings) -> AsyncIterator[ConnectorRegistries]:
    """Registries over one HTTP client, closed when the check is done (clients are bound to a loop)."""
    http = HttpClient(settings, purpose="fetch")
    try:
        yield ConnectorRegistries(ConnectorMetadata.from_settings(settings, http, cache=lookup_cache()))
    finally:
        await http.aclose()
