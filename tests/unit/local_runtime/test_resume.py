"""The local runtime's table of where running jobs were (functions/local_runtime/resume.py), on moto."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from functions.local_runtime import resume
from functions.local_runtime.resume import JobProgressTable

SEARCH_EVENT = {"job_id": "j1", "team_id": "t", "search": {"round": 1, "pending": [{"query_id": "q1"}]}}


@pytest.fixture
def table() -> Iterator[JobProgressTable]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        resume.create_table(client)
        yield JobProgressTable(client)


CHECKPOINTS = {"CheckpointPlan", "CheckpointScreening", "CheckpointExtraction", "CheckpointSynthesis"}
WORK = {"Plan", "Search", "Screen", "Chase", "Extract", "Synthesize", "Finalize", "MarkFailed"}


def test_the_resumable_states_are_the_resume_choices_and_the_checkpoints_are_apart() -> None:
    assert WORK | CHECKPOINTS == resume.RESUMABLE_STATES
    assert CHECKPOINTS == resume.CHECKPOINT_STATES


def test_the_last_state_entered_is_the_resume_point(table: JobProgressTable) -> None:
    assert table.resume_point("t", "j1") is None
    table.entered("t", "j1", "Search", {"job_id": "j1", "ratio": 0.5})
    table.entered("t", "j1", "Screen", {"job_id": "j1", "search": {"results": [{"key": "k", "n": 3}]}})
    point = table.resume_point("t", "j1")
    assert point is not None and point.state == "Screen"
    assert point.input == {"job_id": "j1", "search": {"results": [{"key": "k", "n": 3}]}}
    assert point.entered_at
    assert table.resume_point("other-team", "j1") is None  # the team is part of the key


def test_a_steps_output_is_kept_for_exactly_its_payload(table: JobProgressTable) -> None:
    table.put("search", SEARCH_EVENT, {"round": 2, "done": True, "ratio": 0.25})
    assert table.get("search", SEARCH_EVENT) == {"round": 2, "done": True, "ratio": 0.25}
    reordered = {"search": {"pending": [{"query_id": "q1"}], "round": 1}, "team_id": "t", "job_id": "j1"}
    assert table.get("search", reordered) == {"round": 2, "done": True, "ratio": 0.25}  # key order: same
    assert table.get("search", {**SEARCH_EVENT, "search": {"round": 2}}) is None
    assert table.get("screen", SEARCH_EVENT) is None
    # the Plan step's job is in its `input`, MarkFailed's in its `state`
    plan = {"input": {"job_id": "j1", "team_id": "t"}, "execution_name": "j1"}
    table.put("plan", plan, {"job_id": "j1"})
    assert table.get("plan", plan) == {"job_id": "j1"}
    # a schedule's fire names no job: the execution's name is its job, in the input's team
    fired = {"input": {"team_id": "t", "research_goal": "g"}, "execution_name": "j9"}
    table.put("plan", fired, {"job_id": "j9"})
    table.forget_outputs("t", "j9")
    assert table.get("plan", fired) is None
    table.put("search", {"search": {}}, {"round": 1})  # no job at all: nothing kept
    assert table.get("search", {"search": {}}) is None


def test_a_checkpoint_forgets_the_kept_outputs_and_keeps_the_resume_point(table: JobProgressTable) -> None:
    table.entered("t", "j1", "Synthesize", {"job_id": "j1"})
    for round_ in range(30):
        table.put("search", {**SEARCH_EVENT, "search": {"round": round_}}, {"round": round_ + 1})
    table.put("search", {**SEARCH_EVENT, "job_id": "j2"}, {"round": 9})
    table.forget_outputs("t", "j1")
    assert all(table.get("search", {**SEARCH_EVENT, "search": {"round": r}}) is None for r in range(30))
    assert table.get("search", {**SEARCH_EVENT, "job_id": "j2"}) == {"round": 9}  # another job's stay
    point = table.resume_point("t", "j1")
    assert point is not None and point.state == "Synthesize"
    table.put("finalize", SEARCH_EVENT, {"status": "COMPLETED"})
    table.forget_job("t", "j1")  # its execution ended
    assert table.resume_point("t", "j1") is None and table.get("finalize", SEARCH_EVENT) is None
    assert {"Done", "JobFailed"} == resume.TERMINAL_STATES


def test_start_up_forgets_what_is_kept_of_the_jobs_that_do_not_go_on(table: JobProgressTable) -> None:
    for job_id in ("going-on", "ended", "failed-at-start"):
        table.entered("t", job_id, "Search", {"job_id": job_id})
        table.put("search", {**SEARCH_EVENT, "job_id": job_id}, {"round": 2})
    assert table.forget_all_but({("t", "going-on")}) == 4
    assert table.resume_point("t", "going-on") is not None
    assert table.get("search", {**SEARCH_EVENT, "job_id": "going-on"}) == {"round": 2}
    assert table.resume_point("t", "ended") is None and table.resume_point("t", "failed-at-start") is None
    assert table.forget_all_but(set()) == 2
