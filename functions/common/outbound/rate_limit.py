"""Rate limits shared across Lambda instances: a token bucket kept as one DynamoDB item per bucket.

The bucket is stored in its GCRA form (the "theoretical arrival time" `tat`), which makes it a single
number: a request at time `t` with emission interval `T = 1/rate` and burst `B` is admitted when
`max(tat, t) - (B - 1) * T <= t`, and then `tat` becomes `max(tat, t) + T`. Updates are conditional
writes on the value read, so concurrent instances never both take the same token.

Two ways to take a token:
- `reserve(..., max_wait=w)`: book the next free slot and return how long to wait for it (upstream
  manners: "arXiv one request per 3 s" queues callers, across instances, instead of failing them);
  if the slot is further away than `w`, nothing is booked and `RateLimited` is raised.
- `reserve(..., max_wait=0)`: admit now or raise `RateLimited(retry_after)` (our own per-client limit).

`DynamoDbRateLimiter` is the product; `InMemoryRateLimiter` implements the same protocol for unit tests
and single-process use.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import ClientError

from functions.common.aws import dynamodb_resource
from functions.common.conditional_put import unchanged_since_read
from functions.common.errors import RateLimited
from functions.common.settings import get_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

Clock = Callable[[], float]


@dataclass(frozen=True)
class RateLimit:
    """`rate` tokens per second, bursts of up to `burst` tokens."""

    rate: float
    burst: int = 1

    @classmethod
    def every(cls, seconds: float, burst: int = 1) -> RateLimit:
        """One request per `seconds` (e.g. arXiv: `RateLimit.every(3.0)`)."""
        return cls(rate=1.0 / seconds if seconds > 0 else math.inf, burst=burst)

    @classmethod
    def per_minute(cls, count: int) -> RateLimit:
        return cls(rate=count / 60.0, burst=max(1, count))

    @property
    def interval(self) -> float:
        return 0.0 if math.isinf(self.rate) else 1.0 / self.rate

    @property
    def tolerance(self) -> float:
        return (self.burst - 1) * self.interval


def next_state(tat: float | None, now: float, limit: RateLimit, max_wait: float) -> tuple[float, float]:
    """(new tat, seconds to wait) for one token; raises RateLimited when the wait would exceed max_wait."""
    if limit.interval == 0.0:
        return now, 0.0
    base = max(tat or now, now)
    wait = max(0.0, base - limit.tolerance - now)
    if wait > max_wait + 1e-9:
        raise RateLimited(f"rate limit reached; next slot in {wait:.2f} s", retry_after=wait)
    return base + limit.interval, wait


class RateLimiter(Protocol):
    def reserve(self, key: str, limit: RateLimit, max_wait: float = 0.0) -> float:
        """Take one token from bucket `key`; return seconds the caller must wait before using it."""
        ...


class InMemoryRateLimiter:
    def __init__(self, clock: Clock = time.time) -> None:
        self._tats: dict[str, float] = {}
        self._clock = clock
        self._lock = threading.Lock()

    def reserve(self, key: str, limit: RateLimit, max_wait: float = 0.0) -> float:
        with self._lock:
            tat, wait = next_state(self._tats.get(key), self._clock(), limit, max_wait)
            self._tats[key] = tat
            return wait


class DynamoDbRateLimiter:
    """Buckets in the rate-limit table (`bucket_key`, `tat`, TTL `expires_at`)."""

    MAX_ATTEMPTS = 8

    def __init__(self, table: Table | None = None, clock: Clock = time.time) -> None:
        self._table = table or dynamodb_resource().Table(get_settings().rate_limit_table)
        self._clock = clock

    def reserve(self, key: str, limit: RateLimit, max_wait: float = 0.0) -> float:
        for _ in range(self.MAX_ATTEMPTS):
            item = self._table.get_item(Key={"bucket_key": key}, ConsistentRead=True).get("Item")
            stored = Decimal(str(item["tat"])) if item and "tat" in item else None
            now = self._clock()
            new_tat, wait = next_state(float(stored) if stored is not None else None, now, limit, max_wait)
            new_value = Decimal(repr(round(new_tat, 6)))
            expires_at = int(new_tat + limit.tolerance + limit.interval) + 60
            condition = unchanged_since_read("bucket_key", "tat", stored)
            try:
                self._table.put_item(
                    Item={"bucket_key": key, "tat": new_value, "expires_at": expires_at}, **condition
                )
                # the slot is absolute: time spent on the round trips counts towards the wait
                return max(0.0, now + wait - self._clock())
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
        # Heavy contention on one bucket: report it as a short rate-limit rather than spinning.
        raise RateLimited("rate limit bucket is contended", retry_after=max(limit.interval, 0.1))
