"""`POST /api/schedules`'s schema states what validation enforces: the expression grammar, the IANA time
zone, and the job's own scope schema for `scope_parameters`."""

from __future__ import annotations

import random
import re
import zoneinfo
from datetime import UTC, datetime
from typing import Any

import pytest

from functions.common.errors import InvalidInput
from functions.local_runtime.gateway import load_function_apps, merged_openapi
from functions.schedules.service import (
    SCHEDULE_EXPRESSION_PATTERN,
    TIMEZONE_MAX_LENGTH,
    TIMEZONE_PATTERN,
    parse_expression,
)


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    found: dict[str, Any] = merged_openapi(load_function_apps())["components"]["schemas"]
    return found


def _parses(text: str) -> bool:
    try:
        parse_expression(text)
    except InvalidInput:
        return False
    return True


def test_every_expression_that_parses_matches_the_pattern() -> None:
    pattern = re.compile(SCHEDULE_EXPRESSION_PATTERN)
    rng = random.Random(20261123)
    bodies = [
        "rate(1 minute)", "rate(5 minutes)", "rate(1 hour)", "rate(2 days)", "rate(0 days)",
        "cron(0 7 ? * MON *)", "cron(*/5 8-17 ? * MON-FRI *)", "cron(0 0 1 * ? 2030)", "cron(0 7 * * MON *)",
        "at(2030-01-31T09:00:00)", "at(2030-02-30T09:00:00)", "every monday", "rate(1 minutes)",
    ]  # fmt: skip
    around = ["", " ", "\t", "\n", "\x1c", "\u3000", "x"]
    parsed = 0
    for _ in range(3_000):
        text = rng.choice(around) + rng.choice(bodies) + rng.choice(around)
        if _parses(text):
            parsed += 1
            assert pattern.search(text), repr(text)
    assert parsed > 500
    assert not pattern.search("every monday") and not _parses("every monday")


def test_every_known_time_zone_matches_the_pattern() -> None:
    pattern = re.compile(TIMEZONE_PATTERN)
    zones = zoneinfo.available_timezones()
    assert "Europe/Berlin" in zones
    for zone in zones:
        assert pattern.search(zone) and len(zone) <= TIMEZONE_MAX_LENGTH, zone
    for refused in ("Europe//Berlin", "/UTC", "../UTC", "UTC/", "Mars Base"):
        assert not pattern.search(refused)


def test_the_document_states_the_limits(schemas: dict[str, Any]) -> None:
    properties = schemas["ScheduleRequest"]["properties"]
    expression = properties["schedule_expression"]
    assert expression["pattern"] == SCHEDULE_EXPRESSION_PATTERN and expression["maxLength"] == 256
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    for example in expression["examples"]:
        assert parse_expression(example).next_after(moment) is not None
    timezone = properties["timezone"]
    assert timezone["pattern"] == TIMEZONE_PATTERN and timezone["maxLength"] == TIMEZONE_MAX_LENGTH
    assert set(timezone["examples"]) <= zoneinfo.available_timezones()


def test_scope_parameters_is_the_jobs_scope_schema(schemas: dict[str, Any]) -> None:
    scope = schemas["ScheduleRequest"]["properties"]["scope_parameters"]
    assert scope["$ref"] == "#/components/schemas/ScopeParameters"
    job_scope = schemas["ExecuteRequest"]["properties"]["scope_parameters"]
    assert job_scope["$ref"] == scope["$ref"]
    assert "discovery_depth" in schemas["ScopeParameters"]["properties"]
