"""Schedule expressions (rate / cron / at) and the fire times the local scheduler derives from them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from functions.common.errors import InvalidInput
from functions.schedules.service import StoredSchedule, due_fires, parse_expression

MONDAY_NOON = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)  # 7 January 2030 is a Monday


def test_rate_fires_every_period_from_its_anchor() -> None:
    expression = parse_expression("rate(15 minutes)")
    anchor = MONDAY_NOON
    assert expression.next_after(anchor, anchor=anchor) == anchor + timedelta(minutes=15)
    assert expression.next_after(anchor + timedelta(minutes=31), anchor=anchor) == anchor + timedelta(
        minutes=45
    )
    assert parse_expression("rate(1 day)").next_after(anchor, anchor=anchor) == anchor + timedelta(days=1)


@pytest.mark.parametrize(
    ("text", "after", "expected"),
    [
        ("cron(0 8 ? * MON-FRI *)", MONDAY_NOON, datetime(2030, 1, 8, 8, 0, tzinfo=UTC)),
        ("cron(30 6 ? * SAT *)", MONDAY_NOON, datetime(2030, 1, 12, 6, 30, tzinfo=UTC)),
        ("cron(0/20 * * * ? *)", MONDAY_NOON, datetime(2030, 1, 7, 12, 20, tzinfo=UTC)),
        ("cron(0 9 1 JAN,JUL ? *)", MONDAY_NOON, datetime(2030, 7, 1, 9, 0, tzinfo=UTC)),
        ("cron(15 10 L-1 * ? 2031)", MONDAY_NOON, None),
    ],
)
def test_cron_next_fire(text: str, after: datetime, expected: datetime | None) -> None:
    if expected is None:
        with pytest.raises(InvalidInput):
            parse_expression(text)
        return
    assert parse_expression(text).next_after(after) == expected


def test_cron_runs_in_the_schedule_time_zone() -> None:
    # 08:00 in New York in January is 13:00 UTC
    fire = parse_expression("cron(0 8 * * ? *)").next_after(MONDAY_NOON, "America/New_York")
    assert fire == datetime(2030, 1, 7, 13, 0, tzinfo=UTC)


def test_one_time_schedules_fire_once() -> None:
    expression = parse_expression("at(2030-01-07T18:30:00)")
    assert expression.next_after(MONDAY_NOON) == datetime(2030, 1, 7, 18, 30, tzinfo=UTC)
    assert expression.next_after(MONDAY_NOON + timedelta(days=1)) is None


def test_a_cron_year_in_the_past_never_fires() -> None:
    assert parse_expression("cron(0 8 * * ? 2020)").next_after(MONDAY_NOON) is None


@pytest.mark.parametrize(
    "text",
    [
        "every 5 minutes",
        "rate(0 minutes)",
        "rate(1 minutes)",
        "rate(5 minute)",
        "rate(5 weeks)",
        "cron(0 8 * * *)",
        "cron(0 8 * * MON *)",
        "cron(0 8 ? * ? *)",
        "cron(61 8 * * ? *)",
        "cron(0 8 ? * 2#1 *)",
        "at(2030-02-30T08:00:00)",
    ],
)
def test_invalid_expressions_name_the_field(text: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_expression(text)
    assert raised.value.field == "schedule_expression"


def test_due_fires_lists_every_fire_in_the_window() -> None:
    stored = StoredSchedule(
        team_id="team-default",
        schedule_id="s1",
        expression="rate(10 minutes)",
        timezone="UTC",
        job_input={},
        description=None,
        enabled=True,
        created_at=MONDAY_NOON,
    )
    fires = list(due_fires(stored, MONDAY_NOON, MONDAY_NOON + timedelta(minutes=35)))
    assert fires == [MONDAY_NOON + timedelta(minutes=minutes) for minutes in (10, 20, 30)]
