"""Fair shares with a bounded lag: the smallest queue first, never more than the lag ahead, no hoarded credit."""

from __future__ import annotations

import itertools
from collections import Counter

from functions.common.outbound.fair_share import FairShare
from tests.support.fairness import largest_lead


class _Queue:
    """Units of work per team, served one at a time by `FairShare` (what a scheduler keeps)."""

    def __init__(self, lag: int) -> None:
        self.lag = lag
        self.served: dict[str, float] = {}
        self.floor = 0.0
        self.waiting: Counter[str] = Counter()

    def serve(self, units: int) -> list[str]:
        order: list[str] = []
        for _ in range(units):
            share = FairShare(self.served, self.floor, self.lag, +self.waiting)
            team = min(share.waiting, key=share.key)
            self.waiting[team] -= 1
            self.floor = share.charge(team, +self.waiting)
            order.append(team)
        return order


def test_the_team_with_the_least_work_waiting_is_served_first_within_the_lag() -> None:
    queue = _Queue(lag=5)
    queue.waiting.update({"big": 20, "medium": 6, "small": 3})
    order = queue.serve(29)
    assert order[:3] == ["small"] * 3
    assert order.count("big") == 20 and order.count("medium") == 6


def test_no_team_gets_more_than_the_lag_ahead_of_one_still_asking() -> None:
    for lag in (1, 2, 4):
        queue = _Queue(lag=lag)
        queue.waiting.update({"big": 30, "medium": 12})
        order = queue.serve(42)
        assert largest_lead(order, "medium", "big") == lag


def test_a_lag_of_one_alternates_like_round_robin() -> None:
    queue = _Queue(lag=1)
    queue.waiting.update({"a": 4, "b": 4})
    order = queue.serve(8)
    assert all(x != y for x, y in itertools.pairwise(order))


def test_idle_time_earns_no_credit() -> None:
    queue = _Queue(lag=2)
    queue.waiting.update({"steady": 10})
    queue.serve(10)
    queue.waiting.update({"steady": 12, "returning": 10})
    order = queue.serve(22)
    assert largest_lead(order, "returning", "steady") <= 2
    assert order[:4].count("steady") >= 1  # it is not held back for the ten turns it had alone
