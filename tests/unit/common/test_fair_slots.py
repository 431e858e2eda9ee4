"""Scarce slots are shared fairly between teams: one team's queue does not hold another's task."""

from __future__ import annotations

import threading
import time

from functions.common.outbound.fair_slots import FairSlots, counting_shared_waits, current_team, working_for


def _until_queued(slots: FairSlots, **waiting: int) -> None:
    """Until one task holds the only slot and `waiting` (tasks per team) wait for it: the threads' start,
    however slow on a loaded machine, has happened before the test goes on."""
    deadline = time.monotonic() + 30
    while True:
        with slots._changed:
            held = slots._busy == 1
            queued = {team: len(queue) for team, queue in slots._waiting.items() if queue}
        if held and queued == waiting:
            return
        assert time.monotonic() < deadline, (held, queued)
        time.sleep(0.005)


def test_a_freed_slot_goes_to_the_team_served_least_recently() -> None:
    slots = FairSlots(1)
    order: list[str] = []
    release = threading.Event()

    def work(team: str) -> None:
        with slots.slot(team) as granted:
            assert granted
            order.append(team)
            if team == "first":
                release.wait(60)
            else:
                time.sleep(0.01)

    holder = threading.Thread(target=work, args=("first",))
    holder.start()
    _until_queued(slots)
    crowd = [threading.Thread(target=work, args=("big",)) for _ in range(6)]
    for thread in crowd:
        thread.start()
    _until_queued(slots, big=6)
    small = threading.Thread(target=work, args=("small",))
    small.start()
    _until_queued(slots, big=6, small=1)
    release.set()
    for thread in [holder, *crowd, small]:
        thread.join(60)
    # "small" arrived after six of "big": it is served second after the holder, not seventh
    assert order[:3] in (["first", "big", "small"], ["first", "small", "big"])
    assert sorted(order) == sorted(["first", "small", *["big"] * 6])


def test_a_small_teams_few_tasks_are_served_together_within_the_lag() -> None:
    slots = FairSlots(1, lag=3)
    order: list[str] = []
    release = threading.Event()

    def work(team: str) -> None:
        with slots.slot(team):
            order.append(team)
            if team == "first":
                release.wait(60)

    holder = threading.Thread(target=work, args=("first",))
    holder.start()
    _until_queued(slots)
    crowd = [threading.Thread(target=work, args=("big",)) for _ in range(8)]
    small = [threading.Thread(target=work, args=("small",)) for _ in range(3)]
    for thread in [*crowd, *small]:
        thread.start()
    _until_queued(slots, big=8, small=3)
    release.set()
    for thread in [holder, *crowd, *small]:
        thread.join(60)
    assert order[1:4] == ["small"] * 3  # not one in every other slot behind the big team's eight
    assert order.count("big") == 8


def test_a_waiter_gives_up_at_its_timeout_without_a_slot() -> None:
    slots = FairSlots(1)
    with slots.slot("a") as first:
        assert first
        started = time.monotonic()
        with slots.slot("b", timeout=0.1) as second:
            assert not second
        assert time.monotonic() - started >= 0.09
    with slots.slot("b", timeout=0.1) as third:
        assert third


def test_the_team_is_set_for_the_block_only() -> None:
    seen: list[str] = []
    before = current_team()

    def step() -> None:
        with working_for("team-x"):
            seen.append(current_team())
        seen.append(current_team())

    thread = threading.Thread(target=step)
    thread.start()
    thread.join()
    assert seen == ["team-x", ""] and current_team() == before


def test_a_wait_for_a_slot_only_other_invocations_hold_is_counted_apart() -> None:
    release = threading.Event()
    counted: dict[str, tuple[float, float]] = {}

    def hold(slots: FairSlots) -> None:
        with slots.slot("other"):
            release.wait(60)

    def invocation(name: str, slots: FairSlots) -> None:
        with counting_shared_waits() as waits:
            asked = time.monotonic()
            with slots.slot("mine"):
                waited = time.monotonic() - asked
        counted[name] = (sum(waits), waited)

    pools = {"parse": FairSlots(1, one_per_invocation=True), "passes": FairSlots(1)}
    for name, slots in pools.items():
        holder = threading.Thread(target=hold, args=(slots,))
        holder.start()
        _until_queued(slots)
        waiter = threading.Thread(target=invocation, args=(name, slots))
        waiter.start()
        _until_queued(slots, mine=1)
        release.set()
        for thread in (holder, waiter):
            thread.join(60)
        release.clear()
    shared, waited = counted["parse"]
    assert 0 < shared <= waited  # the parse waited for another invocation only: counted
    assert counted["passes"][0] == 0  # a pool an invocation may hold several of: its own time
