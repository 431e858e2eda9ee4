"""Turns for requests that are not searches: a PDF from arxiv.org, an open-access lookup at OpenAlex,
Crossref or Unpaywall. They reach the same providers as the connectors, so they queue in the same turns
(functions/common/outbound/upstream_turns.py) and keep the same spacing at the wire.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from functions.common.outbound.upstream_turns import TurnNotGranted, UpstreamTurns
from functions.common.settings import Settings

T = TypeVar("T")
SendWithHook = Callable[[Callable[[], Awaitable[None]]], Awaitable[T]]


@dataclass
class PoliteRequests:
    """Which provider a URL belongs to (by the configured base URLs), and its turn around the request."""

    settings: Settings
    turns: UpstreamTurns
    # calls a day a provider allows for requests of this kind (Unpaywall: 100,000); 0 or absent: no cap
    calls_per_day: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # longest base first: "arxiv_pdf" at arxiv.org must not swallow a longer, more specific base
        bases = {
            "arxiv_pdf": self.settings.arxiv_pdf_base_url,
            "arxiv": self.settings.arxiv_api_url,
            "openalex": self.settings.openalex_api_url,
            "crossref": self.settings.crossref_api_url,
            "unpaywall": self.settings.unpaywall_api_url,
        }
        self._bases = sorted(
            ((base.rstrip("/"), name) for name, base in bases.items() if base), key=lambda item: -len(item[0])
        )

    def provider_of(self, url: str) -> str | None:
        return next((name for base, name in self._bases if url == base or url.startswith(base + "/")), None)

    async def send(
        self,
        url: str,
        send: SendWithHook[T],
        *,
        team: str,
        job: str,
        priority: int = 0,
        deadline: float | None = None,
    ) -> T:
        """Run `send(on_sent)` inside the provider's turn (TurnNotGranted past `deadline`, an epoch time);
        a URL of no known provider is sent at once."""
        provider = self.provider_of(url)
        if provider is None:
            return await send(_nothing)
        turn = await self.turns.acquire_async(
            provider, team=team, job=job, priority=priority, deadline=deadline
        )
        per_day = self.calls_per_day.get(provider, 0)
        if per_day and not self.turns.spend_allowance(provider, "calls", per_day):
            self.turns.release(turn)  # never sent
            raise TurnNotGranted(
                provider, 0.0, 0, why=f"{provider}'s daily allowance of {per_day} calls is spent"
            )

        async def on_sent() -> None:
            turn.sent()
            if not turn.manners.exclusive:
                self.turns.release(turn)

        try:
            return await send(on_sent)
        finally:
            if turn.sent_at is None:
                turn.sent()
            self.turns.release(turn)


async def _nothing() -> None:
    return None
