"""What one extraction call may spend: its deadline, its place in the providers' queues, and its counters."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from functions.common.outbound.http import FetchedResponse, HttpClient
from functions.common.outbound.polite_requests import PoliteRequests
from functions.common.outbound.upstream_turns import TurnDeferred, TurnNotGranted

CANDIDATE_TIMEOUT_SECONDS = 15.0
# What a fetch keeps of its extraction's budget after waiting for its turn at a provider.
FETCH_KEEP_SECONDS = 10.0


@dataclass(slots=True)
class ServiceStats:
    """Counters that show what a call cost (tests assert on them, logs report them)."""

    fetches: int = 0
    parses: int = 0
    cache_hits: int = 0


@dataclass(slots=True)
class FetchDeadline:
    ends_at: float
    tried: list[str] = field(default_factory=list)
    # whose turn at a provider a fetch takes (shared fairly per team, then job) and how it ranks in its job
    team: str = "public"
    job: str = "interactive"
    priority: int = 0
    turn_wait: float | None = None  # the most a fetch waits for a turn before it is deferred

    def turn_deadline(self, keep: float) -> float:
        """The epoch time by which a fetch must have had its turn, keeping `keep` seconds (at most half
        of what is left) to fetch."""
        left = max(0.0, self.ends_at - time.monotonic())
        return time.time() + left - min(keep, left / 2)

    def remaining(self, cap: float | None = None) -> float:
        left = self.ends_at - time.monotonic()
        return max(0.5, min(left, cap or CANDIDATE_TIMEOUT_SECONDS))


async def get_in_turn(
    polite: PoliteRequests,
    client: HttpClient,
    url: str,
    deadline: FetchDeadline,
    *,
    timeout_cap: float | None = None,
    **request: Any,
) -> FetchedResponse:
    """GET `url` inside its provider's turn: TurnNotGranted when the turn does not come within the budget,
    TurnDeferred when it does not come within `deadline.turn_wait` and the budget would have waited on."""
    budget_by = deadline.turn_deadline(keep=FETCH_KEEP_SECONDS)
    defer_by = time.time() + deadline.turn_wait if deadline.turn_wait is not None else math.inf
    try:
        return await polite.send(
            url,
            lambda on_sent: client.get(
                url,
                total_timeout=deadline.remaining(timeout_cap),
                # a provider's request is retried only in a new turn, never inside this one
                retries=0 if polite.provider_of(url) else 1,
                on_sent=on_sent,
                **request,
            ),
            team=deadline.team,
            job=deadline.job,
            priority=deadline.priority,
            deadline=min(budget_by, defer_by),
        )
    except TurnNotGranted as exc:
        # a refusal before the wait's end (a daily allowance spent) is no deferral
        if defer_by < budget_by and time.time() >= defer_by:
            raise TurnDeferred(exc.provider, exc.waited, exc.ahead) from exc
        raise
