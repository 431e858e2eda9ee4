"""Turns at an upstream provider: spacing from the wire, exclusivity, fairness, deadlines, allowances."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from functions.common.outbound.upstream_turns import (
    DynamoDbTurnStore,
    InMemoryTurnStore,
    ProviderManners,
    TurnNotGranted,
    TurnStore,
    UpstreamTurns,
)
from tests.support.fairness import largest_lead
from tests.support.tables import create_table

INTERVAL = 0.15


def _turns(
    store: TurnStore, exclusive: bool = False, interval: float = INTERVAL, lag: float = 5.0
) -> UpstreamTurns:
    return UpstreamTurns(
        store, lambda _: ProviderManners(interval=interval, exclusive=exclusive, margin=0.0, lag=lag)
    )


def _take(
    turns: UpstreamTurns, team: str, job: str, log: list[tuple[str, float, float]], hold: float
) -> None:
    with turns.turn("p", team=team, job=job) as turn:
        time.sleep(0.01)  # the request leaves a little after the grant, by a varying amount
        turn.sent()
        sent = turn.sent_at or 0.0
        if turn.manners.exclusive:
            time.sleep(hold)
        log.append((team, sent, time.time()))


def _run(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)


@pytest.fixture
def dynamodb_store() -> Iterator[DynamoDbTurnStore]:
    with mock_aws():
        yield DynamoDbTurnStore(create_table("rate_limit_table", "limits"))


def test_requests_leave_at_least_an_interval_apart_however_late_each_one_leaves() -> None:
    turns = _turns(InMemoryTurnStore())
    log: list[tuple[str, float, float]] = []
    _run([threading.Thread(target=_take, args=(turns, "t", f"j{i}", log, 0.0)) for i in range(8)])
    sent = sorted(at for _, at, _ in log)
    assert len(sent) == 8
    assert min(b - a for a, b in itertools.pairwise(sent)) >= INTERVAL


def test_an_exclusive_provider_never_has_two_requests_open() -> None:
    turns = _turns(InMemoryTurnStore(), exclusive=True, interval=0.05)
    log: list[tuple[str, float, float]] = []
    _run([threading.Thread(target=_take, args=(turns, "t", f"j{i}", log, 0.1)) for i in range(5)])
    spans = sorted((sent, done) for _, sent, done in log)
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans))


def test_one_teams_burst_does_not_starve_another_teams_single_request() -> None:
    turns = _turns(InMemoryTurnStore(), interval=0.1)
    log: list[tuple[str, float, float]] = []
    burst = [threading.Thread(target=_take, args=(turns, "big", f"j{i}", log, 0.0)) for i in range(12)]
    for thread in burst:
        thread.start()
    deadline = time.monotonic() + 30
    while turns.queue_length("p") + turns.granted("p") < len(burst):  # the big team's all queued first
        assert time.monotonic() < deadline, "the burst never queued"
        time.sleep(0.005)
    served_before = turns.granted("p")
    small = threading.Thread(target=_take, args=(turns, "small", "s1", log, 0.0))
    _run([small])
    for thread in burst:
        thread.join(timeout=30)
    order = [team for team, _, _ in sorted(log, key=lambda entry: entry[1])]
    # it arrived after 12 queued requests of the other team and is served at the next turn or the one after
    assert order.index("small") <= served_before + 1, (served_before, order)


def test_a_waiter_whose_deadline_passes_is_not_run_and_leaves_the_queue() -> None:
    store = InMemoryTurnStore()
    turns = _turns(store, exclusive=True, interval=0.05)
    held = turns.acquire("p", team="t", job="a")
    started = time.time()
    with pytest.raises(TurnNotGranted) as caught:
        turns.acquire("p", team="t", job="b", deadline=time.time() + 0.3)
    assert time.time() - started >= 0.25  # it waited until its deadline (the turn it waits for never comes)
    assert "rate budget" in str(caught.value)
    assert turns.queue_length("p") == 0
    turns.release(held)


def test_retry_after_pauses_every_waiter() -> None:
    turns = _turns(InMemoryTurnStore(), interval=0.01)
    turn = turns.acquire("p", team="t", job="a")
    turn.sent()
    turn.pause(0.4)
    turns.release(turn)
    started = time.time()
    with turns.turn("p", team="u", job="b"):
        assert time.time() - started >= 0.35


def test_turns_kept_in_dynamodb_hold_the_spacing_across_instances(dynamodb_store: DynamoDbTurnStore) -> None:
    # two "Lambdas": two UpstreamTurns over the same table
    first, second = _turns(dynamodb_store), _turns(dynamodb_store)
    log: list[tuple[str, float, float]] = []
    threads = [
        threading.Thread(target=_take, args=(first if i % 2 else second, f"t{i % 3}", f"j{i}", log, 0.0))
        for i in range(6)
    ]
    _run(threads)
    sent = sorted(at for _, at, _ in log)
    assert len(sent) == 6
    assert min(b - a for a, b in itertools.pairwise(sent)) >= INTERVAL


def test_daily_allowance_is_counted_and_refused_when_spent() -> None:
    turns = _turns(InMemoryTurnStore())
    assert turns.allowance_left("openalex", "search", 3) == 3
    assert turns.spend_allowance("openalex", "search", 3, 2)
    assert not turns.spend_allowance("openalex", "search", 3, 2)
    assert turns.allowance_left("openalex", "search", 3) == 1


class _Unreachable:
    def read(self, provider: str) -> Any:
        raise ConnectionError("the table does not answer")

    def write(self, provider: str, state: Any, version: int) -> bool:
        raise ConnectionError("the table does not answer")

    def wait(self, provider: str, version: int, timeout: float) -> None:
        time.sleep(min(timeout, 0.05))

    async def wait_async(self, provider: str, version: int, timeout: float) -> None:
        return None


def test_an_unreachable_shared_store_keeps_turns_in_this_process_still_spaced() -> None:
    turns = _turns(_Unreachable())
    log: list[tuple[str, float, float]] = []
    _run([threading.Thread(target=_take, args=(turns, "t", f"j{i}", log, 0.0)) for i in range(4)])
    sent = sorted(at for _, at, _ in log)
    assert len(sent) == 4
    assert min(b - a for a, b in itertools.pairwise(sent)) >= INTERVAL


def test_a_request_takes_the_best_place_in_line_of_the_others_who_wait_for_it() -> None:
    """A small team's query coalesced onto a big team's identical one (the last of a burst) sponsors it:
    the request moves to the small team's place in line, and the turn counts as the small team's."""
    import asyncio

    turns = _turns(InMemoryTurnStore(), interval=0.05)
    order: list[str] = []
    sponsors: list[tuple[str, str, int]] = []

    async def take(job: str, with_sponsors: bool = False) -> None:
        turn = await turns.acquire_async(
            "p", team="big", job=job, sponsors=(lambda: list(sponsors)) if with_sponsors else None
        )
        order.append(job)
        turn.sent()
        turns.release(turn)

    async def scenario() -> None:
        burst = [asyncio.create_task(take(f"j{i}")) for i in range(11)]
        await asyncio.sleep(0.02)
        shared = asyncio.create_task(take("shared", with_sponsors=True))
        await asyncio.sleep(0.2)  # a few of the burst are served; the shared one is last in line
        assert "shared" not in order
        sponsors.append(("small", "s1", 0))
        await asyncio.gather(*burst, shared)

    asyncio.run(scenario())
    assert order.index("shared") <= order.index("j3") + 3  # served within a turn or two of the sponsor
    assert order.index("shared") < len(order) - 3
    state, _ = turns._store.read("p")
    assert "small" in state.team_served and "small\x1fs1" in state.job_served


async def _take_turn(
    turns: UpstreamTurns, order: list[str], team: str, job: str, sponsor: tuple[str, str, int] | None = None
) -> None:
    """Wait for the provider's turn, note whose it was (the sponsor's team when one lends its place),
    send at once and hand the turn back."""
    sponsors = [sponsor] if sponsor else []
    turn = await turns.acquire_async("p", team=team, job=job, sponsors=lambda: list(sponsors))
    order.append(sponsor[0] if sponsor else team)
    turn.sent()
    turns.release(turn)


def test_when_a_burst_starts_the_team_with_the_fewest_requests_waiting_goes_first() -> None:
    """Teams not served yet are equally entitled: the shortest queue first, so a small team's single
    request does not wait behind a large team that happened to ask a moment earlier."""
    import asyncio

    turns = _turns(InMemoryTurnStore(), interval=0.05)
    order: list[str] = []

    async def scenario() -> None:
        held = turns.acquire("p", team="first", job="f")  # the provider is busy while the others arrive
        big = [asyncio.create_task(_take_turn(turns, order, "big", f"b{i}")) for i in range(4)]
        await asyncio.sleep(0.02)
        small = asyncio.create_task(_take_turn(turns, order, "small", "s1"))
        await asyncio.sleep(0.02)
        turns.release(held)
        await asyncio.gather(*big, small)

    asyncio.run(scenario())
    assert order[0] == "small" and order[1:] == ["big"] * 4


def _served_in_order(turns: UpstreamTurns, arrivals: list[tuple[float, str, int]]) -> list[str]:
    """Teams in the order their turns came: each arrival (delay after the start, team, requests) queues
    that many requests of one job at once."""
    import asyncio

    order: list[str] = []

    async def arrive(delay: float, team: str, requests: int) -> None:
        await asyncio.sleep(delay)
        await asyncio.gather(*(_take_turn(turns, order, team, f"{team}-job") for _ in range(requests)))

    async def scenario() -> None:
        held = turns.acquire("p", team="first", job="f")  # busy while the first arrivals queue
        queued = asyncio.gather(*(arrive(delay, team, n) for delay, team, n in arrivals))
        await asyncio.sleep(0.05)
        turns.release(held)
        await queued

    asyncio.run(scenario())
    return order


def test_a_small_team_joining_a_busy_provider_has_its_few_requests_served_at_once() -> None:
    """Three requests of a small team arrive while a large team's burst fills the queue: within the lag
    (here 5 turns) they go one after the other, not one in every other turn."""
    order = _served_in_order(
        _turns(InMemoryTurnStore(), interval=0.03, lag=0.15), [(0.0, "big", 14), (0.1, "small", 3)]
    )
    first = order.index("small")
    assert first <= 5 and order[first : first + 3] == ["small"] * 3


def test_no_team_is_served_more_than_the_lag_ahead_of_a_team_that_asks() -> None:
    """Two teams asking at once, the smaller queue first: it may lead by the lag (2 turns), never more,
    so a large team is held back by at most the lag whatever the other team's queue."""
    turns = _turns(InMemoryTurnStore(), interval=0.02, lag=0.04)
    order = _served_in_order(turns, [(0.0, "big", 12), (0.0, "medium", 6)])
    assert order[:2] == ["medium", "medium"]
    assert largest_lead(order, "medium", "big") == 2
    assert order.count("medium") == 6 and order.count("big") == 12


