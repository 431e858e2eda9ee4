"""The teams' own upstream API keys (set with `PUT /admin/teams/{team_id}/upstream-keys/{provider}`), as
the search connectors send them.

A team with its own key at a provider has a budget of its own there: its requests carry its key instead
of the service's and take their turns at `<provider>@team:<team_id>` (the same interval, its own queue
and daily allowance), so it neither waits behind nor spends the service's budget. The keys are read
from the teams table and opened (KMS, purpose `upstream-key`) once a minute per team and process, not on
every request. A key is never logged: a failure to read them is logged by its class name only, and the
team's searches then use the service's key.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from functions.common.observability import get_logger
from functions.common.process_once import ProcessOnce

logger = get_logger("search")
TEAM_BUDGET_MARK = "@team:"
CACHE_SECONDS = 60.0


def team_provider(provider: str, team_id: str) -> str:
    """The turn key of a team's own budget at `provider`."""
    return f"{provider}{TEAM_BUDGET_MARK}{team_id}"


def base_provider(turn_key: str) -> str:
    """The provider a turn key queues at (`semantic_scholar@team:t` -> `semantic_scholar`)."""
    return turn_key.split(TEAM_BUDGET_MARK, 1)[0]


class TeamKeys(Protocol):
    def key(self, team_id: str, provider: str) -> str | None:
        """The team's own key at `provider`; None when it has none (the service's key is sent)."""
        ...


class CachedTeamKeys:
    """Each team's keys, loaded at most once per `ttl` seconds (a failed load too: the service's keys
    are used meanwhile)."""

    def __init__(
        self,
        load: Callable[[str], Mapping[str, str]],
        ttl: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load, self._ttl, self._clock = load, ttl, clock
        self._lock = threading.Lock()
        self._loaded: dict[str, tuple[float, Mapping[str, str]]] = {}

    def key(self, team_id: str, provider: str) -> str | None:
        now = self._clock()
        with self._lock:
            cached = self._loaded.get(team_id)
        if cached is None or now - cached[0] >= self._ttl:
            try:
                keys = dict(self._load(team_id))
            except Exception as exc:
                logger.warning("team upstream keys unreadable", team_id=team_id, error=exc.__class__.__name__)
                keys = {}
            cached = (now, keys)
            with self._lock:
                self._loaded[team_id] = cached
        return cached[1].get(provider)


def _stored_keys(team_id: str) -> Mapping[str, str]:
    from functions.teams.service import TeamService
    from functions.teams.store import DynamoDbTeamStore

    return TeamService(DynamoDbTeamStore()).upstream_keys(team_id)


_process_keys = ProcessOnce(lambda: CachedTeamKeys(_stored_keys))


def process_team_keys() -> CachedTeamKeys:
    """The process's cache of the teams' keys, read from the teams table."""
    return _process_keys.get()


def reset_process_team_keys() -> None:
    """Forget the cached keys (tests that change a team's key and search at once)."""
    _process_keys.reset()
