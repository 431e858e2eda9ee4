"""Scheduled research: a cron/rate/at expression plus a research goal and scope, stored as a schedule.

On AWS a schedule is an EventBridge Scheduler schedule whose target is the research state machine: at
each fire Scheduler starts an execution with `{research_goal, scope_parameters, source, schedule_id,
team_id[, callback_url]}` and the workflow's first step creates the job record (job id = the execution
name). Locally the same schedules live in the embedded (moto) Scheduler and
`functions.local_runtime.scheduler` fires them.

Every schedule belongs to a team: the store's keys carry it, and another team's schedule id is not
found, exactly like an unknown one. A schedule remembers its last completed run
(`functions.schedules.runs`), the baseline of each run's `changes_since_last_run` (living reviews,
`functions.schedules.living`).

Domain code only: the Scheduler API is reached through the `ScheduleStore` port (the EventBridge adapter
is `functions.schedules.adapters`, assembled in `functions.schedules.wiring`).
"""

from __future__ import annotations

import calendar
import itertools
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, GetPydanticSchema, ValidationError
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from functions.common.callback_urls import check_callback_url
from functions.common.errors import Conflict, InvalidInput, NotFound
from functions.common.settings import get_settings
from functions.research.planning.request import RESEARCH_GOAL_PATTERN, ExecuteRequest, ScopeParameters
from functions.schedules.runs import ScheduleRunStore

SCHEDULE_SOURCE = "schedule"
_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_CRON = re.compile(r"^cron\((.+)\)$")
_AT = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")
_MONTHS = {name.upper(): number for number, name in enumerate(calendar.month_abbr) if name}
_DAYS = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}  # AWS numbers Sunday 1


class ScheduleNotFound(NotFound):
    code = "SCHEDULE_NOT_FOUND"


class ScheduleLimitReached(Conflict):
    """The team already has as many schedules as it may keep (409: delete one first)."""

    code = "SCHEDULE_LIMIT_REACHED"


# --- expressions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleExpression:
    """A parsed EventBridge Scheduler expression; `next_after` gives its next fire time."""

    text: str
    kind: str  # "rate" | "cron" | "at"
    rate: timedelta | None = None
    at: datetime | None = None  # naive, in the schedule's time zone
    fields: tuple[frozenset[int], ...] = ()  # cron: minutes, hours, days of month, months, weekdays, years
    any_day_of_month: bool = True
    any_weekday: bool = True

    def next_after(
        self, moment: datetime, timezone: str = "UTC", anchor: datetime | None = None
    ) -> datetime | None:
        """The first fire strictly after `moment` (aware, returned in UTC); None if it never fires again.

        A rate schedule fires every `rate` from `anchor` (its creation time), as Scheduler does.
        """
        zone = ZoneInfo(timezone)
        if self.kind == "rate":
            assert self.rate is not None
            start = anchor or moment
            periods = max(0, int((moment - start) / self.rate)) + 1
            return (start + periods * self.rate).astimezone(UTC)
        if self.kind == "at":
            assert self.at is not None
            when = self.at.replace(tzinfo=zone)
            return when.astimezone(UTC) if when > moment else None
        fire = self._next_cron(moment.astimezone(zone))
        return fire.astimezone(UTC) if fire is not None else None

    def _next_cron(self, after: datetime) -> datetime | None:
        minutes, hours, _, months, _, years = (sorted(field) for field in self.fields)
        day = after.replace(hour=0, minute=0, second=0, microsecond=0)
        for _ in range(366 * 5):  # an expression that matches nothing within five years never fires
            if day.year > max(years):
                return None
            if day.year in years and day.month in months and self._day_matches(day):
                for hour in hours:
                    for minute in minutes:
                        candidate = day.replace(hour=hour, minute=minute)
                        if candidate > after:
                            return candidate
            day = (day + timedelta(days=1)).replace(hour=0, minute=0)
        return None

    def shortest_interval(self) -> timedelta | None:
        """The shortest time between two fires; None for at(), which fires once. For cron, within a day
        and from a day's last fire to the next day's first (as if every day matched: never longer)."""
        if self.kind == "rate":
            return self.rate
        if self.kind != "cron":
            return None
        minutes, hours = sorted(self.fields[0]), sorted(self.fields[1])
        times = [hour * 60 + minute for hour in hours for minute in minutes]
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        gaps.append(24 * 60 - times[-1] + times[0])
        return timedelta(minutes=min(gaps))

    def _day_matches(self, day: datetime) -> bool:
        weekday = (day.isoweekday() % 7) + 1  # Monday=1 in ISO -> Monday=2 in AWS cron
        if self.any_day_of_month:
            return self.any_weekday or weekday in self.fields[4]
        return day.day in self.fields[2]


