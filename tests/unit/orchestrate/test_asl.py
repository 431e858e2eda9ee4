"""The research state machine definition: the rules every Task and Map must follow."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

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
    assert len(tasks) == 8
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
    for name in ("Screen", "Finalize"):
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
    for name in ("Plan", "Search", "Screen", "Synthesize", "Finalize", "HumanCheckpoint"):
        assert any(c["Next"] == "MarkFailed" for c in states[name]["Catch"]), name
    assert states["HumanCheckpoint"]["Resource"].endswith(".waitForTaskToken")
    assert states["JobFailed"]["Type"] == "Fail"


def test_every_substitution_is_a_registered_step_function() -> None:
    values = {f"{spec.logical_id}Arn": f"arn:{spec.logical_id}" for spec in STEP_FUNCTIONS}
    values.update(ArtifactsBucket="a", DataBucket="d", JobsTable="j", EventBusName="e")
    rendered = substitute(json.dumps(DEFINITION), values)
    for spec in STEP_FUNCTIONS:
        if spec.handler.startswith("functions.orchestrate."):
            assert f"arn:{spec.logical_id}" in rendered
            assert spec.timeout_seconds > 45
