"""The team stores' fixture: every store test runs against DynamoDB (moto, the registry's key schema)
and against the in-memory twin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

from functions.teams.store import DynamoDbTeamStore, TeamStore
from tests.support.fakes.team_store import InMemoryTeamStore
from tests.support.tables import create_table


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest) -> Iterator[TeamStore]:
    if request.param == "memory":
        yield InMemoryTeamStore()
        return
    with mock_aws():
        table = create_table("teams_table", "teams")
        yield DynamoDbTeamStore(table)
