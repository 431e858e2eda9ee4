"""Requests in flight in this process, by key: an identical request (another job's, another step's thread)
waits for the first one's answer instead of spending a turn at the provider, and lends that request its
own place in line (a `Sponsor`) while it waits. Searches and citation-graph requests are coalesced alike.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from functions.common.outbound.upstream_turns import Sponsor

AnswerT = TypeVar("AnswerT")
# Who else waits for the request (read again while it waits for its turn).
SponsorsOf = Callable[[], list[Sponsor]]


class InFlight(Generic[AnswerT]):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[str, concurrent.futures.Future[AnswerT]] = {}
        self._sponsors: dict[str, list[Sponsor]] = {}

    def join(self, key: str, sponsor: Sponsor) -> tuple[concurrent.futures.Future[AnswerT], bool]:
        """(the flight, whether the caller leads it and must finish it); a follower is its sponsor."""
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None:
                self._sponsors.setdefault(key, []).append(sponsor)
                return flight, False
            flight = concurrent.futures.Future()
            self._flights[key] = flight
            return flight, True

    def sponsors(self, key: str) -> list[Sponsor]:
        with self._lock:
            return list(self._sponsors.get(key, ()))

    def finish(self, key: str, flight: concurrent.futures.Future[AnswerT], answer: AnswerT) -> None:
        with self._lock:
            if self._flights.get(key) is flight:
                del self._flights[key]
                self._sponsors.pop(key, None)
        flight.set_result(answer)

    async def share(
        self,
        key: str,
        asking: Sponsor,
        ask: Callable[[SponsorsOf], Awaitable[AnswerT]],
        not_run: Callable[[], AnswerT],
    ) -> tuple[AnswerT, bool]:
        """(the answer, whether it is another caller's): the first caller with `key` runs `ask`, given
        who else waits for it; the others wait for its answer. A leader cancelled on the way tells its
        followers `not_run()`."""
        flight, leader = self.join(key, asking)
        if not leader:
            return await asyncio.wrap_future(flight), True
        try:
            answer = await ask(lambda: self.sponsors(key))
        except BaseException:
            self.finish(key, flight, not_run())
            raise
        self.finish(key, flight, answer)
        return answer, False
