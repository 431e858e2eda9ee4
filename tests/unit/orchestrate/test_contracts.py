"""The state machine's payloads parse into the step contracts and dump back to what the ASL reads."""

from __future__ import annotations

import json

from functions.common.resources import STEP_FUNCTIONS
from functions.metering.usage import step_memory_mb
from functions.orchestrate.contracts import FailInput, FinalizeInput, PlanInput
from functions.orchestrate.models import JobRecord
from functions.research.job.inputs import Extraction

SOURCE_FAILED = {  # the Extract Map's SourceFailed Pass state, as statemachine/research.asl.json writes it
    "source_id": "src-1",
    "url": "https://arxiv.org/abs/2501.00001",
    "success": False,
    "failure_reason": "States.Timeout",
    "cause": "Task timed out after 45 seconds",
    "parsed_key": None,
    "evidence_count": 0,
    "caught": True,
}


def test_an_extraction_dumps_exactly_the_fields_it_was_given() -> None:
    caught = Extraction.model_validate(SOURCE_FAILED)
    assert caught.caught and caught.model_dump(mode="json") == SOURCE_FAILED
    finalize = FinalizeInput.model_validate(
        {
            "job_id": "job-1",
            "extractions": [SOURCE_FAILED],
            "synthesis": {"synthesis_key": "k", "refused": False},
        }
    )
    assert finalize.team == "team-default"  # executions from before teams belong to the default team
    assert [item.model_dump(mode="json") for item in finalize.extractions] == [SOURCE_FAILED]


def test_mark_failed_reads_the_lambda_error_and_the_job_from_wherever_the_state_holds_it() -> None:
    cause = json.dumps({"errorMessage": "job job-9 not found", "errorType": "NotFound"})
    nested = FailInput.model_validate(
        {
            "state": {
                "input": {"job_id": "job-9", "team_id": "team-alpha"},
                "error": {"Error": "NotFound", "Cause": cause},
            }
        }
    )
    assert (nested.job_id, nested.state.execution.team, nested.reason) == (
        "job-9",
        "team-alpha",
        "NotFound: job job-9 not found",
    )
    unnamed = FailInput.model_validate({"state": {"error": {}}, "execution_name": "exec-1"})
    assert (unnamed.job_id, unnamed.reason) == ("exec-1", "unknown failure")


def test_a_schedules_invalid_request_still_parses_for_mark_failed() -> None:
    fired = {"research_goal": 42, "scope_parameters": "deep", "source": "schedule"}
    plan = PlanInput.model_validate({"input": fired, "execution_name": "sched-1"})
    assert plan.input.request_fields()["research_goal"] == 42  # ExecuteRequest refuses it in the step
    failed = FailInput.model_validate(
        {"state": {**fired, "error": {"Error": "ValidationError", "Cause": "x"}}}
    )
    assert failed.state.request_fields()["scope_parameters"] == "deep"


def test_the_job_record_keeps_what_the_steps_do_not_read() -> None:
    stored = {"job_id": "j", "team_id": "t", "status": "SEARCHING", "actions": ["a"], "queries_done": 3}
    record = JobRecord.model_validate(stored)
    assert record.as_dict() == stored and record.depth == "rapid" and record.cost_estimate is None


def test_a_record_stored_with_its_execute_response_as_json_text_still_reads() -> None:
    """Records kept across restarts (LOCAL_STATE_DIR) from before the response was a map."""
    response = {"job_id": "j", "status": "INITIALIZED", "autonomous_analysis": {}, "execution_plan": {}}
    quoted = {**response, "cost_estimate": {"currency": "USD", "low_usd": 0.01, "high_usd": 0.05}}
    old = {"job_id": "j", "team_id": "t", "status": "PLANNING", "execute_response": json.dumps(quoted)}
    record = JobRecord.model_validate(old)
    assert record.execute_response is not None and record.execute_response.status == "INITIALIZED"
    assert record.cost_estimate == quoted["cost_estimate"]
    assert record.stored()["execute_response"] == quoted  # written back as a map
    unquoted = JobRecord.model_validate({**old, "execute_response": json.dumps(response)})
    assert unquoted.cost_estimate is None and unquoted.stored()["execute_response"] == response


def test_every_registered_step_is_metered_with_its_own_memory() -> None:
    for spec in STEP_FUNCTIONS:
        state = spec.handler.rsplit(".", 2)[1]
        assert step_memory_mb(state, default=-1) == spec.memory_mb, spec.handler
