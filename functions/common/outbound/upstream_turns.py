"""Turns at an upstream provider: politeness guaranteed at the wire, granted fairly across teams and jobs.

The whole service is one client of each provider (arXiv: one request every 3 s, one connection at a
time). A request to a provider first takes a *turn*:

- A turn is granted only when the provider is free: no other holder, the provider's interval has passed
  since the last request *left*, and no `Retry-After` pause is running. The holder records when its
  request actually left (`Turn.sent`, called by the HTTP layer once the request is written), so the
  next grant is measured from the wire, not from a booked slot: a request that leaves late pushes the
  next one back instead of landing next to it. A small margin covers the receiving side's own jitter.
- An *exclusive* provider (arXiv) keeps the turn for the whole exchange: never two connections open.
  Others hand the turn back as soon as the request is written, so latency does not lower their rate.
- Among the waiters, teams share turns with a bounded lag (`functions/common/outbound/fair_share.py`): a small
  team's few requests are served at once, and no team is held back by more than the provider's lag
  (`ProviderManners.lag`, a few seconds of its turns), so one team's burst cannot starve another team's
  single job. Within a team, the job served least recently goes first, then the job's most valuable
  request (lowest `priority`).
- Waiting is scheduling, not failure: a waiter whose deadline passes before its turn comes gets
  `TurnNotGranted` (the caller reports the request as not run) and nothing else is recorded.

The state of a provider is one record (`ProviderState`) read and written with a version check, so the
same code serves one process (`InMemoryTurnStore`) and every Lambda of the service at once
(`DynamoDbTurnStore`, an item of the rate-limit table). Waiters keep a heartbeat in the record; a waiter
that died stops being considered after `STALE_WAITER_SECONDS`, a holder that died after its lease.

Daily allowances (OpenAlex searches, Unpaywall calls) are counted in the same record per UTC day
(`spend_allowance`, `allowance_left`), so the planner can see what is left before it plans.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from functions.common.conditional_put import unchanged_since_read
from functions.common.observability import get_logger
from functions.common.outbound.fair_share import FairShare
from functions.common.outbound.invocation_time import waiting

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

logger = get_logger("upstream-turns")
Clock = Callable[[], float]

STALE_WAITER_SECONDS = 10.0
HEARTBEAT_SECONDS = 3.0
MIN_POLL_SECONDS = 0.005


class TurnNotGranted(Exception):
    """The provider's turn did not come before the waiter's deadline (its rate budget is spent)."""

    def __init__(self, provider: str, waited: float, ahead: int, *, why: str | None = None) -> None:
        super().__init__(
            why or f"{provider}'s rate budget: no turn within {waited:.1f} s ({ahead} request(s) ahead)"
        )
        self.provider = provider
        self.waited = waited
        self.ahead = ahead


class TurnDeferred(Exception):
    """The provider's turn is further off than the caller may wait now: a caller billed while it waits (a
    Lambda) comes back later instead, its waiting done where waiting costs nothing (a Step Functions
    Retry)."""

    def __init__(self, provider: str, waited: float, ahead: int) -> None:
        super().__init__(f"{provider}: no turn within {waited:.1f} s ({ahead} request(s) ahead), deferred")
        self.provider = provider
        self.waited = waited
        self.ahead = ahead


@dataclass(frozen=True)
class ProviderManners:
    """What a provider allows: at most one request per `interval` seconds (as they leave), exclusive =
    one connection at a time, `margin` added to the interval for the receiving side's jitter."""

    interval: float
    exclusive: bool = False
    margin: float = 0.05
    lag: float = 5.0  # seconds of this provider's turns a team may be served ahead of the least served

    @property
    def spacing(self) -> float:
        return self.interval + self.margin if self.interval > 0 else 0.0

    @property
    def lag_turns(self) -> int:
        return int(self.lag / self.spacing + 1e-9) if self.spacing > 0 else 0


