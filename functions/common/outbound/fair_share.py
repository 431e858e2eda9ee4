"""Fair shares among teams with a bounded lag, in the manner of the EEVDF scheduler.

Each team's service is counted in units (turns at a provider, forward passes on a core). A team already
`lag` units ahead of the least-served team that is asking is not *eligible*; among the eligible teams
the next unit goes to the one whose waiting work would be done first (its service plus the units it has
waiting). A small team's few units are thus served at once instead of one in every N, and no team is
ever held back by more than the lag. A team that comes back after a pause starts level with the
least-served team still asking (`floor`, which never decreases): idle time earns no credit.

The caller keeps the state (`served`, `floor`), in memory or in a shared record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


class FairShare:
    def __init__(self, served: dict[str, float], floor: float, lag: int, waiting: Counter[str]) -> None:
        self.served = served
        self.floor = floor
        self.lag = max(lag, 1)
        self.waiting = waiting
        self.least = min((self.service(team) for team in waiting), default=floor)

    def service(self, team: str) -> float:
        return max(self.served.get(team, 0.0), self.floor)

    def key(self, team: str) -> tuple[bool, float]:
        """(not eligible, when its waiting work would be done): lower is served first."""
        service = self.service(team)
        return service - self.least >= self.lag, service + self.waiting[team]

    def charge(self, team: str, still_asking: Iterable[str]) -> float:
        """Count a unit to `team`; the new floor (the least service of `still_asking` and `team`)."""
        self.served[team] = self.service(team) + 1
        self.floor = max(self.floor, min(self.service(t) for t in {*still_asking, team}))
        return self.floor
