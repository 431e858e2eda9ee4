"""The process's one `UpstreamTurns`: every connector of this process (search routes, the workflow's
steps, metadata lookups) must queue in the same place, or two of them could each think a provider free.

Deployed, the turns live in DynamoDB and any number of processes share them; with the memory backend
(the single-process local runtime) they live here.
"""

from __future__ import annotations

from functions.common.outbound.polite_requests import PoliteRequests
from functions.common.outbound.upstream_turns import DynamoDbTurnStore, InMemoryTurnStore, UpstreamTurns
from functions.common.process_once import ProcessOnce
from functions.common.settings import Settings
from functions.search.config import SearchSettings

_memory_store = ProcessOnce(InMemoryTurnStore)


def process_turns(search_settings: SearchSettings | None = None) -> UpstreamTurns:
    """Turns for these settings (the manners follow the settings; the queue is the process's or the
    table's)."""
    cfg = search_settings or SearchSettings()
    store = _memory_store.get() if cfg.effective_turns_backend == "memory" else DynamoDbTurnStore()
    return UpstreamTurns(store, cfg.manners)


def polite_requests(settings: Settings, search_settings: SearchSettings | None = None) -> PoliteRequests:
    """Turns for fetches that are not searches (PDFs, open-access lookups), with their daily caps."""
    cfg = search_settings or SearchSettings()
    return PoliteRequests(settings, process_turns(cfg), {"unpaywall": cfg.unpaywall_calls_per_day})


def reset_process_turns() -> None:
    """Forget this process's queues (tests that restart the runtime)."""
    _memory_store.reset()
