from __future__ import annotations

import pytest
from moto import mock_aws

from functions.common.errors import RateLimited
from functions.common.outbound.circuit_breaker import (
    BreakerRegistry,
    BreakerState,
    CircuitBreaker,
    CircuitOpen,
)
from functions.common.outbound.rate_limit import DynamoDbRateLimiter, InMemoryRateLimiter, RateLimit
from tests.support.tables import create_table


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_interval_limit_books_consecutive_slots() -> None:
    clock = FakeClock()
    limiter = InMemoryRateLimiter(clock)
    arxiv = RateLimit.every(3.0)
    assert limiter.reserve("arxiv", arxiv, max_wait=10) == 0.0
    assert limiter.reserve("arxiv", arxiv, max_wait=10) == pytest.approx(3.0)
    assert limiter.reserve("arxiv", arxiv, max_wait=10) == pytest.approx(6.0)
    with pytest.raises(RateLimited) as raised:
        limiter.reserve("arxiv", arxiv, max_wait=5)
    assert raised.value.retry_after == pytest.approx(9.0)
    clock.now += 100
    assert limiter.reserve("arxiv", arxiv, max_wait=0) == 0.0
    assert limiter.reserve("other", arxiv) == 0.0  # buckets are independent


def test_per_minute_limit_allows_a_burst_then_rejects_with_retry_after() -> None:
    clock = FakeClock()
    limiter = InMemoryRateLimiter(clock)
    limit = RateLimit.per_minute(3)
    for _ in range(3):
        limiter.reserve("client:a", limit)
    with pytest.raises(RateLimited) as raised:
        limiter.reserve("client:a", limit)
    assert raised.value.retry_after == pytest.approx(20.0)
    clock.now += 20
    limiter.reserve("client:a", limit)


def test_dynamodb_limiter_shares_one_bucket_between_instances() -> None:
    with mock_aws():
        table = create_table("rate_limit_table", "limits")
        clock = FakeClock()
        one, two = DynamoDbRateLimiter(table, clock), DynamoDbRateLimiter(table, clock)
        limit = RateLimit.every(1.0)
        waits = [one.reserve("upstream:s2", limit, 10), two.reserve("upstream:s2", limit, 10)]
        waits.append(one.reserve("upstream:s2", limit, 10))
        assert waits == [0.0, pytest.approx(1.0), pytest.approx(2.0)]
        with pytest.raises(RateLimited):
            two.reserve("upstream:s2", limit, 0)
        item = table.get_item(Key={"bucket_key": "upstream:s2"})["Item"]
        assert int(str(item["expires_at"])) > clock.now


def test_breaker_opens_after_threshold_and_half_opens_after_cooldown() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("arxiv", failure_threshold=2, cooldown_seconds=10, clock=clock)
    breaker.before_call()
    breaker.record_failure()
    breaker.before_call()
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    with pytest.raises(CircuitOpen):
        breaker.before_call()
    clock.now += 10
    assert breaker.state.value == "half_open"
    breaker.before_call()  # the one trial
    with pytest.raises(CircuitOpen):
        breaker.before_call()  # no second trial while the first is in flight
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    clock.now += 10
    breaker.before_call()
    breaker.record_success()
    assert breaker.state.value == "closed"


def test_breaker_honours_upstream_retry_after() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("s2", failure_threshold=5, cooldown_seconds=1, clock=clock)
    breaker.record_failure(open_for=60)
    assert breaker.state is BreakerState.OPEN
    clock.now += 59
    assert breaker.state is BreakerState.OPEN
    clock.now += 1
    assert breaker.state.value == "half_open"


def test_the_registry_keeps_one_breaker_per_connector() -> None:
    registry = BreakerRegistry(failure_threshold=1, cooldown_seconds=30)
    breaker = registry.get("s2")
    assert registry.get("s2") is breaker and registry.get("crossref") is not breaker
    breaker.record_failure()
    assert registry.states() == {"s2": "open", "crossref": "closed"}
