"""Default adapters: the deployed (and local-runtime) wiring of the job service, and what the step
Lambdas share of it (each step wires itself in its `build()`, from only what it uses)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from functions.common.observability import get_logger
from functions.common.settings import Settings, get_settings
from functions.common.storage import S3BlobStore
from functions.metering.wiring import budgets as metering_budgets
from functions.orchestrate.config import get_workflow_settings
from functions.orchestrate.jobs import JobService
from functions.orchestrate.records import JobRecords
from functions.orchestrate.store import (
    DynamoDbJobStore,
    StepFunctionsStarter,
    StepFunctionsTaskTokens,
    presigned_artifact_url,
)
from functions.research.planning.job import CONNECTORS, QueryWording, SearchBudget, connector_syntax
from functions.research.planning.request import ExecuteRequest
from functions.search.config import SearchSettings

if TYPE_CHECKING:
    from functions.orchestrate.checkpoints.service import CheckpointService
    from functions.search.service import SearchService

# The search connectors and service (and through them the HTTP client: httpcore, h11, h2) are imported
# where a route or step first uses them, not with the job API's handler (bench/cold_start.py).

logger = get_logger("orchestrate")
_SECRET_PARAMS = frozenset({"api_key", "mailto", "key"})


def upstream_query(connector: str, wording: QueryWording) -> str:
    """The request a search connector sends for this query, in its upstream syntax."""
    from functions.search.connectors import REGISTRY
    from functions.search.connectors.base import ConnectorContext
    from functions.search.models import PaperQuery

    try:
        instance: Any = REGISTRY[connector](ConnectorContext())
        request = instance.build_request(
            PaperQuery(
                query=wording.query,
                concepts=wording.concepts or None,
                year_start=wording.year_start,
                year_end=wording.year_end,
                max_results=wording.limit,
            ),
            wording.limit,
        )
        params = {k: v for k, v in dict(request.params).items() if k not in _SECRET_PARAMS and k != "fields"}
        return f"{request.url}?{urlencode(params)}"
    except Exception:  # a connector without a request builder: show our own rendering
        return connector_syntax(connector, wording)


def configured_connectors() -> tuple[str, ...]:
    from functions.search.connectors import REGISTRY

    try:
        names = SearchSettings().connector_names or list(REGISTRY)
        return tuple(name for name in names if name in REGISTRY)
    except Exception:
        return CONNECTORS


def search_budget() -> SearchBudget:
    """What the planner must fit: each connector's spacing (its interval and the politeness margin, or a
    stricter limit the provider announced), OpenAlex's searches left today, the job's search time by
    depth and how many jobs share a provider at once."""
    from functions.research.planning.job import ConnectorBudget
    from functions.search.turns import process_turns

    cfg = SearchSettings()
    workflow_settings = get_workflow_settings()
    turns = process_turns(cfg)
    budgets: dict[str, ConnectorBudget] = {}
    for name in configured_connectors():
        manners = cfg.manners(name)
        left: int | None = None
        per_day = cfg.openalex_searches_per_day if name == "openalex" else 0
        if per_day:
            try:
                left = turns.allowance_left(name, "search", per_day)
            except Exception:  # the turns table is unreachable: plan as if the day were fresh
                logger.warning("daily allowance unreadable", connector=name, exc_info=True)
        budgets[name] = ConnectorBudget(manners.spacing, left, per_day or None)
    return SearchBudget(
        budgets,
        seconds_by_depth=dict(workflow_settings.search_seconds_by_depth),
        sharing_jobs=workflow_settings.search_sharing_jobs,
    )


def job_records() -> JobRecords:
    """New job records as the job service makes them (the Plan and MarkFailed steps meet a schedule's
    jobs without one)."""
    return JobRecords(
        settings=get_workflow_settings(),
        render=upstream_query,
        connectors=configured_connectors,
        search_budget=search_budget,
        costs=metering_budgets(),
    )


def job_service() -> JobService:
    settings = get_settings()
    workflow_settings = get_workflow_settings()
    return JobService(
        jobs=DynamoDbJobStore(),
        starter=StepFunctionsStarter(),
        artifacts=S3BlobStore(settings.artifacts_bucket),
        settings=workflow_settings,
        render=upstream_query,
        connectors=configured_connectors,
        search_budget=search_budget,
        artifact_link=lambda key: presigned_artifact_url(
            settings.artifacts_bucket, key, workflow_settings.artifact_link_seconds
        ),
        costs=metering_budgets(),  # cost quotes and the monthly budget (functions/metering)
    )


def checkpoint_service() -> CheckpointService:
    """The checkpoint API's service; its views read the synthesis code, imported when a checkpoint is read."""
    from functions.orchestrate.checkpoints.service import CheckpointService

    return CheckpointService(
        jobs=DynamoDbJobStore(),
        find_job=job_service().job,
        data=S3BlobStore(get_settings().data_bucket),
        tokens=StepFunctionsTaskTokens(),
        render=upstream_query,
        connectors=configured_connectors,
    )


_search_service: tuple[Settings, SearchService] | None = None


def shared_search_service() -> SearchService:
    """One search service per container and settings, so that circuit breakers and per-loop HTTP
    clients outlive a single step invocation (as they do in the search API function)."""
    from functions.search.service import SearchService

    global _search_service
    settings = get_settings()
    if _search_service is None or _search_service[0] is not settings:
        _search_service = (settings, SearchService.from_settings(settings))
    return _search_service[1]


def start_job(
    goal: str,
    scope: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
    *,
    team_id: str,
    source: str = "schedule",
    schedule_id: str | None = None,
    callback_url: str | None = None,
) -> str:
    """Start one of the team's research jobs without HTTP (e.g. the local scheduler); returns the job id.

    Raises pydantic.ValidationError for an invalid goal or scope, as the API would answer 400.
    """
    body: dict[str, Any] = {"research_goal": goal, "scope_parameters": scope or {}}
    if callback_url:
        body["callback_url"] = callback_url
    request = ExecuteRequest.model_validate(body)
    response, _ = job_service().submit(
        team_id,
        request,
        idempotency_key=idempotency_key,
        client_id=source,
        source=source,
        schedule_id=schedule_id,
    )
    return str(response["job_id"])
