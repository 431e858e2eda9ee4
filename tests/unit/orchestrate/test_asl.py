"""The research state machine definition: the rules every Task and Map must follow."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from functions.common.resources import STATE_MACHINES, STEP_FUNCTIONS
from functions.local_runtime.aws import substitute

DEFINITION = json.loads(next(m for m in STATE_MACHINES if m.name == "research").path.read_text())


def _states(states: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, state in states.items():
        yield name, state
        if state["Type"] == "Map":
            yield from _states(state["ItemProcessor"]["States"])


def test_every_task_times_out_at_45_s_and_retries_transient_errors_with_full_jitter() -> None:
    tasks = [(name, state) for name, state in _states(DEFINITION["States"]) if state["Type"] == "Task"]
    assert len(tasks) == 12
    for name, task in tasks:
        assert task["TimeoutSeconds"] == 45, name
        retry = task["Retry"][0]
        assert {"Lambda.ServiceException", "Lambda.TooManyRequestsException", "RetryableStepError"} <= set(
            retry["ErrorEquals"]
        ), name
        assert retry["JitterStrategy"] == "FULL" and retry["BackoffRate"] > 1, name
        assert task.get("Catch"), name


def test_searches_loop_in_iterations_and_refinement_reenters_the_loop() -> None:
    states = DEFINITION["States"]
    search = states["Search"]
    assert search["Type"] == "Task" and search["ResultPath"] == "$.search" and search["Next"] == "SearchMore"
    assert search["Parameters"]["Payload"]["search.$"] == "$.search"
    more = states["SearchMore"]
    assert more["Choices"] == [{"Variable": "$.search.done", "BooleanEquals": False, "Next": "SearchWait"}]
    assert more["Default"] == "Screen"
    assert states["SearchWait"] == {"Type": "Wait", "SecondsPath": "$.search.wait_seconds", "Next": "Search"}
    refine = states["RefineSearch"]
    assert refine["Type"] == "Pass" and refine["Next"] == "Search" and refine["ResultPath"] == "$.search"
    assert (
        refine["Parameters"]["phase"] == "refine" and refine["Parameters"]["results.$"] == "$.search.results"
    )
    for name in ("Screen", "Chase", "Finalize"):
        assert states[name]["Parameters"]["Payload"]["search_results.$"] == "$.search.results"


def test_failures_inside_maps_are_recorded_and_others_mark_the_job_failed() -> None:
    states = DEFINITION["States"]
    for map_name in ("Extract",):
        inner = states[map_name]["ItemProcessor"]["States"]
        task = next(s for s in inner.values() if s["Type"] == "Task")
        catch_target = inner[task["Catch"][0]["Next"]]
        assert task["Catch"][0]["ErrorEquals"] == ["States.ALL"] and catch_target["Type"] == "Pass"
        assert catch_target["Parameters"]["caught"] is True
        assert states[map_name]["Catch"][0]["Next"] == "MarkFailed"
    assert states["Extract"]["MaxConcurrencyPath"] == "$.max_concurrency"
    for name in ("Plan", "Search", "Screen", "Chase", "Synthesize", "Finalize", *CHECKPOINTS.values()):
        assert any(c["Next"] == "MarkFailed" for c in states[name]["Catch"]), name
    assert states["JobFailed"]["Type"] == "Fail"


CHECKPOINTS = {
    "plan": "CheckpointPlan",
    "screening": "CheckpointScreening",
    "extraction": "CheckpointExtraction",
    "synthesis": "CheckpointSynthesis",
}


@pytest.mark.parametrize(
    ("phase", "after", "then", "continues_to"),
    [
        ("plan", "AfterPlan", "Search", "Search"),
        ("screening", "AfterScreen", "Chase", "Chase"),
        ("extraction", "AfterExtract", "Synthesize", "Synthesize"),
        ("synthesis", "AfterSynthesize", "AfterSynthesisReview", "Finalize"),
    ],
)
def test_each_checkpoint_is_a_rearmed_task_token_wait_the_caller_opts_into(
    phase: str, after: str, then: str, continues_to: str
) -> None:
    states = DEFINITION["States"]
    name = CHECKPOINTS[phase]
    task = states[name]
    assert task["Resource"].endswith(".waitForTaskToken") and task["TimeoutSeconds"] == 45
    payload = task["Parameters"]["Payload"]
    assert (
        payload["phase"] == phase and payload["state.$"] == "$" and payload["task_token.$"] == "$$.Task.Token"
    )
    # the approval's output (the state with the reviewer's edits) replaces the state
    assert task["ResultPath"] == "$" and task["Next"] == then
    catches = {tuple(c["ErrorEquals"]): c["Next"] for c in task["Catch"]}
    assert catches[("States.Timeout",)] == after  # re-armed: the Choice leads back to the checkpoint
    assert catches[("CheckpointWindowPassed",)] == continues_to  # on_timeout: continue
    assert {"Variable": f"$.checkpoints.{phase}", "BooleanEquals": True, "Next": name} in states[after][
        "Choices"
    ]


def test_an_execution_starts_with_plan_or_resumes_at_the_state_its_input_names() -> None:
    states = DEFINITION["States"]
    defaults = states[DEFINITION["StartAt"]]
    # resume_at has a default (Plan), so a normal execution evaluates no missing path (a clean log)
    assert defaults["Type"] == "Pass" and defaults["Parameters"] == {
        "defaults": {"resume_at": "Plan"},
        "input.$": "$",
    }
    merged = states[defaults["Next"]]
    assert merged["Parameters"] == {"state.$": "States.JsonMerge($.defaults, $.input, false)"}
    assert merged["OutputPath"] == "$.state"
    resume = states[merged["Next"]]
    assert resume["Type"] == "Choice" and resume["Default"] == "Plan"
    assert {c["Variable"] for c in resume["Choices"]} == {"$.resume_at"}
    targets = {c["StringEquals"]: c["Next"] for c in resume["Choices"]}
    assert all(name == target for name, target in targets.items())  # each value names its state
    work = {"Search", "Screen", "Chase", "Extract", "Synthesize", "Finalize", "MarkFailed"}
    assert set(targets) == work | set(CHECKPOINTS.values())
    assert all(states[name]["Type"] in ("Task", "Map") for name in targets)
    assert not any("IsPresent" in choice for state in states.values() for choice in state.get("Choices", []))


def test_a_reviewer_may_send_the_synthesis_back() -> None:
    review = DEFINITION["States"]["AfterSynthesisReview"]
    assert review["Choices"][0]["Next"] == "Synthesize" and review["Default"] == "Finalize"


def test_every_substitution_is_a_registered_step_function() -> None:
    values = {f"{spec.logical_id}Arn": f"arn:{spec.logical_id}" for spec in STEP_FUNCTIONS}
    values.update(ArtifactsBucket="a", DataBucket="d", JobsTable="j", EventBusName="e")
    rendered = substitute(json.dumps(DEFINITION), values)
    for spec in STEP_FUNCTIONS:
        if spec.handler.startswith("functions.orchestrate."):
            assert f"arn:{spec.logical_id}" in rendered
            assert spec.timeout_seconds > 45


def test_chasing_follows_screening_and_its_checkpoint_and_hands_the_selection_to_extract() -> None:
    states = DEFINITION["States"]
    chase = states["Chase"]
    assert states["AfterScreen"]["Default"] == "Chase" and states["CheckpointScreening"]["Next"] == "Chase"
    assert chase["Parameters"]["Payload"]["selected.$"] == "$.screen.selected"
    assert chase["ResultPath"] == "$.screen" and chase["ResultSelector"]["selected.$"] == "$.Payload.selected"
    assert chase["Next"] == "Extract" and states["Extract"]["ItemsPath"] == "$.screen.selected"


def test_screening_that_ran_out_of_embedding_time_continues_in_a_further_iteration() -> None:
    states = DEFINITION["States"]
    first = states["AfterScreen"]["Choices"][0]
    assert first == {"Variable": "$.screen.action", "StringEquals": "CONTINUE", "Next": "ScreenWait"}
    wait = states["ScreenWait"]
    assert wait["Type"] == "Wait" and wait["Next"] == "Screen" and wait["Seconds"] >= 1


def test_an_extraction_deferred_for_a_providers_turn_waits_in_the_state_machine() -> None:
    extract = DEFINITION["States"]["Extract"]["ItemProcessor"]["States"]["ExtractSource"]
    (deferral,) = [rule for rule in extract["Retry"] if rule["ErrorEquals"] == ["StepDeferred"]]
    assert deferral["JitterStrategy"] == "FULL" and deferral["BackoffRate"] > 1
    # the Retry's waits, at their most (without jitter), span several minutes of one provider's queue
    waits = [
        min(deferral["IntervalSeconds"] * deferral["BackoffRate"] ** attempt, deferral["MaxDelaySeconds"])
        for attempt in range(deferral["MaxAttempts"])
    ]
    assert sum(waits) >= 300
    assert extract["Catch"][0]["Next"] == "SourceFailed"  # after the last attempt the source fails alone