# Another (team, job, priority) that waits for the very same request (an identical query of another job,
# coalesced in this process): the request takes the best place in line of everyone who wants it, so a
# small team's query is never held back by joining a big team's identical one.
Sponsor = tuple[str, str, int]


@dataclass
class Waiter:
    team: str
    job: str
    priority: int
    since: float
    heartbeat: float
    sponsors: list[Sponsor] = field(default_factory=list)

    def identities(self) -> list[Sponsor]:
        return [(self.team, self.job, self.priority), *self.sponsors]


@dataclass
class ProviderState:
    holder: str | None = None
    lease_until: float = 0.0
    last_sent: float = 0.0
    not_before: float = 0.0  # a Retry-After pause
    # an interval the provider announced (Crossref's x-rate-limit-* headers); used when stricter
    announced_interval: float = 0.0
    waiting: dict[str, Waiter] = field(default_factory=dict)
    team_served: dict[str, float] = field(default_factory=dict)  # when each team was last served
    team_turns: dict[str, float] = field(default_factory=dict)  # each team's service, in turns
    # the service of the least-served team still asking (never decreasing): where a returning team starts
    virtual_turns: float = 0.0
    job_served: dict[str, float] = field(default_factory=dict)
    day: str = ""
    spent_today: dict[str, int] = field(default_factory=dict)  # allowance name -> units spent on `day`
    granted: int = 0  # turns granted, ever (a counter for benchmarks and metrics)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> ProviderState:
        if not text:
            return cls()
        data = json.loads(text)
        waiting = {
            token: Waiter(
                **{**w, "sponsors": [(str(t), str(j), int(p)) for t, j, p in w.get("sponsors", [])]}
            )
            for token, w in data.pop("waiting", {}).items()
        }
        known = {name for name in cls.__dataclass_fields__}
        return cls(waiting=waiting, **{k: v for k, v in data.items() if k in known})


class TurnStore(Protocol):
    """One provider record: `read` gives (state, version); `write` replaces it when the version is still
    the one read, and answers False when another writer came first."""

    def read(self, provider: str) -> tuple[ProviderState, int]: ...

    def write(self, provider: str, state: ProviderState, version: int) -> bool: ...

    def wait(self, provider: str, version: int, timeout: float) -> None:
        """Sleep up to `timeout`, or less when the record changed in a way that may move the queue."""
        ...

    async def wait_async(self, provider: str, version: int, timeout: float) -> None:
        """`wait` on the caller's event loop."""
        ...


def _queue_shape(state: ProviderState) -> tuple[Any, ...]:
    return (state.holder, state.last_sent, state.not_before, frozenset(state.waiting))


