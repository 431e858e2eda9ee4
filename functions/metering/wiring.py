"""The metering package's composition root: the DynamoDB usage store, prices, budgets, the recorder."""

from __future__ import annotations

from functools import lru_cache

from functions.common.settings import Settings, get_settings
from functions.metering.budget import Budgets
from functions.metering.estimate import CostModel
from functions.metering.prices import PriceTable, load_price_table
from functions.metering.recorder import UsageRecorder
from functions.metering.store import UsageStore

_store: tuple[Settings, UsageStore] | None = None
_request_store: tuple[Settings, UsageStore] | None = None


def metering_enabled() -> bool:
    return get_settings().usage_metering


def usage_store() -> UsageStore:
    """One store per container and settings (tests and the local runtime change the settings)."""
    global _store
    settings = get_settings()
    if _store is None or _store[0] is not settings:
        from functions.metering.dynamodb import DynamoDbUsageStore

        _store = (settings, DynamoDbUsageStore())
    return _store[1]


def request_usage_store() -> UsageStore:
    """The store the request middleware writes to: its own DynamoDB client, which retries once (the
    shared one retries twice, with backoff): a request's count is not worth holding the request for."""
    global _request_store
    settings = get_settings()
    if _request_store is None or _request_store[0] is not settings:
        from functions.metering.dynamodb import DynamoDbUsageStore, quick_table

        _request_store = (settings, DynamoDbUsageStore(quick_table(settings)))
    return _request_store[1]


def request_recorder() -> UsageRecorder:
    return UsageRecorder(store=request_usage_store(), prices=price_table())


def price_table() -> PriceTable:
    """The defaults with PRICE_TABLE_JSON's overrides; an invalid table raises PriceTableError. Parsed
    once per value: the request middleware asks for it on every request."""
    return _parsed_price_table(get_settings().price_table_json)


@lru_cache(maxsize=4)
def _parsed_price_table(raw: str | None) -> PriceTable:
    return load_price_table(raw)  # PriceTable is frozen: one instance is shared safely


def cost_model() -> CostModel:
    return CostModel(price_table(), llm_configured=get_settings().llm_provider != "none")


def team_monthly_budget(team_id: str) -> float | None:
    """The team's monthly budget from the teams table; None for a team without one (or not registered,
    like the local default team)."""
    from functions.teams.wiring import team_service

    team = team_service().store.get_team(team_id)
    return team.monthly_budget_usd if team is not None else None


def budgets() -> Budgets:
    return Budgets(
        store=usage_store(), costs=cost_model(), team_budget=team_monthly_budget, holds=metering_enabled()
    )


def recorder() -> UsageRecorder:
    return UsageRecorder(store=usage_store(), prices=price_table())