def parse_expression(text: str) -> ScheduleExpression:
    """`rate(5 minutes)`, `cron(0 8 ? * MON-FRI *)` or `at(2030-01-31T09:00:00)`; InvalidInput otherwise."""
    text = text.strip()
    if match := _RATE.match(text):
        value, unit = int(match.group(1)), match.group(2)
        if value < 1 or (value == 1) != (not unit.endswith("s")):
            raise _invalid(
                f"{text}: use rate(1 {unit.rstrip('s')}) or rate(N {unit.rstrip('s')}s) with N > 1"
            )
        seconds = {"minute": 60, "hour": 3600, "day": 86400}[unit.rstrip("s")]
        return ScheduleExpression(text, "rate", rate=timedelta(seconds=value * seconds))
    if match := _AT.match(text):
        try:
            return ScheduleExpression(text, "at", at=datetime.fromisoformat(match.group(1)))
        except ValueError as exc:
            raise _invalid(f"{text}: {exc}") from None
    if match := _CRON.match(text):
        return _parse_cron(text, match.group(1).split())
    raise _invalid(f"{text!r} is not rate(...), cron(...) or at(...)")


def _parse_cron(text: str, parts: list[str]) -> ScheduleExpression:
    if len(parts) != 6:
        raise _invalid(f"{text}: cron needs 6 fields (minutes hours day-of-month month day-of-week year)")
    minute, hour, day_of_month, month, weekday, year = parts
    if (day_of_month == "?") == (weekday == "?"):
        raise _invalid(f"{text}: exactly one of day-of-month and day-of-week must be '?'")
    fields = (
        _cron_field(minute, 0, 59, {}, "minutes"),
        _cron_field(hour, 0, 23, {}, "hours"),
        _cron_field(day_of_month, 1, 31, {}, "day-of-month"),
        _cron_field(month, 1, 12, _MONTHS, "month"),
        _cron_field(weekday, 1, 7, _DAYS, "day-of-week"),
        _cron_field(year, 1970, 2199, {}, "year"),
    )
    return ScheduleExpression(
        text,
        "cron",
        fields=fields,
        any_day_of_month=day_of_month in ("*", "?"),
        any_weekday=weekday in ("*", "?"),
    )


