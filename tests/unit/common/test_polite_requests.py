"""Fetches that are not searches take turns at the provider their URL belongs to, within its daily cap."""

from __future__ import annotations

import asyncio

import pytest

from functions.common.outbound.polite_requests import PoliteRequests
from functions.common.outbound.upstream_turns import (
    InMemoryTurnStore,
    ProviderManners,
    TurnNotGranted,
    UpstreamTurns,
)
from functions.common.settings import Settings


def _polite(calls_per_day: int = 0) -> PoliteRequests:
    turns = UpstreamTurns(InMemoryTurnStore(), lambda _: ProviderManners(interval=0.05, margin=0.0))
    settings = Settings(
        arxiv_pdf_base_url="https://arxiv.org", unpaywall_api_url="https://api.unpaywall.org/v2"
    )
    return PoliteRequests(settings, turns, {"unpaywall": calls_per_day})


def test_a_url_belongs_to_the_provider_of_its_longest_configured_base() -> None:
    polite = _polite()
    assert polite.provider_of("https://arxiv.org/pdf/2501.00001") == "arxiv_pdf"
    assert polite.provider_of("https://api.unpaywall.org/v2/10.1/x") == "unpaywall"
    assert polite.provider_of("https://api.openalex.org/works/doi:10.1/x") == "openalex"
    assert polite.provider_of("https://arxiv.org.evil.example/pdf/1") is None
    assert polite.provider_of("https://publisher.example/paper.pdf") is None


def test_requests_to_one_provider_are_spaced_and_its_daily_cap_holds() -> None:
    polite = _polite(calls_per_day=3)
    sent: list[float] = []

    async def one() -> str:
        async def send(on_sent: object) -> str:
            loop = asyncio.get_running_loop()
            sent.append(loop.time())
            await on_sent()  # type: ignore[operator]
            return "ok"

        return await polite.send("https://api.unpaywall.org/v2/10.1/x", send, team="t", job="j")

    async def main() -> list[str | BaseException]:
        return await asyncio.gather(*(one() for _ in range(4)), return_exceptions=True)

    outcomes = asyncio.run(main())
    assert outcomes.count("ok") == 3
    refused = [o for o in outcomes if isinstance(o, TurnNotGranted)]
    assert len(refused) == 1 and "daily allowance of 3 calls" in str(refused[0])
    gaps = [b - a for a, b in zip(sorted(sent), sorted(sent)[1:], strict=False)]
    assert gaps and min(gaps) >= 0.05 - 1e-3


def test_a_url_of_no_known_provider_is_sent_at_once() -> None:
    polite = _polite()

    async def send(on_sent: object) -> int:
        return 7

    assert asyncio.run(polite.send("https://publisher.example/a.pdf", send, team="t", job="j")) == 7
    with pytest.raises(TurnNotGranted):
        turns = UpstreamTurns(InMemoryTurnStore(), lambda _: ProviderManners(interval=5.0, exclusive=True))
        held = turns.acquire("arxiv_pdf", team="t", job="a")
        try:
            asyncio.run(
                PoliteRequests(polite.settings, turns).send(
                    "https://arxiv.org/pdf/1", send, team="t", job="b", deadline=0.0
                )
            )
        finally:
            turns.release(held)
