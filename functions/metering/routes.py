"""The team's usage (served by the orchestrate app; errors in the agent API's format):

    GET /api/usage?month=YYYY-MM       -> JSON: requests by route, jobs by depth and outcome, sources,
                                          LLM tokens, AWS cost and its parts, each job's cost, the budget
    GET /api/usage.csv?month=YYYY-MM   -> text/csv for charge-back, one row per metric
    GET /api/usage/jobs/{job_id}       -> JSON: one job's whole usage and cost so far, its budget

`month` defaults to the current UTC month; any other form than YYYY-MM answers 400 INVALID_INPUT.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from functions.common.web.api import TeamId
from functions.metering.report import UsageReports

router = APIRouter(prefix="/api", tags=["usage"])


def get_reports() -> UsageReports:
    from functions.metering.wiring import budgets, price_table, usage_store

    return UsageReports(store=usage_store(), prices=price_table(), budgets=budgets())


Reports = Annotated[UsageReports, Depends(get_reports)]
Month = Annotated[
    str | None,
    Query(
        description="YYYY-MM (UTC); default the current month",
        json_schema_extra={"pattern": r"^(?:|\d{4}-(?:0[1-9]|1[0-2]))$"},
    ),
]


@router.get("/usage", summary="The calling team's metered usage and AWS cost for one month")
def usage(team: TeamId, reports: Reports, month: Month = None) -> dict[str, Any]:
    return reports.month(team, month)


class CsvResponse(Response):
    media_type = "text/csv"


@router.get(
    "/usage.csv",
    summary="The calling team's usage for one month as CSV (charge-back)",
    response_class=CsvResponse,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}}},
)
def usage_csv(team: TeamId, reports: Reports, month: Month = None) -> Response:
    body = reports.csv(team, month)
    return Response(
        content=body,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="usage-{team}.csv"'},
    )


@router.get("/usage/jobs/{job_id}", summary="One job's usage and cost so far, and its budget")
def job_usage(job_id: str, team: TeamId, reports: Reports) -> dict[str, Any]:
    return reports.job(team, job_id)