class InMemoryTurnStore:
    """One process's providers (unit tests; the single-process local runtime): waiters sleep on a
    condition and wake when the queue moves, instead of polling."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[ProviderState, int]] = {}
        self._lock = threading.Lock()
        self._changed: dict[str, threading.Condition] = {}
        self._async_waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, Callable[[], None]]]] = {}

    def _condition(self, provider: str) -> threading.Condition:
        condition = self._changed.get(provider)
        if condition is None:
            condition = self._changed.setdefault(provider, threading.Condition(self._lock))
        return condition

    def read(self, provider: str) -> tuple[ProviderState, int]:
        with self._lock:
            state, version = self._records.get(provider, (ProviderState(), 0))
            return copy.deepcopy(state), version

    def write(self, provider: str, state: ProviderState, version: int) -> bool:
        with self._lock:
            before, current = self._records.get(provider, (ProviderState(), 0))
            if current != version:
                return False
            self._records[provider] = (copy.deepcopy(state), version + 1)
            if _queue_shape(before) != _queue_shape(state):
                self._condition(provider).notify_all()
                for loop, wake in self._async_waiters.pop(provider, []):
                    loop.call_soon_threadsafe(wake)
            return True

    def wait(self, provider: str, version: int, timeout: float) -> None:
        with self._lock:
            condition = self._condition(provider)
            current = self._records.get(provider, (ProviderState(), 0))[1]
            if current == version:
                condition.wait(timeout)

    async def wait_async(self, provider: str, version: int, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        woken = loop.create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        with self._lock:
            if self._records.get(provider, (ProviderState(), 0))[1] != version:
                return
            self._async_waiters.setdefault(provider, []).append((loop, wake))
        try:
            await asyncio.wait_for(woken, timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                waiters = self._async_waiters.get(provider, [])
                if (loop, wake) in waiters:
                    waiters.remove((loop, wake))


class DynamoDbTurnStore:
    """Provider records in the rate-limit table (`bucket_key` = `turns:<provider>`), shared by every
    Lambda: a conditional put on the version read."""

    def __init__(self, table: Table | None = None) -> None:
        if table is None:
            from functions.common.aws import dynamodb_resource
            from functions.common.settings import get_settings

            table = dynamodb_resource().Table(get_settings().rate_limit_table)
        self._table = table

    def read(self, provider: str) -> tuple[ProviderState, int]:
        item = self._table.get_item(Key={"bucket_key": f"turns:{provider}"}, ConsistentRead=True).get("Item")
        if not item:
            return ProviderState(), 0
        return ProviderState.from_json(str(item.get("state") or "")), int(
            Decimal(str(item.get("version", 0)))
        )

    def write(self, provider: str, state: ProviderState, version: int) -> bool:
        from botocore.exceptions import ClientError

        condition = unchanged_since_read("bucket_key", "version", version or None)
        try:
            self._table.put_item(
                Item={
                    "bucket_key": f"turns:{provider}",
                    "state": state.to_json(),
                    "version": version + 1,
                    # kept a week past its last use: the day's allowance counters live here too
                    "expires_at": int(time.time()) + 7 * 86400,
                },
                **condition,
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def wait(self, provider: str, version: int, timeout: float) -> None:
        time.sleep(min(timeout, self.POLL_SECONDS))

    async def wait_async(self, provider: str, version: int, timeout: float) -> None:
        await asyncio.sleep(min(timeout, self.POLL_SECONDS))

    POLL_SECONDS = 0.5


class ResilientTurnStore:
    """A shared store that may fail (the table unreachable, throttled): while it does, turns are kept in
    this process's memory instead, so searches stay polite here rather than all failing over a
    bookkeeping table. The shared store is tried again after `retry_seconds`."""

    def __init__(self, shared: TurnStore, retry_seconds: float = 30.0) -> None:
        self._shared = shared
        self._local = InMemoryTurnStore()
        self._retry_seconds = retry_seconds
        self._failed_at: float | None = None

    def _store(self) -> TurnStore:
        if self._failed_at is not None and time.monotonic() - self._failed_at < self._retry_seconds:
            return self._local
        return self._shared

    def _failed(self) -> None:
        if self._failed_at is None or time.monotonic() - self._failed_at >= self._retry_seconds:
            logger.warning(
                "the shared turn store failed; turns are kept in this process for now", exc_info=True
            )
        self._failed_at = time.monotonic()

    def read(self, provider: str) -> tuple[ProviderState, int]:
        store = self._store()
        try:
            return store.read(provider)
        except Exception:
            if store is self._local:
                raise
            self._failed()
            return self._local.read(provider)

    def write(self, provider: str, state: ProviderState, version: int) -> bool:
        store = self._store()
        try:
            return store.write(provider, state, version)
        except Exception:
            if store is self._local:
                raise
            self._failed()
            return False  # read again: the next read comes from this process's memory

    def wait(self, provider: str, version: int, timeout: float) -> None:
        self._store().wait(provider, version, timeout)

    async def wait_async(self, provider: str, version: int, timeout: float) -> None:
        await self._store().wait_async(provider, version, timeout)


@dataclass
class Turn:
    """A granted turn: call `sent()` as the request leaves; `release` (done by `UpstreamTurns.turn`)
    records that time and frees the provider for the next waiter."""

    provider: str
    token: str
    manners: ProviderManners
    clock: Clock
    granted_at: float
    waited: float
    sent_at: float | None = None
    retry_after: float | None = None
    announced_interval: float | None = None
    released: bool = False

    def sent(self) -> None:
        """The request has been written to the connection (the HTTP layer's trace hook calls this)."""
        if self.sent_at is None:
            self.sent_at = self.clock()

    def pause(self, seconds: float) -> None:
        """The provider asked us to wait (429/503 with Retry-After): every waiter waits that long."""
        self.retry_after = max(self.retry_after or 0.0, seconds)

    def announce(self, interval: float) -> None:
        """The provider stated its limit (one request per `interval` s) in its response headers."""
        self.announced_interval = interval


def utc_day(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d")


class UpstreamTurns:
    """Grants turns at each provider; the manners come from settings (`manners_for`)."""

    def __init__(
        self,
        store: TurnStore,
        manners_for: Callable[[str], ProviderManners],
        *,
        clock: Clock = time.time,
        lease_seconds: float = 30.0,
    ) -> None:
        self._store: TurnStore = store if isinstance(store, InMemoryTurnStore) else ResilientTurnStore(store)
        self._manners_for = manners_for
        self._clock = clock
        self._lease = lease_seconds

    def manners(self, provider: str) -> ProviderManners:
        return self._manners_for(provider)

    # --- turns ------------------------------------------------------------------------------------

    @contextmanager
    def turn(
        self, provider: str, *, team: str, job: str, priority: int = 0, deadline: float | None = None
    ) -> Iterator[Turn]:
        """Wait for this provider's turn (raises TurnNotGranted past `deadline`, a `clock()` time), hold
        it while the body runs, release it when the body ends (at `sent()` already for a provider that is
        not exclusive)."""
        manners = self._manners_for(provider)
        if manners.interval <= 0:
            now = self._clock()
            yield Turn(provider, "", manners, self._clock, now, 0.0)
            return
        turn = self.acquire(provider, team=team, job=job, priority=priority, deadline=deadline)
        try:
            yield turn
        finally:
            self.release(turn)

    def acquire(
        self, provider: str, *, team: str, job: str, priority: int = 0, deadline: float | None = None
    ) -> Turn:
        """Block until this provider's turn (raises TurnNotGranted past `deadline`); `release` it."""
        manners = self._manners_for(provider)
        if manners.interval <= 0:
            return Turn(provider, "", manners, self._clock, self._clock(), 0.0)
        return self._acquire(_Attempt(self, provider, manners, (team, job, priority), deadline))

    def _acquire(self, attempt: _Attempt) -> Turn:
        while True:
            turn, version, pause = attempt.step()
            if turn is not None:
                return turn
            with waiting():  # for a provider's turn: Lambda waits (and bills) as long
                self._store.wait(attempt.provider, version, pause)

    async def acquire_async(
        self,
        provider: str,
        *,
        team: str,
        job: str,
        priority: int = 0,
        deadline: float | None = None,
        sponsors: Callable[[], list[Sponsor]] | None = None,
    ) -> Turn:
        """`acquire` for a coroutine: it waits on the event loop, holding no thread. `sponsors` names the
        others that wait for this very request (read again while it waits)."""
        manners = self._manners_for(provider)
        if manners.interval <= 0:
            return Turn(provider, "", manners, self._clock, self._clock(), 0.0)
        attempt = _Attempt(self, provider, manners, (team, job, priority), deadline, sponsors)
        while True:
            turn, version, pause = attempt.step()
            if turn is not None:
                return turn
            with waiting():
                await self._store.wait_async(provider, version, pause)

    def release(self, turn: Turn) -> None:
        """Hand the turn back: the provider is next free `interval` after the request left. Releasing
        again only adds what was learnt since (a Retry-After pause, an announced limit)."""
        if not turn.token:
            return
        again = turn.released
        if again and not turn.retry_after and turn.announced_interval is None:
            return
        turn.released = True
        for _ in range(50):
            state, version = self._store.read(turn.provider)
            now = self._clock()
            if state.holder == turn.token:
                state.holder = None
                state.lease_until = 0.0
            # measured from when the request left (a turn whose request never left sends nothing); the
            # release follows the send, so `now` is never earlier than the request's departure
            if turn.sent_at is not None and not again:
                state.last_sent = max(state.last_sent, now if not turn.manners.exclusive else turn.sent_at)
            if turn.retry_after:
                state.not_before = max(state.not_before, now + turn.retry_after)
            if turn.announced_interval is not None:
                state.announced_interval = turn.announced_interval
            if self._store.write(turn.provider, state, version):
                return
        logger.warning("turn release contended; its lease will free the provider", provider=turn.provider)

    def _withdraw(self, provider: str, token: str) -> None:
        for _ in range(50):
            state, version = self._store.read(provider)
            if token not in state.waiting:
                return
            del state.waiting[token]
            if self._store.write(provider, state, version):
                return

    # --- what is known about a provider -----------------------------------------------------------

    def queue_length(self, provider: str) -> int:
        state, _ = self._store.read(provider)
        return len(_live_waiters(state, self._clock()))

    def granted(self, provider: str) -> int:
        return self._store.read(provider)[0].granted

    # --- daily allowances ---------------------------------------------------------------------------

    def allowance_left(self, provider: str, allowance: str, per_day: int) -> int:
        state, _ = self._store.read(provider)
        today = utc_day(self._clock())
        spent = state.spent_today.get(allowance, 0) if state.day == today else 0
        return max(0, per_day - spent)

    def spend_allowance(self, provider: str, allowance: str, per_day: int, units: int = 1) -> bool:
        """Take `units` of today's allowance; False (nothing taken) when not that much is left."""
        for _ in range(50):
            state, version = self._store.read(provider)
            today = utc_day(self._clock())
            if state.day != today:
                state.day, state.spent_today = today, {}
            spent = state.spent_today.get(allowance, 0)
            if spent + units > per_day:
                return False
            state.spent_today[allowance] = spent + units
            if self._store.write(provider, state, version):
                return True
        return False


class _Attempt:
    """One waiter's way to its turn, one look at the provider's record at a time."""

    def __init__(
        self,
        turns: UpstreamTurns,
        provider: str,
        manners: ProviderManners,
        asking: Sponsor,
        deadline: float | None,
        sponsors: Callable[[], list[Sponsor]] | None = None,
    ) -> None:
        self.turns, self.provider, self.manners = turns, provider, manners
        self.team, self.job, self.priority = asking
        self.deadline = deadline
        self._sponsors = sponsors or list
        self.token = uuid.uuid4().hex
        self.started = turns._clock()
        self.registered_at = -math.inf
        self.registered_sponsors: list[Sponsor] = []

    def step(self) -> tuple[Turn | None, int, float]:
        """(the granted turn, or None with the version read and how long to wait before looking again);
        raises TurnNotGranted once the deadline has passed."""
        store, clock = self.turns._store, self.turns._clock
        state, version = store.read(self.provider)
        now = clock()
        live = _live_waiters(state, now)
        me = live.get(self.token)
        sponsors = self._sponsors()
        if (
            me is None
            or now - self.registered_at >= HEARTBEAT_SECONDS
            or sponsors != self.registered_sponsors
        ):
            state.waiting[self.token] = Waiter(
                self.team, self.job, self.priority, me.since if me else now, now, sponsors
            )
            _forget_stale(state, now)
            if store.write(self.provider, state, version):
                self.registered_at, self.registered_sponsors = now, sponsors
            return None, -1, 0.0
        free_at = _free_at(state, self.manners, now)
        fairness = _Fairness(state, live, self.manners.lag_turns)
        order = fairness.order()
        chosen = order[0]
        if chosen == self.token and now >= free_at:
            granted = _granted(state, self.token, me, now, self.turns._lease, fairness)
            if store.write(self.provider, granted, version):
                return (
                    Turn(self.provider, self.token, self.manners, clock, now, now - self.started),
                    version,
                    0.0,
                )
            return None, -1, 0.0
        if self.deadline is not None and now >= self.deadline:
            self.turns._withdraw(self.provider, self.token)
            raise TurnNotGranted(self.provider, now - self.started, order.index(self.token))
        wake = self.registered_at + HEARTBEAT_SECONDS
        if chosen == self.token:
            wake = min(wake, free_at)
        if self.deadline is not None:
            wake = min(wake, self.deadline)
        return None, version, max(MIN_POLL_SECONDS, wake - now)


def _live_waiters(state: ProviderState, now: float) -> dict[str, Waiter]:
    return {t: w for t, w in state.waiting.items() if now - w.heartbeat <= STALE_WAITER_SECONDS}


def _forget_stale(state: ProviderState, now: float) -> None:
    for token in [t for t, w in state.waiting.items() if now - w.heartbeat > STALE_WAITER_SECONDS]:
        del state.waiting[token]
    # fairness memory is only needed for teams and jobs seen in the last hour
    for served in (state.team_served, state.job_served):
        for key in [k for k, at in served.items() if now - at > 3600]:
            del served[key]
    for team in [t for t in state.team_turns if t not in state.team_served]:
        del state.team_turns[team]


def _free_at(state: ProviderState, manners: ProviderManners, now: float) -> float:
    spacing = max(
        manners.spacing, state.announced_interval + manners.margin if state.announced_interval else 0.0
    )
    held = state.holder is not None and state.lease_until > now
    return max(
        state.last_sent + spacing,
        state.not_before,
        state.lease_until if held else 0.0,
        # while a turn is held and its request has not left, `last_sent` is not final
        math.inf if held else 0.0,
    )


def _job_key(team: str, job: str) -> str:
    return f"{team}\x1f{job}"


class _Fairness:
    """The provider's queue as the scheduler sees it (`FairShare` over the teams asking): a request
    counts for every team that waits for it, its own and its sponsors'."""

    def __init__(self, state: ProviderState, live: dict[str, Waiter], lag_turns: int) -> None:
        self.state = state
        self.live = live
        waiting = Counter(
            team for waiter in live.values() for team in {team for team, _, _ in waiter.identities()}
        )
        self.share = FairShare(state.team_turns, state.virtual_turns, lag_turns, waiting)

    def place(self, waiter: Waiter) -> tuple[tuple[bool, float, float, float, int], Sponsor]:
        """A waiter's place in line, and whose it is: the best of everyone who wants its request (its own
        team and job, and its sponsors')."""
        return min(
            (
                (
                    *self.share.key(team),
                    self.state.team_served.get(team, 0.0),  # of teams level, the one served longest ago
                    self.state.job_served.get(_job_key(team, job), 0.0),
                    priority,
                ),
                (team, job, priority),
            )
            for team, job, priority in waiter.identities()
        )

    def order(self) -> list[str]:
        """Waiters in the order they would be served: eligible teams first, the team whose waiting
        requests would be done first, then the team and the job served least recently, then the job's
        most valuable request (each the best of the waiter's own and its sponsors'), then first come."""

        def rank(token: str) -> tuple[bool, float, float, float, int, float]:
            return (*self.place(self.live[token])[0], self.live[token].since)

        return sorted(self.live, key=rank)


def _granted(
    state: ProviderState, token: str, waiter: Waiter, now: float, lease: float, fairness: _Fairness
) -> ProviderState:
    """`state` with the turn given to `token`, counted to the team whose place in line it was
    (`fairness`: the queue as read with `state`)."""
    team, job, _ = fairness.place(waiter)[1]
    state.waiting.pop(token, None)
    state.holder = token
    state.lease_until = now + lease
    state.team_served[team] = now
    state.job_served[_job_key(team, job)] = now
    still_asking = {t for other, w in fairness.live.items() if other != token for t, _, _ in w.identities()}
    state.virtual_turns = fairness.share.charge(team, still_asking)
    state.granted += 1
    _forget_stale(state, now)
    return state