def test_a_team_coming_back_after_a_pause_earns_no_credit_for_its_idle_time() -> None:
    """One team is served alone for a while, then another that was idle all along comes with a long
    queue: it starts level with the first, so it leads by the lag at most, not by the turns it missed."""
    turns = _turns(InMemoryTurnStore(), interval=0.02, lag=0.04)
    _served_in_order(turns, [(0.0, "steady", 10)])
    order = _served_in_order(turns, [(0.0, "steady", 12), (0.0, "returning", 10)])
    assert largest_lead(order, "returning", "steady") <= 2


def test_requests_a_team_waits_for_through_another_teams_identical_ones_count_as_its_queue() -> None:
    """A team whose four queries joined a large team's identical ones waits for four requests, not none:
    a small team with two of its own still goes first."""
    import asyncio

    turns = _turns(InMemoryTurnStore(), interval=0.02, lag=1.0)
    order: list[str] = []
    joined = ("joined", "joined-job", 0)

    async def scenario() -> None:
        held = turns.acquire("p", team="first", job="f")
        queued = [
            asyncio.create_task(_take_turn(turns, order, "big", "b", joined if i < 4 else None))
            for i in range(6)
        ]
        queued += [asyncio.create_task(_take_turn(turns, order, "small", "s")) for _ in range(2)]
        await asyncio.sleep(0.05)
        turns.release(held)
        await asyncio.gather(*queued)

    asyncio.run(scenario())
    assert order[:2] == ["small", "small"]
    assert order[2:6] == ["joined"] * 4
