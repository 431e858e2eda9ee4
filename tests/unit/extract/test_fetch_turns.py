"""An extraction's fetch waits for its turn at a provider at most `turn_wait` seconds, then is deferred
(TurnDeferred: a step hands the wait to the state machine); a turn that the budget cannot wait for, or
a daily allowance spent, is refused as before (TurnNotGranted)."""

from __future__ import annotations

import asyncio
import time

import pytest

from functions.common.outbound.http import HttpClient
from functions.common.outbound.polite_requests import PoliteRequests
from functions.common.outbound.upstream_turns import (
    InMemoryTurnStore,
    ProviderManners,
    TurnDeferred,
    TurnNotGranted,
    UpstreamTurns,
)
from functions.common.settings import Settings
from functions.extract.fetch_turns import FetchDeadline, get_in_turn

PDF = "https://arxiv.org/pdf/2501.00001"
SETTINGS = Settings(arxiv_pdf_base_url="https://arxiv.org", unpaywall_api_url="https://api.unpaywall.org/v2")


def _fetch_while_held(deadline: FetchDeadline) -> BaseException:
    """What a fetch of an arXiv PDF raises while another job holds the provider's (exclusive) turn."""
    turns = UpstreamTurns(InMemoryTurnStore(), lambda _: ProviderManners(interval=5.0, exclusive=True))
    polite = PoliteRequests(SETTINGS, turns)
    held = turns.acquire("arxiv_pdf", team="team-a", job="other")

    async def fetch() -> None:
        client = HttpClient(SETTINGS)
        try:
            await get_in_turn(polite, client, PDF, deadline)
        finally:
            await client.aclose()

    try:
        with pytest.raises((TurnDeferred, TurnNotGranted)) as raised:
            asyncio.run(fetch())
        return raised.value
    finally:
        turns.release(held)


def test_a_turn_further_off_than_the_wait_defers_the_fetch() -> None:
    deadline = FetchDeadline(time.monotonic() + 30.0, team="team-b", job="job-1", turn_wait=0.2)
    deferred = _fetch_while_held(deadline)
    assert isinstance(deferred, TurnDeferred)
    assert deferred.provider == "arxiv_pdf" and deferred.waited >= 0.2 and "deferred" in str(deferred)


def test_a_turn_the_budget_cannot_wait_for_is_refused_not_deferred() -> None:
    without_wait = FetchDeadline(time.monotonic() + 0.4, team="team-b", job="job-1")
    budget_first = FetchDeadline(time.monotonic() + 0.4, team="team-b", job="job-1", turn_wait=20.0)
    assert type(_fetch_while_held(without_wait)) is TurnNotGranted
    assert type(_fetch_while_held(budget_first)) is TurnNotGranted


def test_a_spent_daily_allowance_is_refused_at_once_not_deferred() -> None:
    url = "https://api.unpaywall.org/v2/10.1/x"
    turns = UpstreamTurns(InMemoryTurnStore(), lambda _: ProviderManners(interval=0.0, margin=0.0))
    polite = PoliteRequests(SETTINGS, turns, {"unpaywall": 1})
    assert turns.spend_allowance("unpaywall", "calls", 1)  # the day's one call is gone

    async def fetch() -> None:
        client = HttpClient(SETTINGS)
        try:
            await get_in_turn(polite, client, url, FetchDeadline(time.monotonic() + 30.0, turn_wait=5.0))
        finally:
            await client.aclose()

    with pytest.raises(TurnNotGranted, match="daily allowance"):
        asyncio.run(fetch())