def _cron_field(text: str, low: int, high: int, names: dict[str, int], label: str) -> frozenset[int]:
    if text in ("*", "?"):
        return frozenset(range(low, high + 1))
    values: set[int] = set()
    for item in text.split(","):
        base, _, step_text = item.partition("/")
        step = _number(step_text, label) if step_text else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, end = _value(first, names, label), _value(last, names, label)
        else:
            start = _value(base, names, label)
            end = high if step_text else start
        if not (low <= start <= high and low <= end <= high) or start > end or step < 1:
            raise _invalid(f"cron {label} field {text!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _value(text: str, names: dict[str, int], label: str) -> int:
    return names[text.upper()] if text.upper() in names else _number(text, label)


def _number(text: str, label: str) -> int:
    if not text.isdigit():
        raise _invalid(f"cron {label} field value {text!r} is not supported (L, W and # are not)")
    return int(text)


def _invalid(message: str) -> InvalidInput:
    return InvalidInput(message, field="schedule_expression")


# --- the API's models --------------------------------------------------------------------------------


# What `parse_expression` can accept (it checks each cron field further); Python's `\d` and `\s`, as there.
SCHEDULE_EXPRESSION_PATTERN = (
    r"^\s*(rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\(.+\)"
    r"|at\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\))\s*$"
)
# The form of every IANA zone name (`Europe/Berlin`, `Etc/GMT+5`, `UTC`); `_check_timezone` loads the zone.
TIMEZONE_PATTERN = r"^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*$"
TIMEZONE_MAX_LENGTH = 64  # the longest name in the tz database has 38 characters


def _job_scope_schema(_: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
    """The job's own `ScopeParameters` schema (a `$ref` to it): a schedule's scope is validated as a job's
    (`_check_job`) and stored as sent."""
    model = ScopeParameters.__pydantic_core_schema__
    assert model["type"] == "model"
    return handler(
        core_schema.definitions_schema(core_schema.definition_reference_schema(model["ref"]), [model])
    )


class ScheduleRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # the pattern is documentation; `parse_expression` refuses what it does not parse, naming why
    schedule_expression: str = Field(
        min_length=1,
        max_length=256,
        description="An EventBridge Scheduler expression: `rate(N minutes|hours|days)` (`rate(1 minute)` in "
        "the singular), `cron(minutes hours day-of-month month day-of-week year)` with exactly one of "
        "day-of-month and day-of-week `?` (L, W and # are not supported), or a one-time "
        "`at(yyyy-mm-ddThh:mm:ss)` in the schedule's time zone that is still to come.",
        examples=["rate(1 day)", "cron(0 7 ? * MON *)", "at(2030-01-31T09:00:00)"],
        json_schema_extra={"pattern": SCHEDULE_EXPRESSION_PATTERN},
    )
    # validated as the agent API's research_goal (`_check_job`), and documented so
    research_goal: str = Field(
        json_schema_extra={"minLength": 10, "maxLength": 500, "pattern": RESEARCH_GOAL_PATTERN}
    )
    scope_parameters: Annotated[
        dict[str, Any], GetPydanticSchema(get_pydantic_json_schema=_job_scope_schema)
    ] = Field(
        default_factory=dict,
        description="The scope of every job the schedule starts, validated as `POST /api/agent/execute` "
        "validates a job's `scope_parameters`.",
    )
    timezone: str = Field(
        default="UTC",
        max_length=TIMEZONE_MAX_LENGTH,
        description="An IANA time zone name (the tz database, e.g. `Europe/Berlin`): the zone of cron and "
        "at expressions. An unknown zone is refused.",
        examples=["UTC", "Europe/Berlin", "America/New_York"],
        json_schema_extra={"pattern": TIMEZONE_PATTERN},
    )
    description: str | None = Field(default=None, max_length=512)
    enabled: bool = True
    # Receives every run's completion and digest as a signed POST (docs/living-reviews.md).
    callback_url: str | None = Field(default=None, max_length=2048)


class LastRun(BaseModel):
    job_id: str
    status: str
    finished_at: str


class Schedule(BaseModel):
    schedule_id: str
    schedule_expression: str
    timezone: str
    research_goal: str
    scope_parameters: dict[str, Any]
    description: str | None = None
    state: str  # ENABLED | DISABLED
    created_at: datetime
    next_run_at: datetime | None = None
    callback_url: str | None = None
    last_run: LastRun | None = None  # the last COMPLETED/PARTIAL run: the baseline of the next digest


def job_input(
    team_id: str, schedule_id: str, goal: str, scope: dict[str, Any], callback_url: str | None = None
) -> dict[str, Any]:
    """The state machine input of every job a schedule starts (no job_id: the execution name is it)."""
    state: dict[str, Any] = {
        "research_goal": goal,
        "scope_parameters": scope,
        "source": SCHEDULE_SOURCE,
        "schedule_id": schedule_id,
        "team_id": team_id,
    }
    if callback_url:
        state["callback_url"] = callback_url
    return state


# --- the store port -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredSchedule:
    team_id: str
    schedule_id: str
    expression: str
    timezone: str
    job_input: dict[str, Any]
    description: str | None
    enabled: bool
    created_at: datetime

    @property
    def callback_url(self) -> str | None:
        url = self.job_input.get("callback_url")
        return str(url) if url else None


class ScheduleStore(Protocol):
    """Schedules by team: `get`, `list` and `delete` see only the given team's."""

    def create(self, schedule: StoredSchedule) -> None: ...

    def get(self, team_id: str, schedule_id: str) -> StoredSchedule | None: ...

    def delete(self, team_id: str, schedule_id: str) -> bool: ...

    def list_all(self) -> list[StoredSchedule]:
        """Every team's schedules (the local scheduler fires them all)."""
        ...

    def list(self, team_id: str) -> list[StoredSchedule]: ...


# --- the service ------------------------------------------------------------------------------------


def _known_id(schedule_id: str) -> bool:
    try:
        return str(uuid.UUID(schedule_id)) == schedule_id
    except ValueError:
        return False


@dataclass
class ScheduleService:
    store: ScheduleStore
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    runs: ScheduleRunStore | None = None  # what each schedule remembers of its last run
    # Limits (functions/schedules/settings.py): each fire is a job charged to the team's budget.
    max_per_team: int = 20
    min_interval: timedelta = timedelta(minutes=15)

    def create(self, team_id: str, request: ScheduleRequest) -> Schedule:
        expression = parse_expression(request.schedule_expression)
        self._check_interval(expression)
        self._check_room(team_id)
        _check_timezone(request.timezone)
        _check_job(request.research_goal, request.scope_parameters)
        if request.callback_url is not None:
            check_callback_url(request.callback_url, get_settings().private_hosts_for("webhook"))
        now = self.clock()
        if expression.next_after(now, request.timezone, anchor=now) is None:
            raise _invalid(f"{request.schedule_expression} never fires after {now.isoformat()}")
        schedule_id = str(uuid.uuid4())
        stored = StoredSchedule(
            team_id=team_id,
            schedule_id=schedule_id,
            expression=expression.text,
            timezone=request.timezone,
            job_input=job_input(
                team_id,
                schedule_id,
                request.research_goal,
                request.scope_parameters,
                request.callback_url,
            ),
            description=request.description,
            enabled=request.enabled,
            created_at=now,
        )
        self.store.create(stored)
        self._keep_within_limit(team_id, schedule_id)
        # the store's creation time is the anchor
        return self._view(self.store.get(team_id, schedule_id) or stored)

    def _check_interval(self, expression: ScheduleExpression) -> None:
        shortest = expression.shortest_interval()
        if shortest is not None and shortest < self.min_interval:
            minutes = self.min_interval.total_seconds() / 60
            raise InvalidInput(
                f"{expression.text} fires every {_minutes(shortest)}; a schedule may fire at most every "
                f"{minutes:g} minutes",
                field="schedule_expression",
            )

    def _limit_reached(self) -> ScheduleLimitReached:
        return ScheduleLimitReached(
            f"the team already has {self.max_per_team} schedules, the most it may keep; delete one first"
        )

    def _check_room(self, team_id: str) -> None:
        if len(self.store.list(team_id)) >= self.max_per_team:
            raise self._limit_reached()

    def _keep_within_limit(self, team_id: str, schedule_id: str) -> None:
        """Simultaneous creations may all pass `_check_room`: the earliest `max_per_team` are kept, a
        later one is deleted again and refused."""
        schedules = sorted(self.store.list(team_id), key=lambda s: (s.created_at, s.schedule_id))
        kept = {stored.schedule_id for stored in schedules[: self.max_per_team]}
        if schedule_id not in kept:
            self.store.delete(team_id, schedule_id)
            raise self._limit_reached()

    def get(self, team_id: str, schedule_id: str) -> Schedule:
        """The team's schedule; another team's schedule id is not found, exactly like an unknown one."""
        stored = self.store.get(team_id, schedule_id) if _known_id(schedule_id) else None
        if stored is None:
            raise ScheduleNotFound(f"schedule {schedule_id[:80]} not found")
        return self._view(stored)

    def list(self, team_id: str) -> list[Schedule]:
        return sorted((self._view(stored) for stored in self.store.list(team_id)), key=lambda s: s.created_at)

    def delete(self, team_id: str, schedule_id: str) -> None:
        if not _known_id(schedule_id) or not self.store.delete(team_id, schedule_id):
            raise ScheduleNotFound(f"schedule {schedule_id[:80]} not found")
        if self.runs is not None:
            self.runs.forget(team_id, schedule_id)

    def _last_run(self, stored: StoredSchedule) -> LastRun | None:
        run = self.runs.last_run(stored.team_id, stored.schedule_id) if self.runs is not None else None
        if run is None:
            return None
        return LastRun(job_id=run.job_id, status=run.status, finished_at=run.finished_at)

    def _view(self, stored: StoredSchedule) -> Schedule:
        next_run = None
        if stored.enabled:
            next_run = parse_expression(stored.expression).next_after(
                self.clock(), stored.timezone, anchor=stored.created_at
            )
        return Schedule(
            schedule_id=stored.schedule_id,
            schedule_expression=stored.expression,
            timezone=stored.timezone,
            research_goal=str(stored.job_input.get("research_goal", "")),
            scope_parameters=dict(stored.job_input.get("scope_parameters") or {}),
            description=stored.description,
            state="ENABLED" if stored.enabled else "DISABLED",
            created_at=stored.created_at,
            next_run_at=next_run,
            callback_url=stored.callback_url,
            last_run=self._last_run(stored),
        )


def _minutes(interval: timedelta) -> str:
    minutes = interval.total_seconds() / 60
    return f"{minutes:g} minute{'' if minutes == 1 else 's'}"


def _check_timezone(name: str) -> None:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(f"unknown time zone {name!r}", field="timezone") from None


def _check_job(goal: str, scope: dict[str, Any]) -> None:
    """A schedule must start jobs the agent API would accept, so it is validated like one now."""
    try:
        ExecuteRequest.model_validate({"research_goal": goal, "scope_parameters": scope})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "research_goal"
        raise InvalidInput(f"{field}: {first['msg']}", field=field) from None


def due_fires(stored: StoredSchedule, since: datetime, until: datetime) -> Iterable[datetime]:
    """Fire times in (since, until]; at most one per call per schedule is started by the local scheduler."""
    expression = parse_expression(stored.expression)
    moment = since
    while True:
        fire = expression.next_after(moment, stored.timezone, anchor=stored.created_at)
        if fire is None or fire > until:
            return
        yield fire
        moment = fire
